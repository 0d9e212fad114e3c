//! `acp-inject-load [--sessions N] [--operations N] [--window N] [--json FILE] -- AGENT…`: the
//! load test (`acp_inject_conformance::load`) against any agent: N sessions on one process,
//! mixed inject traffic, throughput and per-operation latency.

use std::process::ExitCode;

use acp_inject_conformance::load::{self, Options};
use clap::Parser;

/// Many sessions on one agent process under mixed inject traffic.
#[derive(Parser)]
#[command(version, about)]
struct Args {
    /// Sessions open at once.
    #[arg(long, default_value_t = 1000)]
    sessions: usize,
    /// Operations to answer after the sessions are open.
    #[arg(long, default_value_t = 50_000)]
    operations: usize,
    /// Requests in flight at once.
    #[arg(long, default_value_t = 64)]
    window: usize,
    /// The agent's --delay-ms.
    #[arg(long, default_value_t = 5)]
    delay_ms: u64,
    /// Put the agent on a SQLite store at this path (it is removed first).
    #[arg(long)]
    store: Option<std::path::PathBuf>,
    /// Also write the report as JSON to this file.
    #[arg(long)]
    json: Option<std::path::PathBuf>,
    /// The seed of the random choices.
    #[arg(long, default_value_t = 0x5EED)]
    seed: u64,
    /// The agent's program and arguments.
    #[arg(required = true, last = true)]
    command: Vec<String>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    if let Some(store) = &args.store {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", store.display()));
        }
    }
    let options = Options {
        command: args.command,
        sessions: args.sessions.max(1),
        operations: args.operations,
        window: args.window.max(1),
        delay_ms: args.delay_ms,
        seed: args.seed,
    };
    let report = match load::run(&options, args.store.as_deref()) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("{} sessions opened in {:.2} s", report.sessions, report.open_s);
    println!(
        "{} operations in {:.2} s: {:.0} ops/s; {} notifications read",
        report.operations, report.seconds, report.ops_per_s, report.notifications
    );
    for (kind, l) in &report.latency {
        println!("  {kind:<14} {:>7}  p50 {:>7} µs  p99 {:>7} µs  max {:>7} µs", l.count, l.p50_us, l.p99_us, l.max_us);
    }
    if let Some(kib) = report.agent_rss_kib {
        println!("agent resident memory: {kib} KiB");
    }
    if let Some(path) = args.json {
        let text = serde_json::to_string_pretty(&report).unwrap_or_default();
        if let Err(e) = std::fs::write(&path, text) {
            eprintln!("error: cannot write {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
