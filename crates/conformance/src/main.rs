//! `acp-inject-conformance [DIR|FILE…]`: replays conformance vectors through the Rust core and
//! prints `N passed, N failed` (default: `spec/vectors` of this repository).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

/// Replays conformance vectors through the Rust core.
#[derive(Parser)]
#[command(version, about)]
struct Args {
    /// Vector files or directories (searched recursively for `*.json`).
    paths: Vec<PathBuf>,
    /// Also write the report as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let paths =
        if args.paths.is_empty() { vec![PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../spec/vectors")] } else { args.paths };
    if let Some(missing) = paths.iter().find(|p| !p.exists()) {
        eprintln!("error: {} does not exist", missing.display());
        return ExitCode::from(2);
    }
    let report = acp_inject_conformance::run_dirs(&paths);
    print!("{}", report.render());
    if let Some(out) = args.json {
        let failures: Vec<serde_json::Value> = report
            .results
            .iter()
            .filter_map(|r| r.mismatch.as_ref().map(|m| serde_json::json!({ "name": r.name, "file": r.file, "mismatch": m })))
            .collect();
        let json = serde_json::json!({ "passed": report.passed(), "failed": report.failed(), "failures": failures });
        if let Err(e) = std::fs::write(&out, json.to_string()) {
            eprintln!("error: cannot write {}: {e}", out.display());
            return ExitCode::FAILURE;
        }
    }
    if report.results.is_empty() {
        eprintln!("error: no vector files found");
        return ExitCode::FAILURE;
    }
    if report.failed() > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
