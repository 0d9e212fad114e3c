//! Two `acp-inject-agent --store FILE` processes on one SQLite file, as an editor that starts
//! an agent process per session runs them: both serve their sessions at once; one is killed
//! (SIGKILL) mid-turn and the other resumes its session with nothing accepted lost; one is
//! paused (SIGSTOP) mid-turn and the other takes its session after the lease, while the paused
//! one, woken up, serves nothing more.
#![cfg(unix)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use acp_inject_core::agent::{HistoryEntry, Store};
use acp_inject_core::wire::SessionId;
use acp_inject_store::{SqliteOptions, SqliteStore};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::{json, Value};

/// How long any one expected line may take on a loaded machine.
const WAIT: Duration = Duration::from_secs(30);

/// A scratch directory of this test process, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("acp-inject-shared-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// One agent process over stdio, with every line it wrote so far.
struct Peer {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Value>,
    seen: Vec<Value>,
}

impl Peer {
    fn spawn(store: &str, delay_ms: u64) -> Peer {
        let mut child = Command::new(env!("CARGO_BIN_EXE_acp-inject-agent"))
            .args(["--store", store, "--delay-ms", &delay_ms.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start acp-inject-agent");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Ok(v) = serde_json::from_str(&line) {
                    if tx.send(v).is_err() {
                        break;
                    }
                }
            }
        });
        let mut peer = Peer { child, stdin, lines, seen: Vec::new() };
        peer.send(0, "initialize", json!({ "protocolVersion": 2, "info": { "name": "shared-store-test", "version": "1" } }));
        peer.answer(0);
        peer
    }

    fn pid(&self) -> Pid {
        Pid::from_raw(i32::try_from(self.child.id()).unwrap())
    }

    fn send(&mut self, id: u64, method: &str, params: Value) {
        let line = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }).to_string();
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin
            .write_all(line.as_bytes())
            .and_then(|()| stdin.write_all(b"\n"))
            .and_then(|()| stdin.flush())
            .expect("write to the agent");
    }

    /// Reads lines until one at index `from` or later matches, within `within`.
    fn until_within(&mut self, from: usize, what: &str, within: Duration, matches: impl Fn(&Value) -> bool) -> Option<Value> {
        if let Some(v) = self.seen.iter().skip(from).find(|v| matches(v)) {
            return Some(v.clone());
        }
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(v) => {
                    self.seen.push(v.clone());
                    if matches(&v) {
                        return Some(v);
                    }
                }
                Err(_) if what.is_empty() => return None,
                Err(e) => panic!("waiting for {what}: {e}; the agent wrote {:#?}", self.seen),
            }
        }
    }

    fn until(&mut self, from: usize, what: &str, matches: impl Fn(&Value) -> bool) -> Value {
        self.until_within(from, what, WAIT, matches).unwrap()
    }

    /// The answer to request `id`.
    fn answer(&mut self, id: u64) -> Value {
        self.until(0, &format!("the answer to request {id}"), |v| v["id"] == json!(id) && v.get("method").is_none())
    }

    /// Sends a request and returns its answer's result (panics on an error).
    fn result(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(id, method, params);
        let answer = self.answer(id);
        assert!(answer.get("error").is_none(), "{method}: {answer}");
        answer["result"].clone()
    }

    /// An accepted prompt or inject: its message id.
    fn accept(&mut self, id: u64, method: &str, params: Value) -> String {
        self.result(id, method, params)["messageId"].as_str().expect("a messageId").to_owned()
    }

    fn signal(&self, signal: Signal) {
        kill(self.pid(), signal).expect("signal the agent");
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn text(t: &str) -> Value {
    json!([{ "type": "text", "text": t }])
}

fn update_is(v: &Value, session: &str, kind: &str) -> bool {
    v["method"] == "session/update" && v["params"]["sessionId"] == session && v["params"]["update"]["sessionUpdate"] == kind
}

fn idle(v: &Value, session: &str) -> bool {
    update_is(v, session, "state_update") && v["params"]["update"]["state"] == "idle"
}

/// How often each user message of `session` reached the client (replayed or live).
fn deliveries(lines: &[Value], session: &str, id: &str) -> usize {
    lines.iter().filter(|v| update_is(v, session, "user_message") && v["params"]["update"]["messageId"] == id).count()
}

/// The user message ids the store's history holds for `session`, read as a third process would.
fn stored_user_messages(store: &Path, session: &str) -> Vec<String> {
    let reader = SqliteStore::open_shared(store, SqliteOptions::default().host("reader")).unwrap();
    let history = reader.history(&SessionId(session.to_owned())).unwrap();
    history
        .into_iter()
        .filter_map(|e| match e {
            HistoryEntry::User { message_id, .. } => Some(message_id.0),
            HistoryEntry::Update { .. } => None,
        })
        .collect()
}

/// The host scope of a minted id (`sess_<host>-N`).
fn scope(id: &str) -> &str {
    id.split_once('_').and_then(|(_, rest)| rest.rsplit_once('-')).map_or("", |(host, _)| host)
}

/// Resumes `session` on `peer` (with a replay from the start), retrying while another process
/// holds it; returns how many times it was refused.
fn resume_when_free(peer: &mut Peer, first_id: u64, session: &str, within: Duration) -> u32 {
    let deadline = Instant::now() + within;
    let mut refused = 0;
    let mut id = first_id;
    loop {
        peer.send(id, "session/resume", json!({ "sessionId": session, "cwd": "/work", "replayFrom": { "type": "start" } }));
        let answer = peer.answer(id);
        let Some(error) = answer.get("error") else { return refused };
        assert_eq!(error["code"], -32030, "only a session another process holds is refused: {answer}");
        assert!(Instant::now() < deadline, "the session was not free within {within:?}: {answer}");
        refused += 1;
        id += 1;
        let wait = error["data"]["retryAfterMs"].as_u64().unwrap_or(0).clamp(10, 200);
        std::thread::sleep(Duration::from_millis(wait));
    }
}

#[test]
fn two_agents_share_a_file_and_one_resumes_the_session_of_one_killed_mid_turn() {
    let dir = Scratch::new("kill");
    let path = dir.0.join("sessions.db");
    let store = path.to_str().unwrap();
    // A's turn is slow (about 2.4 s), B's quick.
    let mut a = Peer::spawn(store, 300);
    let mut b = Peer::spawn(store, 10);
    let sa = a.result(1, "session/new", json!({ "cwd": "/work" }))["sessionId"].as_str().unwrap().to_owned();
    let sb = b.result(1, "session/new", json!({ "cwd": "/work" }))["sessionId"].as_str().unwrap().to_owned();
    assert_ne!(scope(&sa), scope(&sb), "each process mints in its own scope: {sa} {sb}");

    // Both serve at once: a turn runs on each.
    let prompt = a.accept(2, "session/prompt", json!({ "sessionId": sa, "prompt": text("long task") }));
    let queued = a.accept(3, "session/inject", json!({ "sessionId": sa, "mode": "queue", "content": text("then this") }));
    let steered = a.accept(4, "session/inject", json!({ "sessionId": sa, "mode": "steer", "content": text("and mind this") }));
    b.accept(2, "session/prompt", json!({ "sessionId": sb, "prompt": text("short task") }));
    b.until(0, "B's turn under way", |v| update_is(v, &sb, "agent_message_chunk"));
    a.until(0, "A's turn under way", |v| update_is(v, &sa, "agent_message_chunk"));
    assert!(!a.seen.iter().any(|v| idle(v, &sa)), "A is still mid-turn");

    // A is killed mid-turn. B takes its session at once (A no longer runs: no lease to wait
    // out) and resumes it: the history replayed, what A left pending delivered.
    a.signal(Signal::SIGKILL);
    let _ = a.child.wait();
    let mark = b.seen.len();
    let refused = resume_when_free(&mut b, 5, &sa, WAIT);
    assert_eq!(refused, 0, "a dead process's session is free at once");
    b.until(mark, "the queued inject on B", |v| update_is(v, &sa, "user_message") && v["params"]["update"]["messageId"] == queued);
    b.until(mark, "the resumed session's turn to end on B", |v| idle(v, &sa));
    b.until(0, "B's own turn to end", |v| idle(v, &sb));
    for id in [&prompt, &steered, &queued] {
        assert_eq!(deliveries(&b.seen[mark..], &sa, id), 1, "{id} reached B's client exactly once: {:#?}", &b.seen[mark..]);
    }
    let stored = stored_user_messages(&path, &sa);
    for id in [&prompt, &steered, &queued] {
        assert_eq!(stored.iter().filter(|s| *s == id).count(), 1, "{id} is in the history once: {stored:?}");
    }
    // B goes on in it, minting in its own scope.
    let next = b.accept(20, "session/inject", json!({ "sessionId": sa, "mode": "queue", "content": text("one more") }));
    assert_eq!(scope(&next), scope(&sb));
}

#[test]
fn a_paused_agent_loses_its_session_to_the_other_after_the_lease() {
    let dir = Scratch::new("pause");
    let path = dir.0.join("sessions.db");
    let lease = Duration::from_millis(1500);
    let location = format!("sqlite:{}?acp_lease_ms={}", path.display(), lease.as_millis());
    let mut a = Peer::spawn(&location, 200);
    let mut b = Peer::spawn(&location, 20);
    let session = a.result(1, "session/new", json!({ "cwd": "/work" }))["sessionId"].as_str().unwrap().to_owned();
    let prompt = a.accept(2, "session/prompt", json!({ "sessionId": session, "prompt": text("long task") }));
    let queued = a.accept(3, "session/inject", json!({ "sessionId": session, "mode": "queue", "content": text("then this") }));
    a.until(0, "A's turn under way", |v| update_is(v, &session, "agent_message_chunk"));

    // Pause A, between transactions: a process stopped inside one would hold the file's write
    // lock (a limit of sharing SQLite: every other process waits for it).
    let started = Instant::now();
    let paused = loop {
        a.signal(Signal::SIGSTOP);
        let paused = Instant::now();
        if SqliteStore::open_shared(&path, SqliteOptions::default().host("probe")).is_ok() {
            break paused;
        }
        assert!(started.elapsed() < WAIT, "A never paused outside a transaction");
        a.signal(Signal::SIGCONT);
        std::thread::sleep(Duration::from_millis(20));
    };

    // B is refused while A's lease runs (A renewed it at most a quarter lease before the
    // pause), then takes the session.
    let mark = b.seen.len();
    let early = paused.elapsed() < lease / 2;
    let refused = resume_when_free(&mut b, 2, &session, WAIT);
    assert!(refused >= 1 || !early, "A's lease held the session for a while");
    b.until(mark, "the queued inject on B", |v| {
        update_is(v, &session, "user_message") && v["params"]["update"]["messageId"] == queued
    });
    b.until(mark, "the turn to end on B", |v| idle(v, &session));

    // A wakes up still serving the session in its memory: an inject it accepts cannot commit
    // (or its lease renewal already failed), so it answers nothing and serves nothing more.
    let woke = a.seen.len();
    a.signal(Signal::SIGCONT);
    a.send(50, "session/inject", json!({ "sessionId": session, "mode": "queue", "content": text("too late") }));
    let late = a.until_within(woke, "", Duration::from_secs(1), |v| v["id"] == json!(50));
    assert!(late.is_none(), "a process that lost its lease answers nothing: {late:?}");
    let after: Vec<&Value> = a.seen[woke..].iter().filter(|v| update_is(v, &session, "user_message")).collect();
    assert!(after.is_empty(), "nothing delivered by A after it lost the session: {after:?}");
    for id in [&prompt, &queued] {
        assert_eq!(deliveries(&b.seen[mark..], &session, id), 1, "{id} reached B's client exactly once");
    }
    let stored = stored_user_messages(&path, &session);
    for id in [&prompt, &queued] {
        assert_eq!(stored.iter().filter(|s| *s == id).count(), 1, "{id} is in the history once: {stored:?}");
    }
    assert_eq!(stored.len(), 2, "nothing of A's after the pause: {stored:?}");
}
