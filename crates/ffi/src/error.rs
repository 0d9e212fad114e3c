//! The one error every binding raises ([`AcpError`]: typed variants, fields that are values,
//! never a bare string where a type exists), and how it crosses the FFI ([`FfiError`]: its
//! message and the error in the boundary encoding, which each language decodes into its own
//! error type, generated from the value model).

use acp_inject_core::agent::{ConfigError, HostError, OpenError, RestoreError, StoreError};
use acp_inject_core::client::{CallRejected, ProtocolError};
use acp_inject_transport::{ServerError, TransportError, TurnError};

use crate::codec;

/// Every error the bindings raise.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
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
    /// The agent requires authentication first (-32000): authenticate with one of its
    /// `authMethods`, then call again.
    #[error("the agent requires authentication first (authenticate with one of its authMethods): {error}")]
    AuthRequired {
        /// The agent's error.
        error: ProtocolError,
    },
    /// The client refused the call without sending anything (C-PEND-3).
    #[error("refused locally: {detail}")]
    Rejected {
        /// Why.
        reason: CallRejected,
        /// Why, for a person.
        detail: String,
    },
    /// A runtime event the agent core cannot apply.
    #[error("{detail}")]
    Host {
        /// Why.
        error: HostError,
        /// Why, for a person.
        detail: String,
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
    /// Invalid input, saying why.
    pub fn invalid(e: impl std::fmt::Display) -> AcpError {
        AcpError::InvalidInput { detail: e.to_string() }
    }
}

impl From<HostError> for AcpError {
    fn from(error: HostError) -> Self {
        AcpError::Host { detail: error.to_string(), error }
    }
}

impl From<CallRejected> for AcpError {
    fn from(reason: CallRejected) -> Self {
        AcpError::Rejected { detail: reason.to_string(), reason }
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
            TransportError::Protocol(error) if error.code == acp_inject_core::wire::errors::AUTH_REQUIRED => {
                AcpError::AuthRequired { error }
            }
            TransportError::Protocol(error) => AcpError::Protocol { error },
            TransportError::Rejected(reason) => reason.into(),
            other => AcpError::Disconnected { detail: other.to_string() },
        }
    }
}

impl From<TurnError> for AcpError {
    fn from(e: TurnError) -> Self {
        match e {
            TurnError::Host(error) => error.into(),
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
            | acp_inject_remote::RemoteError::WeakToken(_)
            | acp_inject_remote::RemoteError::Limits(_) => AcpError::Config { detail: e.to_string() },
            other => AcpError::Disconnected { detail: other.to_string() },
        }
    }
}

/// An error as it crosses the FFI, either way: its message, for a person, and the [`AcpError`]
/// in the boundary encoding, which each language decodes into its own error type (Python's
/// `AcpError` exceptions, Kotlin's `AcpException`, Swift's `AcpError`). A foreign layer that
/// calls the library directly reads `message`.
#[derive(Debug, Clone, PartialEq, thiserror::Error, uniffi::Error)]
pub enum FfiError {
    /// The call failed.
    #[error("{message}")]
    Failed {
        /// The error's message.
        message: String,
        /// The error, encoded.
        error: Vec<u8>,
    },
}

impl From<AcpError> for FfiError {
    fn from(e: AcpError) -> Self {
        FfiError::Failed { message: e.to_string(), error: codec::encode(&e) }
    }
}

/// An error a foreign layer handed back (a runtime's), decoded; bytes that do not decode are
/// the layer's bug, kept with its message.
impl From<FfiError> for AcpError {
    fn from(e: FfiError) -> Self {
        let FfiError::Failed { message, error } = e;
        codec::decode(&error).unwrap_or(AcpError::Internal { detail: message })
    }
}

/// A foreign exception thrown inside a callback (an agent runtime method) that the foreign
/// layer did not turn into an [`FfiError`] becomes one instead of a Rust panic.
impl From<uniffi::UnexpectedUniFFICallbackError> for FfiError {
    fn from(e: uniffi::UnexpectedUniFFICallbackError) -> Self {
        AcpError::Internal { detail: format!("the runtime raised: {}", e.reason) }.into()
    }
}

impl From<codec::DecodeError> for AcpError {
    fn from(e: codec::DecodeError) -> Self {
        AcpError::InvalidInput { detail: e.to_string() }
    }
}
