//! `cargo xtask conformance [DIR…]`: replays every vector file below the given directories
//! (default: `spec/vectors`) through the Rust core and prints `N passed, N failed`.
//!
//! The runner is `crates/conformance` (its `acp-inject-conformance` binary); xtask does not
//! link the core, so it can regenerate the wire types even when they do not compile.

use std::path::PathBuf;
use std::process::Command;

use crate::Error;

pub fn run(dirs: Vec<PathBuf>) -> Result<(), Error> {
    for d in &dirs {
        if !d.exists() {
            return Err(Error::msg(format!("{} does not exist", d.display())));
        }
    }
    let mut cmd = Command::new(crate::cargo());
    cmd.args(["run", "-p", "acp-inject-conformance", "--bin", "acp-inject-conformance", "--"]).args(&dirs).current_dir(crate::root());
    crate::process::run_ok(&mut cmd)?;
    Ok(())
}
