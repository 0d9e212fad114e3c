//! `cargo xtask conformance [DIR…]`: replays every vector file below the given directories
//! (default: `spec/vectors`) through the Rust core and prints `N passed, N failed`.

use std::path::PathBuf;

use crate::Error;

pub fn run(dirs: Vec<PathBuf>) -> Result<(), Error> {
    let dirs = if dirs.is_empty() { vec![crate::root().join("spec/vectors")] } else { dirs };
    for d in &dirs {
        if !d.exists() {
            return Err(Error::msg(format!("{} does not exist", d.display())));
        }
    }
    let report = acp_inject_core::vectors::run_dirs(&dirs);
    print!("{}", report.render());
    if report.results.is_empty() {
        return Err(Error::msg("no vector files found"));
    }
    if report.failed() > 0 {
        Err(Error::msg(format!("{} vector(s) failed", report.failed())))
    } else {
        Ok(())
    }
}
