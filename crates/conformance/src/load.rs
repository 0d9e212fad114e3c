//! The load test: many sessions on one agent process, mixed inject traffic, throughput and
//! per-operation latency, measured over the agent's real stdio.
//!
//! The client opens `sessions` sessions, then keeps `window` requests in flight, each a random
//! operation on a random session: a queue inject (which opens a turn on an idle session), a
//! steer (refused with `no_running_turn` on an idle one: an answer all the same), a revoke or a
//! replace of that session's newest accepted inject, or a status probe. Latency is from writing
//! the request to reading its answer; the agent's own updates are read and counted too.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::peer::{req, text, Agent, Rng};

/// What to run.
#[derive(Debug, Clone)]
pub struct Options {
    /// The agent's program and arguments (it must accept `--delay-ms MS`, and `--store PATH`
    /// when `store` is given).
    pub command: Vec<String>,
    /// Sessions open at once.
    pub sessions: usize,
    /// Operations after the sessions are open.
    pub operations: usize,
    /// Requests in flight at once.
    pub window: usize,
    /// The agent's `--delay-ms`.
    pub delay_ms: u64,
    /// The seed of every random choice.
    pub seed: u64,
}

/// Latency figures of one kind of operation, in microseconds.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Latency {
    /// How many.
    pub count: usize,
    /// Median.
    pub p50_us: u64,
    /// 99th percentile.
    pub p99_us: u64,
    /// Slowest.
    pub max_us: u64,
}

/// The outcome.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Report {
    /// Sessions opened.
    pub sessions: usize,
    /// Seconds to open them.
    pub open_s: f64,
    /// Operations answered.
    pub operations: usize,
    /// Seconds for the operations.
    pub seconds: f64,
    /// Operations per second.
    pub ops_per_s: f64,
    /// Latency per operation kind, and `all`.
    pub latency: BTreeMap<String, Latency>,
    /// Notifications read (user messages, agent output, state updates…).
    pub notifications: usize,
    /// The agent's resident memory at the end, in KiB (Linux), if known.
    pub agent_rss_kib: Option<u64>,
}

/// Runs the load; `store` puts the agent on a durable store.
pub fn run(options: &Options, store: Option<&Path>) -> Result<Report, String> {
    let mut a = Agent::spawn(&options.command, options.delay_ms, store.map(std::path::Path::as_os_str))?;
    a.send(req(0, "initialize", json!({ "protocolVersion": 2, "info": { "name": "load", "version": "1" } })))?;
    a.result(0)?;
    let opened = Instant::now();
    let mut sessions = Vec::with_capacity(options.sessions);
    // Open in windows, so the agent's input pipe never holds everything at once.
    for chunk in (0..options.sessions).collect::<Vec<_>>().chunks(options.window.max(1)) {
        for i in chunk {
            a.send(req(1 + *i as i64, "session/new", json!({ "cwd": "/tmp" })))?;
        }
        for i in chunk {
            let r = a.result(1 + *i as i64)?;
            sessions.push(r["sessionId"].as_str().ok_or("session/new gave no sessionId")?.to_owned());
        }
    }
    let open_s = opened.elapsed().as_secs_f64();
    a.seen.clear();

    let mut rng = Rng::new(options.seed);
    let mut newest: Vec<Option<String>> = vec![None; sessions.len()];
    let mut in_flight: HashMap<i64, (&'static str, usize, Instant)> = HashMap::new();
    let mut latencies: BTreeMap<&'static str, Vec<u64>> = BTreeMap::new();
    let (mut sent, mut answered, mut notifications) = (0usize, 0usize, 0usize);
    let mut next = 1_000_000i64;
    let started = Instant::now();
    let deadline = started + Duration::from_secs(600);
    while answered < options.operations {
        while in_flight.len() < options.window && sent < options.operations {
            next += 1;
            sent += 1;
            let s = rng.below(sessions.len() as u64) as usize;
            let sid = &sessions[s];
            let (kind, line) = match (rng.below(100), &newest[s]) {
                (0..=39, _) => (
                    "inject queue",
                    req(next, "session/inject", json!({ "sessionId": sid, "mode": "queue", "content": text("more") })),
                ),
                (40..=59, _) => (
                    "inject steer",
                    req(next, "session/inject", json!({ "sessionId": sid, "mode": "steer", "content": text("steer") })),
                ),
                (60..=74, Some(m)) => ("revoke", req(next, "session/revoke_inject", json!({ "sessionId": sid, "messageId": m }))),
                (75..=89, Some(m)) => (
                    "replace",
                    req(next, "session/replace_inject", json!({ "sessionId": sid, "messageId": m, "content": text("edited") })),
                ),
                _ => ("status", req(next, "session/status", json!({ "sessionId": sid }))),
            };
            in_flight.insert(next, (kind, s, Instant::now()));
            a.send(line)?;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        let line =
            a.lines.recv_timeout(left).map_err(|_| format!("no answer within the time limit; {} in flight", in_flight.len()))?;
        let v: Value = serde_json::from_str(&line).map_err(|e| format!("the agent wrote a line that is not JSON: {e}"))?;
        if v["method"] == "session/request_permission" {
            let option = v["params"]["options"][0]["optionId"].clone();
            a.send(
                json!({ "jsonrpc": "2.0", "id": v["id"], "result": { "outcome": { "outcome": "selected", "optionId": option } } }),
            )?;
            continue;
        }
        if v.get("method").is_some() {
            notifications += 1;
            continue;
        }
        let Some((kind, s, at)) = v["id"].as_i64().and_then(|id| in_flight.remove(&id)) else { continue };
        answered += 1;
        latencies.entry(kind).or_default().push(at.elapsed().as_micros() as u64);
        if kind.starts_with("inject") {
            if let Some(m) = v["result"]["messageId"].as_str() {
                newest[s] = Some(m.to_owned());
            }
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let agent_rss_kib = a.rss_kib();
    a.drain_to_exit();
    let mut all: Vec<u64> = latencies.values().flatten().copied().collect();
    let mut latency: BTreeMap<String, Latency> = latencies.into_iter().map(|(k, mut v)| (k.to_owned(), figures(&mut v))).collect();
    latency.insert("all".into(), figures(&mut all));
    Ok(Report {
        sessions: sessions.len(),
        open_s,
        operations: answered,
        seconds,
        ops_per_s: answered as f64 / seconds,
        latency,
        notifications,
        agent_rss_kib,
    })
}

fn figures(v: &mut [u64]) -> Latency {
    v.sort_unstable();
    let at = |q: f64| v.get(((v.len() as f64 - 1.0) * q).round() as usize).copied().unwrap_or(0);
    Latency { count: v.len(), p50_us: at(0.5), p99_us: at(0.99), max_us: v.last().copied().unwrap_or(0) }
}
