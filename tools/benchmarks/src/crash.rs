//! `cargo xtask crash [N] [--seed S] [--hosts 2]`: the crash campaigns of `acp-inject-crash`
//! (crates/conformance). One host: the reference agent on its SQLite store, N SIGKILLs at
//! seeded random points under load, then `N kills, 0 lost, 0 duplicated` or a failure. Two
//! hosts: two reference agents serving over the network on one PostgreSQL database
//! (`ACP_INJECT_POSTGRES_URL`, else a private server started for the run), killed or paused
//! in turn under load while the client moves between them; then
//! `N kills, 0 lost, 0 duplicated, 0 served twice` and the handoff times.

use std::process::Command;

use acp_inject_postgres_harness::Server;
use acp_inject_tool_support::process::{self, Echo};
use acp_inject_tool_support::{cargo_bin, Error};

/// The two-host campaign's lease: a dead host's sessions wait this long for the other host.
pub const LEASE_MS: u64 = 1000;

/// Runs the one-host campaign; fails when anything was lost or delivered twice.
pub fn campaign(kills: u32, seed: Option<u64>) -> Result<(), Error> {
    let agent = cargo_bin("acp-inject-reference-agent", "acp-inject-agent")?;
    let crash = cargo_bin("acp-inject-conformance", "acp-inject-crash")?;
    let mut cmd = Command::new(crash);
    cmd.args(["--kills", &kills.to_string()]);
    if let Some(seed) = seed {
        cmd.args(["--seed", &seed.to_string()]);
    }
    let ran = process::run(cmd.arg("--").arg(agent), Echo::All)?;
    if ran.success() {
        Ok(())
    } else {
        Err(Error::msg("the crash campaign found lost or duplicated messages (its seed is printed above)"))
    }
}

/// Runs the two-host campaign with the reference agent on a fresh database; returns its output
/// (the summary lines).
pub fn two_hosts(kills: u32, seed: Option<u64>, server: &Server) -> Result<String, Error> {
    let agent = cargo_bin("acp-inject-reference-agent", "acp-inject-agent")?;
    two_hosts_of(&[agent.display().to_string()], "acp_crash_hosts", kills, seed, server)
}

/// Runs the two-host campaign with `agent` (a command that accepts `--listen`, `--store` and
/// `--delay-ms`) on the fresh database `database`.
pub fn two_hosts_of(agent: &[String], database: &str, kills: u32, seed: Option<u64>, server: &Server) -> Result<String, Error> {
    let crash = cargo_bin("acp-inject-conformance", "acp-inject-crash")?;
    let url = server.create_database(database)?;
    let mut cmd = Command::new(crash);
    cmd.args(["--hosts", "2", "--store-url", &url, "--lease-ms", &LEASE_MS.to_string(), "--delay-ms", "20"]);
    cmd.args(["--kills", &kills.to_string()]);
    if let Some(seed) = seed {
        cmd.args(["--seed", &seed.to_string()]);
    }
    let ran = process::run(cmd.arg("--").args(agent), Echo::All)?;
    if ran.success() {
        Ok(ran.stdout)
    } else {
        Err(Error::msg("the two-host crash campaign found lost, duplicated or twice-served messages (its seed is printed above)"))
    }
}

/// `cargo xtask crash KILLS [--seed S] [--hosts 1|2]`.
pub fn run(kills: u32, seed: Option<u64>, hosts: u8) -> Result<(), Error> {
    if hosts == 2 {
        let server = acp_inject_postgres_harness::start()?;
        return two_hosts(kills, seed, &server).map(drop);
    }
    campaign(kills, seed)
}
