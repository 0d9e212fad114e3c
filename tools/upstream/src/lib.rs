//! The upstream ACP schemas this toolkit follows, and the tools SDK maintainers keep them in
//! sync with (run through `cargo xtask`):
//!
//! - [`diff`]: `cargo xtask upstream-diff PATH`, every difference between our canonical schema
//!   and an upstream one, minus the intended ones (`spec/upstream-allowlist.json`);
//! - [`vendored`]: the copy of the upstream schemas under `spec/upstream/`, from one of two
//!   upstream authorities, with the release and a checksum of every file
//!   (`spec/upstream/manifest.json`);
//! - [`bump`]: `cargo xtask upstream bump`, which replaces the vendored copy with a release of
//!   either authority and reports what changed, per language:
//!   - [`npm`]: the official TypeScript SDK's npm package, whose releases carry the schemas
//!     (fetched with `npm pack`);
//!   - [`schema_crate`]: the official Rust schema crate, from whose types upstream generates
//!     them (generated here the same way, in a throwaway project in the cache).
//!
//! Both schema readings go through the codegen model (`acp_inject_codegen::model`).

use std::path::PathBuf;

pub mod bump;
pub mod diff;
pub mod npm;
pub mod schema_crate;
pub mod vendored;

/// The repository's root, found from where the tools run (see `acp_inject_tool_support::root`).
pub fn repo_root() -> PathBuf {
    acp_inject_tool_support::root()
}

/// A failure of the upstream tools, with what to do about it where that is known.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A command (npm, cargo) could not run or failed.
    #[error("{0}")]
    Command(String),
    /// The package, a schema or the manifest is not what it should be.
    #[error("{0}")]
    Invalid(String),
}

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Error {
        let path = path.into();
        move |source| Error::Io { path, source }
    }
}
