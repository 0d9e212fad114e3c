//! The replay engine: one vector, step by step, as instructions for a driver.
//!
//! A driver owns the implementation under test — the Rust core here, or a binding in another
//! language — and runs a loop: ask [`VectorRun::next`] for an [`Instruction`], perform it on its
//! implementation, and report what came out through the `check_*`/`record_*` method the
//! instruction names. The engine owns the vector format: parsing, captures, the encodings of
//! outputs and the comparison. So every language's driver is a short match over instructions,
//! and a vector means the same thing everywhere.

use std::collections::BTreeMap;

use acp_inject_core::agent::{
    AgentConfig, AuthSupport, BreakPoint, ConnId, ConnectionRole, HistoryEntry, Output, Policy, RuntimeEvent, SetupSupport,
};
use acp_inject_core::client::{Answer, CallRejected, Event, ItemStatus, MirrorSnapshot, ProtocolError, SteerFallback};
use acp_inject_core::wire::{
    jsonrpc, methods, AgentCapabilities, ContentBlock, Implementation, InitializeRequest, InitializeResponse, InjectCapabilities,
    InjectMode, ProtocolVersion, RequestId, SessionCapabilities, StopReason,
};
use serde_json::Value;

use crate::captures::{strip_detail, Captures};
use crate::encode;

/// A vector that cannot be replayed, or a step whose result does not match.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Mismatch(pub String);

fn err(m: impl Into<String>) -> Mismatch {
    Mismatch(m.into())
}

/// Which side of the protocol a vector drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The agent core, played by the vector as its clients and runtime.
    Agent,
    /// The client connection, played by the vector as the agent.
    Client,
}

/// How to set up the agent for an agent-side vector.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentSetup {
    /// The agent's configuration.
    pub config: AgentConfig,
    /// The session that exists, idle, when the vector starts (`s1`).
    pub session: String,
    /// Its working directory.
    pub cwd: String,
    /// Connections, their roles and principals, registered before the first step.
    pub connections: Vec<SetupConnection>,
}

/// A connection of an agent-side vector's setup.
#[derive(Debug, Clone, PartialEq)]
pub struct SetupConnection {
    /// Its id (`c1`, `o1`, …).
    pub id: ConnId,
    /// Its role.
    pub role: ConnectionRole,
    /// The principal it speaks for (the vector's `principals`, R-TENANT-1).
    pub principal: Option<String>,
    /// Attached to the setup's session (`c1` and the observers; not a connection named only
    /// in `principals`).
    pub joined: bool,
}

/// How to set up the client for a client-side vector.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientSetup {
    /// The session open on the connection when the vector starts (`s1`).
    pub session: String,
    /// The agent's advertised `session.inject`, as learned from `initialize`.
    pub capabilities: Option<InjectCapabilities>,
    /// The protocol version the agent answered `initialize` with (1 or 2).
    pub protocol_version: u16,
    /// What the client does with a steer the agent cannot take.
    pub steer_fallback: Option<SteerFallback>,
    /// The agent's `initialize` answer these settle: `protocol_version`, `session.inject`
    /// (none for version 1), and `_meta.steering.supported` when the vector says `steering`
    /// (C-STEERING-1). Drivers hand it to the client as known.
    pub agent: InitializeResponse,
}

/// A call of the client API.
#[derive(Debug, Clone, PartialEq)]
pub enum ClientCall {
    /// `session/prompt`.
    Prompt {
        /// Session.
        session: String,
        /// Content.
        content: Vec<ContentBlock>,
    },
    /// `session/inject`.
    Inject {
        /// Session.
        session: String,
        /// Mode.
        mode: InjectMode,
        /// Content.
        content: Vec<ContentBlock>,
    },
    /// `session/revoke_inject`.
    Revoke {
        /// Session.
        session: String,
        /// The item.
        message_id: String,
    },
    /// `session/replace_inject`.
    Replace {
        /// Session.
        session: String,
        /// The item.
        message_id: String,
        /// New content.
        content: Vec<ContentBlock>,
    },
    /// `session/cancel`.
    Cancel {
        /// Session.
        session: String,
    },
    /// `session/status`.
    Status {
        /// Session.
        session: String,
    },
    /// `session/close`.
    Close {
        /// Session.
        session: String,
    },
    /// `session/resume`.
    Resume {
        /// Session.
        session: String,
        /// Its working directory.
        cwd: String,
        /// Ask for replay from the start.
        replay: bool,
    },
}

/// What the driver must do next.
#[derive(Debug, Clone, PartialEq)]
// The runtime event stays inline: the bindings' drivers receive this enum through UniFFI
// (crates/ffi-conformance), which has no form for a boxed field; one instruction exists at a time.
#[allow(clippy::large_enum_variant)]
pub enum Instruction {
    /// Agent side: feed this line from this connection.
    ClientLine {
        /// The sending connection.
        connection: ConnId,
        /// The line.
        line: String,
    },
    /// Agent side: apply this runtime event; report with [`VectorRun::record_runtime_result`].
    Runtime {
        /// The session.
        session: String,
        /// The event.
        event: RuntimeEvent,
    },
    /// Agent side: drain the outputs and report them with [`VectorRun::check_outputs`].
    Expect,
    /// Agent side: read the session's history and report it with [`VectorRun::check_history`].
    ExpectHistory {
        /// The session.
        session: String,
    },
    /// Agent side: answer the host call `id` (`Agent::answer_call`) with this result or
    /// error; report with [`VectorRun::record_runtime_result`] (`unknown_request` when the call
    /// is not open).
    AnswerCall {
        /// The call's id.
        id: u64,
        /// The result, or the JSON-RPC error.
        outcome: Result<Value, acp_inject_core::wire::ErrorObject>,
    },
    /// Client side: make this call, then report the result and the lines it sent with
    /// [`VectorRun::check_call`].
    Call(ClientCall),
    /// Client side: feed this line from the agent, then report the events with
    /// [`VectorRun::record_events`].
    Receive {
        /// The line.
        line: String,
    },
    /// Client side: report the session's snapshot with [`VectorRun::check_state`].
    ExpectState {
        /// The session.
        session: String,
    },
    /// Client side: take the lines the client sent since the last call and report them with
    /// [`VectorRun::check_sent`].
    ExpectSent,
    /// Client side: report the item's status with [`VectorRun::check_item`].
    ExpectItem {
        /// The session.
        session: String,
        /// The item.
        message_id: String,
    },
}

/// One vector being replayed. See the module docs.
#[derive(Debug)]
pub struct VectorRun {
    name: String,
    side: Side,
    steps: Vec<Value>,
    next: usize,
    /// The step being performed, for messages (`None` past the end).
    current: Option<usize>,
    captures: Captures,
    default_session: String,
    /// What the current step expects back (filled when an instruction is handed out).
    expected: Option<Value>,
    last_error: Option<Value>,
    /// The connections attached to each session as last reported, for notices about a session
    /// that has since closed (its attachments are gone with it).
    known_attached: BTreeMap<String, Vec<ConnId>>,
    /// Agent side: the connections the setup initializes before the first step (R-INIT-2),
    /// each an `initialize` line and an expect that takes its answer.
    handshakes: std::collections::VecDeque<ConnId>,
    /// The setup's expect for a handshake's answer is pending.
    in_handshake: bool,
}

/// The connections of an agent-side vector that the setup initializes (v2, no capabilities):
/// the setup's connections and every other one a step sends from, except those whose first
/// line is an `initialize` of their own.
fn handshakes(steps: &[Value], setup: &AgentSetup) -> std::collections::VecDeque<ConnId> {
    let mut first: BTreeMap<ConnId, bool> = BTreeMap::new();
    for step in steps {
        if let Some(msg) = step.get("client") {
            let from = ConnId::from(step.get("from").and_then(Value::as_str).unwrap_or("c1"));
            first.entry(from).or_insert_with(|| msg.get("method").and_then(Value::as_str) == Some(methods::INITIALIZE));
        }
    }
    let mut out: Vec<ConnId> = setup.connections.iter().map(|c| c.id.clone()).collect();
    out.extend(first.keys().filter(|c| !out.contains(c)).cloned().collect::<Vec<_>>());
    out.into_iter().filter(|c| first.get(c) != Some(&true)).collect()
}

/// The `initialize` line the setup sends for a connection.
fn handshake_line(connection: &str) -> String {
    let params = InitializeRequest::new(ProtocolVersion(2), Implementation::new("vector-setup", "0"));
    jsonrpc::request_line(&RequestId::Str(format!("setup-{connection}")), &params)
}

impl VectorRun {
    /// Parses a vector.
    pub fn new(text: &str) -> Result<VectorRun, Mismatch> {
        let vector: Value = serde_json::from_str(text).map_err(|e| err(format!("not JSON: {e}")))?;
        let name = vector.get("name").and_then(Value::as_str).unwrap_or("(unnamed)").to_owned();
        let side = match vector.get("side").and_then(Value::as_str) {
            Some("agent") => Side::Agent,
            Some("client") => Side::Client,
            other => return Err(err(format!("unknown side {other:?}"))),
        };
        let steps = vector.get("steps").and_then(Value::as_array).cloned().ok_or_else(|| err("the vector has no `steps` array"))?;
        let default_session = vector.get("sessionId").and_then(Value::as_str).unwrap_or("s1").to_owned();
        // The setup attaches every connection of the vector to its session.
        let (known_attached, handshakes) = match side {
            Side::Agent => {
                let setup = agent_setup(&vector)?;
                let handshakes = handshakes(&steps, &setup);
                (BTreeMap::from([(setup.session, setup.connections.into_iter().map(|c| c.id).collect())]), handshakes)
            }
            Side::Client => {
                client_setup(&vector)?;
                (BTreeMap::new(), Default::default())
            }
        };
        Ok(VectorRun {
            name,
            side,
            steps,
            next: 0,
            current: None,
            captures: Captures::default(),
            default_session,
            expected: None,
            last_error: None,
            known_attached,
            handshakes,
            in_handshake: false,
        })
    }

    /// The vector's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Which side it drives.
    pub fn side(&self) -> Side {
        self.side
    }

    /// The next instruction, or `None` when the vector is done (the driver then drains its
    /// outputs once more and reports them with [`VectorRun::check_outputs`]: nothing may be left).
    pub fn next_instruction(&mut self) -> Result<Option<Instruction>, Mismatch> {
        // The setup: each connection's `initialize`, then an expect that takes its answer.
        if self.in_handshake {
            return Ok(Some(Instruction::Expect));
        }
        if let Some(connection) = self.handshakes.pop_front() {
            self.in_handshake = true;
            return Ok(Some(Instruction::ClientLine { line: handshake_line(connection.as_str()), connection }));
        }
        loop {
            let Some(step) = self.steps.get(self.next).cloned() else {
                self.current = None;
                return Ok(None);
            };
            let at = format!("step {}", self.next);
            self.current = Some(self.next);
            self.next += 1;
            let fail = |e: String| err(format!("{at}: {e}"));
            self.expected = None;
            if let Some(msg) = step.get("client") {
                let msg = self.captures.substitute(msg).map_err(fail)?;
                let connection = ConnId::from(step.get("from").and_then(Value::as_str).unwrap_or("c1"));
                return Ok(Some(Instruction::ClientLine { connection, line: msg.to_string() }));
            }
            if let Some(rt) = step.get("runtime") {
                let session = rt.get("sessionId").and_then(Value::as_str).unwrap_or(&self.default_session).to_owned();
                let rt = self.captures.substitute(rt).map_err(fail)?;
                let event = runtime_event(&rt).map_err(fail)?;
                self.expected = Some(step.get("hostError").cloned().unwrap_or(Value::Null));
                return Ok(Some(Instruction::Runtime { session, event }));
            }
            if let Some(expect) = step.get("expect") {
                self.expected = Some(expect.clone());
                return Ok(Some(Instruction::Expect));
            }
            if let Some(answer) = step.get("answerCall") {
                let answer = self.captures.substitute(answer).map_err(fail)?;
                let id = answer
                    .get("callId")
                    .and_then(Value::as_u64)
                    .ok_or_else(|| fail("answerCall without a whole-number `callId`".into()))?;
                let outcome = match (answer.get("result"), answer.get("error")) {
                    (Some(r), None) => Ok(r.clone()),
                    (None, Some(e)) => Err(serde_json::from_value(e.clone()).map_err(|e| fail(format!("answerCall.error: {e}")))?),
                    _ => return Err(fail("answerCall needs exactly one of `result` and `error`".into())),
                };
                self.expected = Some(step.get("hostError").cloned().unwrap_or(Value::Null));
                return Ok(Some(Instruction::AnswerCall { id, outcome }));
            }
            if let Some(history) = step.get("expectHistory") {
                self.expected = Some(history.clone());
                return Ok(Some(Instruction::ExpectHistory { session: self.default_session.clone() }));
            }
            if let Some(call) = step.get("call") {
                let call = self.captures.substitute(call).map_err(fail)?;
                self.expected = Some(step.clone());
                return Ok(Some(Instruction::Call(client_call(&call, &self.default_session).map_err(fail)?)));
            }
            if let Some(msg) = step.get("receive") {
                let msg = self.captures.substitute(msg).map_err(fail)?;
                return Ok(Some(Instruction::Receive { line: msg.to_string() }));
            }
            if let Some(state) = step.get("expectState") {
                self.expected = Some(state.clone());
                return Ok(Some(Instruction::ExpectState { session: self.default_session.clone() }));
            }
            if let Some(sent) = step.get("expectSent") {
                self.expected = Some(sent.clone());
                return Ok(Some(Instruction::ExpectSent));
            }
            if let Some(expected) = step.get("expectError") {
                self.check_error(expected).map_err(|e| err(format!("{at} (expectError): {}", e.0)))?;
                continue;
            }
            if let Some(item) = step.get("expectItem") {
                let id = self.captures.substitute(item.get("messageId").unwrap_or(&Value::Null)).map_err(fail)?;
                self.expected = Some(item.clone());
                return Ok(Some(Instruction::ExpectItem {
                    session: self.default_session.clone(),
                    message_id: id.as_str().unwrap_or_default().to_owned(),
                }));
            }
            return Err(fail(format!("unknown step {step}")));
        }
    }

    fn at(&self) -> String {
        match self.current {
            Some(i) => format!("step {i}"),
            None => "end of vector".to_owned(),
        }
    }

    /// Reports the result of a [`Instruction::Runtime`]: `None` when the event was accepted,
    /// else the host error's kind (`no_turn_in_progress`, …).
    pub fn record_runtime_result(&mut self, host_error: Option<&str>) -> Result<(), Mismatch> {
        let at = self.at();
        let expected = self.expected.take().unwrap_or(Value::Null);
        match (expected.as_str(), host_error) {
            (None, None) => Ok(()),
            (Some(k), Some(e)) if k == e => Ok(()),
            (Some(k), Some(e)) => Err(err(format!("{at}: expected host error {k}, got {e}"))),
            (Some(k), None) => Err(err(format!("{at}: expected host error {k}, the event was accepted"))),
            (None, Some(e)) => Err(err(format!("{at}: unexpected host error {e}"))),
        }
    }

    /// Reports the outputs drained for an [`Instruction::Expect`] (or at the end of the
    /// vector), with the connections attached to each live session. A session no longer live
    /// keeps the attachments reported last.
    pub fn check_outputs(&mut self, outputs: &[Output], attached: &BTreeMap<String, Vec<ConnId>>) -> Result<(), Mismatch> {
        if std::mem::take(&mut self.in_handshake) {
            // The setup's handshake: one answer, a result.
            let answered = matches!(outputs, [Output::Line { line, .. }] if serde_json::from_str::<Value>(line).is_ok_and(|v| v.get("result").is_some()));
            return if answered {
                Ok(())
            } else {
                Err(err(format!("setup: the handshake's `initialize` was not answered with a result: {outputs:?}")))
            };
        }
        let at = match self.current {
            Some(i) => format!("step {i} (expect)"),
            None => "end of vector".to_owned(),
        };
        let expected = self.expected.take().unwrap_or(Value::Array(Vec::new()));
        let expected = expected.as_array().ok_or_else(|| err(format!("{at}: `expect` is not an array")))?;
        let mut known = self.known_attached.clone();
        known.extend(attached.iter().map(|(k, v)| (k.clone(), v.clone())));
        let result = self.expect(expected, outputs, &known).map_err(|e| err(format!("{at}: {e}")));
        self.known_attached = known;
        result
    }

    fn expect(&mut self, expected: &[Value], outputs: &[Output], attached: &BTreeMap<String, Vec<ConnId>>) -> Result<(), String> {
        // Host calls are compared with the actions: both are the core's requests to its host.
        let (exp_actions, exp_msgs): (Vec<&Value>, Vec<&Value>) =
            expected.iter().partition(|v| v.get("action").is_some() || v.get("hostCall").is_some());
        let mut act_msgs = Vec::new();
        let mut act_actions = Vec::new();
        for o in outputs {
            match o {
                Output::Line { to, line } => act_msgs.push((to, serde_json::from_str::<Value>(line).map_err(|e| e.to_string())?)),
                Output::Action { action, .. } => act_actions.push(encode::action(action)),
                Output::Call { id, connection, call } => act_actions.push(encode::host_call(*id, connection, call)),
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
            match &want_to {
                Some(Value::String(w)) if to.len() == 1 && to[0] == w.as_str() => {}
                Some(Value::Array(w)) if w.iter().map(Value::as_str).eq(to.iter().map(|c| Some(c.as_str()))) => {}
                Some(w) => return Err(format!("message {i}: expected to {w}, sent to {to:?}")),
                // A batch's answers (R-WIRE-5) and a response go to the requesting connection.
                None if e.get("id").is_some() || e.is_array() => {
                    if to.len() != 1 {
                        return Err(format!("message {i}: a response goes to the requesting connection, sent to {to:?}"));
                    }
                }
                None => {
                    let session = a.pointer("/params/sessionId").and_then(Value::as_str).unwrap_or_default();
                    let all = attached.get(session).cloned().unwrap_or_default();
                    if to != &all {
                        return Err(format!(
                            "message {i}: a notification goes to every connection attached to {session:?} ({all:?}), sent to {to:?}"
                        ));
                    }
                }
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

    /// Reports the history read for an [`Instruction::ExpectHistory`].
    pub fn check_history(&mut self, history: &[HistoryEntry]) -> Result<(), Mismatch> {
        let at = self.at();
        let expected = self.expected.take().unwrap_or(Value::Null);
        let actual = encode::user_history(history);
        self.captures.matches(&expected, &actual, "history").map_err(|e| err(format!("{at} (expectHistory): {e}")))
    }

    /// Reports a call's result and the lines it made the client send.
    pub fn check_call(&mut self, result: Result<(), &CallRejected>, sent: &[String]) -> Result<(), Mismatch> {
        let at = self.at();
        let step = self.expected.take().unwrap_or(Value::Null);
        let fail = |e: String| err(format!("{at}: {e}"));
        let nothing = step.get("sendsNothing").and_then(Value::as_bool) == Some(true);
        match (result, step.get("sends"), step.get("rejects")) {
            (Ok(()), None, None) if nothing => match sent {
                [] => Ok(()),
                _ => Err(fail(format!("expected nothing sent, got {sent:?}"))),
            },
            // An array: these lines, in order (a client sends no batches).
            (Ok(()), Some(Value::Array(expected)), None) => self.lines_sent(expected, sent, "sends").map_err(fail),
            (Ok(()), Some(expected), None) => {
                let [line] = sent else { return Err(fail(format!("expected one line sent, got {}: {sent:?}", sent.len()))) };
                let actual: Value = serde_json::from_str(line).map_err(|e| fail(e.to_string()))?;
                self.captures.matches(expected, &actual, "sends").map_err(fail)
            }
            (Err(reason), None, Some(expected)) => {
                if !sent.is_empty() {
                    return Err(fail(format!("a rejected call sent {sent:?}")));
                }
                match expected.as_str() {
                    Some(e) if e == reason.as_str() => Ok(()),
                    _ => Err(fail(format!("expected the call rejected with {expected}, got {:?}", reason.as_str()))),
                }
            }
            (Ok(()), _, Some(expected)) => Err(fail(format!("expected rejection {expected}, it sent {sent:?}"))),
            (Err(reason), _, _) => Err(fail(format!("the call was rejected ({reason})"))),
            (Ok(()), None, None) => Err(fail("a call step needs `sends`, `sendsNothing` or `rejects`".into())),
        }
    }

    /// Reports the lines the client sent since the last call, for an
    /// [`Instruction::ExpectSent`]: exactly the expected messages, in order.
    pub fn check_sent(&mut self, sent: &[String]) -> Result<(), Mismatch> {
        let at = self.at();
        let expected = self.expected.take().unwrap_or(Value::Null);
        let fail = |e: String| err(format!("{at} (expectSent): {e}"));
        let expected = expected.as_array().ok_or_else(|| fail("`expectSent` is not an array".into()))?;
        self.lines_sent(expected, sent, "line").map_err(fail)
    }

    /// Exactly the `expected` lines were `sent`, in order (`what` names them in a mismatch).
    fn lines_sent(&mut self, expected: &[Value], sent: &[String], what: &str) -> Result<(), String> {
        if expected.len() != sent.len() {
            return Err(format!("expected {} lines sent, got {}: {sent:?}", expected.len(), sent.len()));
        }
        for (i, (e, line)) in expected.iter().zip(sent).enumerate() {
            let actual: Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
            self.captures.matches(e, &actual, &format!("{what} {i}"))?;
        }
        Ok(())
    }

    /// Reports the events a [`Instruction::Receive`] caused (for a later `expectError`: the
    /// error the client surfaced, if the line was an error answer to one of its requests).
    pub fn record_events(&mut self, events: &[Event]) {
        self.record_error(events.iter().rev().find_map(|e| match e {
            Event::Answered { outcome: Answer::Failed(e), .. } => Some(e),
            _ => None,
        }));
    }

    /// Like [`VectorRun::record_events`], given only the last error answer the receive
    /// surfaced (for drivers whose events are not the core's type).
    pub fn record_error(&mut self, error: Option<&ProtocolError>) {
        self.last_error = error.map(encode::error);
    }

    fn check_error(&mut self, expected: &Value) -> Result<(), Mismatch> {
        if expected.is_null() {
            return match &self.last_error {
                None => Ok(()),
                Some(e) => Err(err(format!("expected no error, the last receive surfaced {e}"))),
            };
        }
        let mut actual = self.last_error.clone().ok_or_else(|| err("expected an error, the last receive surfaced none"))?;
        if let (Value::Object(a), Value::Object(e)) = (&mut actual, expected) {
            a.retain(|k, _| e.contains_key(k) || k == "reason");
            if !e.contains_key("reason") && a.get("reason") == Some(&Value::Null) {
                a.remove("reason");
            }
        }
        self.captures.matches(expected, &actual, "error").map_err(err)
    }

    /// Reports the session's snapshot for an [`Instruction::ExpectState`].
    pub fn check_state(&mut self, snapshot: Option<&MirrorSnapshot>) -> Result<(), Mismatch> {
        let at = self.at();
        let expected = self.expected.take().unwrap_or(Value::Null);
        let snapshot = snapshot.ok_or_else(|| err(format!("{at}: the session is not open on the connection")))?;
        let actual = encode::snapshot(snapshot);
        let expected = expected.as_object().ok_or_else(|| err(format!("{at}: expectState is not an object")))?;
        for (k, v) in expected {
            let actual = actual.get(k).cloned().unwrap_or(Value::Null);
            self.captures.matches(v, &actual, &format!("state.{k}")).map_err(|e| err(format!("{at} (expectState): {e}")))?;
        }
        Ok(())
    }

    /// Reports the item status read for an [`Instruction::ExpectItem`].
    pub fn check_item(&mut self, status: Option<ItemStatus>) -> Result<(), Mismatch> {
        let at = self.at();
        let expected = self.expected.take().unwrap_or(Value::Null);
        let want = expected.get("status").and_then(Value::as_str);
        if status.map(|s| s.as_str()) == want {
            Ok(())
        } else {
            Err(err(format!("{at}: item has status {:?}, expected {want:?}", status.map(|s| s.as_str()))))
        }
    }
}

/// Reads the setup of an agent-side vector.
pub fn agent_setup(vector: &Value) -> Result<AgentSetup, Mismatch> {
    let inject = match vector.get("capabilities").and_then(|c| c.get("inject")) {
        Some(v) => Some(serde_json::from_value(v.clone()).map_err(|e| err(format!("capabilities.inject: {e}")))?),
        None => None,
    };
    // Every member a vector names must be one the policy has: a misspelt knob would be
    // silently ignored otherwise.
    let policy = match vector.get("policy") {
        Some(p) => {
            let known = serde_json::to_value(Policy::default()).map_err(|e| err(format!("policy: {e}")))?;
            if let Some(unknown) = p.as_object().into_iter().flatten().map(|(k, _)| k).find(|k| known.get(k.as_str()).is_none()) {
                return Err(err(format!("policy.{unknown}: not a policy member")));
            }
            serde_json::from_value::<Policy>(p.clone()).map_err(|e| err(format!("policy: {e}")))?
        }
        None => Policy::default(),
    };
    let setup = match vector.get("setup") {
        Some(s) => serde_json::from_value::<SetupSupport>(s.clone()).map_err(|e| err(format!("setup: {e}")))?,
        None => SetupSupport::default(),
    };
    let auth = match vector.get("auth") {
        Some(a) => serde_json::from_value::<AuthSupport>(a.clone()).map_err(|e| err(format!("auth: {e}")))?,
        None => AuthSupport::default(),
    };
    let extensions = match vector.get("extensions") {
        Some(x) => serde_json::from_value::<Vec<String>>(x.clone()).map_err(|e| err(format!("extensions: {e}")))?,
        None => Vec::new(),
    };
    let config = AgentConfig { inject, policy, info: Default::default(), setup, auth, extensions };
    config.check().map_err(|e| err(format!("the vector's configuration is refused: {e}")))?;
    let principals: BTreeMap<String, String> = match vector.get("principals") {
        Some(p) => serde_json::from_value(p.clone()).map_err(|e| err(format!("principals: {e}")))?,
        None => BTreeMap::new(),
    };
    let principal = |id: &str| principals.get(id).cloned();
    let mut connections =
        vec![SetupConnection { id: "c1".into(), role: ConnectionRole::Controller, principal: principal("c1"), joined: true }];
    for o in vector.get("observers").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
        connections.push(SetupConnection { id: o.into(), role: ConnectionRole::Observer, principal: principal(o), joined: true });
    }
    for (id, p) in &principals {
        if !connections.iter().any(|c| c.id.as_str() == id) {
            connections.push(SetupConnection {
                id: id.as_str().into(),
                role: ConnectionRole::Controller,
                principal: Some(p.clone()),
                joined: false,
            });
        }
    }
    Ok(AgentSetup {
        config,
        session: vector.get("sessionId").and_then(Value::as_str).unwrap_or("s1").to_owned(),
        cwd: vector.get("cwd").and_then(Value::as_str).unwrap_or("/work").to_owned(),
        connections,
    })
}

/// Reads the setup of a client-side vector.
pub fn client_setup(vector: &Value) -> Result<ClientSetup, Mismatch> {
    let capabilities = match vector.get("capabilities").and_then(|c| c.get("inject")) {
        Some(v) => Some(serde_json::from_value(v.clone()).map_err(|e| err(format!("capabilities.inject: {e}")))?),
        None => None,
    };
    let protocol_version = match vector.get("protocolVersion") {
        None => 2,
        Some(v) => match v.as_u64() {
            Some(1) => 1,
            Some(2) => 2,
            _ => return Err(err(format!("protocolVersion: {v} (1 or 2)"))),
        },
    };
    let steer_fallback = match vector.get("steerFallback") {
        None => None,
        Some(v) => Some(serde_json::from_value(v.clone()).map_err(|e| err(format!("steerFallback: {e}")))?),
    };
    let steering = match vector.get("steering") {
        None => false,
        Some(v) => v.as_bool().ok_or_else(|| err(format!("steering: {v} (true or false)")))?,
    };
    let inject = if protocol_version == 1 { None } else { capabilities.clone() };
    let meta = steering.then(|| serde_json::Map::from_iter([("steering".to_owned(), serde_json::json!({"supported": true}))]));
    let agent = InitializeResponse::new(ProtocolVersion(protocol_version), Implementation::new("agent", String::new()))
        .capabilities(AgentCapabilities::new().session(SessionCapabilities::new().inject(inject)))
        .meta(meta);
    Ok(ClientSetup {
        session: vector.get("sessionId").and_then(Value::as_str).unwrap_or("s1").to_owned(),
        capabilities,
        protocol_version,
        steer_fallback,
        agent,
    })
}

fn runtime_event(rt: &Value) -> Result<RuntimeEvent, String> {
    let event = rt.get("event").and_then(Value::as_str).ok_or("runtime step without `event`")?;
    let member = |k: &str, default: Value| rt.get(k).cloned().unwrap_or(default);
    Ok(match event {
        "break_point" => RuntimeEvent::BreakPoint(
            serde_json::from_value::<BreakPoint>(member("kind", Value::from("tool_result"))).map_err(|e| format!("kind: {e}"))?,
        ),
        "stream_started" => RuntimeEvent::StreamStarted,
        "stream_finished" => RuntimeEvent::StreamFinished,
        "request_permission" => RuntimeEvent::RequestPermission(
            serde_json::from_value(Value::Object(
                rt.as_object()
                    .into_iter()
                    .flatten()
                    .filter(|(k, _)| !matches!(k.as_str(), "event" | "sessionId"))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            ))
            .map_err(|e| format!("request_permission: {e}"))?,
        ),
        "withdraw_permission" => RuntimeEvent::WithdrawPermission {
            request_id: serde_json::from_value(member("requestId", Value::Null)).map_err(|e| format!("requestId: {e}"))?,
        },
        "paused" => RuntimeEvent::Paused,
        "resumed" => RuntimeEvent::Resumed,
        "turn_started" => RuntimeEvent::TurnStarted,
        "turn_ended" => RuntimeEvent::TurnEnded {
            stop_reason: serde_json::from_value::<StopReason>(member("stopReason", Value::from("end_turn")))
                .map_err(|e| format!("stopReason: {e}"))?,
            usage: rt.get("usage").map(|u| serde_json::from_value(u.clone())).transpose().map_err(|e| format!("usage: {e}"))?,
            error: rt.get("error").map(|u| serde_json::from_value(u.clone())).transpose().map_err(|e| format!("error: {e}"))?,
        },
        "close" => RuntimeEvent::Close,
        "update" => RuntimeEvent::Update(serde_json::from_value(member("update", Value::Null)).map_err(|e| format!("update: {e}"))?),
        "clear_agent_message" => RuntimeEvent::ClearAgentMessage {
            message_id: serde_json::from_value(member("messageId", Value::Null)).map_err(|e| format!("messageId: {e}"))?,
        },
        other => return Err(format!("unknown runtime event {other:?}")),
    })
}

fn client_call(call: &Value, default_session: &str) -> Result<ClientCall, String> {
    let session = call.get("sessionId").and_then(Value::as_str).unwrap_or(default_session).to_owned();
    let content = || -> Result<Vec<ContentBlock>, String> {
        serde_json::from_value(call.get("content").cloned().unwrap_or(Value::Array(vec![]))).map_err(|e| format!("content: {e}"))
    };
    let message_id = || call.get("messageId").and_then(Value::as_str).map(str::to_owned).ok_or("messageId: missing".to_owned());
    Ok(match call.get("op").and_then(Value::as_str) {
        Some("prompt") => ClientCall::Prompt { session, content: content()? },
        Some("inject") => ClientCall::Inject {
            session,
            mode: serde_json::from_value(call.get("mode").cloned().unwrap_or(Value::Null)).map_err(|e| format!("mode: {e}"))?,
            content: content()?,
        },
        Some("revoke") => ClientCall::Revoke { session, message_id: message_id()? },
        Some("replace") => ClientCall::Replace { session, message_id: message_id()?, content: content()? },
        Some("cancel") => ClientCall::Cancel { session },
        Some("status") => ClientCall::Status { session },
        Some("close") => ClientCall::Close { session },
        Some("resume") => ClientCall::Resume {
            session,
            cwd: call.get("cwd").and_then(Value::as_str).unwrap_or("/work").to_owned(),
            replay: call.get("replay").and_then(Value::as_bool).unwrap_or(false),
        },
        other => return Err(format!("unknown op {other:?}")),
    })
}
