//! JSON-RPC error objects and the codes, messages and reasons of the inject extension.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{ErrorData, ErrorReason, MessageId, SessionId};

/// -32700 "Parse error": the line is not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// -32600 "Invalid request": the JSON is not a JSON-RPC message.
pub const INVALID_REQUEST: i64 = -32600;
/// -32601 "Method not found".
pub const METHOD_NOT_FOUND: i64 = -32601;
/// -32602 "Invalid params": the params do not match the schema, or cannot be honoured.
pub const INVALID_PARAMS: i64 = -32602;
/// -32603 "Internal error".
pub const INTERNAL_ERROR: i64 = -32603;
/// -32800 "Request cancelled": the request was cancelled before it took effect (a held
/// `session/prompt` whose message will not be inserted).
pub const REQUEST_CANCELLED: i64 = -32800;
/// -32002 "Resource not found": an unknown session or message id (`data.reason` says which).
pub const RESOURCE_NOT_FOUND: i64 = -32002;
/// -32000 Authentication required (upstream `ErrorCode`: "Authentication is required before
/// this operation can be performed").
pub const AUTH_REQUIRED: i64 = -32000;
/// -32010 "Inject precondition failed" (`data.reason` says which).
pub const INJECT_PRECONDITION_FAILED: i64 = -32010;
/// -32011 "Limit reached": the agent holds as many live sessions, or a session as many
/// waiting messages, as its policy allows (`data.reason` says which, R-LIMIT-1).
pub const LIMIT_REACHED: i64 = -32011;
/// -32022 "Unsupported protocol version": no version the agent speaks is at or below the
/// requested one (`data`: `{requested, supported}`).
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// The protocol versions this toolkit speaks, lowest first: ACP v1 (the stable wire) and the
/// v2 draft.
pub const SUPPORTED_PROTOCOL_VERSIONS: [u16; 2] = [1, 2];

/// The `protocolVersion` member of an `initialize` request's params or of its result, read
/// before (and without) the rest, which may be another version's shape (R-INIT-1): `None` when
/// the text is not an object or the member is not a non-negative integer. The other members are
/// skipped, not built.
pub fn protocol_version_of(json: &str) -> Option<u64> {
    #[derive(Deserialize)]
    struct Version {
        #[serde(rename = "protocolVersion", default)]
        protocol_version: Option<Value>,
    }
    serde_json::from_str::<Version>(json).ok()?.protocol_version?.as_u64()
}

/// The fixed message of a code.
pub fn message_for(code: i64) -> &'static str {
    match code {
        PARSE_ERROR => "Parse error",
        INVALID_REQUEST => "Invalid request",
        METHOD_NOT_FOUND => "Method not found",
        INVALID_PARAMS => "Invalid params",
        INTERNAL_ERROR => "Internal error",
        REQUEST_CANCELLED => "Request cancelled",
        RESOURCE_NOT_FOUND => "Resource not found",
        AUTH_REQUIRED => "Authentication required",
        INJECT_PRECONDITION_FAILED => "Inject precondition failed",
        LIMIT_REACHED => "Limit reached",
        UNSUPPORTED_PROTOCOL_VERSION => "Unsupported protocol version",
        _ => "Server error",
    }
}

/// The code a reason is reported with.
pub fn code_for(reason: &ErrorReason) -> i64 {
    match reason {
        ErrorReason::SessionNotFound | ErrorReason::UnknownMessageId => RESOURCE_NOT_FOUND,
        ErrorReason::TooManySessions | ErrorReason::TooManyPending => LIMIT_REACHED,
        _ => INJECT_PRECONDITION_FAILED,
    }
}

/// A JSON-RPC error object (the schema's `Error` definition, written by hand).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct ErrorObject {
    /// The code.
    pub code: i64,
    /// The code's fixed message.
    pub message: String,
    /// `{reason, messageId?}` for session and inject errors, `{detail}` for the standard codes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ErrorObject {
    /// A standard code with its message and no data.
    pub fn new(code: i64) -> Self {
        ErrorObject { code, message: message_for(code).to_owned(), data: None }
    }

    /// A standard code with `data: {"detail": …}` for a person to read.
    pub fn with_detail(code: i64, detail: &str) -> Self {
        let mut e = Self::new(code);
        let data = crate::ErrorData { reason: None, message_id: None, session_id: None, detail: Some(detail.to_owned()) };
        e.data = serde_json::to_value(data).ok();
        e
    }

    /// -32700, with a detail.
    pub fn parse_error(detail: &str) -> Self {
        Self::with_detail(PARSE_ERROR, detail)
    }

    /// -32600, with a detail.
    pub fn invalid_request(detail: &str) -> Self {
        Self::with_detail(INVALID_REQUEST, detail)
    }

    /// -32000 Authentication required (R-AUTH-3).
    pub fn auth_required() -> Self {
        Self::new(AUTH_REQUIRED)
    }

    /// -32601.
    pub fn method_not_found() -> Self {
        Self::new(METHOD_NOT_FOUND)
    }

    /// -32602, with a detail.
    pub fn invalid_params(detail: &str) -> Self {
        Self::with_detail(INVALID_PARAMS, detail)
    }

    /// A session or inject error: `data` is exactly `{reason}` plus `messageId` when given.
    pub fn reason(reason: ErrorReason, message_id: Option<&MessageId>) -> Self {
        let code = code_for(&reason);
        let data = ErrorData { reason: Some(reason), message_id: message_id.cloned(), session_id: None, detail: None };
        ErrorObject { code, message: message_for(code).to_owned(), data: Some(serde_json::to_value(data).unwrap_or(Value::Null)) }
    }

    /// -32002 `session_not_found` for `session`: `data` is `{reason, sessionId}` (upstream's
    /// `SessionNotFoundErrorData` with this toolkit's reason), plus `messageId` when given.
    pub fn session_not_found(session: &SessionId, message_id: Option<&MessageId>) -> Self {
        let reason = ErrorReason::SessionNotFound;
        let code = code_for(&reason);
        let data =
            ErrorData { reason: Some(reason), message_id: message_id.cloned(), session_id: Some(session.clone()), detail: None };
        ErrorObject { code, message: message_for(code).to_owned(), data: Some(serde_json::to_value(data).unwrap_or(Value::Null)) }
    }

    /// -32022 for a client that asked for `requested`: `data` says what the agent speaks.
    pub fn unsupported_protocol_version(requested: u16, supported: &[u16]) -> Self {
        let data = crate::UnsupportedProtocolVersionErrorData {
            requested: crate::ProtocolVersion(requested),
            supported: supported.iter().copied().map(crate::ProtocolVersion).collect(),
            meta: None,
        };
        let code = UNSUPPORTED_PROTOCOL_VERSION;
        ErrorObject { code, message: message_for(code).to_owned(), data: Some(serde_json::to_value(data).unwrap_or(Value::Null)) }
    }

    /// The typed `data`, when it is an `ErrorData`.
    pub fn error_data(&self) -> Option<ErrorData> {
        self.data.as_ref().and_then(|d| serde_json::from_value(d.clone()).ok())
    }
}

impl std::fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.code)?;
        if let Some(d) = &self.data {
            write!(f, " {d}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ErrorObject {}

impl crate::TurnFailure {
    /// What ends a turn whose code failed (`stopReason: "error"`): -32603 "Internal error" with
    /// `data: {"detail": …}`.
    pub fn internal(detail: &str) -> Self {
        let e = ErrorObject::with_detail(INTERNAL_ERROR, detail);
        crate::TurnFailure { code: INTERNAL_ERROR as i32, message: e.message, data: e.data }
    }
}
