//! JSON-RPC 2.0 framing: one line in, a classified message out; typed messages in, one line out.
//!
//! Parsing borrows: `params` and `result` stay as raw JSON slices of the line until the method
//! is known, so each line is scanned once for structure and its payload decoded once, typed.

use std::borrow::Cow;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::errors::ErrorObject;
use crate::{Method, Notification, Request, RequestId};

/// One classified JSON-RPC message, borrowing from its line.
#[derive(Debug)]
pub enum Incoming<'a> {
    /// A request: it has an `id` and a `method`.
    Request {
        /// Its id, echoed by the answer.
        id: RequestId,
        /// The method.
        method: Cow<'a, str>,
        /// The params, undecoded.
        params: Option<&'a RawValue>,
    },
    /// A notification: a `method` and no `id`.
    Notification {
        /// The method.
        method: Cow<'a, str>,
        /// The params, undecoded.
        params: Option<&'a RawValue>,
    },
    /// A response: an `id` and a `result` or an `error`.
    Response {
        /// The id of the request it answers.
        id: RequestId,
        /// The `result` (undecoded) or the `error`.
        outcome: Result<&'a RawValue, ErrorObject>,
    },
}

/// The default bound on one line (16 MiB): a longer line is refused before it is parsed.
pub const DEFAULT_MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Refuses a line longer than `limit` without reading it (answer: -32600, id `null`).
pub fn check_size(len: usize, limit: usize) -> Result<(), FrameError> {
    if len > limit {
        Err(FrameError::Invalid { id: None, detail: format!("line of {len} bytes exceeds the limit of {limit} bytes") })
    } else {
        Ok(())
    }
}

/// A line that is not a usable JSON-RPC message.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FrameError {
    /// Not JSON (or not UTF-8): answer -32700 with a `null` id.
    #[error("parse error: {detail}")]
    Parse {
        /// What the parser reported, for a person.
        detail: String,
    },
    /// JSON, but not a JSON-RPC 2.0 message: answer -32600 (with the id when one was readable).
    #[error("invalid request: {detail}")]
    Invalid {
        /// The message's `id`, when one was readable.
        id: Option<RequestId>,
        /// What was wrong, for a person.
        detail: String,
    },
}

impl FrameError {
    /// The error response this framing error deserves.
    pub fn to_error(&self) -> (RequestId, ErrorObject) {
        match self {
            FrameError::Parse { detail } => (RequestId::Null, ErrorObject::parse_error(detail)),
            FrameError::Invalid { id, detail } => (id.clone().unwrap_or(RequestId::Null), ErrorObject::invalid_request(detail)),
        }
    }
}

/// The members of a message object, each kept raw or borrowed.
#[derive(Deserialize)]
struct RawMessage<'a> {
    #[serde(borrow, default)]
    jsonrpc: Option<Cow<'a, str>>,
    // `"id": null` is an id (a parse-error response carries it), not an absent one.
    #[serde(borrow, default, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
    // `"result": null` is a result (an extension method's may be `null`), not an absent one.
    #[serde(borrow, default, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
}

/// A member that is present, even as `null` (plain `Option` would read `null` as absent).
fn present<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&'de RawValue>::deserialize(deserializer).map(Some)
}

/// What a line holding a batch is refused with where a single message is expected
/// ([`parse_line`]; a batch is read with [`parse_batch`]).
pub const BATCH_REFUSED: &str = "a JSON-RPC batch where one message was expected";

/// Whether `line` holds a JSON-RPC batch (a JSON array).
pub fn is_batch(line: &str) -> bool {
    line.trim_start().starts_with('[')
}

/// Classifies one line holding a single message. Invalid UTF-8 must be rejected by the caller's
/// `&str` conversion ([`parse_bytes`] does it). A batch (a JSON array) is not a single message:
/// it is [`FrameError::Invalid`] with a `null` id here; read it with [`parse_batch`] and each
/// entry with [`parse_entry`].
pub fn parse_line(line: &str) -> Result<Incoming<'_>, FrameError> {
    if is_batch(line) {
        serde_json::from_str::<serde::de::IgnoredAny>(line).map_err(|e| FrameError::Parse { detail: e.to_string() })?;
        return Err(FrameError::Invalid { id: None, detail: BATCH_REFUSED.into() });
    }
    classify(line)
}

/// The entries of a batch line (upstream v2 draft, "JSON-RPC Batch Messages": "ACP follows the
/// JSON-RPC 2.0 batch rules"): the array's values, unread. Not JSON is [`FrameError::Parse`];
/// an empty array is [`FrameError::Invalid`] with a `null` id ("An empty array receives a
/// single `Invalid Request` response").
pub fn parse_batch(line: &str) -> Result<Vec<&RawValue>, FrameError> {
    let entries: Vec<&RawValue> = serde_json::from_str(line).map_err(|e| FrameError::Parse { detail: e.to_string() })?;
    if entries.is_empty() {
        return Err(FrameError::Invalid { id: None, detail: "an empty batch".into() });
    }
    Ok(entries)
}

/// Classifies one entry of a batch: a single message, as [`parse_line`] classifies a line; an
/// entry that is no message object (a number, a nested array) is [`FrameError::Invalid`] with
/// a `null` id ("Invalid entries in a non-empty batch produce their own `Invalid Request`
/// responses").
pub fn parse_entry(entry: &RawValue) -> Result<Incoming<'_>, FrameError> {
    if !entry.get().starts_with('{') {
        return Err(FrameError::Invalid { id: None, detail: "a batch entry that is not a message object".into() });
    }
    classify(entry.get())
}

/// Whether `line` (a line this crate wrote, or any single message) is a response.
pub fn is_response(line: &str) -> bool {
    matches!(classify(line), Ok(Incoming::Response { .. }))
}

/// Like [`parse_line`] for raw bytes: invalid UTF-8 is a parse error.
pub fn parse_bytes(line: &[u8]) -> Result<Incoming<'_>, FrameError> {
    let text = std::str::from_utf8(line).map_err(|e| FrameError::Parse { detail: format!("invalid UTF-8: {e}") })?;
    parse_line(text)
}

fn classify(text: &str) -> Result<Incoming<'_>, FrameError> {
    let raw: RawMessage<'_> = match serde_json::from_str(text) {
        Ok(raw) => raw,
        Err(e) if e.is_syntax() || e.is_eof() => return Err(FrameError::Parse { detail: e.to_string() }),
        Err(e) => return Err(FrameError::Invalid { id: None, detail: format!("not a JSON-RPC message object: {e}") }),
    };
    let id = match raw.id {
        None => None,
        Some(id) => match serde_json::from_str::<RequestId>(id.get()) {
            Ok(id) => Some(id),
            Err(_) => return Err(FrameError::Invalid { id: None, detail: "`id` must be a string, an integer or null".into() }),
        },
    };
    let invalid = |detail: &str| FrameError::Invalid { id: id.clone(), detail: detail.to_owned() };
    if raw.jsonrpc.as_deref() != Some("2.0") {
        return Err(invalid("`jsonrpc` must be \"2.0\""));
    }
    if let Some(p) = raw.params {
        if !matches!(p.get().as_bytes().first(), Some(b'{' | b'[')) {
            return Err(invalid("`params` must be an object or an array"));
        }
    }
    // `"result": null` beside an `error` is an error response (peers that write both members).
    let result = raw.result.filter(|r| !(raw.error.is_some() && r.get() == "null"));
    match (raw.method, result, raw.error) {
        // ACP's request ids are strings or integers: "Unlike base JSON-RPC, it MUST NOT be
        // `null`" (upstream v2 draft, `RequestId`). Answered -32600 with id null.
        (Some(_), None, None) if id == Some(RequestId::Null) => {
            Err(FrameError::Invalid { id: None, detail: "a request's `id` must be a string or an integer, not null".into() })
        }
        (Some(method), None, None) => Ok(match id {
            Some(id) => Incoming::Request { id, method, params: raw.params },
            None => Incoming::Notification { method, params: raw.params },
        }),
        (None, Some(result), None) => match id {
            Some(id) => Ok(Incoming::Response { id, outcome: Ok(result) }),
            None => Err(invalid("a response needs an `id`")),
        },
        (None, None, Some(error)) => {
            let error: ErrorObject =
                decode(error.get()).map_err(|e| invalid(&format!("`error` is not a JSON-RPC error object: {e}")))?;
            match id {
                Some(id) => Ok(Incoming::Response { id, outcome: Err(error) }),
                None => Err(invalid("a response needs an `id`")),
            }
        }
        (None, Some(_), Some(_)) => Err(invalid("a response carries both `result` and `error`")),
        (Some(_), _, _) => Err(invalid("a request carries `result` or `error`")),
        (None, None, None) => Err(invalid("neither a request (`method`) nor a response (`result`/`error`)")),
    }
}

/// A payload that did not match its type; `path` names the offending member.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.render())]
pub struct DecodeError {
    /// Where in the payload (`update.content[0].type`); empty for the payload itself.
    pub path: String,
    /// What was wrong there.
    pub message: String,
}

impl DecodeError {
    fn render(&self) -> String {
        if self.path.is_empty() || self.path == "." {
            self.message.clone()
        } else {
            format!("at `{}`: {}", self.path, self.message)
        }
    }
}

/// Decodes a payload. The fast path is plain serde; only a failure is decoded again with path
/// tracking, so the error names the offending member without slowing down valid input.
pub fn decode<T: DeserializeOwned>(json: &str) -> Result<T, DecodeError> {
    match serde_json::from_str(json) {
        Ok(v) => Ok(v),
        Err(first) => {
            let mut de = serde_json::Deserializer::from_str(json);
            match serde_path_to_error::deserialize::<_, T>(&mut de) {
                Err(e) => Err(DecodeError { path: e.path().to_string(), message: e.inner().to_string() }),
                Ok(_) => Err(DecodeError { path: String::new(), message: first.to_string() }),
            }
        }
    }
}

/// Decodes `params`; absent params decode as an empty object (so all-optional params work).
/// When they do not, the error names `params` as the missing member.
pub fn decode_params<T: DeserializeOwned>(params: Option<&RawValue>) -> Result<T, DecodeError> {
    match params {
        Some(params) => decode(params.get()),
        None => decode("{}").map_err(|e| DecodeError {
            path: "params".to_owned(),
            message: format!("missing field `params` (its members are required: {e})"),
        }),
    }
}

/// How a method is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MethodKind {
    /// With an `id`, answered by a response.
    Request,
    /// Without an `id`, never answered.
    Notification,
}

/// A request or notification whose `method` does not fit the message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MethodError {
    /// Neither a method of the schema nor an extension (`_…`): answer a request with -32601.
    #[error("unknown `method` {method:?} (extension methods start with `_`)")]
    Unknown {
        /// The method as sent.
        method: String,
    },
    /// A known method sent the other way: a notification method with an `id`, or a request
    /// method without one. The schema rejects both; a request is answered with -32601.
    #[error("`{method}` is {}", expected.explain())]
    WrongKind {
        /// The method as sent.
        method: String,
        /// How the method must be sent.
        expected: MethodKind,
    },
}

impl MethodKind {
    fn explain(&self) -> &'static str {
        match self {
            MethodKind::Notification => "a notification: the message must not carry an `id`",
            MethodKind::Request => "a request: the message needs an `id`",
        }
    }
}

impl MethodError {
    /// The error response a request with this problem deserves (-32601 with a detail).
    pub fn to_error(&self) -> ErrorObject {
        ErrorObject::with_detail(crate::errors::METHOD_NOT_FOUND, &self.to_string())
    }
}

/// How `method` is sent, or `None` for a method the schema does not define. Extension methods
/// (`_…`) are neither; check them with [`is_extension`].
pub fn method_kind(method: &str) -> Option<MethodKind> {
    if crate::methods::REQUESTS.contains(&method) {
        Some(MethodKind::Request)
    } else if crate::methods::NOTIFICATIONS.contains(&method) {
        Some(MethodKind::Notification)
    } else {
        None
    }
}

/// Methods starting with `_` are extensions; their params are not checked.
pub fn is_extension(method: &str) -> bool {
    method.starts_with('_')
}

/// Checks that a request or notification names a method of the schema (or an extension) and
/// is sent the way that method is (with or without `id`). Responses always pass.
pub fn check_method(message: &Incoming<'_>) -> Result<(), MethodError> {
    let (method, sent_as) = match message {
        Incoming::Request { method, .. } => (method, MethodKind::Request),
        Incoming::Notification { method, .. } => (method, MethodKind::Notification),
        Incoming::Response { .. } => return Ok(()),
    };
    if is_extension(method) {
        return Ok(());
    }
    match method_kind(method) {
        None => Err(MethodError::Unknown { method: method.to_string() }),
        Some(kind) if kind != sent_as => Err(MethodError::WrongKind { method: method.to_string(), expected: kind }),
        Some(_) => Ok(()),
    }
}

#[derive(Serialize)]
struct OutRequest<'a, P> {
    jsonrpc: &'static str,
    id: &'a RequestId,
    method: &'a str,
    params: &'a P,
}

#[derive(Serialize)]
struct OutNotification<'a, P> {
    jsonrpc: &'static str,
    method: &'a str,
    params: &'a P,
}

#[derive(Serialize)]
struct OutResult<'a, R: ?Sized> {
    jsonrpc: &'static str,
    id: &'a RequestId,
    result: &'a R,
}

#[derive(Serialize)]
struct OutError<'a> {
    jsonrpc: &'static str,
    id: &'a RequestId,
    error: &'a ErrorObject,
}

fn to_line<T: Serialize>(value: &T) -> String {
    // Lines are written into one buffer per thread, kept between lines, and copied out at
    // their length: one allocation of the right size per line, where a fresh buffer (128
    // bytes, `serde_json::to_string`) grows twice for a typical update. A `Serialize` impl that
    // writes a line itself meanwhile gets a buffer of its own.
    thread_local! {
        static BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    BUFFER.with(|buffer| match buffer.try_borrow_mut() {
        Ok(mut buffer) => {
            buffer.clear();
            write_line(&mut buffer, value);
            let line = text(&buffer).to_owned();
            // A rare long line does not keep its memory for the rest of the thread's life.
            if buffer.capacity() > 64 * 1024 {
                *buffer = Vec::new();
            }
            line
        }
        Err(_) => {
            let mut buffer = Vec::with_capacity(128);
            write_line(&mut buffer, value);
            text(&buffer).to_owned()
        }
    })
}

/// serde_json writes UTF-8.
fn text(buffer: &[u8]) -> &str {
    std::str::from_utf8(buffer).unwrap_or_else(|e| unreachable!("serde_json writes UTF-8: {e}"))
}

fn write_line<T: Serialize>(buffer: &mut Vec<u8>, value: &T) {
    // Serialising these types cannot fail: every map key is a string and no Serialize impl
    // here returns an error.
    serde_json::to_writer(buffer, value).unwrap_or_else(|e| unreachable!("wire types always serialise: {e}"))
}

/// A request line; the method is the params type's (`x-method`), so a schema rename breaks the
/// build, not the wire.
pub fn request_line<R: Request>(id: &RequestId, params: &R) -> String {
    to_line(&OutRequest { jsonrpc: "2.0", id, method: R::METHOD, params })
}

/// A notification line, its method taken from the params type.
pub fn notification_line<N: Notification>(params: &N) -> String {
    to_line(&OutNotification { jsonrpc: "2.0", method: N::METHOD, params })
}

/// A notification line for `N`'s method whose params are written by another type: a view of
/// `N` that keeps part of it verbatim (the idle update keeps the runtime's `usage` as reported).
pub fn notification_line_as<N: Notification, P: Serialize>(params: &P) -> String {
    to_line(&OutNotification { jsonrpc: "2.0", method: N::METHOD, params })
}

/// A success response line carrying a typed result (a `*Response` type of the schema).
pub fn result_line<R: Method + Serialize>(id: &RequestId, result: &R) -> String {
    to_line(&OutResult { jsonrpc: "2.0", id, result })
}

/// A success response line whose result is already encoded (a result kept verbatim, or the
/// answer to an extension method).
pub fn raw_result_line(id: &RequestId, result: &RawValue) -> String {
    to_line(&OutResult { jsonrpc: "2.0", id, result })
}

/// An error response line.
pub fn error_line(id: &RequestId, error: &ErrorObject) -> String {
    to_line(&OutError { jsonrpc: "2.0", id, error })
}

/// A request line for an extension method (`_…`), whose params the schema does not type.
/// Returns `None` for a method that is not an extension: the schema's methods go through
/// [`request_line`].
pub fn extension_request_line<P: Serialize>(id: &RequestId, method: &str, params: &P) -> Option<String> {
    is_extension(method).then(|| request_line_for(id, method, params))
}

/// A request line for a method of another protocol version (ACP v1), whose params this
/// version's types do not write: the caller names the method. Use [`request_line`] for this
/// version's methods.
pub fn request_line_for<P: Serialize>(id: &RequestId, method: &str, params: &P) -> String {
    to_line(&OutRequest { jsonrpc: "2.0", id, method, params })
}

/// A notification line for a method of another protocol version (ACP v1); see
/// [`request_line_for`].
pub fn notification_line_for<P: Serialize>(method: &str, params: &P) -> String {
    to_line(&OutNotification { jsonrpc: "2.0", method, params })
}

/// A line from the agent, with `session/update` (the bulk of the traffic) decoded in one pass.
#[derive(Debug)]
pub enum AgentLine<'a> {
    /// A `session/update` notification, fully typed.
    Update(crate::UpdateSessionNotification),
    /// Anything else, classified as by [`parse_line`].
    Other(Incoming<'a>),
}

/// Like [`parse_line`], but decodes a `session/update` notification straight into its typed
/// params in the same pass when `method` comes before `params` (as every encoder here and
/// upstream writes it). Any other shape, and any line the fast path would reject, goes
/// through [`parse_line`] so errors stay exactly the same.
pub fn parse_agent_line(line: &str) -> Result<AgentLine<'_>, FrameError> {
    let mut update = None;
    let mut de = serde_json::Deserializer::from_str(line);
    // The update is written into `update` where it is decoded, rather than handed up through
    // each layer's result: a notification is some 170 bytes, and every hand-over is a copy.
    if matches!(serde::Deserializer::deserialize_map(&mut de, FastUpdate(&mut update)), Ok(true)) && de.end().is_ok() {
        if let Some(update) = update {
            return Ok(AgentLine::Update(update));
        }
    }
    parse_line(line).map(AgentLine::Other)
}

/// Reads a line's members into its slot: the typed params of a well-formed `session/update`
/// notification whose `method` precedes its `params`. `false` (or an error) sends the line
/// down the general path.
struct FastUpdate<'a>(&'a mut Option<crate::UpdateSessionNotification>);

impl<'de> serde::de::Visitor<'de> for FastUpdate<'_> {
    type Value = bool;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON-RPC message object")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        let (mut version_ok, mut is_update, mut other) = (false, false, false);
        while let Some(key) = map.next_key::<crate::__de::Str<'de>>()? {
            match &*key.0 {
                "jsonrpc" => version_ok = map.next_value::<crate::__de::Str<'de>>()?.0 == "2.0",
                "method" => is_update = map.next_value::<crate::__de::Str<'de>>()?.0 == crate::methods::SESSION_UPDATE,
                "params" if is_update && self.0.is_none() => *self.0 = Some(map.next_value()?),
                _ => {
                    // `id`, `result`, `error`, params before method, or anything else.
                    other = true;
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok(version_ok && is_update && !other && self.0.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::{parse_line, Incoming};

    #[test]
    fn a_null_result_is_a_result_and_absent_members_are_not() {
        let Ok(Incoming::Response { outcome: Ok(raw), .. }) = parse_line(r#"{"jsonrpc":"2.0","id":3,"result":null}"#) else {
            panic!("a null result is a success response");
        };
        assert_eq!(raw.get(), "null");
        assert!(parse_line(r#"{"jsonrpc":"2.0","id":3}"#).is_err(), "neither result nor error");
        let Ok(Incoming::Response { outcome: Err(e), .. }) =
            parse_line(r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"Method not found"}}"#)
        else {
            panic!("an error response");
        };
        assert_eq!(e.code, -32601);
        let Ok(Incoming::Response { outcome: Err(e), .. }) =
            parse_line(r#"{"jsonrpc":"2.0","id":3,"result":null,"error":{"code":-32000,"message":"Authentication required"}}"#)
        else {
            panic!("an error response with a null result beside it");
        };
        assert_eq!(e.code, -32000);
        assert!(parse_line(r#"{"jsonrpc":"2.0","id":3,"result":{},"error":{"code":-32000,"message":"x"}}"#).is_err());
    }
}
