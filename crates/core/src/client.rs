//! The client side: a mirror of one session that every client UI can render (C-… rules).
//!
//! [`ClientMirror`] builds the requests for the user's actions (prompt, inject, revoke,
//! replace, cancel, status), correlates their responses, applies every line from the agent and
//! exposes a [`Snapshot`]: turn state, the client's own pending items apart from history, the
//! transcript with upsert/chunk/clear semantics, detected protocol violations, and what the
//! UI may offer given the agent's capabilities. Like the agent side it does no I/O.

use std::collections::HashMap;

use acp_inject_wire::errors::ErrorObject;
use acp_inject_wire::jsonrpc::{self, Frame, Incoming};
use acp_inject_wire::{
    ContentBlock, ErrorReason, InjectCapabilities, InjectMode, Patch, RequestId, SessionUpdate, StateUpdate, StopReason,
    UpdateSessionNotification,
};
use serde::Serialize;
use serde_json::{json, Value};

/// What one of the client's own prompts or injects is (C-PEND-1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ItemStatus {
    /// Sent, no response yet.
    Sending,
    /// Accepted (has a `messageId` or awaits correlation), not yet delivered.
    Pending,
    /// Its `user_message` arrived; it is in the transcript.
    Delivered,
    /// Revoked successfully.
    Revoked,
    /// The agent refused it.
    Failed,
}

impl ItemStatus {
    pub fn as_str(&self) -> &'static str {
        match self {
            ItemStatus::Sending => "sending",
            ItemStatus::Pending => "pending",
            ItemStatus::Delivered => "delivered",
            ItemStatus::Revoked => "revoked",
            ItemStatus::Failed => "failed",
        }
    }
}

/// How an item was sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ItemMode {
    Prompt,
    Queue,
    Steer,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingItem {
    pub message_id: Option<String>,
    pub mode: ItemMode,
    pub status: ItemStatus,
    pub content: Vec<ContentBlock>,
    /// The content a successful replace superseded (to detect R-REPLACE-2 violations).
    #[serde(skip)]
    superseded: Vec<Vec<ContentBlock>>,
}

/// Who a transcript entry is from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Agent,
    Thought,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TranscriptEntry {
    pub role: Role,
    pub message_id: String,
    pub content: Vec<ContentBlock>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Violation {
    pub rule: String,
    pub message_id: String,
}

/// What the UI may offer (C-PEND-3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Affordances {
    pub steer: bool,
    pub edit_pending: bool,
    pub revoke: bool,
}

/// The turn state as the client knows it (C-STATE-1).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnState {
    Idle,
    Running,
    RequiresAction,
}

/// An error the agent answered to one of the client's requests, surfaced to the caller.
#[derive(Clone, Debug, PartialEq)]
pub struct SurfacedError {
    pub code: i64,
    pub reason: Option<ErrorReason>,
    pub message_id: Option<String>,
    pub message: String,
}

impl SurfacedError {
    pub fn to_vector_json(&self) -> Value {
        let mut v = json!({ "code": self.code, "reason": self.reason.as_ref().map(|r| r.as_str().to_owned()) });
        if let Some(m) = &self.message_id {
            v["messageId"] = Value::from(m.clone());
        }
        v
    }
}

/// A call the mirror refused without sending anything.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CallRejected {
    /// Inject (or this mode) is not advertised.
    ModeNotSupported,
    /// `pending.replace` is not advertised.
    ReplaceNotSupported,
    /// Not one of this client's pending items.
    UnknownMessageId,
    /// The call's arguments are not valid (e.g. content that is not content blocks).
    InvalidArguments(String),
}

impl CallRejected {
    pub fn as_str(&self) -> &str {
        match self {
            CallRejected::ModeNotSupported => "mode_not_supported",
            CallRejected::ReplaceNotSupported => "replace_not_supported",
            CallRejected::UnknownMessageId => "unknown_message_id",
            CallRejected::InvalidArguments(_) => "invalid_arguments",
        }
    }
}

impl std::fmt::Display for CallRejected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallRejected::InvalidArguments(d) => write!(f, "invalid arguments: {d}"),
            other => f.write_str(other.as_str()),
        }
    }
}

impl std::error::Error for CallRejected {}

enum InFlight {
    Accept(usize),
    Revoke(usize),
    Replace(usize, Vec<ContentBlock>),
    Status,
}

/// The client-side mirror of one session.
pub struct ClientMirror {
    session_id: String,
    caps: Option<InjectCapabilities>,
    next_request: i64,
    items: Vec<PendingItem>,
    by_message: HashMap<String, usize>,
    in_flight: HashMap<RequestId, InFlight>,
    state: TurnState,
    stop_reason: Option<StopReason>,
    usage: Option<Value>,
    transcript: Vec<TranscriptEntry>,
    entries: HashMap<(Role, String), usize>,
    violations: Vec<Violation>,
    /// The last `session/status` answer, if any.
    pub last_status: Option<String>,
    /// Lines that were not usable (framing errors, oversized lines, responses to unknown
    /// ids), counted.
    pub ignored_lines: u64,
    /// Longer lines are dropped (counted in `ignored_lines`) before they are parsed.
    pub max_line_bytes: usize,
}

impl ClientMirror {
    /// A mirror of `session_id`, knowing the agent's advertised `session.inject`.
    pub fn new(session_id: &str, caps: Option<InjectCapabilities>) -> Self {
        ClientMirror {
            session_id: session_id.to_owned(),
            caps,
            next_request: 1,
            items: Vec::new(),
            by_message: HashMap::new(),
            in_flight: HashMap::new(),
            state: TurnState::Idle,
            stop_reason: None,
            usage: None,
            transcript: Vec::new(),
            entries: HashMap::new(),
            violations: Vec::new(),
            last_status: None,
            ignored_lines: 0,
            max_line_bytes: jsonrpc::DEFAULT_MAX_LINE_BYTES,
        }
    }

    pub fn affordances(&self) -> Affordances {
        Affordances {
            steer: self.caps.as_ref().is_some_and(|c| c.modes.contains(&InjectMode::Steer)),
            edit_pending: self.caps.as_ref().and_then(|c| c.pending.as_ref()).is_some_and(|p| p.replace),
            revoke: self.caps.is_some(),
        }
    }

    fn next_id(&mut self) -> RequestId {
        let id = RequestId::Number(self.next_request);
        self.next_request += 1;
        id
    }

    fn params(&self, extra: Value) -> Value {
        let mut p = json!({ "sessionId": self.session_id });
        if let (Value::Object(p), Value::Object(extra)) = (&mut p, extra) {
            p.extend(extra);
        }
        p
    }

    fn send_accept(&mut self, mode: ItemMode, content: Vec<ContentBlock>) -> String {
        let id = self.next_id();
        let idx = self.items.len();
        self.items.push(PendingItem { message_id: None, mode, status: ItemStatus::Sending, content: content.clone(), superseded: Vec::new() });
        self.in_flight.insert(id.clone(), InFlight::Accept(idx));
        match mode {
            ItemMode::Prompt => jsonrpc::request_line(&id, "session/prompt", &self.params(json!({ "prompt": content }))),
            ItemMode::Queue | ItemMode::Steer => {
                let m = if mode == ItemMode::Queue { "queue" } else { "steer" };
                jsonrpc::request_line(&id, "session/inject", &self.params(json!({ "mode": m, "content": content })))
            }
        }
    }

    /// `session/prompt`.
    pub fn prompt(&mut self, content: Vec<ContentBlock>) -> String {
        self.send_accept(ItemMode::Prompt, content)
    }

    /// `session/inject` (C-PEND-3: refused locally when the mode is not advertised).
    pub fn inject(&mut self, mode: InjectMode, content: Vec<ContentBlock>) -> Result<String, CallRejected> {
        if !self.caps.as_ref().is_some_and(|c| c.modes.contains(&mode)) {
            return Err(CallRejected::ModeNotSupported);
        }
        let m = match mode {
            InjectMode::Queue => ItemMode::Queue,
            InjectMode::Steer => ItemMode::Steer,
        };
        Ok(self.send_accept(m, content))
    }

    fn own_pending(&self, message_id: &str) -> Result<usize, CallRejected> {
        match self.by_message.get(message_id) {
            Some(&i) if self.items[i].status == ItemStatus::Pending => Ok(i),
            _ => Err(CallRejected::UnknownMessageId),
        }
    }

    /// `session/revoke_inject` of one of this client's pending items.
    pub fn revoke(&mut self, message_id: &str) -> Result<String, CallRejected> {
        if self.caps.is_none() {
            return Err(CallRejected::ModeNotSupported);
        }
        let idx = self.own_pending(message_id)?;
        let id = self.next_id();
        self.in_flight.insert(id.clone(), InFlight::Revoke(idx));
        Ok(jsonrpc::request_line(&id, "session/revoke_inject", &self.params(json!({ "messageId": message_id }))))
    }

    /// `session/replace_inject` (only where `pending.replace` is advertised).
    pub fn replace(&mut self, message_id: &str, content: Vec<ContentBlock>) -> Result<String, CallRejected> {
        if !self.affordances().edit_pending {
            return Err(CallRejected::ReplaceNotSupported);
        }
        let idx = self.own_pending(message_id)?;
        let id = self.next_id();
        let line = jsonrpc::request_line(&id, "session/replace_inject", &self.params(json!({ "messageId": message_id, "content": content })));
        self.in_flight.insert(id, InFlight::Replace(idx, content));
        Ok(line)
    }

    /// `session/cancel` (a notification).
    pub fn cancel(&mut self) -> String {
        jsonrpc::notification_line("session/cancel", &self.params(json!({})))
    }

    /// `session/status`.
    pub fn status(&mut self) -> String {
        let id = self.next_id();
        self.in_flight.insert(id.clone(), InFlight::Status);
        jsonrpc::request_line(&id, "session/status", &self.params(json!({})))
    }

    /// Performs a call given in the vectors' `call` shape (`{"op": …, …}`).
    pub fn call_json(&mut self, call: &Value) -> Result<String, String> {
        let content = |v: &Value| -> Result<Vec<ContentBlock>, String> {
            serde_json::from_value(v.get("content").cloned().unwrap_or(Value::Array(vec![]))).map_err(|e| format!("invalid_arguments: {e}"))
        };
        let id = |v: &Value| v.get("messageId").and_then(Value::as_str).map(str::to_owned).ok_or("invalid_arguments: messageId".to_owned());
        let r = match call.get("op").and_then(Value::as_str) {
            Some("prompt") => Ok(self.prompt(content(call)?)),
            Some("inject") => {
                let mode = serde_json::from_value(call.get("mode").cloned().unwrap_or(Value::Null)).map_err(|e| format!("invalid_arguments: {e}"))?;
                self.inject(mode, content(call)?)
            }
            Some("revoke") => self.revoke(&id(call)?),
            Some("replace") => {
                let c = content(call)?;
                self.replace(&id(call)?, c)
            }
            Some("cancel") => Ok(self.cancel()),
            Some("status") => Ok(self.status()),
            other => return Err(format!("invalid_arguments: unknown op {other:?}")),
        };
        r.map_err(|e| e.as_str().to_owned())
    }

    /// Applies one line from the agent. Returns the error the agent answered to one of this
    /// client's requests, if the line was one.
    pub fn receive(&mut self, line: &str) -> Option<SurfacedError> {
        if line.len() > self.max_line_bytes {
            self.ignored_lines += 1;
            return None;
        }
        let frame = match jsonrpc::parse_agent_line(line) {
            Ok(jsonrpc::AgentLine::Update(n)) => {
                if n.session_id.0 == self.session_id {
                    self.on_update(n.update);
                }
                return None;
            }
            Ok(jsonrpc::AgentLine::Other(frame)) => Ok(frame),
            Err(e) => Err(e),
        };
        match frame {
            Ok(Frame::Single(m)) => self.apply(m),
            Ok(Frame::Batch(items)) => {
                let mut last = None;
                for item in items {
                    match item {
                        Ok(m) => last = self.apply(m).or(last),
                        Err(_) => self.ignored_lines += 1,
                    }
                }
                last
            }
            Err(_) => {
                self.ignored_lines += 1;
                None
            }
        }
    }

    fn apply(&mut self, msg: Incoming<'_>) -> Option<SurfacedError> {
        match msg {
            Incoming::Response { id, outcome } => {
                let Some(flight) = self.in_flight.remove(&id) else {
                    self.ignored_lines += 1;
                    return None;
                };
                match outcome {
                    Ok(result) => {
                        let result: Value = serde_json::from_str(result.get()).unwrap_or(Value::Null);
                        self.on_success(flight, &result);
                        None
                    }
                    Err(error) => Some(self.on_error(flight, &error)),
                }
            }
            Incoming::Notification { method, params } if method == "session/update" => {
                match jsonrpc::decode_params::<UpdateSessionNotification>(params) {
                    Ok(n) if n.session_id.0 == self.session_id => self.on_update(n.update),
                    Ok(_) => {}
                    Err(_) => self.ignored_lines += 1,
                }
                None
            }
            _ => None,
        }
    }

    fn on_success(&mut self, flight: InFlight, result: &Value) {
        match flight {
            InFlight::Accept(idx) => {
                let mid = result.get("messageId").and_then(Value::as_str).map(str::to_owned);
                let item = &mut self.items[idx];
                item.status = ItemStatus::Pending;
                if let Some(mid) = mid {
                    item.message_id = Some(mid.clone());
                    self.by_message.insert(mid.clone(), idx);
                    // Robustness: the user_message may have overtaken the response.
                    if self.entries.contains_key(&(Role::User, mid)) {
                        self.items[idx].status = ItemStatus::Delivered;
                    }
                }
            }
            InFlight::Revoke(idx) => {
                if self.items[idx].status == ItemStatus::Pending {
                    self.items[idx].status = ItemStatus::Revoked;
                }
            }
            InFlight::Replace(idx, content) => {
                let item = &mut self.items[idx];
                if item.status == ItemStatus::Pending {
                    let old = std::mem::replace(&mut item.content, content);
                    item.superseded.push(old);
                }
            }
            InFlight::Status => {
                self.last_status = result.get("status").and_then(Value::as_str).map(str::to_owned);
            }
        }
    }

    fn on_error(&mut self, flight: InFlight, error: &ErrorObject) -> SurfacedError {
        if let InFlight::Accept(idx) = flight {
            self.items[idx].status = ItemStatus::Failed;
        }
        // C-PEND-4: a revoke answered `already_delivered` keeps the item pending until its
        // user_message; a failed replace leaves the content as it was.
        let data = error.error_data();
        SurfacedError {
            code: error.code,
            reason: data.as_ref().and_then(|d| d.reason.clone()),
            message_id: data.and_then(|d| d.message_id.map(|m| m.0)),
            message: error.message.clone(),
        }
    }

    fn entry(&mut self, role: Role, id: &str) -> usize {
        let key = (role, id.to_owned());
        if let Some(&i) = self.entries.get(&key) {
            return i;
        }
        self.transcript.push(TranscriptEntry { role, message_id: id.to_owned(), content: Vec::new() });
        let i = self.transcript.len() - 1;
        self.entries.insert(key, i);
        i
    }

    /// C-MSG-1: omitted content leaves it, `null` clears it, an array replaces it.
    fn upsert(&mut self, role: Role, id: &str, content: Patch<Vec<ContentBlock>>) {
        let i = self.entry(role, id);
        match content {
            Patch::Absent => {}
            Patch::Null => self.transcript[i].content.clear(),
            Patch::Value(c) => self.transcript[i].content = c,
        }
    }

    fn append(&mut self, role: Role, id: &str, block: ContentBlock) {
        let i = self.entry(role, id);
        self.transcript[i].content.push(block);
    }

    fn on_update(&mut self, update: SessionUpdate) {
        match update {
            SessionUpdate::UserMessage(m) => {
                let id = m.message_id.0;
                let delivered = m.content.as_value().cloned();
                self.on_user_message(&id, delivered.as_ref());
                self.upsert(Role::User, &id, m.content);
            }
            SessionUpdate::UserMessageChunk(m) => self.append(Role::User, &m.message_id.0, m.content),
            SessionUpdate::AgentMessage(m) => self.upsert(Role::Agent, &m.message_id.0, m.content),
            SessionUpdate::AgentMessageChunk(m) => self.append(Role::Agent, &m.message_id.0, m.content),
            SessionUpdate::AgentThought(m) => self.upsert(Role::Thought, &m.message_id.0, m.content),
            SessionUpdate::AgentThoughtChunk(m) => self.append(Role::Thought, &m.message_id.0, m.content),
            // C-MSG-2: the same operation as an `agent_message` upsert with `content: []`.
            SessionUpdate::AgentMessageClear(m) => {
                let target = match m.message_id {
                    Some(id) => self.entries.get(&(Role::Agent, id.0)).copied(),
                    None => self.transcript.iter().rposition(|e| e.role == Role::Agent),
                };
                if let Some(i) = target {
                    self.transcript[i].content.clear();
                }
            }
            SessionUpdate::StateUpdate(s) => match *s {
                StateUpdate::Running(_) => self.set_state(TurnState::Running, None, None),
                StateUpdate::RequiresAction(_) => self.set_state(TurnState::RequiresAction, None, None),
                StateUpdate::Idle(i) => {
                    let usage = i.usage.and_then(|u| serde_json::to_value(u).ok());
                    self.set_state(TurnState::Idle, i.stop_reason, usage)
                }
                // R-WIRE-3: a state this version does not know changes nothing it tracks.
                StateUpdate::Other(_) => {}
            },
            _ => {}
        }
    }

    fn set_state(&mut self, state: TurnState, stop_reason: Option<StopReason>, usage: Option<Value>) {
        self.state = state;
        self.stop_reason = stop_reason;
        self.usage = usage;
    }

    /// C-PEND-2 and C-PEND-5: a `user_message` moves the matching pending item into history.
    fn on_user_message(&mut self, id: &str, content: Option<&Vec<ContentBlock>>) {
        let idx = match self.by_message.get(id) {
            Some(&i) => Some(i),
            // A prompt answered `{}` (no messageId): bind the first such item with equal content.
            None if !self.entries.contains_key(&(Role::User, id.to_owned())) => {
                let found = self.items.iter().position(|it| {
                    it.status == ItemStatus::Pending && it.message_id.is_none() && Some(&it.content) == content
                });
                if let Some(i) = found {
                    self.items[i].message_id = Some(id.to_owned());
                    self.by_message.insert(id.to_owned(), i);
                }
                found
            }
            None => None,
        };
        let Some(i) = idx else { return };
        let item = &mut self.items[i];
        if matches!(item.status, ItemStatus::Pending | ItemStatus::Sending) {
            item.status = ItemStatus::Delivered;
            if let Some(c) = content {
                if c != &item.content && item.superseded.iter().any(|old| old == c) {
                    self.violations.push(Violation { rule: "R-REPLACE-2".into(), message_id: id.to_owned() });
                }
            }
        }
    }

    /// The status of one of this client's items, by `messageId`.
    pub fn item_status(&self, message_id: &str) -> Option<ItemStatus> {
        self.by_message.get(message_id).map(|&i| self.items[i].status)
    }

    pub fn state(&self) -> &TurnState {
        &self.state
    }

    pub fn transcript(&self) -> &[TranscriptEntry] {
        &self.transcript
    }

    pub fn violations(&self) -> &[Violation] {
        &self.violations
    }

    /// The client's own items still `sending` or `pending`, in the order they were sent.
    pub fn pending(&self) -> impl Iterator<Item = &PendingItem> {
        self.items.iter().filter(|i| matches!(i.status, ItemStatus::Sending | ItemStatus::Pending))
    }

    /// The snapshot in the vectors' shape.
    pub fn snapshot_json(&self) -> Value {
        json!({
            "state": self.state,
            "stopReason": self.stop_reason.as_ref().map(|s| s.as_str().to_owned()),
            "usage": self.usage,
            "pending": self.pending().collect::<Vec<_>>(),
            "transcript": self.transcript,
            "violations": self.violations,
            "affordances": self.affordances(),
        })
    }
}
