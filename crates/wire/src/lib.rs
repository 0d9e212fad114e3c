//! ACP v2 + `session/inject` wire types, generated from `spec/acp-inject.schema.json`.
//!
//! The types are expanded at build time by `acp_inject_codegen_macro::wire_types!`; the
//! formatted expansion is checked in at `generated/rust/wire.rs` for review. On top of them
//! this crate adds the JSON-RPC framing ([`jsonrpc`]), the error codes ([`errors`]) and the
//! schema rules the types cannot express ([`validate`]: `InitializeResponse::check`).
//!
//! Feature `schemars`: every wire type implements `schemars::JsonSchema` (schemars 0.8), so a
//! schema can be emitted from the Rust side (the reverse drift test does).

#![allow(clippy::all)]

acp_inject_codegen_macro::wire_types!("../../spec/acp-inject.schema.json");

pub mod errors;
pub mod jsonrpc;
pub mod validate;

pub use errors::ErrorObject;
