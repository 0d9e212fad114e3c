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

// Written by `cargo xtask codegen` (prettyplease), not by rustfmt.
#[rustfmt::skip]
mod generated;

pub use generated::*;

pub mod errors;
pub mod framing;
pub mod jsonrpc;
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
