//! ACP v2 + `session/inject` wire types, generated from `spec/acp-inject.schema.json`.
//!
//! The types are expanded at build time by `acp_inject_codegen_macro::wire_types!`; the
//! formatted expansion is checked in at `generated/rust/wire.rs` for review. On top of them
//! this crate adds the JSON-RPC framing ([`jsonrpc`]) and the error codes ([`errors`]).

#![allow(clippy::all)]

acp_inject_codegen_macro::wire_types!("../../spec/acp-inject.schema.json");

pub mod errors;
pub mod jsonrpc;

pub use errors::ErrorObject;
