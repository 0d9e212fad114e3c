//! `acp-inject-crash [--kills N] [--seed S] -- AGENT_COMMAND [ARGS…]`: the crash campaign
//! (`acp_inject_conformance::crash`) against any agent that accepts `--store PATH` and
//! `--delay-ms MS`. Prints `N kills, N lost, N duplicated` and exits 1 unless nothing was lost,
//! duplicated or stale.
//!
//! `--hosts 2 --store-url postgres://…`: the two-host campaign
//! (`acp_inject_conformance::hosts`) instead: two hosts on one PostgreSQL store, serving over
//! the network, killed or paused under load; prints `N kills, N lost, N duplicated, N served
//! twice` and the handoff times.

use std::io::Write;
use std::process::ExitCode;
use std::time::Instant;

use acp_inject_conformance::crash::{self, Options};
use acp_inject_conformance::hosts;
use clap::Parser;

/// Kills an agent at random points under load and checks that no accepted input is lost or
/// delivered twice.
#[derive(Parser)]
#[command(version, about)]
struct Args {
    /// How many times to kill the agent.
    #[arg(long, default_value_t = 1000)]
    kills: u32,
    /// The seed of every random choice [default: from the clock, printed].
    #[arg(long)]
    seed: Option<u64>,
    /// Sessions under load at once.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=64))]
    sessions: u64,
    /// The agent's --delay-ms (its model's time per step).
    #[arg(long, default_value_t = 2)]
    delay_ms: u64,
    /// Where the store file goes [default: a new directory under the temp dir].
    #[arg(long)]
    dir: Option<std::path::PathBuf>,
    /// Agent hosts: 1 (stdio, a SQLite file) or 2 (network, sharing `--store-url`).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=2), requires_if("2", "store_url"))]
    hosts: u8,
    /// With `--hosts 2`: the PostgreSQL database both hosts share (a fresh one).
    #[arg(long, value_name = "URL")]
    store_url: Option<String>,
    /// With `--hosts 2`: the hosts' lease, in milliseconds.
    #[arg(long, default_value_t = 1000)]
    lease_ms: u64,
    /// The agent's program and arguments.
    #[arg(required = true, last = true)]
    command: Vec<String>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let seed = args
        .seed
        .unwrap_or_else(|| std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64) | 1);
    if args.hosts == 2 {
        return two_hosts(&args, seed);
    }
    let dir = args.dir.unwrap_or_else(|| std::env::temp_dir().join(format!("acp-inject-crash-{}", std::process::id())));
    println!("crash campaign: {} kills, seed {seed} (rerun with --seed {seed})", args.kills);
    let options = Options {
        command: args.command,
        dir: dir.clone(),
        kills: args.kills,
        seed,
        sessions: args.sessions as usize,
        delay_ms: args.delay_ms,
    };
    let started = Instant::now();
    let result = crash::run(&options, |k| {
        if k % 50 == 0 || k == options.kills {
            print!("\r{k}/{} kills ({:.0} s)", options.kills, started.elapsed().as_secs_f64());
            let _ = std::io::stdout().flush();
        }
    });
    println!();
    let _ = std::fs::remove_dir_all(&dir);
    let report = match result {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error (seed {seed}): {e}");
            return ExitCode::FAILURE;
        }
    };
    for problem in report.lost.iter().chain(&report.duplicated).chain(&report.stale).take(20) {
        println!("  {problem}");
    }
    println!(
        "{} accepted, {} revoked, {} replaced, {} delivered; {:.0} s",
        report.accepted,
        report.revoked,
        report.replaced,
        report.delivered,
        started.elapsed().as_secs_f64()
    );
    println!(
        "{} kills, {} lost, {} duplicated{}",
        report.kills,
        report.lost.len(),
        report.duplicated.len(),
        if report.stale.is_empty() { String::new() } else { format!(", {} stale", report.stale.len()) }
    );
    if report.ok() {
        ExitCode::SUCCESS
    } else {
        println!("seed {seed}");
        ExitCode::FAILURE
    }
}

fn two_hosts(args: &Args, seed: u64) -> ExitCode {
    let options = hosts::Options {
        command: args.command.clone(),
        store_url: args.store_url.clone().unwrap_or_default(),
        kills: args.kills,
        seed,
        delay_ms: args.delay_ms,
        lease_ms: args.lease_ms,
    };
    println!("two-host crash campaign: {} failures, seed {seed} (rerun with --seed {seed})", args.kills);
    let started = Instant::now();
    let result = hosts::run(&options, |k| {
        if k % 10 == 0 || k == options.kills {
            print!("\r{k}/{} failures ({:.0} s)", options.kills, started.elapsed().as_secs_f64());
            let _ = std::io::stdout().flush();
        }
    });
    println!();
    let report = match result {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error (seed {seed}): {e}");
            return ExitCode::FAILURE;
        }
    };
    for problem in report.lost.iter().chain(&report.duplicated).chain(&report.served_twice).take(20) {
        println!("  {problem}");
    }
    println!(
        "{} killed, {} paused; {} accepted, {} delivered; handoff p50 {} ms, p99 {} ms, max {} ms; {:.0} s",
        report.kills,
        report.pauses,
        report.accepted,
        report.delivered,
        report.handoff_quantile(0.5),
        report.handoff_quantile(0.99),
        report.handoff_quantile(1.0),
        started.elapsed().as_secs_f64()
    );
    println!(
        "{} kills, {} lost, {} duplicated, {} served twice",
        report.kills + report.pauses,
        report.lost.len(),
        report.duplicated.len(),
        report.served_twice.len()
    );
    if report.ok() {
        ExitCode::SUCCESS
    } else {
        println!("seed {seed}");
        ExitCode::FAILURE
    }
}
