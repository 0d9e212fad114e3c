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
