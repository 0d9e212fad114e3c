//! The conformance-vector runner (format: `VECTORS.md`, our extensions: `spec/vectors/README.md`).
//!
//! [`run_dirs`] replays every `*.json` file found below the given directories; each file is
//! one vector and the runner needs no code for new ones. Every language's binding calls this
//! same runner through the FFI, so a vector means the same thing everywhere.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::agent::{Agent, AgentConfig, Output, Policy, QueueDrain, Recipient, RevokeReplace, Role, RuntimeEvent};
use crate::client::ClientMirror;

/// The outcome of one vector.
#[derive(Clone, Debug, PartialEq)]
pub struct VectorResult {
    pub name: String,
    pub file: String,
    /// `None` when it passed; otherwise the first mismatch, for a person to read.
    pub mismatch: Option<String>,
}

/// The outcome of a run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Report {
    pub results: Vec<VectorResult>,
}

impl Report {
    pub fn passed(&self) -> usize {
        self.results.iter().filter(|r| r.mismatch.is_none()).count()
    }

    pub fn failed(&self) -> usize {
        self.results.len() - self.passed()
    }

    /// `N passed, N failed`, then each failing vector and its first mismatch.
    pub fn render(&self) -> String {
        let mut s = String::new();
        for r in self.results.iter().filter(|r| r.mismatch.is_some()) {
            s.push_str(&format!("FAILED {} ({})\n  {}\n", r.name, r.file, r.mismatch.as_deref().unwrap_or("")));
        }
        s.push_str(&format!("{} passed, {} failed\n", self.passed(), self.failed()));
        s
    }
}

/// Replays every vector file below `dirs` (recursively, sorted by path).
pub fn run_dirs<P: AsRef<Path>>(dirs: &[P]) -> Report {
    let mut files = Vec::new();
    for d in dirs {
        collect(d.as_ref(), &mut files);
    }
    files.sort();
    Report { results: files.iter().map(|f| run_file(f)).collect() }
}

fn collect(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_file() {
        if path.extension().is_some_and(|e| e == "json") {
            out.push(path.to_path_buf());
        }
        return;
    }
    if let Ok(entries) = std::fs::read_dir(path) {
        for e in entries.flatten() {
            collect(&e.path(), out);
        }
    }
}

/// Replays one vector file.
pub fn run_file(path: &Path) -> VectorResult {
    let file = path.display().to_string();
    match std::fs::read_to_string(path) {
        Ok(text) => {
            let mut r = run_text(&text);
            r.file = file;
            r
        }
        Err(e) => VectorResult { name: file.clone(), file, mismatch: Some(format!("cannot read: {e}")) },
    }
}

/// Replays one vector given as JSON text.
pub fn run_text(text: &str) -> VectorResult {
    let vector: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => return VectorResult { name: "(unreadable)".into(), file: String::new(), mismatch: Some(format!("not JSON: {e}")) },
    };
    let name = vector.get("name").and_then(Value::as_str).unwrap_or("(unnamed)").to_owned();
    let outcome = match vector.get("side").and_then(Value::as_str) {
        Some("agent") => AgentReplay::new(&vector).and_then(|r| r.run(&vector)),
        Some("client") => ClientReplay::new(&vector).and_then(|r| r.run(&vector)),
        other => Err(format!("unknown side {other:?}")),
    };
    VectorResult { name, file: String::new(), mismatch: outcome.err() }
}

// ----- captures and comparison -----

/// Bound `$name` captures.
#[derive(Default)]
pub struct Captures {
    bound: BTreeMap<String, Value>,
}

fn capture_name(s: &str) -> Option<&str> {
    let name = s.strip_prefix('$')?;
    let mut chars = name.chars();
    let first = chars.next()?;
    if (first.is_ascii_alphabetic() || first == '_') && chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
        Some(name)
    } else {
        None
    }
}

impl Captures {
    /// Compares `expected` (with captures) against `actual`, binding new captures.
    pub fn matches(&mut self, expected: &Value, actual: &Value, at: &str) -> Result<(), String> {
        match (expected, actual) {
            (Value::String(e), _) if capture_name(e).is_some() => {
                let name = capture_name(e).expect("checked");
                match self.bound.get(name) {
                    Some(v) if v == actual => Ok(()),
                    Some(v) => Err(format!("{at}: ${name} is bound to {v}, got {actual}")),
                    None => {
                        if !matches!(actual, Value::String(_) | Value::Number(_)) {
                            return Err(format!("{at}: ${name} must capture a string or number, got {actual}"));
                        }
                        if let Some((other, _)) = self.bound.iter().find(|(_, v)| *v == actual) {
                            return Err(format!("{at}: ${name} would bind {actual}, already bound to ${other}"));
                        }
                        self.bound.insert(name.to_owned(), actual.clone());
                        Ok(())
                    }
                }
            }
            (Value::String(e), Value::String(a)) => {
                let e = e.strip_prefix("$$").map(|r| format!("${r}")).unwrap_or_else(|| e.clone());
                if &e == a {
                    Ok(())
                } else {
                    Err(format!("{at}: expected {e:?}, got {a:?}"))
                }
            }
            (Value::Object(e), Value::Object(a)) => {
                for (k, ev) in e {
                    match a.get(k) {
                        Some(av) => self.matches(ev, av, &format!("{at}.{k}"))?,
                        None => return Err(format!("{at}: missing member `{k}` (expected {ev})")),
                    }
                }
                if let Some(k) = a.keys().find(|k| !e.contains_key(*k)) {
                    return Err(format!("{at}: unexpected member `{k}`: {}", a[k]));
                }
                Ok(())
            }
            (Value::Array(e), Value::Array(a)) => {
                if e.len() != a.len() {
                    return Err(format!("{at}: expected {} items, got {}: {actual}", e.len(), a.len()));
                }
                e.iter().zip(a).enumerate().try_for_each(|(i, (ev, av))| self.matches(ev, av, &format!("{at}[{i}]")))
            }
            (Value::Number(e), Value::Number(a)) if e.as_f64() == a.as_f64() && e.is_f64() == a.is_f64() => Ok(()),
            _ if expected == actual => Ok(()),
            _ => Err(format!("{at}: expected {expected}, got {actual}")),
        }
    }

    /// Replaces bound captures by their values (`$$x` becomes `$x`); an unbound one is an error.
    pub fn substitute(&self, v: &Value) -> Result<Value, String> {
        Ok(match v {
            Value::String(s) => match capture_name(s) {
                Some(name) => self.bound.get(name).cloned().ok_or_else(|| format!("capture ${name} is used before it is bound"))?,
                None => Value::String(s.strip_prefix("$$").map(|r| format!("${r}")).unwrap_or_else(|| s.clone())),
            },
            Value::Array(items) => Value::Array(items.iter().map(|i| self.substitute(i)).collect::<Result<_, _>>()?),
            Value::Object(obj) => {
                Value::Object(obj.iter().map(|(k, v)| Ok((k.clone(), self.substitute(v)?))).collect::<Result<Map<_, _>, String>>()?)
            }
            other => other.clone(),
        })
    }
}

/// An expected error without `data.detail` ignores an actual `detail` (and a `data` left empty).
fn strip_detail(expected: &Value, actual: &mut Value) {
    let Some(err) = actual.get_mut("error") else { return };
    let expected_data = expected.get("error").and_then(|e| e.get("data"));
    if expected_data.is_some_and(|d| d.get("detail").is_some()) {
        return;
    }
    if let Some(Value::Object(data)) = err.get_mut("data") {
        data.remove("detail");
        if data.is_empty() && expected_data.is_none() {
            err.as_object_mut().expect("error object").remove("data");
        }
    }
}

// ----- agent side -----

struct AgentReplay {
    agent: Agent,
    captures: Captures,
}

impl AgentReplay {
    fn new(vector: &Value) -> Result<Self, String> {
        let inject = match vector.get("capabilities").and_then(|c| c.get("inject")) {
            Some(v) => Some(serde_json::from_value(v.clone()).map_err(|e| format!("capabilities.inject: {e}"))?),
            None => None,
        };
        let mut policy = Policy::default();
        if let Some(p) = vector.get("policy") {
            if let Some(q) = p.get("queueDrain") {
                policy.queue_drain = serde_json::from_value::<QueueDrain>(q.clone()).map_err(|e| format!("policy.queueDrain: {e}"))?;
            }
            if let Some(q) = p.get("steerInStream") {
                policy.steer_in_stream = serde_json::from_value(q.clone()).map_err(|e| format!("policy.steerInStream: {e}"))?;
            }
            if let Some(q) = p.get("revokeReplace") {
                policy.revoke_replace =
                    serde_json::from_value::<RevokeReplace>(q.clone()).map_err(|e| format!("policy.revokeReplace: {e}"))?;
            }
            if let Some(q) = p.get("clearStyle") {
                policy.clear_style = serde_json::from_value(q.clone()).map_err(|e| format!("policy.clearStyle: {e}"))?;
            }
            if let Some(q) = p.get("rememberIds") {
                policy.remember_ids = q.as_u64().ok_or("policy.rememberIds must be a whole number")? as usize;
            }
        }
        let mut agent = Agent::new(AgentConfig { inject, policy, info: Default::default() });
        agent.create_session("s1");
        agent.attach("c1", Role::Controller);
        if let Some(obs) = vector.get("observers").and_then(Value::as_array) {
            for o in obs.iter().filter_map(Value::as_str) {
                agent.attach(o, Role::Observer);
            }
        }
        Ok(AgentReplay { agent, captures: Captures::default() })
    }

    fn run(mut self, vector: &Value) -> Result<(), String> {
        let steps = vector.get("steps").and_then(Value::as_array).ok_or("the vector has no `steps` array")?;
        for (i, step) in steps.iter().enumerate() {
            let at = format!("step {i}");
            if let Some(msg) = step.get("client") {
                let msg = self.captures.substitute(msg).map_err(|e| format!("{at}: {e}"))?;
                let from = step.get("from").and_then(Value::as_str).unwrap_or("c1");
                self.agent.handle_line(from, &msg.to_string());
            } else if let Some(rt) = step.get("runtime") {
                let session = rt.get("sessionId").and_then(Value::as_str).unwrap_or("s1");
                let event = runtime_event(rt).map_err(|e| format!("{at}: {e}"))?;
                let result = self.agent.runtime_event(session, event);
                let expected = step.get("hostError").and_then(Value::as_str);
                match (expected, result) {
                    (None, Ok(())) => {}
                    (Some(k), Err(e)) if k == e.kind() => {}
                    (Some(k), Err(e)) => return Err(format!("{at}: expected host error {k}, got {}", e.kind())),
                    (Some(k), Ok(())) => return Err(format!("{at}: expected host error {k}, the event was accepted")),
                    (None, Err(e)) => return Err(format!("{at}: unexpected host error {}", e.kind())),
                }
            } else if let Some(expect) = step.get("expect") {
                let expect = expect.as_array().ok_or_else(|| format!("{at}: `expect` is not an array"))?;
                self.expect(expect).map_err(|e| format!("{at} (expect): {e}"))?;
            } else if let Some(history) = step.get("expectHistory") {
                let actual = serde_json::to_value(self.agent.history("s1").unwrap_or(&[])).map_err(|e| e.to_string())?;
                self.captures.matches(history, &actual, "history").map_err(|e| format!("{at} (expectHistory): {e}"))?;
            } else {
                return Err(format!("{at}: unknown step {step}"));
            }
        }
        self.expect(&[]).map_err(|e| format!("end of vector: {e}"))
    }

    fn expect(&mut self, expected: &[Value]) -> Result<(), String> {
        let outputs = self.agent.drain();
        let (exp_actions, exp_msgs): (Vec<&Value>, Vec<&Value>) = expected.iter().partition(|v| v.get("action").is_some());
        let mut act_msgs = Vec::new();
        let mut act_actions = Vec::new();
        for o in outputs {
            match o {
                Output::Line { to, line } => act_msgs.push((to, serde_json::from_str::<Value>(&line).map_err(|e| e.to_string())?)),
                Output::Action { action, .. } => act_actions.push(action.to_vector_json()),
            }
        }
        if exp_msgs.len() != act_msgs.len() {
            return Err(format!(
                "expected {} messages, got {}: {}",
                exp_msgs.len(),
                act_msgs.len(),
                act_msgs.iter().map(|(_, v)| v.to_string()).collect::<Vec<_>>().join(" | ")
            ));
        }
        for (i, (e, (to, mut a))) in exp_msgs.into_iter().zip(act_msgs).enumerate() {
            let mut e = e.clone();
            let want_to = e.as_object_mut().and_then(|o| o.remove("to"));
            match (&want_to, &to) {
                (Some(Value::String(w)), Recipient::One(c)) if w == c => {}
                (Some(w), got) => return Err(format!("message {i}: expected to {w}, sent to {got:?}")),
                (None, Recipient::All) => {}
                (None, Recipient::One(_)) if e.get("id").is_some() => {}
                (None, got) => return Err(format!("message {i}: a notification must go to every connection, sent to {got:?}")),
            }
            strip_detail(&e, &mut a);
            self.captures.matches(&e, &a, &format!("message {i}"))?;
        }
        if exp_actions.len() != act_actions.len() {
            return Err(format!(
                "expected {} actions, got {}: {}",
                exp_actions.len(),
                act_actions.len(),
                act_actions.iter().map(Value::to_string).collect::<Vec<_>>().join(" | ")
            ));
        }
        for (i, (e, a)) in exp_actions.into_iter().zip(act_actions).enumerate() {
            self.captures.matches(e, &a, &format!("action {i}"))?;
        }
        Ok(())
    }
}

fn runtime_event(rt: &Value) -> Result<RuntimeEvent, String> {
    let event = rt.get("event").and_then(Value::as_str).ok_or("runtime step without `event`")?;
    Ok(match event {
        "break_point" => RuntimeEvent::BreakPoint(
            serde_json::from_value(rt.get("kind").cloned().unwrap_or(Value::from("tool_result"))).map_err(|e| format!("kind: {e}"))?,
        ),
        "stream_started" => RuntimeEvent::StreamStarted,
        "stream_finished" => RuntimeEvent::StreamFinished,
        "permission_requested" => RuntimeEvent::PermissionRequested,
        "permission_resolved" => RuntimeEvent::PermissionResolved,
        "paused" => RuntimeEvent::Paused,
        "resumed" => RuntimeEvent::Resumed,
        "turn_ended" => RuntimeEvent::TurnEnded {
            stop_reason: serde_json::from_value(rt.get("stopReason").cloned().unwrap_or(Value::from("end_turn")))
                .map_err(|e| format!("stopReason: {e}"))?,
            usage: rt.get("usage").cloned(),
        },
        "close" => RuntimeEvent::Close,
        "update" => RuntimeEvent::Update(
            serde_json::from_value(rt.get("update").cloned().unwrap_or(Value::Null)).map_err(|e| format!("update: {e}"))?,
        ),
        "clear_agent_message" => RuntimeEvent::ClearAgentMessage {
            message_id: serde_json::from_value(rt.get("messageId").cloned().unwrap_or(Value::Null))
                .map_err(|e| format!("messageId: {e}"))?,
        },
        other => return Err(format!("unknown runtime event {other:?}")),
    })
}

// ----- client side -----

struct ClientReplay {
    mirror: ClientMirror,
    captures: Captures,
}

impl ClientReplay {
    fn new(vector: &Value) -> Result<Self, String> {
        let inject = match vector.get("capabilities").and_then(|c| c.get("inject")) {
            Some(v) => Some(serde_json::from_value(v.clone()).map_err(|e| format!("capabilities.inject: {e}"))?),
            None => None,
        };
        let session = vector.get("sessionId").and_then(Value::as_str).unwrap_or("s1");
        Ok(ClientReplay { mirror: ClientMirror::new(session, inject), captures: Captures::default() })
    }

    fn run(mut self, vector: &Value) -> Result<(), String> {
        let steps = vector.get("steps").and_then(Value::as_array).ok_or("the vector has no `steps` array")?;
        let mut last_error: Option<Value> = None;
        for (i, step) in steps.iter().enumerate() {
            let at = format!("step {i}");
            if let Some(call) = step.get("call") {
                let call = self.captures.substitute(call).map_err(|e| format!("{at}: {e}"))?;
                let result = self.mirror.call_json(&call);
                match (result, step.get("sends"), step.get("rejects")) {
                    (Ok(line), Some(expected), None) => {
                        let actual: Value = serde_json::from_str(&line).map_err(|e| e.to_string())?;
                        self.captures.matches(expected, &actual, &format!("{at} (sends)"))?;
                    }
                    (Err(reason), None, Some(expected)) => {
                        if expected.as_str() != Some(reason.as_str()) {
                            return Err(format!("{at}: expected the call rejected with {expected}, got {reason:?}"));
                        }
                    }
                    (Ok(line), _, Some(expected)) => return Err(format!("{at}: expected rejection {expected}, it sent {line}")),
                    (Err(reason), _, _) => return Err(format!("{at}: the call was rejected ({reason})")),
                    (Ok(_), None, None) => return Err(format!("{at}: a call step needs `sends` or `rejects`")),
                }
            } else if let Some(msg) = step.get("receive") {
                let msg = self.captures.substitute(msg).map_err(|e| format!("{at}: {e}"))?;
                last_error = self.mirror.receive(&msg.to_string()).map(|e| e.to_vector_json());
            } else if let Some(expected) = step.get("expectState") {
                let snapshot = self.mirror.snapshot_json();
                let expected = expected.as_object().ok_or_else(|| format!("{at}: expectState is not an object"))?;
                for (k, v) in expected {
                    let actual = snapshot.get(k).cloned().unwrap_or(Value::Null);
                    self.captures.matches(v, &actual, &format!("{at} (state.{k})"))?;
                }
            } else if let Some(expected) = step.get("expectError") {
                let actual = last_error.clone().ok_or_else(|| format!("{at}: expected an error, the last receive surfaced none"))?;
                let mut actual = actual;
                if let (Value::Object(a), Value::Object(e)) = (&mut actual, expected) {
                    a.retain(|k, _| e.contains_key(k) || k == "reason");
                    if !e.contains_key("reason") && a.get("reason") == Some(&Value::Null) {
                        a.remove("reason");
                    }
                }
                self.captures.matches(expected, &actual, &format!("{at} (expectError)"))?;
            } else if let Some(expected) = step.get("expectItem") {
                let id = self.captures.substitute(expected.get("messageId").unwrap_or(&Value::Null)).map_err(|e| format!("{at}: {e}"))?;
                let status = self.mirror.item_status(id.as_str().unwrap_or_default());
                let want = expected.get("status").and_then(Value::as_str);
                if status.map(|s| s.as_str()) != want {
                    return Err(format!("{at}: item {id} has status {status:?}, expected {want:?}"));
                }
            } else {
                return Err(format!("{at}: unknown step {step}"));
            }
        }
        Ok(())
    }
}
