//! Schema rules the generated types cannot express: `if`/`then` between members.
//!
//! Decoding checks shapes (and `minItems` where the member is not tolerant); these checks run after decoding, on the values whose
//! receiver depends on them. Each error is a [`DecodeError`] whose path names the offending
//! member, like a decoding error.

use crate::jsonrpc::DecodeError;
use crate::{InitializeResponse, InjectCapabilities, InjectMode};

impl InjectCapabilities {
    /// `steerInStream` is required, and not empty, when `modes` contains `steer`: the schema's
    /// rule for what an agent advertises, which this toolkit's agents follow. The RFD spelling
    /// `steer_in_stream` decodes into the same member, so it satisfies this check, although the
    /// schema itself only accepts `steerInStream`. Decoding is more tolerant (ACP PR #2043 makes
    /// the member nullable): a client reading an agent's `initialize` does not call this.
    /// Also: `modes` names at least one mode (decoding leaves out the modes it does not know,
    /// so it does not enforce that).
    pub fn check(&self) -> Result<(), DecodeError> {
        if self.modes.is_empty() {
            return Err(DecodeError { path: "modes".to_owned(), message: "`modes` must name at least one mode".to_owned() });
        }
        if self.modes.contains(&InjectMode::Steer) && self.steer_in_stream.as_ref().is_none_or(Vec::is_empty) {
            return Err(DecodeError {
                path: "steerInStream".to_owned(),
                message: "missing field `steerInStream`, required when `modes` contains \"steer\"".to_owned(),
            });
        }
        Ok(())
    }
}

impl InitializeResponse {
    /// Checks what the agent advertises (see [`InjectCapabilities::check`]).
    pub fn check(&self) -> Result<(), DecodeError> {
        let inject = self.capabilities.as_ref().and_then(|c| c.session.as_ref()).and_then(|s| s.inject.as_ref());
        match inject {
            Some(inject) => inject.check().map_err(|e| within("capabilities.session.inject", e)),
            None => Ok(()),
        }
    }
}

fn within(prefix: &str, e: DecodeError) -> DecodeError {
    let path = if e.path.is_empty() { prefix.to_owned() } else { format!("{prefix}.{}", e.path) };
    DecodeError { path, ..e }
}
