//! `cargo xtask fuzz seed` writes the checked-in seed corpus (`fuzz/corpus/<target>/`) from
//! `spec/examples/` and the conformance vectors; `cargo xtask fuzz run [SECONDS]` runs every
//! target for SECONDS each (default 60) with cargo-fuzz (`cargo install cargo-fuzz`).
//! cargo-fuzz wants a nightly compiler; `RUSTC_BOOTSTRAP=1` lets the stable one take its flags.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde_json::Value;

use crate::process::run_ok;
use crate::{root, Error};

pub const TARGETS: [&str; 4] = ["wire_decode", "agent_line", "client_line", "agent_ops"];

#[derive(clap::Subcommand)]
pub enum Cmd {
    /// Rebuild the checked-in seed corpus (fuzz/corpus/) from spec/examples and the vectors.
    Seed,
    /// Run every fuzz target for SECONDS each (needs `cargo install cargo-fuzz`).
    Run {
        #[arg(default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
        seconds: u64,
    },
}

pub fn run(cmd: Cmd) -> Result<(), Error> {
    match cmd {
        Cmd::Seed => seed(),
        Cmd::Run { seconds } => fuzz(seconds),
    }
}

/// FNV-1a, so seed names are stable and duplicates collapse.
fn name(data: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in data {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    format!("seed-{h:016x}")
}

fn write(dir: &Path, data: &[u8]) -> Result<(), Error> {
    std::fs::create_dir_all(dir).map_err(|e| Error::write(dir, e))?;
    let path = dir.join(name(data));
    std::fs::write(&path, data).map_err(|e| Error::write(&path, e))
}

fn read_json(path: &Path) -> Result<Value, Error> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::read(path, e))?;
    serde_json::from_str(&text).map_err(|e| Error::msg(format!("{}: {e}", path.display())))
}

fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(json_files(&p));
            } else if p.extension().is_some_and(|x| x == "json") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn seed() -> Result<(), Error> {
    let root = root();
    let corpus = root.join("fuzz/corpus");
    let _ = std::fs::remove_dir_all(&corpus);
    // Every example message, one line each: wire decoding and both line endpoints.
    for f in json_files(&root.join("spec/examples")) {
        let line = read_json(&f)?.to_string();
        for t in ["wire_decode", "agent_line", "client_line"] {
            write(&corpus.join(t), line.as_bytes())?;
        }
    }
    // Every vector's conversation, as the lines each side receives.
    for f in json_files(&root.join("spec/vectors")) {
        let v = read_json(&f)?;
        let steps = v["steps"].as_array().cloned().unwrap_or_default();
        let client_lines: Vec<String> = steps.iter().filter_map(|s| s.get("client")).map(Value::to_string).collect();
        let agent_lines: Vec<String> = steps
            .iter()
            .filter_map(|s| {
                s.get("receive").cloned().or_else(|| s.get("expect").and_then(|e| e.as_array().map(|a| Value::Array(a.clone()))))
            })
            .flat_map(|v| match v {
                Value::Array(items) => {
                    items.into_iter().filter(|i| i.get("jsonrpc").is_some()).map(|i| i.to_string()).collect::<Vec<_>>()
                }
                other => vec![other.to_string()],
            })
            .collect();
        if !client_lines.is_empty() {
            write(&corpus.join("agent_line"), client_lines.join("\n").as_bytes())?;
        }
        if !agent_lines.is_empty() {
            write(&corpus.join("client_line"), agent_lines.join("\n").as_bytes())?;
        }
        // The operation target reads bytes as opcodes; the step kinds give it a start.
        let ops: Vec<u8> = std::iter::once(0u8)
            .chain(steps.iter().map(|s| {
                let m = s.get("client").and_then(|c| c["method"].as_str()).unwrap_or("");
                match (m, s.get("runtime").and_then(|r| r["event"].as_str())) {
                    ("session/inject", _) => 0x10,
                    ("session/prompt", _) => 4,
                    ("session/revoke_inject", _) => 5,
                    ("session/replace_inject", _) => 6,
                    ("session/cancel", _) => 7,
                    (_, Some("break_point")) => 8,
                    (_, Some("stream_started")) => 10,
                    (_, Some("stream_finished")) => 11,
                    (_, Some("permission_requested")) => 12,
                    (_, Some("permission_resolved")) => 13,
                    (_, Some("paused")) => 14,
                    (_, Some("turn_ended")) => 15,
                    _ => 1,
                }
            }))
            .collect();
        write(&corpus.join("agent_ops"), &ops)?;
    }
    for t in TARGETS {
        let n = std::fs::read_dir(corpus.join(t)).map(|d| d.count()).unwrap_or(0);
        println!("fuzz/corpus/{t}: {n} seeds");
    }
    Ok(())
}

fn fuzz(seconds: u64) -> Result<(), Error> {
    let root = root();
    let started = Instant::now();
    for (i, t) in TARGETS.iter().enumerate() {
        eprintln!("\n== fuzz [{}/{}] {t}: {seconds} s under AddressSanitizer (cargo-fuzz builds it first) ==", i + 1, TARGETS.len());
        // Runs on a copy of the seeds, so new inputs found do not churn the checked-in corpus.
        let work = root.join("fuzz/target/corpus-work").join(t);
        std::fs::create_dir_all(&work).map_err(|e| Error::write(&work, e))?;
        let seeds = root.join("fuzz/corpus").join(t);
        for e in std::fs::read_dir(&seeds).map_err(|e| Error::read(&seeds, e))?.flatten() {
            std::fs::copy(e.path(), work.join(e.file_name())).map_err(|e| Error::write(&work, e))?;
        }
        let mut cmd = Command::new("cargo");
        cmd.args(["fuzz", "run", t]).arg(&work).arg(&seeds);
        cmd.args(["--", &format!("-max_total_time={seconds}"), "-print_final_stats=1"]);
        // libFuzzer prints its status lines (`#N pulse cov: … exec/s: …`) as it goes.
        run_ok(cmd.env("RUSTC_BOOTSTRAP", "1").current_dir(root.join("fuzz"))).map_err(|e| {
            Error::msg(format!(
                "fuzz target {t}: {e} (a crash input lands in fuzz/artifacts/{t}/; cargo-fuzz: `cargo install cargo-fuzz`)"
            ))
        })?;
    }
    eprintln!("fuzz: every target ran {seconds} s without a failure ({:.0} s in all)", started.elapsed().as_secs_f64());
    Ok(())
}
