//! ACP v1 wire types, generated from `spec/acp-v1.schema.json`: the messages the agent core
//! writes for a connection that negotiated protocol version 1 (`spec/rules.md`, R-V1-1 to
//! R-V1-4).
//!
//! `cargo xtask codegen` assembles that schema from the vendored upstream v1 schema
//! (`spec/upstream/v1/schema.json`) and `spec/overlay-v1.json`, and expands it the way the
//! v2 types are expanded. The module is self-contained: its own `RequestId`, `methods` and
//! `Method`/`Request`/`Notification` traits, beside the v2 ones of the crate root.

// Written by `cargo xtask codegen` (prettyplease), not by rustfmt.
#[rustfmt::skip]
mod generated;

pub use generated::*;
