//! acp-inject-fuzzing: the fuzz corpus and campaigns behind `cargo xtask fuzz` (the targets
//! themselves are the cargo-fuzz workspace `fuzz/`).
//!
//! `cargo xtask fuzz seed` writes the seed corpus (`fuzz/corpus/<target>/`, not tracked: it is
//! regenerated, and grows on the machine that fuzzes) from `spec/examples/` and the conformance
//! vectors; `cargo xtask fuzz run [SECONDS] [TARGET…]` runs every target (or those named) for
//! SECONDS each (default 60) with cargo-fuzz (`cargo install cargo-fuzz`) on that corpus plus
//! the named inputs that once found a bug (`fuzz/regressions/<target>/`, tracked), then merges
//! what it found into the corpus, minimised (`-merge=1`), and adds the executions to
//! `fuzz/executions.json`, the running total the README's table is read from. cargo-fuzz wants a nightly compiler; `RUSTC_BOOTSTRAP=1` lets
//! the stable one take its flags.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde_json::Value;

use acp_inject_tool_support::process::run_ok;
use acp_inject_tool_support::{root, Error};

/// Targets whose input is a sequence of operations (one per byte), capped at this many bytes
/// (libFuzzer's `-max_len`): one execution costs in proportion to its length, and past a few
/// hundred operations a longer sequence reaches no state a shorter one cannot. The others take
/// libFuzzer's default (the longest seed, at least 4,096 bytes).
///
/// These targets are also built without comparison tracing (`--no-trace-compares`): their
/// input bytes are operation codes that plain edge coverage already tells apart, and no
/// comparison in the core is against a value taken from the input (message ids and texts are
/// the harness's own), so tracing compares cost a third of every execution and guided nothing.
const OPERATION_TARGETS: (&[&str], u64) = (&["agent_ops", "resume_replay"], 512);

pub const TARGETS: [&str; 9] = [
    "wire_decode",
    "agent_line",
    "client_connection",
    "framer",
    "agent_ops",
    "resume_replay",
    "remote_framing",
    "server_requests",
    "server_websocket",
];

#[derive(clap::Subcommand)]
pub enum Cmd {
    /// Write the seed corpus (fuzz/corpus/, not tracked) from spec/examples and the vectors.
    Seed,
    /// Run every fuzz target (or those named) for SECONDS each (needs `cargo install cargo-fuzz`).
    Run {
        #[arg(default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
        seconds: u64,
        /// Only these targets.
        #[arg(value_parser = clap::builder::PossibleValuesParser::new(TARGETS))]
        targets: Vec<String>,
        /// cargo-fuzz's sanitizer. The fuzzed crates deny `unsafe` code, so by default the
        /// campaign runs without one (several times the executions per second); `address`
        /// adds AddressSanitizer.
        #[arg(long, default_value = "none", value_parser = ["none", "address"])]
        sanitizer: String,
        /// libFuzzer worker processes per target (`-fork=N`); 0: one process.
        #[arg(long, default_value_t = 0)]
        fork: u32,
        /// The operation targets' input cap (`-max_len`, one operation per byte); default 512.
        #[arg(long, value_parser = clap::value_parser!(u64).range(16..=4096))]
        max_len: Option<u64>,
    },
}

/// `cargo xtask fuzz seed` or `cargo xtask fuzz run …`.
pub fn run(cmd: Cmd) -> Result<(), Error> {
    match cmd {
        Cmd::Seed => seed(),
        Cmd::Run { seconds, targets, sanitizer, fork, max_len } => fuzz(seconds, &targets, &sanitizer, fork, max_len),
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
        for t in ["wire_decode", "agent_line", "client_connection"] {
            write(&corpus.join(t), line.as_bytes())?;
        }
        // The framer: a limit byte, then the line with a CRLF and a bare LF.
        let framed = [&[40u8][..], line.as_bytes(), b"\r\n", line.as_bytes(), b"\n"].concat();
        write(&corpus.join("framer"), &framed)?;
        // The network framing: a limit byte, then the line as an SSE event, a keepalive, and
        // the line again split over two `data:` lines with CRLF ends.
        let (a, b) = line.split_at(line.len() / 2);
        let sse =
            [&[127u8][..], b"data: ", line.as_bytes(), b"\n\n:\n\ndata: ", a.as_bytes(), b"\r\ndata:", b.as_bytes(), b"\r\n\r\n"]
                .concat();
        write(&corpus.join("remote_framing"), &sse)?;
    }
    // The listener's other requests: a session stream resumed from an event id, a DELETE, a
    // browser's preflight, a WebSocket upgrade, a request without the token.
    let requests: [(u8, u8, &[u8]); 5] = [
        (0, 0b011, b"accept: text/event-stream\nacp-connection-id: c1\nacp-session-id: s1\nlast-event-id: 3\n\n"),
        (2, 0b011, b"acp-connection-id: c1\n\n"),
        (3, 0b010, b"origin: https://app.example\naccess-control-request-method: POST\n\n"),
        (
            0,
            0b011,
            b"upgrade: websocket\nconnection: upgrade\nsec-websocket-version: 13\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\n\n",
        ),
        (1, 0b110, b"accept: application/json\n\n{}"),
    ];
    for (method, flags, rest) in requests {
        write(&corpus.join("server_requests"), &[&[method, flags][..], rest].concat())?;
    }
    // WebSocket sessions (`[flags, then head, kind, len, payload…]` per frame; kind 4: a client
    // line of the target's): a whole conversation then a close; a ping, a fragmented text and
    // a binary frame; an over-limit message; raw bytes; an upgrade without the token.
    let conversation: Vec<u8> = [0u8, 1, 2, 3, 4, 5].iter().flat_map(|i| [0x81, 4, *i]).chain([0x88, 0, 2, 0x03, 0xe8]).collect();
    let websocket: [Vec<u8>; 5] = [
        [&[0u8][..], &conversation].concat(),
        vec![0, 0x89, 0, 1, b'p', 0x01, 0, 2, b'{', b'"', 0x80, 0, 1, b'}', 0x82, 0, 1, 0xff],
        vec![0, 0x81, 8, 3],
        [&[2u8][..], b"\x81\x05hello\x88\x00"].concat(),
        [&[1u8][..], &conversation].concat(),
    ];
    for input in &websocket {
        write(&corpus.join("server_websocket"), input)?;
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
        // The listener: each client line as an authorized JSON POST (method 1, flags: the
        // token, `/acp`, the content type), naming a session and a connection.
        for line in &client_lines {
            let head = b"accept: application/json, text/event-stream\nacp-session-id: s1\nacp-connection-id: c1\n\n";
            write(&corpus.join("server_requests"), &[&[1u8, 0b111][..], head, line.as_bytes()].concat())?;
        }
        if !agent_lines.is_empty() {
            // The first byte is the chunk size the target cuts the stream into.
            write(&corpus.join("client_connection"), [&[7u8][..], agent_lines.join("\n").as_bytes()].concat().as_slice())?;
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
        // resume_replay's opcodes (`op % 12`), the first byte choosing close-then-resume.
        let replay_ops: Vec<u8> = std::iter::once(1u8)
            .chain(steps.iter().map(|s| {
                let m = s.get("client").and_then(|c| c["method"].as_str()).unwrap_or("");
                match (m, s.get("runtime").and_then(|r| r["event"].as_str())) {
                    ("session/inject", _) => 0,
                    ("session/prompt", _) => 3,
                    ("session/revoke_inject", _) => 4,
                    ("session/replace_inject", _) => 5,
                    ("session/cancel", _) => 6,
                    (_, Some("break_point")) => 7,
                    (_, Some("update")) => 9,
                    _ => 10,
                }
            }))
            .collect();
        write(&corpus.join("resume_replay"), &replay_ops)?;
    }
    for t in TARGETS {
        let n = std::fs::read_dir(corpus.join(t)).map(|d| d.count()).unwrap_or(0);
        println!("fuzz/corpus/{t}: {n} seeds");
    }
    Ok(())
}

/// Executions so far, per target, across runs (`fuzz/executions.json`).
fn load_totals(path: &Path) -> Result<serde_json::Map<String, Value>, Error> {
    match std::fs::read_to_string(path) {
        Ok(text) => match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(m)) => Ok(m),
            _ => Err(Error::msg(format!("{} is not a JSON object", path.display()))),
        },
        Err(_) => Ok(serde_json::Map::new()),
    }
}

/// libFuzzer's `stat::number_of_executed_units: N` (printed with `-print_final_stats=1`), or in
/// fork mode, where the parent prints no final stats, the count of its last `#N: cov: …` line.
fn executed_units(output: &str) -> Option<u64> {
    let last = |prefix: &str| -> Option<u64> {
        output.lines().rev().find_map(|l| l.strip_prefix(prefix)).and_then(|n| n.split(':').next()?.trim().parse().ok())
    };
    last("stat::number_of_executed_units:").or_else(|| {
        output.lines().rev().find(|l| l.starts_with('#') && l.contains(": cov:")).and_then(|l| l[1..].split(':').next()?.parse().ok())
    })
}

fn fuzz(seconds: u64, only: &[String], sanitizer: &str, fork: u32, max_len_arg: Option<u64>) -> Result<(), Error> {
    let root = root();
    let started = Instant::now();
    let targets: Vec<&str> = TARGETS.iter().copied().filter(|t| only.is_empty() || only.iter().any(|o| o == t)).collect();
    let totals_path = root.join("fuzz/executions.json");
    for (i, t) in targets.iter().enumerate() {
        eprintln!("\n== fuzz [{}/{}] {t}: {seconds} s, sanitizer {sanitizer} (cargo-fuzz builds it first) ==", i + 1, targets.len());
        // Runs on a copy of the seeds; what it finds is merged back, minimised, afterwards.
        // Per process: several runs of one target may go at once (one per core).
        let work = root.join("fuzz/target/corpus-work").join(format!("{t}-{}", std::process::id()));
        std::fs::create_dir_all(&work).map_err(|e| Error::write(&work, e))?;
        let seeds = root.join("fuzz/corpus").join(t);
        if !seeds.is_dir() {
            // A fresh clone: the corpus is not tracked; its seeds come from the spec.
            seed()?;
        }
        // The corpus this machine has grown, and the named inputs that once found a bug
        // (fuzz/regressions/, tracked), every run.
        for dir in [seeds.clone(), root.join("fuzz/regressions").join(t)] {
            for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                std::fs::copy(e.path(), work.join(e.file_name())).map_err(|e| Error::write(&work, e))?;
            }
        }
        let max_len = OPERATION_TARGETS.0.contains(t).then_some(max_len_arg.unwrap_or(OPERATION_TARGETS.1));
        let build_flags: &[&str] = if max_len.is_some() { &["--no-trace-compares"] } else { &[] };
        let mut cmd = Command::new("cargo");
        cmd.args(["fuzz", "run", "--sanitizer", sanitizer]).args(build_flags).arg(t).arg(&work);
        cmd.args(["--", &format!("-max_total_time={seconds}"), "-print_final_stats=1"]);
        if let Some(n) = max_len {
            cmd.arg(format!("-max_len={n}"));
        }
        if fork > 0 {
            cmd.arg(format!("-fork={fork}"));
        }
        // libFuzzer prints its status lines (`#N pulse cov: … exec/s: …`) as it goes.
        // Sanitizer flags in the shared target dir would rebuild (and replace) every artifact
        // there; fuzz builds keep to fuzz/target.
        cmd.env_remove("CARGO_TARGET_DIR");
        let ran = run_ok(cmd.env("RUSTC_BOOTSTRAP", "1").current_dir(root.join("fuzz"))).map_err(|e| {
            Error::msg(format!(
                "fuzz target {t}: {e} (a crash input lands in fuzz/artifacts/{t}/; cargo-fuzz: `cargo install cargo-fuzz`)"
            ))
        })?;
        let executed = executed_units(&ran.stdout).ok_or_else(|| Error::msg(format!("{t}: libFuzzer printed no final stats")))?;
        // Minimise the corpus together with what this run found, and add the
        // executions to the totals, holding a lock: runs that go at once (of one target or of
        // several) finish one after another.
        let lock_path = root.join("fuzz/target/executions.lock");
        let lock = std::fs::File::create(&lock_path).map_err(|e| Error::write(&lock_path, e))?;
        lock.lock().map_err(|e| Error::write(&lock_path, e))?;
        let merged = root.join("fuzz/target/corpus-merged").join(t);
        let _ = std::fs::remove_dir_all(&merged);
        std::fs::create_dir_all(&merged).map_err(|e| Error::write(&merged, e))?;
        let mut cmd = Command::new("cargo");
        cmd.args(["fuzz", "run", "--sanitizer", sanitizer]).args(build_flags).arg(t).arg(&merged).arg(&seeds).arg(&work);
        cmd.args(["--", "-merge=1"]).env_remove("CARGO_TARGET_DIR");
        run_ok(cmd.env("RUSTC_BOOTSTRAP", "1").current_dir(root.join("fuzz")))?;
        std::fs::remove_dir_all(&seeds).map_err(|e| Error::write(&seeds, e))?;
        std::fs::rename(&merged, &seeds).map_err(|e| Error::write(&seeds, e))?;
        let _ = std::fs::remove_dir_all(&work);
        let mut totals = load_totals(&totals_path)?;
        let entry = totals.entry((*t).to_owned()).or_insert_with(|| serde_json::json!({ "executions": 0, "seconds": 0, "runs": 0 }));
        for (key, add) in [("executions", executed), ("seconds", seconds), ("runs", 1)] {
            entry[key] = Value::from(entry[key].as_u64().unwrap_or(0) + add);
        }
        // The caps the target's runs used, in the order first used.
        if let Some(n) = max_len {
            let mut caps: Vec<Value> = match entry.get("max_len") {
                Some(Value::Array(a)) => a.clone(),
                Some(v @ Value::Number(_)) => vec![v.clone()],
                _ => Vec::new(),
            };
            if !caps.contains(&Value::from(n)) {
                caps.push(Value::from(n));
            }
            entry["max_len"] = Value::Array(caps);
        }
        let text = serde_json::to_string_pretty(&Value::Object(totals)).map_err(|e| Error::msg(e.to_string()))? + "\n";
        std::fs::write(&totals_path, text).map_err(|e| Error::write(&totals_path, e))?;
        drop(lock);
        let corpus = std::fs::read_dir(&seeds).map(|d| d.count()).unwrap_or(0);
        eprintln!("fuzz {t}: {executed} executions, no failure; corpus now {corpus} inputs");
    }
    eprintln!(
        "fuzz: {} target(s) ran {seconds} s each without a failure ({:.0} s in all)",
        targets.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::executed_units;

    #[test]
    fn executions_are_read_from_final_stats_or_the_last_fork_status_line() {
        let single =
            "#83332\tDONE   cov: 1672 ft: 10504 corp: 710/30Kb\nstat::number_of_executed_units: 83332\nstat::peak_rss_mb: 36\n";
        assert_eq!(executed_units(single), Some(83332));
        let fork = "#29158: cov: 1668 ft: 10719 corp: 692 exec/s: 1246\n#49526: cov: 1673 ft: 10770 corp: 714 exec/s: 1454\nINFO: exiting: 0 time: 21s\n";
        assert_eq!(executed_units(fork), Some(49526));
        assert_eq!(executed_units("INFO: nothing ran\n"), None);
    }
}
