//! Many WebSocket sessions on one agent process, under a memory budget: `cargo bench -p
//! acp-inject-remote --bench websocket_load -- [--sessions N] [--max-memory SIZE] [--agent PATH]
//! [--json FILE]`.
//!
//! Part one starts the reference agent (`--agent`, default `$ACP_INJECT_AGENT`, else the
//! release build in this workspace's target directory) with `--listen 127.0.0.1:0
//! --max-memory SIZE` (default 128MiB), then opens N clients over WebSocket, each with one
//! session whose turn runs (tool calls every `STEP_MS`, each completion a break-point). With
//! all N turns running it measures, per session and all at once: a queue inject from sending to
//! its acceptance (the answer with its id), and a steer from sending to its delivery at the
//! turn's next break-point (the `user_message` that carries its id). Memory per session is the
//! agent's resident memory with N sessions running, less its resident memory before the first,
//! divided by N; the agent's peak resident memory is compared with the budget.
//!
//! Part two is the budget under attack: N clients that stop reading, each on a socket with a
//! 4 KiB receive buffer, prompt an agent (on a SQLite store, so history is on disk) whose turn
//! writes `FLOOD_CHUNKS` chunks of `FLOOD_CHUNK_BYTES`; once the agent's memory stops growing,
//! every client reads what reached it: its whole turn, or a close (1013: shed for the budget).
//! It runs twice, with the budget and with one too large to matter, and reports the agent's peak
//! resident memory in each.
//!
//! Prints one JSON object (and writes it to `--json`). The clients run in this process, on the
//! same two cores as the agent.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use acp_inject_core::client::MessageRole;
use acp_inject_core::wire::{ContentBlock, InjectMode, TextContent};
use acp_inject_remote::Endpoint;
use acp_inject_transport::{ConnectOptions, Connection, Session};
use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::Semaphore;
use tokio_tungstenite::tungstenite::Message;

/// The agent's step: a tool call completes (a break-point) about every three steps.
const STEP_MS: u64 = 50;

fn text(t: &str) -> Vec<ContentBlock> {
    vec![ContentBlock::Text(Box::new(TextContent::new(t)))]
}

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1).cloned())
}

/// Part two: the long session's turn, its chunks and their size (8 MiB in all).
const FLOOD_CHUNKS: usize = 128;
const FLOOD_CHUNK_BYTES: usize = 64 * 1024;

/// A field of the agent's `/proc/PID/status`, in bytes (Linux): `VmRSS` (resident now) or
/// `VmHWM` (the peak resident so far).
fn proc_status(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

fn rss(pid: u32) -> u64 {
    proc_status(pid, "VmRSS")
}

fn peak(pid: u32) -> u64 {
    proc_status(pid, "VmHWM")
}

/// Starts the agent with these arguments after `--listen 127.0.0.1:0`: the process and the
/// address it serves on.
async fn start_agent(agent: &str, args: &[&str]) -> (tokio::process::Child, SocketAddr) {
    let mut child = tokio::process::Command::new(agent)
        .args(["--listen", "127.0.0.1:0"])
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {agent}: {e} (build it: cargo build --release -p acp-inject-reference-agent)"));
    let url = BufReader::new(child.stdout.take().expect("stdout")).lines().next_line().await.expect("read").expect("a URL");
    let addr = url.trim_start_matches("http://").trim_end_matches("/acp").parse().expect("an address");
    tokio::time::sleep(Duration::from_millis(200)).await;
    (child, addr)
}

type Socket = tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>;

/// The next text message's JSON.
async fn read_json(ws: &mut Socket) -> serde_json::Value {
    loop {
        match ws.next().await {
            Some(Ok(Message::Text(t))) => return serde_json::from_str(t.as_str()).expect("JSON"),
            Some(Ok(_)) => {}
            other => panic!("the socket ended while a client waited for an answer: {other:?}"),
        }
    }
}

/// A WebSocket to the agent, initialized, on a socket with a 4 KiB receive buffer (so what the
/// agent writes to a client that stops reading stays in the agent, not in the kernel).
/// `None` when the upgrade is refused with 503.
async fn open_client(addr: SocketAddr) -> Option<Socket> {
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket.set_recv_buffer_size(4096).expect("SO_RCVBUF");
    let stream = socket.connect(addr).await.expect("connect");
    let mut ws = match tokio_tungstenite::client_async(format!("ws://{addr}/acp"), stream).await {
        Ok((ws, _)) => ws,
        Err(tokio_tungstenite::tungstenite::Error::Http(r)) if r.status().as_u16() == 503 => return None,
        Err(e) => panic!("the upgrade failed: {e}"),
    };
    let init = serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": 2, "clientCapabilities": {}, "info": {"name": "load", "version": "1"}}});
    ws.send(Message::Text(init.to_string().into())).await.expect("initialize");
    while read_json(&mut ws).await["id"] != 0 {}
    Some(ws)
}

/// A session with a long history: its one turn writes `FLOOD_CHUNKS` chunks of
/// `FLOOD_CHUNK_BYTES`, read to the end.
async fn long_session(addr: SocketAddr) -> String {
    let mut ws = open_client(addr).await.expect("the agent takes the first client");
    let new = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}});
    ws.send(Message::Text(new.to_string().into())).await.expect("session/new");
    let session = loop {
        let v = read_json(&mut ws).await;
        if v["id"] == 1 {
            break v["result"]["sessionId"].as_str().expect("a session id").to_owned();
        }
    };
    let prompt = serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": "write a lot"}]}});
    ws.send(Message::Text(prompt.to_string().into())).await.expect("prompt");
    while read_json(&mut ws).await["params"]["update"]["state"] != "idle" {}
    let _ = ws.close(None).await;
    session
}

/// A client that resumes the long session with its whole history replayed, and stops reading;
/// `None` when the agent refused the connection (503: past its budget).
async fn stalled_client(addr: SocketAddr, gate: Arc<Semaphore>, session: String) -> Option<Socket> {
    let _permit = gate.acquire().await.expect("open");
    let mut ws = open_client(addr).await?;
    let resume = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "session/resume",
        "params": {"sessionId": session, "cwd": "/tmp", "replayFrom": {"type": "start"}}});
    ws.send(Message::Text(resume.to_string().into())).await.expect("resume");
    Some(ws)
}

/// What reached a stalled client once it reads again.
enum Outcome {
    /// Its whole turn, to the idle state.
    Whole,
    /// A close with this code.
    Closed(u16),
    /// The socket ended without either.
    Cut,
}

async fn read_out(mut ws: Socket) -> Outcome {
    let read = async {
        loop {
            match ws.next().await {
                Some(Ok(Message::Text(t))) if t.as_str().contains(r#""state":"idle""#) => return Outcome::Whole,
                Some(Ok(Message::Close(frame))) => return Outcome::Closed(frame.map_or(1005, |f| u16::from(f.code))),
                Some(Ok(_)) => {}
                _ => return Outcome::Cut,
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(60), read).await.unwrap_or(Outcome::Cut)
}

/// Part two, once: `clients` stalled clients against an agent with this budget.
async fn flood(agent: &str, clients: usize, max_memory: &str) -> serde_json::Value {
    let dir = std::env::temp_dir().join(format!("acp-inject-load-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let store = format!("sqlite:{}", dir.join("sessions.db").display());
    let (chunks, chunk_bytes) = (FLOOD_CHUNKS.to_string(), FLOOD_CHUNK_BYTES.to_string());
    let args = [
        "--store",
        &store,
        "--chunks",
        &chunks,
        "--chunk-bytes",
        &chunk_bytes,
        "--tools",
        "0",
        "--delay-ms",
        "1",
        "--max-memory",
        max_memory,
    ];
    let (mut child, addr) = start_agent(agent, &args).await;
    let pid = child.id().expect("running");
    let session = long_session(addr).await;
    let base = rss(pid);
    eprintln!("websocket_load: --max-memory {max_memory}: {clients} clients resume an 8 MiB session and stop reading");
    let gate = Arc::new(Semaphore::new(64));
    let opened: Vec<_> = (0..clients).map(|_| tokio::spawn(stalled_client(addr, Arc::clone(&gate), session.clone()))).collect();
    let mut sockets = Vec::with_capacity(clients);
    for o in opened {
        sockets.push(o.await.expect("client task"));
    }
    // Until the agent's memory has not grown for three seconds: every replay went out as far
    // as it could (or its connection was shed).
    let (mut high, mut since) = (rss(pid), Instant::now());
    while since.elapsed() < Duration::from_secs(3) {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = rss(pid);
        if now > high + (1 << 20) {
            (high, since) = (now, Instant::now());
        }
    }
    let peak_bytes = peak(pid);
    let refused = sockets.iter().filter(|s| s.is_none()).count();
    let read: Vec<_> = sockets.into_iter().flatten().map(|ws| tokio::spawn(read_out(ws))).collect();
    let (mut whole, mut shed, mut cut, mut other) = (0usize, 0usize, 0usize, 0usize);
    for r in read {
        match r.await.expect("read task") {
            Outcome::Whole => whole += 1,
            Outcome::Closed(1013) => shed += 1,
            Outcome::Cut => cut += 1,
            Outcome::Closed(_) => other += 1,
        }
    }
    let _ = child.kill().await;
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!(
        "websocket_load: --max-memory {max_memory}: agent peak {} MiB resident; {whole} replays whole, {shed} closed 1013, {cut} cut, {refused} refused (503), {other} otherwise",
        peak_bytes >> 20
    );
    serde_json::json!({
        "max_memory": max_memory,
        "agent_rss_base_bytes": base,
        "agent_rss_peak_bytes": peak_bytes,
        "whole": whole,
        "clients": clients,
        "shed": shed,
        "cut": cut,
        "refused": refused,
        "other": other,
    })
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
    let max_memory = arg("--max-memory").unwrap_or_else(|| "128MiB".into());
    let step = STEP_MS.to_string();
    let (mut child, addr) =
        start_agent(&agent, &["--delay-ms", &step, "--chunks", "1", "--tools", "1000", "--max-memory", &max_memory]).await;
    let pid = child.id().expect("running");
    let ws = format!("ws://{addr}/acp");
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
    let peak_bytes = peak(pid);
    let _ = child.kill().await;
    let flood_clients: usize = arg("--flood-clients").and_then(|s| s.parse().ok()).unwrap_or(200);
    let flooded = flood(&agent, flood_clients, &max_memory).await;
    let unbounded = flood(&agent, flood_clients, "64GiB").await;
    let report = serde_json::json!({
        "sessions": sessions,
        "max_memory": max_memory,
        "agent_rss_peak_bytes": peak_bytes,
        "flood_chunks": FLOOD_CHUNKS,
        "flood_chunk_bytes": FLOOD_CHUNK_BYTES,
        "flood": flooded,
        "flood_unbounded": unbounded,
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
}
