//! `acp-inject-blackbox -- AGENT_COMMAND [ARGS…]`: the black-box stdio suite against any agent
//! that accepts `--delay-ms MS` and `--store PATH`. Prints one line per check and exits 1 when
//! any fails.

use std::process::ExitCode;

use clap::Parser;

/// Runs the black-box stdio suite against an agent command.
#[derive(Parser)]
#[command(version, about)]
struct Args {
    /// Where the suite keeps its store files (default: a new directory under the temp dir).
    #[arg(long)]
    dir: Option<std::path::PathBuf>,
    /// Keep the stores in this PostgreSQL database instead (`postgres://…`; a fresh one).
    #[arg(long, value_name = "URL")]
    store_url: Option<String>,
    /// The agent's program and arguments.
    #[arg(required = true, last = true)]
    command: Vec<String>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let dir = args.dir.unwrap_or_else(|| std::env::temp_dir().join(format!("acp-inject-blackbox-{}", std::process::id())));
    let suite = match acp_inject_conformance::blackbox::Suite::new(args.command, &dir) {
        Ok(s) => match &args.store_url {
            Some(url) => s.with_store_url(url),
            None => s,
        },
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let results = suite.run();
    let failed = results.iter().filter(|r| r.failure.is_some()).count();
    for r in &results {
        match &r.failure {
            None => println!("ok      {} ({:.1} s)", r.name, r.elapsed.as_secs_f64()),
            Some(f) => println!("FAILED  {} ({:.1} s)\n        {}", r.name, r.elapsed.as_secs_f64(), f.replace('\n', "\n        ")),
        }
    }
    println!("{} passed, {failed} failed", results.len() - failed);
    let _ = std::fs::remove_dir_all(&dir);
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
