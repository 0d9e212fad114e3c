//! The reference agent over real stdio: a scripted session whose every emitted message is
//! validated against `spec/acp-inject.schema.json`, and a crash test of the durable store
//! (SIGKILL at random points, restart, nothing accepted lost or delivered twice).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const AGENT: &str = env!("CARGO_BIN_EXE_acp-inject-agent");

struct Agent {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    seen: Vec<Value>,
}

impl Agent {
    fn start(args: &[&str]) -> Agent {
        let mut child = Command::new(AGENT).args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("agent starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Agent { child, stdin, lines, seen: Vec::new() }
    }

    fn send(&mut self, v: Value) {
        writeln!(self.stdin, "{v}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Reads lines until `pred` matches one (or panics after 20 s).
    fn until(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self.lines.recv_timeout(left).unwrap_or_else(|_| panic!("timed out waiting for {what}; saw {:#?}", self.seen.iter().rev().take(5).collect::<Vec<_>>()));
            let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON: {line}: {e}"));
            self.seen.push(v.clone());
            if pred(&v) {
                return v;
            }
        }
    }

    fn answer(&mut self, id: i64) -> Value {
        self.until(&format!("the answer to {id}"), |v| v["id"] == json!(id) && v.get("method").is_none())
    }
}

fn update_is(v: &Value, kind: &str) -> bool {
    v["params"]["update"]["sessionUpdate"] == kind
}

fn req(id: i64, method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
}

fn text(s: &str) -> Value {
    json!([{ "type": "text", "text": s }])
}

#[test]
fn a_scripted_session_over_stdio_emits_only_schema_valid_messages() {
    let schema: Value = serde_json::from_str(include_str!("../../../spec/acp-inject.schema.json")).unwrap();
    let validator = jsonschema::draft202012::new(&schema).expect("schema compiles");
    let mut a = Agent::start(&["--delay-ms", "20", "--tools", "2", "--permission-on-tool", "1"]);
    a.send(req(1, "initialize", json!({ "protocolVersion": 2, "info": { "name": "test", "version": "1" } })));
    let init = a.answer(1);
    assert_eq!(init["result"]["capabilities"]["session"]["inject"]["modes"], json!(["queue", "steer"]));
    a.send(req(2, "session/new", json!({ "cwd": "/tmp" })));
    let sid = a.answer(2)["result"]["sessionId"].as_str().unwrap().to_owned();
    a.send(req(3, "session/prompt", json!({ "sessionId": sid, "prompt": text("fix the bug") })));
    let m1 = a.answer(3)["result"]["messageId"].as_str().unwrap().to_owned();
    a.until("the first chunk", |v| update_is(v, "agent_message_chunk"));
    a.send(req(4, "session/inject", json!({ "sessionId": sid, "mode": "steer", "content": text("use auth_v2") })));
    let steer = a.answer(4)["result"]["messageId"].as_str().unwrap().to_owned();
    a.send(req(5, "session/inject", json!({ "sessionId": sid, "mode": "queue", "content": text("then the docs") })));
    let queued = a.answer(5)["result"]["messageId"].as_str().unwrap().to_owned();
    a.send(req(6, "session/inject", json!({ "sessionId": sid, "mode": "queue", "content": text("never mind") })));
    let revoked = a.answer(6)["result"]["messageId"].as_str().unwrap().to_owned();
    a.send(req(7, "session/revoke_inject", json!({ "sessionId": sid, "messageId": revoked })));
    assert_eq!(a.answer(7)["result"], json!({}));
    // The steer arrives at the first tool-result break-point.
    a.until("the steer's user_message", |v| update_is(v, "user_message") && v["params"]["update"]["messageId"] == json!(steer));
    let perm = a.until("the permission request", |v| v["method"] == "session/request_permission");
    a.until("requires_action", |v| update_is(v, "state_update") && v["params"]["update"]["state"] == "requires_action");
    a.send(json!({ "jsonrpc": "2.0", "id": perm["id"], "result": { "outcome": { "outcome": "selected", "optionId": "allow" } } }));
    a.until("the turn end", |v| update_is(v, "state_update") && v["params"]["update"]["state"] == "idle");
    a.until("the queued user_message", |v| update_is(v, "user_message") && v["params"]["update"]["messageId"] == json!(queued));
    a.send(req(8, "session/status", json!({ "sessionId": sid })));
    assert_eq!(a.answer(8)["result"], json!({ "status": "live" }));
    a.send(req(9, "session/close", json!({ "sessionId": sid })));
    assert_eq!(a.answer(9)["result"], json!({}));
    a.send(req(10, "session/status", json!({ "sessionId": sid })));
    assert_eq!(a.answer(10)["result"], json!({ "status": "not_found" }));
    drop(a.stdin);
    assert!(a.child.wait().unwrap().success());

    let delivered: Vec<&Value> = a.seen.iter().filter(|v| update_is(v, "user_message")).map(|v| &v["params"]["update"]["messageId"]).collect();
    assert_eq!(delivered, [&json!(m1), &json!(steer), &json!(queued)], "revoked never delivered; order as the rules say");
    for v in &a.seen {
        let errors: Vec<String> = validator.iter_errors(v).map(|e| format!("{e} at {}", e.instance_path())).collect();
        assert!(errors.is_empty(), "the agent emitted a message the schema rejects:\n{v}\n{errors:#?}");
    }
    assert!(a.seen.len() > 20);
}

/// A tiny deterministic generator (xorshift), so the kill points vary but reproduce.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn id_number(id: &str) -> u64 {
    id.trim_start_matches(|c: char| !c.is_ascii_digit()).parse().expect("msg_N ids")
}

#[test]
fn sigkill_at_random_points_loses_nothing_accepted_and_delivers_nothing_twice() {
    let dir = std::env::temp_dir().join(format!("acp-inject-crash-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = dir.join("agent.json");
    let store_s = store.to_str().unwrap();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut acknowledged: BTreeSet<String> = BTreeSet::new();
    let mut deliveries: BTreeMap<String, u32> = BTreeMap::new();
    let mut max_id = 0u64;
    let mut sid = String::new();
    let mut next_req = 100;

    for round in 0..6 {
        // Long steps: the turn stays in progress while we inject, so injects stay pending.
        let mut a = Agent::start(&["--delay-ms", "2000", "--store", store_s]);
        if round == 0 {
            a.send(req(1, "session/new", json!({ "cwd": "/tmp" })));
            sid = a.answer(1)["result"]["sessionId"].as_str().unwrap().to_owned();
            a.send(req(2, "session/prompt", json!({ "sessionId": sid, "prompt": text("long task") })));
            let m = a.answer(2)["result"]["messageId"].as_str().unwrap().to_owned();
            max_id = id_number(&m);
        }
        let burst = 5 + rng.below(10);
        for _ in 0..burst {
            next_req += 1;
            let mode = if rng.below(2) == 0 { "queue" } else { "steer" };
            a.send(req(next_req, "session/inject", json!({ "sessionId": sid, "mode": mode, "content": text("work") })));
        }
        // Read a random number of answers, then kill without warning (maybe mid-write).
        let read = rng.below(burst + 1);
        for _ in 0..read {
            let v = a.until("an inject answer", |v| v.get("id").is_some() && v.get("method").is_none());
            if let Some(m) = v["result"]["messageId"].as_str() {
                assert!(id_number(m) > max_id, "ids keep increasing across restarts: {m} after msg_{max_id}");
                max_id = id_number(m);
                acknowledged.insert(m.to_owned());
            } else {
                // A steer can meet an idle session after a restart ended the turn.
                assert_eq!(v["error"]["data"]["reason"], "no_running_turn", "{v}");
            }
        }
        std::thread::sleep(Duration::from_millis(rng.below(30)));
        a.child.kill().unwrap(); // SIGKILL
        a.child.wait().unwrap();
        for v in a.seen.iter().chain(a.lines.try_iter().map(|l| serde_json::from_str(&l).unwrap()).collect::<Vec<Value>>().iter()) {
            if update_is(v, "user_message") {
                *deliveries.entry(v["params"]["update"]["messageId"].as_str().unwrap().to_owned()).or_default() += 1;
            }
        }
    }

    // Restart once more and ask about every acknowledged id: pending → revoke answers {},
    // delivered → already_delivered. Never unknown_message_id: that would be a lost inject.
    let mut a = Agent::start(&["--delay-ms", "2000", "--store", store_s]);
    for id in &acknowledged {
        next_req += 1;
        a.send(req(next_req, "session/revoke_inject", json!({ "sessionId": sid, "messageId": id })));
        let v = a.answer(next_req);
        let known = v["result"] == json!({}) || v["error"]["data"]["reason"] == "already_delivered";
        assert!(known, "accepted inject {id} was lost across a crash: {v}");
    }
    a.child.kill().unwrap();
    a.child.wait().unwrap();
    for v in &a.seen {
        if update_is(v, "user_message") {
            *deliveries.entry(v["params"]["update"]["messageId"].as_str().unwrap().to_owned()).or_default() += 1;
        }
    }
    std::fs::remove_dir_all(&dir).ok();
    let twice: Vec<_> = deliveries.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "delivered more than once: {twice:?}");
    assert!(acknowledged.len() >= 10, "the test acknowledged too few injects to mean anything: {}", acknowledged.len());
}
