//! Project automation: `cargo xtask <command>`. One module per command; see `--help`.

mod bench;
mod codegen;
mod conformance;
mod consumers;
mod demo;
mod dist;
mod docs;
mod fuzz;
mod pyenv;
mod coverage;
mod test;
mod typescript;
mod upstream_diff;
mod versions;

use std::path::PathBuf;
use std::process::ExitCode;

const HELP: &str = "\
cargo xtask <command>

commands:
  codegen [--check]        write everything generated into generated/ (--check: fail if stale)
  conformance [DIR...]     replay conformance vectors through the Rust core (default: spec/vectors)
  test                     every test in every language, then a summary table
  demo [--delay-ms MS]     the main job: a live session against the reference agent from Python
  bench [ROUNDS]           every comparison with the official SDKs, written to BENCHMARKS.md
  fuzz seed | run [SECS]   rebuild the fuzz seed corpus / run every fuzz target for SECS each
  typescript               the TypeScript stage of `test` alone (tsc build, examples, vectors)
  upstream-diff PATH [--allowlist FILE] [--json FILE] [--all]
                           differences between spec/ and an upstream ACP schema; fails on drift
  dist [--manylinux2014] [--publish-dry-run] [--consumers]
                           the installable artifacts in dist/: wheel, Maven repo, Swift package,
                           crates (--consumers: then install and use each as a user would)
  docs                     API docs (Rust, Python, Kotlin, Swift) into <target>/doc-site/
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("codegen") => codegen::run(&args[1..]),
        Some("conformance") => conformance::run(&args[1..]),
        Some("test") => test::run(&args[1..]),
        Some("demo") => demo::run(&args[1..]),
        Some("fuzz") => fuzz::run(&args[1..]),
        Some("bench") => bench::run(&args[1..]),
        Some("typescript") => typescript::run(&args[1..]),
        Some("upstream-diff") => upstream_diff::run(&args[1..]),
        Some("dist") => dist::run(&args[1..]),
        Some("docs") => docs::run(&args[1..]),
        Some("-h" | "--help" | "help") | None => {
            print!("{HELP}");
            Ok(())
        }
        Some(other) => Err(format!("unknown command {other:?}\n\n{HELP}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The cargo that runs xtask (so nested builds use the same toolchain).
pub fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}

/// Cargo's target directory (honours `CARGO_TARGET_DIR` and cargo config).
pub fn target_dir() -> Result<PathBuf, String> {
    let out = std::process::Command::new(cargo())
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .current_dir(root())
        .output()
        .map_err(|e| format!("cannot run cargo metadata: {e}"))?;
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).map_err(|e| format!("cargo metadata: {e}"))?;
    v["target_directory"].as_str().map(PathBuf::from).ok_or_else(|| "cargo metadata has no target_directory".into())
}

/// The workspace root (xtask lives one level below it).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask is inside the workspace").to_path_buf()
}
