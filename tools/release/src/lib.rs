//! acp-inject-release: the release tooling run through `cargo xtask`.
//!
//! - [`dist`]: `cargo xtask dist`, the installable artifacts in `dist/` (the wheel, the Maven
//!   repository, the Swift package, the crates), each checked to carry nothing of the
//!   conformance harness;
//! - [`consumers`]: each artifact installed and used the way a user of its language would
//!   (the consumer stages of `cargo xtask test`, and `cargo xtask dist --consumers`), from the
//!   projects in `tools/release/consumers/`;
//! - [`docs`]: `cargo xtask docs [--out DIR]`, the API docs of every language and the guide
//!   into `DIR` (default `<target>/doc-site/`), with every link checked.

pub mod consumers;
pub mod dist;
pub mod docs;
