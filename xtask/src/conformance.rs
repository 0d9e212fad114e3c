//! `cargo xtask conformance [DIR…]`: replays every vector file below the given directories
//! (default: `spec/vectors`) through the Rust core and prints `N passed, N failed`.
//!
//! The runner is `crates/conformance` (its `acp-inject-conformance` binary); xtask does not
//! link the core, so it can regenerate the wire types even when they do not compile.

use std::process::Command;

pub fn run(args: &[String]) -> Result<(), String> {
    let status = Command::new(crate::cargo())
        .args(["run", "-p", "acp-inject-conformance", "--bin", "acp-inject-conformance", "--"])
        .args(args)
        .current_dir(crate::root())
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err("conformance vectors failed".into())
    }
}
