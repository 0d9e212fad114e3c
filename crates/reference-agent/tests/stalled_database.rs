//! `acp-inject-agent --listen --store postgres://…` while its database stalls. A session's
//! lane (the PostgreSQL backend that commits its batches) is stopped (SIGSTOP) in the middle
//! of its turn: another session's whole turn goes on meanwhile, with WebSocket pings and a new
//! connection, while the first turn waits for its commit; once the backend runs again
//! (SIGCONT) it finishes with every chunk once. Then the reading backend is stopped while a
//! client's `session/list` waits on it: pings and a new connection's handshake go on.
//!
//! Needs a PostgreSQL server (`ACP_INJECT_POSTGRES_URL`, which `cargo xtask test` sets);
//! without one the test says so and passes nothing.
#![cfg(unix)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use acp_inject_core::wire::SessionId;
use acp_inject_store::postgres::lane_of;
use futures_util::{SinkExt, StreamExt};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

type Socket = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A fresh database on the server `ACP_INJECT_POSTGRES_URL` names.
fn database(name: &str) -> Option<String> {
    let Ok(url) = std::env::var("ACP_INJECT_POSTGRES_URL") else {
        eprintln!("skipped: ACP_INJECT_POSTGRES_URL is not set (cargo xtask test sets it)");
        return None;
    };
    let mut admin = postgres::Client::connect(&url, postgres::NoTls).expect("connect to ACP_INJECT_POSTGRES_URL");
    let db = format!("acp_agent_{name}");
    admin.batch_execute(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)")).unwrap();
    admin.batch_execute(&format!("CREATE DATABASE {db}")).unwrap();
    let base = url.rsplit_once('/').map_or(url.as_str(), |(base, _)| base);
    Some(format!("{base}/{db}"))
}

/// The agent process, killed and waited for however the test ends.
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A backend stopped by the test, let go however the test ends.
struct Stopped(Pid);

impl Stopped {
    fn stop(pid: i32) -> Stopped {
        let pid = Pid::from_raw(pid);
        kill(pid, Signal::SIGSTOP).expect("SIGSTOP the backend");
        Stopped(pid)
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = kill(self.0, Signal::SIGCONT);
    }
}

async fn send(ws: &mut Socket, v: Value) {
    ws.send(Message::Text(v.to_string().into())).await.expect("send");
}

/// Messages until one satisfies `done` (all of them, that one last).
async fn until(ws: &mut Socket, done: impl Fn(&Value) -> bool) -> Vec<Value> {
    let mut seen = Vec::new();
    let read = async {
        loop {
            match ws.next().await {
                Some(Ok(Message::Text(t))) => {
                    let v: Value = serde_json::from_str(t.as_str()).expect("JSON");
                    let hit = done(&v);
                    seen.push(v);
                    if hit {
                        return;
                    }
                }
                Some(Ok(_)) => {}
                other => panic!("the socket ended: {other:?}"),
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(30), read).await.expect("the awaited message came");
    seen
}

async fn client(url: &str) -> Socket {
    let (mut ws, _) = tokio_tungstenite::connect_async(url).await.expect("connect");
    send(&mut ws, json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 2, "clientCapabilities": {}, "info": {"name": "t", "version": "1"}}})).await;
    until(&mut ws, |v| v["id"] == 0).await;
    ws
}

/// A ping's pong, within `within`.
async fn pong(ws: &mut Socket, within: Duration) -> bool {
    ws.send(Message::Ping(b"are you there".to_vec().into())).await.expect("ping");
    let read = async {
        loop {
            match ws.next().await {
                Some(Ok(Message::Pong(p))) => return p.as_ref() == b"are you there",
                Some(Ok(_)) => {}
                _ => return false,
            }
        }
    };
    tokio::time::timeout(within, read).await.unwrap_or(false)
}

/// The process's backend named `name` (`acp-inject HOST`, or `acp-inject HOST lane N`).
fn backend(db: &str, name: &str) -> i32 {
    let mut admin = postgres::Client::connect(db, postgres::NoTls).expect("connect");
    admin
        .query_one("SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()", &[&name])
        .unwrap_or_else(|e| panic!("the agent's backend {name:?}: {e}"))
        .get(0)
}

async fn new_session(ws: &mut Socket, id: u64) -> String {
    send(ws, json!({"jsonrpc": "2.0", "id": id, "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}})).await;
    until(ws, |v| v["id"] == id).await.pop().unwrap()["result"]["sessionId"].as_str().unwrap().to_owned()
}

async fn prompt(ws: &mut Socket, id: u64, session: &str) {
    send(ws, json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt", "params": {"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}})).await;
}

fn chunk(v: &Value) -> bool {
    v["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
}

fn idle(v: &Value) -> bool {
    v["params"]["update"]["state"] == "idle"
}

/// Starts the agent on `store` (turns of ten 50 ms steps, then a tool call whose result is a
/// break-point): the process, and its WebSocket URL.
fn start(store: &str) -> (Running, String) {
    let mut child = Running(
        Command::new(env!("CARGO_BIN_EXE_acp-inject-agent"))
            .args(["--listen", "127.0.0.1:0", "--store", store, "--delay-ms", "50", "--chunks", "10", "--tools", "1"])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start acp-inject-agent"),
    );
    let mut url = String::new();
    BufReader::new(child.0.stdout.take().unwrap()).read_line(&mut url).unwrap();
    (child, url.trim().replacen("http", "ws", 1))
}

const LANES: usize = 4;

#[test]
fn another_session_pings_and_new_connections_go_on_while_the_database_is_stopped() {
    let Some(db) = database("stalled_lane") else { return };
    let store = format!("{db}?acp_host=stalled&acp_timeout_ms=60000&acp_lanes={LANES}");
    let (_agent, url) = start(&store);
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let mut a = client(&url).await;
        let mut b = client(&url).await;
        // Two sessions whose commits go through different connections (lanes).
        let held = new_session(&mut a, 1).await;
        let lane = lane_of(&SessionId(held.clone()), LANES);
        let mut going = String::new();
        for id in 1.. {
            going = new_session(&mut b, id).await;
            if lane_of(&SessionId(going.clone()), LANES) != lane {
                break;
            }
        }
        prompt(&mut a, 100, &held).await;
        let mut seen = until(&mut a, chunk).await;

        // The backend that commits the first session's turn stops in the middle of it.
        let pid = tokio::task::block_in_place(|| backend(&db, &format!("acp-inject stalled lane {lane}")));
        let stopped = Stopped::stop(pid);
        let stopped_at = Instant::now();
        tokio::time::sleep(Duration::from_millis(300)).await;

        // The other session's whole turn goes on meanwhile: prompt, chunks, a steer delivered
        // at a break-point (the agent's next chunk says it heard it), idle.
        prompt(&mut b, 101, &going).await;
        let mut turn = until(&mut b, chunk).await;
        let steer = json!({"sessionId": going, "mode": "steer", "content": [{"type": "text", "text": "also this"}]});
        send(&mut b, json!({"jsonrpc": "2.0", "id": 102, "method": "session/inject", "params": steer})).await;
        turn.extend(until(&mut b, idle).await);
        assert!(turn.iter().any(|v| v["id"] == 101 && v["result"]["messageId"].is_string()), "the prompt was answered: {turn:?}");
        assert_eq!(turn.iter().filter(|v| chunk(v)).count(), 12, "its ten steps, the steer noted, the closing chunk: {turn:?}");
        let said: String =
            turn.iter().filter(|v| chunk(v)).map(|v| v["params"]["update"]["content"]["text"].as_str().unwrap_or("")).collect();
        let steered = turn.iter().find(|v| v["id"] == 102);
        assert!(said.contains("also this") && said.contains("Done (2 message(s)"), "the turn heard the steer: {said} ({steered:?})");
        // Pings (on the connection whose turn is over: `pong` skips other messages), and a new
        // connection's handshake and initialize.
        for i in 0..5 {
            assert!(pong(&mut b, Duration::from_secs(1)).await, "ping {i} was answered while the database is stopped");
        }
        let opened = tokio::time::timeout(Duration::from_secs(5), client(&url)).await;
        assert!(opened.is_ok(), "a new connection is initialized while the database is stopped");
        // The first session's turn did not go on: its next step waits for its commit.
        loop {
            let next = tokio::time::timeout(Duration::from_millis(300), a.next()).await;
            match next {
                Err(_) => break,
                Ok(Some(Ok(Message::Text(t)))) => {
                    let v: Value = serde_json::from_str(t.as_str()).expect("JSON");
                    assert!(!idle(&v), "the stopped session's turn cannot end before its commits: {v}");
                    seen.push(v);
                }
                Ok(Some(Ok(_))) => {}
                Ok(other) => panic!("the socket ended: {other:?}"),
            }
        }
        assert!(seen.iter().filter(|v| chunk(v)).count() < 11, "the stopped session's turn stopped with its commits: {seen:?}");
        assert!(stopped_at.elapsed() < Duration::from_secs(20), "all of this happened while it was stopped");
        drop(stopped);

        // Once it runs again the first turn finishes, with every chunk once.
        seen.extend(until(&mut a, idle).await);
        let chunks: Vec<&Value> = seen.iter().filter(|v| chunk(v)).collect();
        assert_eq!(chunks.len(), 11, "ten steps and the closing chunk, once each: {seen:?}");
    });
}

#[test]
fn pings_and_new_connections_go_on_while_the_database_is_stopped() {
    let Some(db) = database("stalled") else { return };
    let store = format!("{db}?acp_host=stalled&acp_timeout_ms=60000");
    let (_agent, url) = start(&store);
    // The agent's reading backend (it connected before it printed its URL).
    let pid = backend(&db, "acp-inject stalled");
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let mut a = client(&url).await;
        let mut b = client(&url).await;
        send(&mut a, json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}})).await;
        let session = until(&mut a, |v| v["id"] == 1).await.pop().unwrap()["result"]["sessionId"].as_str().unwrap().to_owned();
        send(&mut a, json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}})).await;
        let chunk = |v: &Value| v["params"]["update"]["sessionUpdate"] == "agent_message_chunk";
        let mut seen = until(&mut a, chunk).await;

        let stopped = Stopped::stop(pid);
        let stopped_at = Instant::now();
        // Something for the store to wait on from the second client too: its read holds the
        // agent's lock while the reading backend is stopped, and the turn's steps wait for it.
        send(&mut b, json!({"jsonrpc": "2.0", "id": 1, "method": "session/list", "params": {}})).await;
        tokio::time::sleep(Duration::from_millis(300)).await;

        for i in 0..5 {
            assert!(pong(&mut b, Duration::from_secs(1)).await, "ping {i} was answered while the database is stopped");
        }
        let opened = tokio::time::timeout(Duration::from_secs(2), tokio_tungstenite::connect_async(url.as_str())).await;
        assert!(matches!(opened, Ok(Ok(_))), "a new connection's handshake completes while the database is stopped");
        assert!(stopped_at.elapsed() < Duration::from_secs(10), "all of this happened while it was stopped");
        drop(stopped);

        // Once it runs again: the list is answered, and the turn finishes with every chunk once.
        until(&mut b, |v| v["id"] == 1).await;
        seen.extend(until(&mut a, |v| v["params"]["update"]["state"] == "idle").await);
        let chunks: Vec<&Value> = seen.iter().filter(|v| chunk(v)).collect();
        assert_eq!(chunks.len(), 11, "ten steps and the closing chunk, once each: {seen:?}");
    });
}
