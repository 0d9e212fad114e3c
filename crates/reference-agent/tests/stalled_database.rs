//! `acp-inject-agent --listen --store postgres://…` while its database stalls: the agent's
//! PostgreSQL backend is stopped (SIGSTOP) in the middle of a session's turn, and a second
//! client keeps asking things of the agent. What waits on the store waits; the rest goes on:
//! WebSocket pings are answered and a new connection's handshake completes while the database
//! is stopped. Once it runs again (SIGCONT) the turn finishes with every chunk once.
//!
//! Needs a PostgreSQL server (`ACP_INJECT_POSTGRES_URL`, which `cargo xtask test` sets);
//! without one the test says so and passes nothing.
#![cfg(unix)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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

#[test]
fn pings_and_new_connections_go_on_while_the_database_is_stopped() {
    let Some(db) = database("stalled") else { return };
    let store = format!("{db}?acp_host=stalled&acp_timeout_ms=60000");
    let mut child = Running(
        Command::new(env!("CARGO_BIN_EXE_acp-inject-agent"))
            .args(["--listen", "127.0.0.1:0", "--store", &store, "--delay-ms", "50", "--chunks", "10", "--tools", "0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start acp-inject-agent"),
    );
    let mut url = String::new();
    BufReader::new(child.0.stdout.take().unwrap()).read_line(&mut url).unwrap();
    let url = url.trim().replacen("http", "ws", 1);
    // The agent's backend (it connected before it printed its URL).
    let mut admin = postgres::Client::connect(&db, postgres::NoTls).expect("connect");
    let pid: i32 = admin
        .query_one(
            "SELECT pid FROM pg_stat_activity WHERE application_name = 'acp-inject stalled' AND datname = current_database()",
            &[],
        )
        .expect("the agent's backend")
        .get(0);
    drop(admin);
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
        // Something for the store to wait on from the second client too: the agent's lock is
        // held by a commit that cannot end, and both wait for it.
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
