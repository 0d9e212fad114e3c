//! `cargo xtask fuzz seed` writes the checked-in seed corpus (`fuzz/corpus/<target>/`) from
//! `spec/examples/` and the conformance vectors; `cargo xtask fuzz run [SECONDS]` runs every
//! target for SECONDS each (default 60) with cargo-fuzz (`cargo install cargo-fuzz`).
//! cargo-fuzz wants a nightly compiler; `RUSTC_BOOTSTRAP=1` lets the stable one take its flags.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::root;

pub const TARGETS: [&str; 4] = ["wire_decode", "agent_line", "client_line", "agent_ops"];

pub fn run(args: &[String]) -> Result<(), String> {
    match args.first().map(String::as_str) {
        Some("seed") => seed(),
        Some("run") => {
            let seconds: u64 = args.get(1).map(|s| s.parse().map_err(|e| format!("SECONDS: {e}"))).transpose()?.unwrap_or(60);
            fuzz(seconds)
        }
        _ => Err("usage: cargo xtask fuzz seed | cargo xtask fuzz run [SECONDS]".into()),
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

fn write(dir: &Path, data: &[u8]) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    std::fs::write(dir.join(name(data)), data).map_err(|e| e.to_string())
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

fn seed() -> Result<(), String> {
    let root = root();
    let corpus = root.join("fuzz/corpus");
    let _ = std::fs::remove_dir_all(&corpus);
    // Every example message, one line each: wire decoding and both line endpoints.
    for f in json_files(&root.join("spec/examples")) {
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&f).map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
        let line = v.to_string();
        for t in ["wire_decode", "agent_line", "client_line"] {
            write(&corpus.join(t), line.as_bytes())?;
        }
    }
    // Every vector's conversation, as the lines each side receives.
    for f in json_files(&root.join("spec/vectors")) {
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&f).map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
        let steps = v["steps"].as_array().cloned().unwrap_or_default();
        let client_lines: Vec<String> = steps.iter().filter_map(|s| s.get("client")).map(Value::to_string).collect();
        let agent_lines: Vec<String> = steps
            .iter()
            .filter_map(|s| s.get("receive").cloned().or_else(|| s.get("expect").and_then(|e| e.as_array().map(|a| Value::Array(a.clone())))))
            .flat_map(|v| match v {
                Value::Array(items) => items.into_iter().filter(|i| i.get("jsonrpc").is_some()).map(|i| i.to_string()).collect::<Vec<_>>(),
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

fn fuzz(seconds: u64) -> Result<(), String> {
    let root = root();
    for t in TARGETS {
        // Runs on a copy of the seeds, so new inputs found do not churn the checked-in corpus.
        let work = root.join("fuzz/target/corpus-work").join(t);
        std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
        for e in std::fs::read_dir(root.join("fuzz/corpus").join(t)).map_err(|e| e.to_string())?.flatten() {
            std::fs::copy(e.path(), work.join(e.file_name())).map_err(|e| e.to_string())?;
        }
        eprintln!("+ cargo fuzz run {t} -- -max_total_time={seconds}");
        let status = Command::new("cargo")
            .args(["fuzz", "run", t])
            .arg(&work)
            .arg(root.join("fuzz/corpus").join(t))
            .args(["--", &format!("-max_total_time={seconds}"), "-print_final_stats=1"])
            .env("RUSTC_BOOTSTRAP", "1")
            .current_dir(root.join("fuzz"))
            .status()
            .map_err(|e| format!("cannot run cargo fuzz (cargo install cargo-fuzz): {e}"))?;
        if !status.success() {
            return Err(format!("fuzz target {t} found a failure (see fuzz/artifacts/{t}/)"));
        }
    }
    Ok(())
}
