//! Many WebSocket sessions on one agent process: `cargo bench -p acp-inject-remote --bench
//! websocket_load -- [--sessions N] [--agent PATH] [--json FILE]`.
//!
//! Starts the reference agent (`--agent`, default `$ACP_INJECT_AGENT`, else the release build
//! in this workspace's target directory) with `--listen 127.0.0.1:0`, then opens N clients over
//! WebSocket, each with one session whose turn runs (tool calls every `STEP_MS`, each
//! completion a break-point). With all N turns running it measures, per session and all at
//! once: a queue inject from sending to its acceptance (the answer with its id), and a steer
//! from sending to its delivery at the turn's next break-point (the `user_message` that carries
//! its id). Memory per session is the agent's resident memory with N sessions running, less
//! its resident memory before the first, divided by N. Prints one JSON object (and writes it to
//! `--json`). The clients run in this process, on the same two cores as the agent.

use std::sync::Arc;
use std::time::{Duration, Instant};

use acp_inject_core::client::MessageRole;
use acp_inject_core::wire::{ContentBlock, InjectMode, TextContent};
use acp_inject_remote::Endpoint;
use acp_inject_transport::{ConnectOptions, Connection, Session};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::Semaphore;

/// The agent's step: a tool call completes (a break-point) about every three steps.
const STEP_MS: u64 = 50;

fn text(t: &str) -> Vec<ContentBlock> {
    vec![ContentBlock::Text(Box::new(TextContent::new(t)))]
}

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1).cloned())
}

/// The agent's resident memory, in bytes (Linux).
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// Waits until the session's transcript has a user message with this id.
async fn delivered(session: &Session, id: &str) {
    loop {
        let seen =
            session.snapshot().is_some_and(|s| s.transcript.iter().any(|e| e.role == MessageRole::User && e.message_id.0 == id));
        if seen {
            return;
        }
        if session.next_events().await.is_err() {
            panic!("the connection ended before the steer was delivered");
        }
    }
}

struct Sample {
    inject_accept: f64,
    steer_accept: f64,
    steer_delivered: f64,
}

async fn one_session(url: String, gate: Arc<Semaphore>) -> (Connection, Session) {
    // Connection storms are paced: at most 64 handshakes at once.
    let _permit = gate.acquire().await.expect("open");
    let options = ConnectOptions { forward_stderr: false, ..ConnectOptions::default() };
    let conn = Endpoint::new(url).connect(options).await.expect("connect");
    let session = conn.new_session("/tmp", vec![], vec![]).await.expect("session/new");
    (conn, session)
}

async fn measure(session: &Session) -> Sample {
    let t = Instant::now();
    session.inject(InjectMode::Queue, text("queued")).await.expect("queue inject");
    let inject_accept = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let id = session.inject(InjectMode::Steer, text("steer")).await.expect("steer");
    let steer_accept = t.elapsed().as_secs_f64();
    delivered(session, &id.0).await;
    let steer_delivered = t.elapsed().as_secs_f64();
    Sample { inject_accept, steer_accept, steer_delivered }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    runtime.block_on(run());
}

async fn run() {
    let sessions: usize = arg("--sessions").and_then(|s| s.parse().ok()).unwrap_or(1000);
    let agent = arg("--agent").or_else(|| std::env::var("ACP_INJECT_AGENT").ok()).unwrap_or_else(|| {
        let target = std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../target").into());
        format!("{target}/release/acp-inject-agent")
    });
    let mut child = tokio::process::Command::new(&agent)
        .args(["--listen", "127.0.0.1:0", "--delay-ms", &STEP_MS.to_string(), "--chunks", "1", "--tools", "1000"])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {agent}: {e} (build it: cargo build --release -p acp-inject-reference-agent)"));
    let pid = child.id().expect("running");
    let url = BufReader::new(child.stdout.take().expect("stdout")).lines().next_line().await.expect("read").expect("a URL");
    let ws = url.replacen("http", "ws", 1);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let base = rss(pid);
    eprintln!("websocket_load: agent at {ws}, {} MiB resident; opening {sessions} sessions", base >> 20);

    let started = Instant::now();
    let gate = Arc::new(Semaphore::new(64));
    let opened: Vec<_> = (0..sessions).map(|_| tokio::spawn(one_session(ws.clone(), Arc::clone(&gate)))).collect();
    let mut clients = Vec::with_capacity(sessions);
    for o in opened {
        clients.push(o.await.expect("session task"));
    }
    let connect_s = started.elapsed().as_secs_f64();
    eprintln!("websocket_load: {sessions} sessions open in {connect_s:.1} s; starting a turn in each");
    // Every session's turn running (a thousand tool calls: it runs until the process ends).
    let clients: Vec<Arc<(Connection, Session)>> = clients.into_iter().map(Arc::new).collect();
    let prompts: Vec<_> = clients
        .iter()
        .map(|c| {
            let c = Arc::clone(c);
            tokio::spawn(async move {
                c.1.prompt(text("work")).await.expect("prompt");
                while c.1.snapshot().is_none_or(|s| s.state != acp_inject_core::client::TurnState::Running) {
                    c.1.next_events().await.expect("events");
                }
            })
        })
        .collect();
    for p in prompts {
        p.await.expect("prompt task");
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let loaded = rss(pid);
    eprintln!("websocket_load: {sessions} turns running, agent {} MiB resident; measuring", loaded >> 20);

    let measured = Instant::now();
    let tasks: Vec<_> = clients
        .iter()
        .map(|c| {
            let c = Arc::clone(c);
            tokio::spawn(async move { measure(&c.1).await })
        })
        .collect();
    let mut samples = Vec::with_capacity(sessions);
    for t in tasks {
        samples.push(t.await.expect("measure task"));
    }
    let measure_s = measured.elapsed().as_secs_f64();
    let stats = |f: fn(&Sample) -> f64| {
        let mut v: Vec<f64> = samples.iter().map(f).map(|s| s * 1e3).collect();
        v.sort_by(|a, b| a.total_cmp(b));
        serde_json::json!({ "p50_ms": percentile(&v, 0.5), "p99_ms": percentile(&v, 0.99), "max_ms": v.last() })
    };
    let report = serde_json::json!({
        "sessions": sessions,
        "step_ms": STEP_MS,
        "connect_s": connect_s,
        "measure_s": measure_s,
        "inject_accept": stats(|s| s.inject_accept),
        "steer_accept": stats(|s| s.steer_accept),
        "steer_delivered": stats(|s| s.steer_delivered),
        "agent_rss_base_bytes": base,
        "agent_rss_loaded_bytes": loaded,
        "bytes_per_session": (loaded.saturating_sub(base)) as f64 / sessions as f64,
    });
    println!("{report}");
    if let Some(path) = arg("--json") {
        std::fs::write(&path, report.to_string()).expect("write the report");
    }
    let _ = child.kill().await;
}
