//! The durability and scale part of `cargo xtask bench`: the SQLite store against the
//! in-memory one (criterion, `crates/store/benches/store.rs`), memory per pending inject (the
//! counting-allocator bench of `crates/core/benches/pending.rs`), the crash campaign
//! (`acp-inject-crash`), the load test (`acp-inject-load`) and 1,000 WebSocket sessions
//! (`crates/remote/benches/websocket_load.rs`), as a BENCHMARKS.md section.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use acp_inject_tool_support::process::{self, Echo};
use acp_inject_tool_support::{cargo, cargo_bin, target_dir, Error};

/// Criterion's median time per iteration, in nanoseconds, of one benchmark id.
fn criterion_median_ns(target: &Path, group: &str, id: &str) -> Result<f64, Error> {
    // Criterion keeps `function/parameter` as two directories and writes a `/` inside the
    // function name as `_`.
    let dir = match id.rsplit_once('/') {
        Some((function, parameter)) => Path::new(&function.replace('/', "_")).join(parameter),
        None => Path::new(id).to_path_buf(),
    };
    let path = target.join("criterion").join(group).join(dir).join("new/estimates.json");
    let text = std::fs::read_to_string(&path).map_err(|e| Error::read(&path, e))?;
    let v: Value = serde_json::from_str(&text).map_err(|e| Error::msg(format!("{}: {e}", path.display())))?;
    v["median"]["point_estimate"].as_f64().ok_or_else(|| Error::msg(format!("{}: no median", path.display())))
}

/// The first line of `text` starting with `prefix`, after the prefix.
fn line_after<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    text.lines().find_map(|l| l.trim_start().strip_prefix(prefix))
}

/// The numbers in a line, in order.
fn numbers(line: &str) -> Vec<f64> {
    line.split(|c: char| !(c.is_ascii_digit() || c == '.')).filter_map(|w| w.parse().ok()).collect()
}

pub fn section() -> Result<String, Error> {
    let target = target_dir()?;
    let mut md = String::new();

    eprintln!("\nbench: the store (criterion, crates/store/benches/store.rs), PostgreSQL on a private server");
    let server = acp_inject_postgres_harness::start()?;
    let mut cmd = Command::new(cargo());
    cmd.args(["bench", "-p", "acp-inject-store", "--features", "postgres", "--bench", "store", "--", "--noplot"]);
    cmd.env(acp_inject_postgres_harness::URL_ENV, &server.url);
    process::run(&mut cmd, Echo::All)?.check()?;
    let per_s = |group: &str, id: &str, per: f64| criterion_median_ns(&target, group, id).map(|ns| per * 1e9 / ns);
    let _ = writeln!(md, "\n## Durability: the SQLite and PostgreSQL stores\n");
    let _ = writeln!(
        md,
        "`cargo bench -p acp-inject-store --features postgres --bench store`, through the agent as a host drives it \
         (criterion medians; the SQLite database in the system's temporary directory and the PostgreSQL 15 cluster in the \
         cache directory, both on the machine's disk; PostgreSQL on loopback, `fsync` and `synchronous_commit` on). \
         Durable means one commit per drain that returns only once flushed: SQLite in WAL mode with `synchronous=FULL` \
         for every commit that carries an answer; PostgreSQL with its write-ahead log flushed at commit, a batch's \
         statements pipelined in one round trip, each written session's lease renewed and fenced in the same \
         transaction.\n"
    );
    let _ = writeln!(md, "| inject accepts/s | memory | SQLite in memory | SQLite on disk (durable) | PostgreSQL (durable, shared) |");
    let _ = writeln!(md, "|---|---|---|---|---|");
    for batch in [1u32, 100] {
        let id = |backend: &str| format!("{backend}/{batch}-per-drain");
        let (m, i, d, p) = (
            per_s("accept", &id("memory"), f64::from(batch))?,
            per_s("accept", &id("sqlite-in-memory"), f64::from(batch))?,
            per_s("accept", &id("sqlite"), f64::from(batch))?,
            per_s("accept", &id("postgres"), f64::from(batch))?,
        );
        let _ = writeln!(md, "| {batch} per drain | {m:.0} | {i:.0} | {d:.0} | {p:.0} |");
    }
    let _ = writeln!(
        md,
        "\nOne operation on a session with 10 and with 10,000 history entries (µs; flat means no cost grows with the history):\n"
    );
    let _ = writeln!(md, "| store | operation | 10 entries | 10,000 entries | ratio |");
    let _ = writeln!(md, "|---|---|---|---|---|");
    for (backend, shown) in [("sqlite", "SQLite on disk"), ("postgres", "PostgreSQL")] {
        for op in ["inject+drain", "append+drain", "100-injects+drain"] {
            let at = |n: u32| criterion_median_ns(&target, "history", &format!("{backend}/{op}/{n}"));
            let (small, large) = (at(10)? / 1e3, at(10_000)? / 1e3);
            let _ = writeln!(md, "| {shown} | {op} | {small:.1} | {large:.1} | {:.2} |", large / small);
        }
    }

    eprintln!("\nbench: memory per pending inject (crates/core/benches/pending.rs, counting allocator)");
    let mut cmd = Command::new(cargo());
    cmd.args(["bench", "-p", "acp-inject-core", "--bench", "pending", "--", "--test"]);
    let out = process::run(&mut cmd, Echo::All)?.check()?;
    let bytes = line_after(&out.stdout, "bytes per pending inject at 100000:").map(numbers).unwrap_or_default();
    if let [total, content, ..] = bytes[..] {
        let _ = writeln!(
            md,
            "\n## Memory per pending inject\n\n`cargo bench -p acp-inject-core --bench pending`: {total:.0} bytes of heap per \
             pending inject with 100,000 pending (target ≤ 512), of which {content:.0} are its content (one text block); the \
             rest is its slot in the session's queue and its index entry.\n"
        );
    }

    eprintln!("\nbench: the crash campaign (1000 kills of the reference agent)");
    let agent = cargo_bin("acp-inject-reference-agent", "acp-inject-agent")?;
    let crash = cargo_bin("acp-inject-conformance", "acp-inject-crash")?;
    let mut cmd = Command::new(&crash);
    cmd.args(["--kills", "1000", "--seed", "20261122", "--"]).arg(&agent);
    let out = process::run(&mut cmd, Echo::All)?.check()?;
    let summary = out.stdout.lines().rev().find(|l| l.contains(" kills, ")).unwrap_or("no summary").trim().to_owned();
    let counts = out.stdout.lines().rev().find(|l| l.contains(" accepted, ")).unwrap_or("").trim().to_owned();
    let _ = writeln!(
        md,
        "\n## Crash campaign\n\n`cargo xtask crash 1000 --seed 20261122`: the reference agent on its SQLite store, SIGKILLed \
         at 1000 seeded random points under pipelined prompts, queue and steer injects, revokes, replaces and cancels over \
         3 sessions; restarted and resumed each time; at the end every session replayed and judged from the client's log.\n\n\
         **{summary}** ({counts}).\n"
    );

    eprintln!("\nbench: the two-host crash campaign (1000 kills and pauses, PostgreSQL)");
    let out = crate::crash::two_hosts(1000, Some(20261126), &server)?;
    drop(server);
    let summary = out.lines().rev().find(|l| l.contains(" served twice")).unwrap_or("no summary").trim().to_owned();
    let detail = out.lines().rev().find(|l| l.contains(" handoff p50 ")).unwrap_or("").trim().to_owned();
    let _ = writeln!(
        md,
        "\n## Two hosts on one PostgreSQL database\n\n`cargo xtask crash --hosts 2 1000 --seed 20261126`: two \
         `acp-inject-agent --listen` hosts on one database (lease {} ms), one session under pipelined queue and steer injects \
         from a client on WebSocket; each round the serving host is SIGKILLed (two rounds in three) or SIGSTOPped, the \
         client resumes on the other host (retrying while it answers `-32030`), a paused host is woken with its old \
         connection open (it must deliver nothing more and stop), and the failed host is started again. Judged from the \
         clients' raw logs and the session's history, replayed at the end. Handoff is from the failure to the other host's resume answer: a dead or paused holder's \
         lease has to run out first, so it is the lease plus the take-over.\n\n**{summary}** ({detail}).\n",
        crate::crash::LEASE_MS
    );

    eprintln!("\nbench: the load test (acp-inject-load, release builds)");
    let mut cmd = Command::new(cargo());
    cmd.args(["build", "--release", "-p", "acp-inject-reference-agent", "-p", "acp-inject-conformance"]);
    process::run(&mut cmd, Echo::All)?.check()?;
    let (agent, load) = (target.join("release/acp-inject-agent"), target.join("release/acp-inject-load"));
    let _ = writeln!(
        md,
        "## Load: 1,000 sessions on one agent process\n\n`acp-inject-load --sessions 1000 --operations 20000 --window W -- \
         acp-inject-agent --delay-ms 5` (release builds): the client keeps W requests in flight, each a queue inject \
         (40 %), a steer (20 %), a revoke or a replace of that session's newest inject (15 % each) or a status probe, on a \
         random session, while the agent runs the turns they open and streams its output (every notification is read). \
         Latency is from writing a request to reading its answer.\n"
    );
    let _ = writeln!(md, "| store | in flight | ops/s | p50 µs | p99 µs | max µs | notifications | agent RSS |");
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|");
    let json = target.join("load.json");
    for (store, window) in [(false, 64), (false, 1), (true, 64)] {
        let mut cmd = Command::new(&load);
        cmd.args(["--sessions", "1000", "--operations", "20000", "--window", &window.to_string(), "--json"]).arg(&json);
        if store {
            cmd.arg("--store").arg(target.join("load.sqlite3"));
        }
        process::run(cmd.arg("--").arg(&agent), Echo::All)?.check()?;
        let text = std::fs::read_to_string(&json).map_err(|e| Error::read(&json, e))?;
        let r: Value = serde_json::from_str(&text).map_err(|e| Error::msg(format!("{}: {e}", json.display())))?;
        let all = &r["latency"]["all"];
        let _ = writeln!(
            md,
            "| {} | {window} | {:.0} | {} | {} | {} | {} | {} MiB |",
            if store { "SQLite (durable)" } else { "memory" },
            r["ops_per_s"].as_f64().unwrap_or(0.0),
            all["p50_us"],
            all["p99_us"],
            all["max_us"],
            r["notifications"],
            r["agent_rss_kib"].as_u64().unwrap_or(0) / 1024
        );
    }
    let _ = writeln!(
        md,
        "\nWith W in flight, latency is mostly queueing (W / throughput); W = 1 shows the cost of one operation. Durable, \
         every batch holding input the agent answers is one fsync of the write-ahead log, so throughput follows the disk's \
         fsync rate; output-only batches (streamed chunks) commit without it.\n"
    );

    eprintln!("\nbench: 1,000 WebSocket sessions (crates/remote/benches/websocket_load.rs, release builds)");
    let json = target.join("websocket_load.json");
    let mut cmd = Command::new(cargo());
    cmd.args(["bench", "-p", "acp-inject-remote", "--bench", "websocket_load", "--"])
        .args(["--sessions", "1000", "--flood-clients", "200", "--max-memory", "128MiB", "--agent"])
        .arg(&agent)
        .arg("--json")
        .arg(&json);
    process::run(&mut cmd, Echo::All)?.check()?;
    let text = std::fs::read_to_string(&json).map_err(|e| Error::read(&json, e))?;
    let r: Value = serde_json::from_str(&text).map_err(|e| Error::msg(format!("{}: {e}", json.display())))?;
    let _ = writeln!(
        md,
        "## Network: 1,000 WebSocket sessions on one agent process, under a memory budget\n\n`cargo bench -p \
         acp-inject-remote --bench websocket_load -- --sessions 1000 --flood-clients 200 --max-memory 128MiB` (release \
         builds): `acp-inject-agent --listen --max-memory 128MiB` with a tool call completing about \
         every {} ms in each turn (each completion a break-point), and 1,000 clients in one process, each its own \
         WebSocket with one session whose turn runs. With every turn running, each session at once sends a queue inject \
         (timed to its acceptance: the answer with its id) and a steer (timed to its acceptance, and to its delivery at \
         the turn's next break-point: the `user_message` with its id). Clients and agent share the machine's two cores.\n",
        r["step_ms"].as_f64().unwrap_or(0.0) * 3.0
    );
    let _ = writeln!(md, "| from sending | p50 ms | p99 ms | max ms |");
    let _ = writeln!(md, "|---|---|---|---|");
    for (key, what) in [
        ("inject_accept", "a queue inject to its acceptance"),
        ("steer_accept", "a steer to its acceptance"),
        ("steer_delivered", "a steer to its delivery at a break-point"),
    ] {
        let m = &r[key];
        let ms = |k: &str| m[k].as_f64().unwrap_or(f64::NAN);
        let _ = writeln!(md, "| {what} | {:.1} | {:.1} | {:.1} |", ms("p50_ms"), ms("p99_ms"), ms("max_ms"));
    }
    let kib = |k: &str| r[k].as_f64().unwrap_or(0.0) / 1024.0;
    let _ = writeln!(
        md,
        "\nAgent memory: {:.0} MiB resident before the first client, {:.0} MiB with 1,000 sessions running: **{:.1} KiB per \
         session** (its WebSocket with 8 KiB buffers each way, its connection in the core, its session and its turn). All \
         1,000 connected and opened their sessions in {:.1} s. A steer's delivery waits for the next break-point, so its \
         time is mostly the turn's own step time.\n",
        kib("agent_rss_base_bytes") / 1024.0,
        kib("agent_rss_loaded_bytes") / 1024.0,
        r["bytes_per_session"].as_f64().unwrap_or(0.0) / 1024.0,
        r["connect_s"].as_f64().unwrap_or(0.0)
    );
    let mib = |v: &Value| v.as_f64().unwrap_or(0.0) / (1024.0 * 1024.0);
    let (flood, unbounded) = (&r["flood"], &r["flood_unbounded"]);
    let count = |v: &Value, k: &str| v[k].as_u64().unwrap_or(0);
    let _ = writeln!(
        md,
        "**The budget.** `--max-memory {budget}` bounds the agent's heap (counted by its allocator; shedding starts at \
         half of it). With the 1,000 sessions running, the agent's peak resident memory was **{peak:.0} MiB, under the \
         {budget} budget**, and no client was refused.\n\n\
         Then the budget under attack: {clients} clients, each on a socket with a 4 KiB receive buffer, resume one \
         session whose history is {history:.0} MiB (one turn of {chunks} chunks of {chunk_kib} KiB; a SQLite store, so \
         the history is on disk) with its whole history replayed, and stop reading. The same run against an agent whose \
         budget is too large to matter shows what the budget saves:\n",
        budget = r["max_memory"].as_str().unwrap_or("?"),
        peak = mib(&r["agent_rss_peak_bytes"]),
        clients = count(flood, "clients"),
        history = (count(&r, "flood_chunks") * count(&r, "flood_chunk_bytes")) as f64 / (1024.0 * 1024.0),
        chunks = count(&r, "flood_chunks"),
        chunk_kib = count(&r, "flood_chunk_bytes") / 1024,
    );
    let _ = writeln!(md, "| agent | peak resident | replays read whole | shed (close 1013) | cut | refused (503) |");
    let _ = writeln!(md, "|---|---|---|---|---|---|");
    for (what, v) in [
        (format!("`--max-memory {}`", r["max_memory"].as_str().unwrap_or("?")), flood),
        ("no budget that matters (`--max-memory 64GiB`)".to_owned(), unbounded),
    ] {
        let _ = writeln!(
            md,
            "| {what} | {:.0} MiB | {} | {} | {} | {} |",
            mib(&v["agent_rss_peak_bytes"]),
            count(v, "whole"),
            count(v, "shed"),
            count(v, "cut"),
            count(v, "refused")
        );
    }
    let _ = writeln!(
        md,
        "\nA shed client is told why (close 1013, try again later) and resumes its session when it reads again; the \
         replay it missed comes again then. \"Cut\": the connection was given up in the middle of a write it stalled \
         (no close frame can follow half a frame).\n"
    );
    Ok(md)
}
