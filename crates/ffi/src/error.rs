//! The one error every binding raises: typed variants, fields that are values (a reason enum,
//! the agent's error record), never a bare string where a type exists.

use acp_inject_core::agent::{ConfigError, HostError, OpenError, RestoreError, StoreError};
use acp_inject_core::client::{CallRejected, ProtocolError};
use acp_inject_transport::{ServerError, TransportError, TurnError};

/// Every error the bindings raise.
#[derive(Debug, Clone, PartialEq, thiserror::Error, uniffi::Error)]
pub enum AcpError {
    /// The caller's input is not valid (malformed JSON, a wrong shape, an unknown value).
    #[error("invalid input: {detail}")]
    InvalidInput {
        /// What was wrong.
        detail: String,
    },
    /// The agent answered with an error.
    #[error("the agent refused: {error}")]
    Protocol {
        /// The agent's error.
        error: ProtocolError,
    },
    /// The client refused the call without sending anything (C-PEND-3).
    #[error("refused locally: {reason}")]
    Rejected {
        /// Why.
        reason: CallRejected,
    },
    /// A runtime event the agent core cannot apply.
    #[error("{error}")]
    Host {
        /// Why.
        error: HostError,
    },
    /// The agent's configuration is refused.
    #[error("invalid configuration: {detail}")]
    Config {
        /// Why.
        detail: String,
    },
    /// The store failed; nothing after the failure was released.
    #[error("store error: {detail}")]
    Store {
        /// What failed.
        detail: String,
    },
    /// The agent process ended or could not be started or reached.
    #[error("{detail}")]
    Disconnected {
        /// What happened (exit status and the last lines of the agent's stderr, when known).
        detail: String,
    },
    /// A conformance vector's expectation was not met.
    #[error("{detail}")]
    Mismatch {
        /// The first mismatch, for a person.
        detail: String,
    },
    /// A bug: a panic inside the library, caught at the boundary.
    #[error("internal error (a bug): {detail}")]
    Internal {
        /// The panic message.
        detail: String,
    },
}

impl AcpError {
    pub(crate) fn invalid(e: impl std::fmt::Display) -> AcpError {
        AcpError::InvalidInput { detail: e.to_string() }
    }
}

impl From<HostError> for AcpError {
    fn from(error: HostError) -> Self {
        AcpError::Host { error }
    }
}

impl From<CallRejected> for AcpError {
    fn from(reason: CallRejected) -> Self {
        AcpError::Rejected { reason }
    }
}

impl From<ConfigError> for AcpError {
    fn from(e: ConfigError) -> Self {
        AcpError::Config { detail: e.to_string() }
    }
}

impl From<StoreError> for AcpError {
    fn from(e: StoreError) -> Self {
        AcpError::Store { detail: e.to_string() }
    }
}

impl From<RestoreError> for AcpError {
    fn from(e: RestoreError) -> Self {
        AcpError::InvalidInput { detail: e.to_string() }
    }
}

impl From<OpenError> for AcpError {
    fn from(e: OpenError) -> Self {
        match e {
            OpenError::Config(c) => c.into(),
            OpenError::Store(s) => s.into(),
            OpenError::Restore(r) => r.into(),
        }
    }
}

impl From<TransportError> for AcpError {
    fn from(e: TransportError) -> Self {
        match e {
            TransportError::Protocol(error) => AcpError::Protocol { error },
            TransportError::Rejected(reason) => AcpError::Rejected { reason },
            other => AcpError::Disconnected { detail: other.to_string() },
        }
    }
}

impl From<TurnError> for AcpError {
    fn from(e: TurnError) -> Self {
        match e {
            TurnError::Host(error) => AcpError::Host { error },
            TurnError::Stopped => AcpError::Disconnected { detail: e.to_string() },
        }
    }
}

impl From<ServerError> for AcpError {
    fn from(e: ServerError) -> Self {
        match e {
            ServerError::Open(o) => o.into(),
            ServerError::Store(s) => s.into(),
            ServerError::Io(io) => AcpError::Disconnected { detail: io.to_string() },
        }
    }
}

impl From<acp_inject_remote::RemoteError> for AcpError {
    fn from(e: acp_inject_remote::RemoteError) -> Self {
        match e {
            acp_inject_remote::RemoteError::Unauthenticated { .. }
            | acp_inject_remote::RemoteError::Tls(_)
            | acp_inject_remote::RemoteError::Limits(_) => AcpError::Config { detail: e.to_string() },
            other => AcpError::Disconnected { detail: other.to_string() },
        }
    }
}

/// A foreign exception thrown inside a callback (an agent runtime method) becomes this error
/// instead of a Rust panic.
impl From<uniffi::UnexpectedUniFFICallbackError> for AcpError {
    fn from(e: uniffi::UnexpectedUniFFICallbackError) -> Self {
        AcpError::Internal { detail: format!("the runtime raised: {}", e.reason) }
    }
}
