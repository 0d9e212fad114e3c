//! `cargo xtask conformance [DIR…]`: replays every vector file below the given directories
//! (default: `spec/vectors`) through the Rust core and prints `N passed, N failed`.

pub fn run(args: &[String]) -> Result<(), String> {
    let dirs: Vec<std::path::PathBuf> = if args.is_empty() {
        vec![crate::root().join("spec/vectors")]
    } else {
        args.iter().map(std::path::PathBuf::from).collect()
    };
    for d in &dirs {
        if !d.exists() {
            return Err(format!("{} does not exist", d.display()));
        }
    }
    let report = acp_inject_core::vectors::run_dirs(&dirs);
    print!("{}", report.render());
    if report.results.is_empty() {
        return Err("no vector files found".into());
    }
    if report.failed() > 0 {
        Err(format!("{} vector(s) failed", report.failed()))
    } else {
        Ok(())
    }
}
