//! `cargo xtask crash [N] [--seed S]`: the crash campaign (`acp-inject-crash`, from
//! crates/conformance) against the reference agent on its SQLite store: N SIGKILLs at seeded
//! random points under load, then `N kills, 0 lost, 0 duplicated` or a failure.

use std::process::Command;

use crate::process::{self, Echo};
use crate::test::Counts;
use crate::Error;

/// Runs the campaign; returns the summary line's counts as tests (kills passed or failed).
pub fn campaign(kills: u32, seed: Option<u64>) -> Result<Counts, Error> {
    let agent = crate::pyenv::cargo_bin("acp-inject-reference-agent", "acp-inject-agent")?;
    let crash = crate::pyenv::cargo_bin("acp-inject-conformance", "acp-inject-crash")?;
    let mut cmd = Command::new(crash);
    cmd.args(["--kills", &kills.to_string()]);
    if let Some(seed) = seed {
        cmd.args(["--seed", &seed.to_string()]);
    }
    let ran = process::run(cmd.arg("--").arg(agent), Echo::All)?;
    if ran.success() {
        Ok(Counts { passed: u64::from(kills), failed: 0, skipped: 0 })
    } else {
        Err(Error::msg("the crash campaign found lost or duplicated messages (its seed is printed above)"))
    }
}

pub fn run(kills: u32, seed: Option<u64>) -> Result<(), Error> {
    campaign(kills, seed).map(drop)
}
