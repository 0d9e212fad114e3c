//! ACP v2 + `session/inject` wire types, generated from `spec/acp-inject.schema.json`.
//!
//! The types are the expansion of the canonical schema by `codegen/` (the same expansion the
//! `wire_types!` proc-macro performs), written by `cargo xtask codegen` into
//! `src/generated.rs` and checked in: building this crate runs no generator. On top of them
//! this crate adds the JSON-RPC messages ([`jsonrpc`]), newline framing of a byte stream
//! ([`framing`]), the error codes ([`errors`]) and the
//! schema rules the types cannot express ([`validate`]: `InitializeResponse::check`).
//!
//! Feature `schemars`: every wire type implements `schemars::JsonSchema` (schemars 0.8), so a
//! schema can be emitted from the Rust side (the reverse drift test does).
//!
//! Building values: every generated struct has `new(required members…)`, taking the schema's
//! required members in schema order, and a `#[must_use]` setter per optional member, the shape
//! the official ACP schema crate gives its types. A setter of an `Option<T>` member takes a `T`
//! (a `&str` for a `String`) or an `Option<T>` ([`IntoOption`]); one of a [`Patch<T>`] member takes
//! a `T` (the value) or a `Patch` (`Patch::Null` clears). The structs are `#[non_exhaustive]`:
//! outside this crate they are built through `new` and the setters, not with struct literals,
//! so a member the schema gains upstream (they are optional, so `new` does not change) does
//! not break code that builds them. Reading fields and destructuring with `..` work as before.
//!
//! ```
//! use acp_inject_wire::{ContentBlock, MessageId, TextContent, UserMessage};
//!
//! let text = ContentBlock::Text(Box::new(TextContent::new("use auth_v2")));
//! let message = UserMessage::new(MessageId("msg_1".into())).content(vec![text]);
//! assert_eq!(
//!     serde_json::to_string(&message).unwrap(),
//!     r#"{"messageId":"msg_1","content":[{"type":"text","text":"use auth_v2"}]}"#
//! );
//! ```
//!
//! Enums are not `#[non_exhaustive]`: the open unions and string enums already decode a value
//! they do not know into their `Other` variant, and matching on them exhaustively is how hand
//! code is told that a variant it must handle was added.
//!
//! Reading a line and writing one, typed:
//!
//! ```
//! use acp_inject_wire::jsonrpc::{self, Incoming};
//! use acp_inject_wire::{methods, InjectRequest, InjectResponse, MessageId, RequestId};
//!
//! let line = r#"{"jsonrpc":"2.0","id":7,"method":"session/inject","params":{"sessionId":"s1","mode":"steer","content":[{"type":"text","text":"use auth_v2"}]}}"#;
//! let Ok(Incoming::Request { id, method, params }) = jsonrpc::parse_line(line) else { panic!() };
//! assert_eq!(method, methods::SESSION_INJECT);
//! let request: InjectRequest = jsonrpc::decode(params.unwrap().get()).unwrap();
//! assert_eq!(request.session_id.to_string(), "s1");
//!
//! let answer = jsonrpc::result_line(&id, &InjectResponse::new(MessageId("msg_1".into())));
//! assert_eq!(answer, r#"{"jsonrpc":"2.0","id":7,"result":{"messageId":"msg_1"}}"#);
//! # let _: RequestId = id;
//! ```

#![warn(missing_docs)]

// Written by `cargo xtask codegen` (prettyplease), not by rustfmt.
#[rustfmt::skip]
mod generated;

pub use generated::*;

pub mod errors;
pub mod framing;
mod ids;
pub mod jsonrpc;
pub mod v1;
pub mod validate;

pub use errors::ErrorObject;

/// Runs `f` (typically a decode) and returns what tolerant decoding dropped meanwhile on this
/// thread: members marked `x-deserialize-default-on-error` that did not decode (they took their
/// default) and array items dropped under `x-deserialize-skip-invalid-items`, each as a line
/// naming the type and the problem. Decoders that drop data silently lose it; callers surface
/// these instead (the client mirror counts them and reports each as a warning).
pub fn collect_tolerated<R>(f: impl FnOnce() -> R) -> (R, Vec<String>) {
    generated::__de::collect_tolerated(f)
}
