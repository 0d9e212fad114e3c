//! What `xtask` and the tool crates under `tools/` share, and nothing else:
//!
//! - [`Error`]: the one error type of the tool crates (xtask's own wraps it);
//! - [`process`]: running a command so that the user sees what happens while it happens;
//! - the repository's places: [`root`], [`cache_dir`], [`target_dir`], and [`cargo`] (the one
//!   that runs us), [`cargo_bin`] (a workspace binary, built);
//! - [`python`]: the cached Python venv with the package installed;
//! - [`reports`]: the test runners' reports, read (JUnit XML, libtest's summaries);
//! - [`disk`]: free disk space, and what a cold test run needs;
//! - [`copy`] and [`copy_tree`]: files into a directory of the cache or the target.
//!
//! Tools sit outside the product's data flow (spec → codegen → wire → core → … → bindings): no
//! product crate depends on this one.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};

pub mod disk;
pub mod process;
pub mod python;
pub mod reports;

/// The workspace version (every crate inherits it; this one too).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Everything that can stop a tool: a file that cannot be read or written, a command that
/// cannot start or that failed, or a plain explanation.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot read {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("cannot write {}: {source}", path.display())]
    Write { path: PathBuf, source: std::io::Error },
    #[error("cannot run `{command}`: {source}")]
    Spawn { command: String, source: std::io::Error },
    #[error("`{command}` failed ({status})")]
    Failed { command: String, status: ExitStatus },
    #[error("{0}")]
    Msg(String),
}

impl Error {
    pub fn msg(message: impl Into<String>) -> Self {
        Error::Msg(message.into())
    }

    pub fn read(path: &Path, source: std::io::Error) -> Self {
        Error::Read { path: path.to_owned(), source }
    }

    pub fn write(path: &Path, source: std::io::Error) -> Self {
        Error::Write { path: path.to_owned(), source }
    }

    /// The same failure again, for a second caller of a step that ran once (an `io::Error`
    /// cannot be cloned, so its text is kept).
    pub fn again(&self) -> Self {
        Error::Msg(self.to_string())
    }

    /// A command that could not start.
    pub fn spawn(command: impl Into<String>, source: std::io::Error) -> Self {
        Error::Spawn { command: command.into(), source }
    }
}

/// The cargo that runs xtask (so nested builds use the same toolchain).
pub fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}

/// Cargo's target directory (honours `CARGO_TARGET_DIR` and cargo config).
pub fn target_dir() -> Result<PathBuf, Error> {
    let mut cmd = Command::new(cargo());
    cmd.args(["metadata", "--format-version", "1", "--no-deps"]).current_dir(root());
    let out = cmd.output().map_err(|source| Error::spawn("cargo metadata", source))?;
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).map_err(|e| Error::msg(format!("cargo metadata: {e}")))?;
    v["target_directory"].as_str().map(PathBuf::from).ok_or_else(|| Error::msg("cargo metadata has no target_directory"))
}

/// The repository the tools work on: found from where they run, not from where they were
/// built (two clones may share one target directory, as a global `build.target-dir` makes
/// them, and then run one binary). `cargo run` and `cargo test` set `CARGO_MANIFEST_DIR` for
/// the process to the package of the clone they were started in; without it (a binary started
/// by hand) the current directory is searched. The root is the first ancestor whose
/// `Cargo.toml` declares the workspace and that has `spec/`; failing both, the clone this crate
/// was built in.
pub fn root() -> PathBuf {
    static ROOT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    ROOT.get_or_init(|| {
        let from_env = std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from);
        from_env
            .and_then(|d| workspace_above(&d))
            .or_else(|| std::env::current_dir().ok().and_then(|d| workspace_above(&d)))
            .unwrap_or_else(|| {
                let built = Path::new(env!("CARGO_MANIFEST_DIR"));
                built.parent().and_then(Path::parent).expect("tools/support is inside the workspace").to_path_buf()
            })
    })
    .clone()
}

/// The first of `dir` and its ancestors that is this repository's root.
pub fn workspace_above(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .find(|d| {
            d.join("spec").is_dir()
                && std::fs::read_to_string(d.join("Cargo.toml")).is_ok_and(|t| t.lines().any(|l| l.trim() == "[workspace]"))
        })
        .map(Path::to_path_buf)
}

/// Where toolchains and packages are installed on first use, outside the repository:
/// `$ACP_INJECT_CACHE`, else `$XDG_CACHE_HOME/acp-inject`, else `~/.cache/acp-inject`.
pub fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("ACP_INJECT_CACHE") {
        return PathBuf::from(d);
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("acp-inject")
}

/// Copies a file, creating the directory it goes into.
pub fn copy(from: &Path, to: &Path) -> Result<(), Error> {
    if let Some(dir) = to.parent() {
        std::fs::create_dir_all(dir).map_err(|e| Error::msg(format!("cannot create {}: {e}", dir.display())))?;
    }
    std::fs::copy(from, to).map(drop).map_err(|e| Error::msg(format!("cannot copy {} to {}: {e}", from.display(), to.display())))
}

/// Copies a directory tree: `from`'s contents into `to` (created when missing).
pub fn copy_tree(from: &Path, to: &Path) -> Result<(), Error> {
    let entries = std::fs::read_dir(from).map_err(|e| Error::msg(format!("cannot read {}: {e}", from.display())))?;
    std::fs::create_dir_all(to).map_err(|e| Error::msg(format!("cannot create {}: {e}", to.display())))?;
    for entry in entries {
        let path = entry.map_err(|e| Error::read(from, e))?.path();
        let target = to.join(path.file_name().unwrap_or_default());
        if path.is_dir() {
            copy_tree(&path, &target)?;
        } else {
            copy(&path, &target)?;
        }
    }
    Ok(())
}

/// Builds a workspace binary (output streamed) and returns its path.
pub fn cargo_bin(package: &str, bin: &str) -> Result<PathBuf, Error> {
    process::run_ok(Command::new(cargo()).args(["build", "-p", package, "--bin", bin]))?;
    Ok(target_dir()?.join("debug").join(format!("{bin}{}", std::env::consts::EXE_SUFFIX)))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_root_is_the_workspace() {
        assert!(super::root().join("Cargo.toml").is_file());
        assert!(super::root().join("tools/support/Cargo.toml").is_file());
    }
}

#[cfg(test)]
mod root_tests {
    use super::*;

    #[test]
    fn the_root_is_found_from_a_directory_inside_it() {
        let root = root();
        assert!(root.join("spec").is_dir() && root.join("xtask").is_dir(), "{}", root.display());
        assert_eq!(workspace_above(&root.join("crates/core/src")), Some(root.clone()));
        assert_eq!(workspace_above(&root.join("tools/support")), Some(root));
        assert_eq!(workspace_above(Path::new("/")), None);
    }
}
