//! The black-box stdio suite: any agent command, driven over real stdio with raw JSON-RPC lines
//! (not this toolkit's client, so the two cannot share a bug), every emitted message checked
//! against the canonical schema.
//!
//! The agent must accept `--delay-ms MS` (time between its model's steps) and `--store PATH`
//! (sessions in a file, outliving the process). The reference agent and the Python and Kotlin
//! example agents do; each runs this same suite. With [`Suite::with_store_url`] the stores are
//! PostgreSQL instead (`--store postgres://…`, one host name per check).

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::peer::{req, text, Agent, Rng};

/// The canonical schema, compiled into the suite.
const SCHEMA: &str = include_str!("../../../spec/acp-inject.schema.json");

/// One check's outcome.
#[derive(Debug, Clone)]
pub struct CheckResult {
    /// The check.
    pub name: &'static str,
    /// `None` when it passed.
    pub failure: Option<String>,
    /// How long it took.
    pub elapsed: Duration,
}

type Check = fn(&Suite) -> Result<(), String>;

const CHECKS: &[(&str, Check)] = &[
    ("a scripted session emits only schema-valid messages, in rule order", scripted_session),
    ("bad input gets the documented errors and changes nothing", bad_input),
    ("cancel ends the running turn as cancelled; pending injects survive it", cancel),
    ("two sessions on one connection never mix", two_sessions),
    ("sessions outlive the process: list, resume with and without replay, new ids, close", restart),
    ("SIGKILL at random points loses no accepted inject and delivers none twice", sigkill),
];

/// The suite, for one agent command.
pub struct Suite {
    command: Vec<String>,
    dir: PathBuf,
    validator: jsonschema::Validator,
    /// A PostgreSQL URL: the stores are this database instead of files in `dir`.
    store_url: Option<String>,
}

fn update_is(v: &Value, kind: &str) -> bool {
    v["method"] == "session/update" && v["params"]["update"]["sessionUpdate"] == kind
}

fn state_is(v: &Value, state: &str) -> bool {
    update_is(v, "state_update") && v["params"]["update"]["state"] == state
}

fn delivered(v: &Value, id: &str) -> bool {
    update_is(v, "user_message") && v["params"]["update"]["messageId"] == json!(id)
}

/// Every `messageId` the agent named in what `a` read so far (updates and answers).
fn message_ids(a: &Agent) -> BTreeSet<String> {
    let named = |v: &Value| v["params"]["update"]["messageId"].as_str().or(v["result"]["messageId"].as_str()).map(str::to_owned);
    a.seen.iter().filter_map(named).collect()
}

/// The updates that carry history (what a replay sends), as opposed to state and lists.
const HISTORY_UPDATES: &[&str] = &[
    "user_message",
    "user_message_chunk",
    "agent_message",
    "agent_message_chunk",
    "agent_thought",
    "agent_thought_chunk",
    "tool_call",
    "tool_call_update",
    "plan",
];

fn check(ok: bool, what: impl Into<String>) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(what.into())
    }
}

impl Suite {
    /// A suite for `command` (program and arguments), keeping its files in `dir`.
    pub fn new(command: Vec<String>, dir: &Path) -> Result<Suite, String> {
        let schema: Value = serde_json::from_str(SCHEMA).map_err(|e| e.to_string())?;
        let validator = jsonschema::draft202012::new(&schema).map_err(|e| format!("the schema does not compile: {e}"))?;
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        Ok(Suite { command, dir: dir.to_path_buf(), validator, store_url: None })
    }

    /// Keeps the stores in the PostgreSQL database at `url` (a fresh one: the checks list
    /// sessions), each check under a host name of its own.
    #[must_use]
    pub fn with_store_url(mut self, url: &str) -> Suite {
        self.store_url = Some(url.to_owned());
        self
    }

    fn start(&self, delay_ms: u64, store: Option<&OsStr>) -> Result<Agent, String> {
        let mut a = Agent::spawn(&self.command, delay_ms, store)?;
        a.send(req(0, "initialize", json!({ "protocolVersion": 2, "info": { "name": "blackbox", "version": "1" } })))?;
        a.result(0)?;
        Ok(a)
    }

    /// Every message the agent wrote validates against the schema.
    fn validate(&self, a: &Agent) -> Result<(), String> {
        for v in &a.seen {
            let errors: Vec<String> = self.validator.iter_errors(v).map(|e| format!("{e} at {}", e.instance_path())).collect();
            check(errors.is_empty(), format!("the agent emitted a message the schema rejects:\n{v}\n{errors:#?}"))?;
        }
        Ok(())
    }

    /// A fresh store for one check: a file, or a host name of its own on the database (every
    /// process of the check uses it, so a restarted one takes its sessions back at once).
    fn store(&self, name: &str) -> OsString {
        if let Some(url) = &self.store_url {
            let sep = if url.contains('?') { '&' } else { '?' };
            return format!("{url}{sep}acp_host={}_{}", name.replace('.', "_"), std::process::id()).into();
        }
        let p = self.dir.join(name);
        let _ = std::fs::remove_file(&p);
        let _ = std::fs::remove_file(p.with_extension("db-wal"));
        let _ = std::fs::remove_file(p.with_extension("db-shm"));
        p.into_os_string()
    }

    /// Runs every check, in order.
    pub fn run(&self) -> Vec<CheckResult> {
        CHECKS
            .iter()
            .map(|(name, f)| {
                let started = Instant::now();
                let failure = f(self).err();
                CheckResult { name, failure, elapsed: started.elapsed() }
            })
            .collect()
    }
}

fn new_session(a: &mut Agent, id: i64, cwd: &str) -> Result<String, String> {
    a.send(req(id, "session/new", json!({ "cwd": cwd })))?;
    a.result(id)?["sessionId"].as_str().map(str::to_owned).ok_or_else(|| "session/new gave no sessionId".into())
}

fn accept(a: &mut Agent, id: i64, method: &str, params: Value) -> Result<String, String> {
    a.send(req(id, method, params))?;
    a.result(id)?["messageId"].as_str().map(str::to_owned).ok_or_else(|| format!("{method} gave no messageId"))
}

fn scripted_session(s: &Suite) -> Result<(), String> {
    let mut a = s.start(40, None)?;
    let sid = new_session(&mut a, 1, "/tmp")?;
    let m1 = accept(&mut a, 2, "session/prompt", json!({ "sessionId": sid, "prompt": text("fix the bug") }))?;
    a.until("the turn to start", |v| state_is(v, "running"))?;
    let steer = accept(&mut a, 3, "session/inject", json!({ "sessionId": sid, "mode": "steer", "content": text("use auth_v2") }))?;
    let queued = accept(&mut a, 4, "session/inject", json!({ "sessionId": sid, "mode": "queue", "content": text("then the docs") }))?;
    let revoked = accept(&mut a, 5, "session/inject", json!({ "sessionId": sid, "mode": "queue", "content": text("never mind") }))?;
    a.send(req(6, "session/revoke_inject", json!({ "sessionId": sid, "messageId": revoked })))?;
    check(a.result(6)? == json!({}), "revoke answers {}")?;
    let replaced = accept(&mut a, 7, "session/inject", json!({ "sessionId": sid, "mode": "queue", "content": text("draft") }))?;
    a.send(req(8, "session/replace_inject", json!({ "sessionId": sid, "messageId": replaced, "content": text("final") })))?;
    a.result(8)?;
    // A prompt during a turn is held (R-PROMPT-2): answered with its receipt once inserted,
    // after the queued injects that arrived before it.
    a.send(req(9, "session/prompt", json!({ "sessionId": sid, "prompt": text("after the docs") })))?;
    a.until("the steer's delivery", |v| delivered(v, &steer))?;
    a.until("the turn end", |v| state_is(v, "idle"))?;
    a.until("the queued delivery", |v| delivered(v, &queued))?;
    let last = a.until("the replaced delivery", |v| delivered(v, &replaced))?;
    check(last["params"]["update"]["content"] == text("final"), "the replaced inject is delivered with its final content")?;
    let held = a.result(9)?["messageId"].as_str().map(str::to_owned).ok_or("the held prompt's receipt has no messageId")?;
    check(
        a.seen.iter().any(|v| delivered(v, &held) && v["params"]["update"]["content"] == text("after the docs")),
        "a held prompt is answered after its user_message, once inserted",
    )?;
    a.until("the next turn end", |v| state_is(v, "idle"))?;
    a.send(req(10, "session/status", json!({ "sessionId": sid })))?;
    check(a.result(10)? == json!({ "status": "open", "state": { "state": "idle" } }), "status is open, idle")?;
    a.send(req(11, "session/close", json!({ "sessionId": sid })))?;
    a.result(11)?;
    a.send(req(12, "session/status", json!({ "sessionId": sid })))?;
    check(a.result(12)? == json!({ "status": "saved" }), "status after close is saved (resumable)")?;
    a.drain_to_exit();
    let order: Vec<String> = a
        .seen
        .iter()
        .filter(|v| update_is(v, "user_message"))
        .filter_map(|v| v["params"]["update"]["messageId"].as_str().map(str::to_owned))
        .collect();
    check(
        order == [m1, steer, queued, replaced, held],
        format!("delivery order (prompt, steer at a break-point, then queued and held FIFO; revoked never): {order:?}"),
    )?;
    s.validate(&a)
}

fn bad_input(s: &Suite) -> Result<(), String> {
    let mut a = s.start(40, None)?;
    a.send_raw(b"{not json")?;
    let v = a.until("the parse error", |v| v.get("error").is_some())?;
    check(v["error"]["code"] == -32700 && v["id"].is_null(), format!("malformed JSON → -32700 with a null id: {v}"))?;
    a.send_raw(b"\xff\xfe{}")?;
    let v = a.until("the UTF-8 error", |v| v.get("error").is_some())?;
    check(v["error"]["code"] == -32700, format!("invalid UTF-8 → -32700: {v}"))?;
    a.send(req(1, "session/frobnicate", json!({})))?;
    check(a.answer(1)?["error"]["code"] == -32601, "unknown method → -32601")?;
    a.send(req(2, "session/prompt", json!({ "sessionId": 5, "prompt": "x" })))?;
    check(a.answer(2)?["error"]["code"] == -32602, "wrong types → -32602")?;
    a.send(req(3, "session/prompt", json!({ "sessionId": "nope", "prompt": text("x") })))?;
    check(a.answer(3)?["error"]["data"]["reason"] == "session_not_found", "unknown session → session_not_found")?;
    let sid = new_session(&mut a, 4, "/tmp")?;
    a.send(req(5, "session/inject", json!({ "sessionId": sid, "mode": "steer", "content": text("x") })))?;
    check(a.answer(5)?["error"]["data"]["reason"] == "no_running_turn", "steer while idle → no_running_turn")?;
    a.send_raw(br#"{"jsonrpc":"2.0","id":6,"method":"session/status","params":{"sessionId":"#)?;
    a.send(req(7, "session/status", json!({ "sessionId": sid })))?;
    check(a.result(7)?["status"] == "open", "a partial line is an error on its own and the next line works")?;
    a.drain_to_exit();
    s.validate(&a)
}

fn cancel(s: &Suite) -> Result<(), String> {
    let mut a = s.start(200, None)?;
    let sid = new_session(&mut a, 1, "/tmp")?;
    accept(&mut a, 2, "session/prompt", json!({ "sessionId": sid, "prompt": text("long job") }))?;
    a.until("the turn to start", |v| state_is(v, "running"))?;
    let queued = accept(&mut a, 3, "session/inject", json!({ "sessionId": sid, "mode": "queue", "content": text("after") }))?;
    a.send(json!({ "jsonrpc": "2.0", "method": "session/cancel", "params": { "sessionId": sid } }))?;
    let idle = a.until("the cancelled turn end", |v| state_is(v, "idle"))?;
    check(idle["params"]["update"]["stopReason"] == "cancelled", format!("the turn ends cancelled: {idle}"))?;
    a.until("the queued inject opening the next turn", |v| delivered(v, &queued))?;
    a.drain_to_exit();
    s.validate(&a)
}

fn two_sessions(s: &Suite) -> Result<(), String> {
    let mut a = s.start(40, None)?;
    let s1 = new_session(&mut a, 1, "/tmp/a")?;
    let s2 = new_session(&mut a, 2, "/tmp/b")?;
    let m1 = accept(&mut a, 3, "session/prompt", json!({ "sessionId": s1, "prompt": text("one") }))?;
    let m2 = accept(&mut a, 4, "session/prompt", json!({ "sessionId": s2, "prompt": text("two") }))?;
    let q2 = accept(&mut a, 5, "session/inject", json!({ "sessionId": s2, "mode": "queue", "content": text("two later") }))?;
    a.until("s2's queued delivery", |v| delivered(v, &q2))?;
    a.drain_to_exit();
    for v in a.seen.iter().filter(|v| update_is(v, "user_message")) {
        let (sid, mid) = (&v["params"]["sessionId"], &v["params"]["update"]["messageId"]);
        let right = if *mid == json!(m1) {
            json!(s1)
        } else if *mid == json!(m2) || *mid == json!(q2) {
            json!(s2)
        } else {
            sid.clone()
        };
        check(*sid == right, format!("a user_message in the wrong session: {v}"))?;
    }
    s.validate(&a)
}

fn restart(s: &Suite) -> Result<(), String> {
    let store = s.store("restart.db");
    let mut a = s.start(30, Some(store.as_os_str()))?;
    let sid = new_session(&mut a, 1, "/tmp/project")?;
    let m1 = accept(&mut a, 2, "session/prompt", json!({ "sessionId": sid, "prompt": text("first task") }))?;
    a.until("the turn end", |v| state_is(v, "idle"))?;
    a.drain_to_exit();
    s.validate(&a)?;

    let mut b = s.start(30, Some(store.as_os_str()))?;
    b.send(req(1, "session/list", json!({})))?;
    let listed = b.result(1)?;
    let ids: Vec<&Value> = listed["sessions"].as_array().map(|l| l.iter().map(|i| &i["sessionId"]).collect()).unwrap_or_default();
    check(ids.contains(&&json!(sid)), format!("a fresh process lists the session: {listed}"))?;
    b.send(req(2, "session/resume", json!({ "sessionId": sid, "cwd": "/tmp/project", "replayFrom": { "type": "start" } })))?;
    b.result(2)?;
    let at = b.seen.iter().position(|v| v["id"] == json!(2)).unwrap_or(0);
    let replayed = b.seen[..at].iter().any(|v| delivered(v, &m1) && v["params"]["update"]["content"] == text("first task"));
    check(replayed, "resume with replayFrom start replays the user_message, with its original id, before the answer")?;
    let replayed_ids = message_ids(&b);
    let m2 = accept(&mut b, 3, "session/prompt", json!({ "sessionId": sid, "prompt": text("second task") }))?;
    check(
        !replayed_ids.contains(&m2),
        format!("a new prompt gets an id the session never used: {m2} is among the replayed {replayed_ids:?}"),
    )?;
    b.until("the second turn end", |v| state_is(v, "idle"))?;
    b.drain_to_exit();
    s.validate(&b)?;

    let mut c = s.start(400, Some(store.as_os_str()))?;
    c.send(req(1, "session/resume", json!({ "sessionId": sid, "cwd": "/tmp/project" })))?;
    c.result(1)?;
    // A replay may not follow the answer either: look a while longer before the next request.
    c.settle(300)?;
    let history: Vec<&Value> = c.seen.iter().filter(|v| HISTORY_UPDATES.iter().any(|k| update_is(v, k))).collect();
    check(history.is_empty(), format!("resume without replayFrom replays nothing: {history:?}"))?;
    let used = &replayed_ids | &message_ids(&b);
    let m3 = accept(&mut c, 2, "session/prompt", json!({ "sessionId": sid, "prompt": text("long task") }))?;
    check(!used.contains(&m3), format!("ids never repeat across restarts: {m3} is among {used:?}"))?;
    c.until("the turn to start", |v| state_is(v, "running"))?;
    c.send(req(3, "session/close", json!({ "sessionId": sid })))?;
    c.result(3)?;
    let answered = c.seen.len();
    std::thread::sleep(Duration::from_millis(900));
    c.drain_to_exit();
    let after: Vec<&Value> = c.seen[answered..].iter().filter(|v| v["params"]["sessionId"] == json!(sid)).collect();
    check(after.is_empty(), format!("nothing follows the answer to session/close for that session: {after:?}"))?;
    s.validate(&c)?;

    // A queue inject accepted right before SIGKILL arrives after a fresh process resumes.
    let mut d = s.start(2000, Some(store.as_os_str()))?;
    d.send(req(1, "session/resume", json!({ "sessionId": sid, "cwd": "/tmp/project" })))?;
    d.result(1)?;
    accept(&mut d, 2, "session/prompt", json!({ "sessionId": sid, "prompt": text("slow task") }))?;
    let q = accept(&mut d, 3, "session/inject", json!({ "sessionId": sid, "mode": "queue", "content": text("do not lose me") }))?;
    d.kill();
    let mut e = s.start(30, Some(store.as_os_str()))?;
    e.send(req(1, "session/resume", json!({ "sessionId": sid, "cwd": "/tmp/project", "replayFrom": { "type": "start" } })))?;
    e.result(1)?;
    if !e.seen.iter().any(|v| delivered(v, &q)) {
        e.until("the inject accepted before the kill", |v| delivered(v, &q))?;
    }
    e.drain_to_exit();
    let count = e.seen.iter().filter(|v| delivered(v, &q)).count();
    check(count == 1, format!("the inject arrives exactly once after the restart (seen {count} times)"))?;
    s.validate(&e)
}

fn sigkill(s: &Suite) -> Result<(), String> {
    let store = s.store("sigkill.db");
    let seed = std::env::var("ACP_INJECT_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(0x9E37_79B9_7F4A_7C15u64);
    let mut rng = Rng::new(seed);
    let mut acknowledged: BTreeSet<String> = BTreeSet::new();
    let mut deliveries: BTreeMap<String, u32> = BTreeMap::new();
    let mut sid = String::new();
    let mut next = 100;
    let count_live = |a: &Agent, deliveries: &mut BTreeMap<String, u32>| {
        // Live deliveries only: a replay (before a resume's answer) is not a second delivery.
        for v in a.seen.iter().filter(|v| update_is(v, "user_message")) {
            if let Some(m) = v["params"]["update"]["messageId"].as_str() {
                *deliveries.entry(m.to_owned()).or_default() += 1;
            }
        }
    };
    for round in 0..6 {
        let mut a = s.start(2000, Some(store.as_os_str()))?;
        if round == 0 {
            sid = new_session(&mut a, 1, "/tmp")?;
            accept(&mut a, 2, "session/prompt", json!({ "sessionId": sid, "prompt": text("long task") }))?;
        } else {
            a.send(req(1, "session/resume", json!({ "sessionId": sid, "cwd": "/tmp" })))?;
            a.result(1)?;
        }
        let burst = 5 + rng.below(10);
        for _ in 0..burst {
            next += 1;
            let mode = if rng.below(2) == 0 { "queue" } else { "steer" };
            a.send(req(next, "session/inject", json!({ "sessionId": sid, "mode": mode, "content": text("work") })))?;
        }
        for _ in 0..rng.below(burst + 1) {
            let v = a.until("an inject answer", |v| v.get("id").is_some() && v.get("method").is_none())?;
            if let Some(m) = v["result"]["messageId"].as_str() {
                acknowledged.insert(m.to_owned());
            } else {
                check(v["error"]["data"]["reason"] == "no_running_turn", format!("an inject refused for another reason: {v}"))?;
            }
        }
        std::thread::sleep(Duration::from_millis(rng.below(30)));
        a.kill();
        count_live(&a, &mut deliveries);
    }
    // Every acknowledged id is known after one more restart: pending (revoke answers {}) or
    // delivered (already_delivered), never unknown (that would be a lost inject).
    let mut a = s.start(2000, Some(store.as_os_str()))?;
    a.send(req(1, "session/resume", json!({ "sessionId": sid, "cwd": "/tmp" })))?;
    a.result(1)?;
    for id in &acknowledged {
        next += 1;
        a.send(req(next, "session/revoke_inject", json!({ "sessionId": sid, "messageId": id })))?;
        let v = a.answer(next)?;
        let known = v["result"] == json!({}) || v["error"]["data"]["reason"] == "already_delivered";
        check(known, format!("accepted inject {id} (seed {seed}) was lost across a crash: {v}"))?;
    }
    a.kill();
    count_live(&a, &mut deliveries);
    let twice: Vec<_> = deliveries.iter().filter(|(_, n)| **n > 1).collect();
    check(twice.is_empty(), format!("delivered more than once (seed {seed}): {twice:?}"))?;
    check(acknowledged.len() >= 10, format!("too few injects acknowledged to mean anything: {}", acknowledged.len()))
}
