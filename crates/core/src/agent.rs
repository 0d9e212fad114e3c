//! The agent side: every session's pending injects, turn state and delivery (R-… rules).
//!
//! [`Agent`] owns the sessions of one agent process. It reads client lines and runtime events
//! and queues [`Output`]s; it does no I/O, reads no clock and spawns nothing. After each call,
//! drain [`Agent::poll_output`] until it returns `None` (the vectors call this an `expect`).

use std::collections::{BTreeMap, HashMap, VecDeque};

use acp_inject_wire::errors::ErrorObject;
use acp_inject_wire::jsonrpc::{self, Frame, FrameError, Incoming};
use acp_inject_wire::{
    AgentCapabilities, CancelSessionNotification, CloseSessionRequest, ContentBlock, ErrorReason,     Implementation, InitializeResponse, InjectCapabilities, InjectMode, InjectRequest, InjectResponse, MessageId,
    NewSessionResponse, Patch, PromptRequest, PromptResponse, ReplaceInjectRequest, ReplaceInjectResponse,
    RequestId, RevokeInjectRequest, RevokeInjectResponse, SessionCapabilities, SessionId, SessionStatus,
    SessionStatusRequest, SessionStatusResponse, SessionUpdate, StateUpdate, StatusCapabilities, SteerInStream,
    StopReason, UpdateSessionNotification, UserMessage,
};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// How many queued injects open one turn (R-QUEUE-3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QueueDrain {
    /// All pending queued injects, each its own `user_message` (the default).
    #[default]
    Batch,
    /// One queued inject per turn.
    OnePerTurn,
}

/// Who may revoke or replace a pending inject (R-ORDER-2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RevokeReplace {
    /// Any controller (the default).
    #[default]
    AnyController,
    /// Only the connection that injected it; others get `not_permitted`.
    CreatorOnly,
}

/// Agent-side knobs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Policy {
    pub queue_drain: QueueDrain,
    /// What the runtime does with a steer mid stream (must be advertised to be `interrupt`).
    pub steer_in_stream: SteerInStream,
    pub revoke_replace: RevokeReplace,
    /// How many revoked/delivered ids each session remembers (R-REVOKE-2).
    pub remember_ids: usize,
    /// How [`RuntimeEvent::ClearAgentMessage`] is written (C-MSG-2).
    pub clear_style: ClearStyle,
    /// Longer client lines are refused (-32600) before they are parsed.
    #[serde(default = "default_max_line_bytes")]
    pub max_line_bytes: usize,
}

fn default_max_line_bytes() -> usize {
    jsonrpc::DEFAULT_MAX_LINE_BYTES
}

/// The wire form of "clear the current agent message" (C-MSG-2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClearStyle {
    /// The v2 upsert `agent_message` with `content: []` (the default: upstream reserves
    /// unprefixed unknown update names for ACP itself).
    #[default]
    Upsert,
    /// RFD #465's `agent_message_clear`, for peers that asked for it.
    AgentMessageClear,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            queue_drain: QueueDrain::Batch,
            steer_in_stream: SteerInStream::Finish,
            revoke_replace: RevokeReplace::AnyController,
            remember_ids: DEFAULT_REMEMBER_IDS,
            clear_style: ClearStyle::Upsert,
            max_line_bytes: jsonrpc::DEFAULT_MAX_LINE_BYTES,
        }
    }
}

/// The default bound on remembered tombstones and delivered ids per session.
pub const DEFAULT_REMEMBER_IDS: usize = 4096;

/// What the agent advertises and how it behaves.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentConfig {
    /// `session.inject`; `None` means inject is not supported.
    pub inject: Option<InjectCapabilities>,
    pub policy: Policy,
    pub info: AgentInfo,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgentInfo {
    pub name: String,
    pub version: String,
}

impl Default for AgentInfo {
    fn default() -> Self {
        AgentInfo { name: "acp-inject".into(), version: env!("CARGO_PKG_VERSION").into() }
    }
}

/// A connection's id (the vectors' `c1`, `o1`, …).
pub type ConnId = String;

/// Where an outgoing line goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Recipient {
    /// Only this connection (responses).
    One(ConnId),
    /// Every attached connection, observers included (notifications).
    All,
}

/// A message handed to the runtime.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserInput {
    pub message_id: MessageId,
    pub content: Vec<ContentBlock>,
}

/// A pending inject handed back at close (R-CLOSE-1).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DroppedInject {
    pub message_id: MessageId,
    pub mode: InjectMode,
    pub content: Vec<ContentBlock>,
}

/// What the runtime must do.
#[derive(Clone, Debug, PartialEq)]
pub enum RuntimeAction {
    /// Begin a new turn whose opening input is these messages.
    StartTurn(Vec<UserInput>),
    /// Feed these user messages to the model now (at a break-point).
    Deliver(Vec<UserInput>),
    /// Cut the current model stream (`steerInStream: interrupt`); report a `model_step`
    /// break-point after cutting.
    InterruptStream,
    /// Stop the turn, then report `turn_ended` (the core reports `cancelled`).
    CancelTurn,
    /// The session was closed with these injects pending, in delivery order.
    Dropped(Vec<DroppedInject>),
}

impl RuntimeAction {
    /// The action in the conformance-vector shape.
    pub fn to_vector_json(&self) -> serde_json::Value {
        use serde_json::json;
        let ids = |v: &[UserInput]| v.iter().map(|m| m.message_id.to_string()).collect::<Vec<_>>();
        match self {
            RuntimeAction::StartTurn(m) => json!({ "action": "start_turn", "messageIds": ids(m) }),
            RuntimeAction::Deliver(m) => json!({
                "action": "deliver",
                "messageIds": ids(m),
                "content": m.iter().map(|m| &m.content).collect::<Vec<_>>(),
            }),
            RuntimeAction::InterruptStream => json!({ "action": "interrupt_stream" }),
            RuntimeAction::CancelTurn => json!({ "action": "cancel_turn" }),
            RuntimeAction::Dropped(d) => json!({ "action": "dropped", "injects": d }),
        }
    }
}

/// One output of the core.
#[derive(Clone, Debug, PartialEq)]
pub enum Output {
    /// A JSON-RPC line for the client(s).
    Line { to: Recipient, line: String },
    /// An instruction for the agent runtime of one session.
    Action { session: String, action: RuntimeAction },
}

/// A safe break-point of the agent loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BreakPoint {
    /// A tool call completed.
    ToolResult,
    /// Between model calls.
    ModelStep,
}

/// What the agent runtime reports.
#[derive(Clone, Debug, PartialEq)]
pub enum RuntimeEvent {
    BreakPoint(BreakPoint),
    StreamStarted,
    StreamFinished,
    PermissionRequested,
    PermissionResolved,
    Paused,
    Resumed,
    /// `usage` is passed through verbatim (R-TURNEND-1), so it stays raw JSON.
    TurnEnded { stop_reason: StopReason, usage: Option<serde_json::Value> },
    Close,
    /// The runtime's own output (agent message chunks, tool calls, plans, …), sent to every
    /// connection. `user_message` and `state_update` are the core's and are refused.
    Update(SessionUpdate),
    /// Clear the content streamed so far for an agent message (C-MSG-2).
    ClearAgentMessage { message_id: MessageId },
}

/// A runtime event the core cannot apply. Nothing was emitted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostError {
    /// A turn event while no turn is in progress.
    NoTurnInProgress,
    /// `permission_resolved` with no permission request open.
    NoPermissionPending,
    /// The session was closed (or never existed).
    SessionClosed,
    /// The runtime tried to emit an update only the core may emit (`user_message`,
    /// `state_update`): delivery and turn state would no longer follow the rules.
    ReservedUpdate,
}

impl HostError {
    /// The vectors' name of this error.
    pub fn kind(&self) -> &'static str {
        match self {
            HostError::NoTurnInProgress => "no_turn_in_progress",
            HostError::NoPermissionPending => "no_permission_pending",
            HostError::SessionClosed => "session_closed",
            HostError::ReservedUpdate => "reserved_update",
        }
    }
}

impl std::fmt::Display for HostError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            HostError::NoTurnInProgress => "no turn is in progress",
            HostError::NoPermissionPending => "no permission request is open",
            HostError::SessionClosed => "the session is closed or does not exist",
            HostError::ReservedUpdate => "user_message and state_update are emitted by the core only",
        })
    }
}

impl std::error::Error for HostError {}

/// The role of a connection (R-ORDER-2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Controller,
    Observer,
}

/// The turn of one session (R-TURN-1).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Turn {
    in_progress: bool,
    /// Open permission requests; `requires_action` while > 0 (R-PERM-1).
    permissions: u32,
    paused: bool,
    /// A model stream with no tool call pending is active.
    streaming: bool,
    /// The current stream was already asked to be cut (at most once per stream).
    interrupted: bool,
    cancel_requested: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Pending {
    mode: InjectMode,
    content: Vec<ContentBlock>,
    owner: ConnId,
    seq: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Fate {
    Revoked,
    Delivered,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Remembered {
    fate: Fate,
    owner: ConnId,
}

/// One session's state. Pending injects are found by id in O(1) and kept in delivery order
/// per mode by arrival sequence (O(log n) insert/remove), so nothing scans by `messageId`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionState {
    turn: Turn,
    next_message: u64,
    next_seq: u64,
    #[serde(serialize_with = "sorted")]
    pending: HashMap<String, Pending>,
    steers: BTreeMap<u64, String>,
    queued: BTreeMap<u64, String>,
    #[serde(serialize_with = "sorted")]
    remembered: HashMap<String, Remembered>,
    remembered_order: VecDeque<String>,
    history: Vec<UserInput>,
    /// Closed sessions keep their history for replay and answer as not found otherwise.
    closed: bool,
}

impl SessionState {
    fn new() -> Self {
        SessionState {
            turn: Turn::default(),
            next_message: 1,
            next_seq: 1,
            pending: HashMap::new(),
            steers: BTreeMap::new(),
            queued: BTreeMap::new(),
            remembered: HashMap::new(),
            remembered_order: VecDeque::new(),
            history: Vec::new(),
            closed: false,
        }
    }

    fn mint(&mut self) -> MessageId {
        let id = format!("msg_{}", self.next_message);
        self.next_message += 1;
        MessageId(id)
    }

    fn remember(&mut self, id: String, fate: Fate, owner: ConnId, bound: usize) {
        if self.remembered.insert(id.clone(), Remembered { fate, owner }).is_none() {
            self.remembered_order.push_back(id);
        }
        while self.remembered_order.len() > bound {
            if let Some(old) = self.remembered_order.pop_front() {
                self.remembered.remove(&old);
            }
        }
    }

    /// R-DELIV-1: a delivery is the emission of the `user_message`; the id is then remembered
    /// as delivered (R-REVOKE-3) and the message joins the replayable history (R-REPLAY-1).
    fn record_delivery(&mut self, out: &mut VecDeque<Output>, session: &str, input: &UserInput, owner: ConnId, bound: usize) {
        deliver_user_message(out, session, input);
        self.remember(input.message_id.0.clone(), Fate::Delivered, owner, bound);
        self.history.push(input.clone());
    }

    /// Delivers the pending injects at these `(is_steer, seq)` positions, in the order given.
    fn deliver(&mut self, out: &mut VecDeque<Output>, session: &str, picks: Vec<(bool, u64)>, bound: usize) -> Vec<UserInput> {
        let mut delivered = Vec::with_capacity(picks.len());
        for (is_steer, seq) in picks {
            if let Some((id, p)) = self.take(is_steer, seq) {
                let input = UserInput { message_id: MessageId(id), content: p.content };
                self.record_delivery(out, session, &input, p.owner, bound);
                delivered.push(input);
            }
        }
        delivered
    }

    fn take(&mut self, seq_map_is_steer: bool, seq: u64) -> Option<(String, Pending)> {
        let map = if seq_map_is_steer { &mut self.steers } else { &mut self.queued };
        let id = map.remove(&seq)?;
        let p = self.pending.remove(&id)?;
        Some((id, p))
    }
}

/// Hash maps serialise in key order, so equal states give byte-equal snapshots.
fn sorted<S: serde::Serializer, V: Serialize>(map: &HashMap<String, V>, s: S) -> Result<S::Ok, S::Error> {
    map.iter().collect::<BTreeMap<_, _>>().serialize(s)
}

/// The current on-disk format of [`Agent::snapshot`].
pub const SNAPSHOT_VERSION: u32 = 1;

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Snapshot {
    version: u32,
    config: AgentConfig,
    next_session: u64,
    sessions: BTreeMap<String, SessionState>,
    connections: BTreeMap<ConnId, Role>,
}

/// A snapshot that cannot be restored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RestoreError(pub String);

impl std::fmt::Display for RestoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot restore the agent snapshot: {}", self.0)
    }
}

impl std::error::Error for RestoreError {}

/// The agent-side core. See the module docs for the draining contract.
#[derive(Clone, Debug)]
pub struct Agent {
    config: AgentConfig,
    next_session: u64,
    sessions: BTreeMap<String, SessionState>,
    connections: BTreeMap<ConnId, Role>,
    out: VecDeque<Output>,
    /// Outputs caused by the request being answered: they follow its response.
    deferred: VecDeque<Output>,
    /// Notifications that named no known method (ignored, counted).
    pub ignored_notifications: u64,
}

impl Agent {
    pub fn new(config: AgentConfig) -> Self {
        Agent {
            config,
            next_session: 1,
            sessions: BTreeMap::new(),
            connections: BTreeMap::new(),
            out: VecDeque::new(),
            deferred: VecDeque::new(),
            ignored_notifications: 0,
        }
    }

    pub fn config(&self) -> &AgentConfig {
        &self.config
    }

    /// Attaches a connection; unknown connections that send a line are attached as controllers.
    pub fn attach(&mut self, conn: &str, role: Role) {
        self.connections.insert(conn.to_owned(), role);
    }

    /// Creates an idle session with a chosen id (hosts that mint their own ids, and tests).
    pub fn create_session(&mut self, id: &str) {
        let s = self.sessions.entry(id.to_owned()).or_insert_with(SessionState::new);
        if s.closed {
            *s = SessionState::new();
        }
    }

    /// Forgets a session entirely, history included.
    pub fn forget_session(&mut self, id: &str) {
        self.sessions.remove(id);
    }

    /// `true` while the agent holds the session (R-STATUS-1).
    pub fn is_live(&self, id: &str) -> bool {
        self.sessions.get(id).is_some_and(|s| !s.closed)
    }

    /// The ids of the sessions the agent holds (closed ones excluded).
    pub fn session_ids(&self) -> Vec<String> {
        self.sessions.iter().filter(|(_, s)| !s.closed).map(|(id, _)| id.clone()).collect()
    }

    /// `true` while a turn of the session is in progress (R-TURN-1). A host restoring a
    /// snapshot uses it to end turns whose model process did not survive.
    pub fn turn_in_progress(&self, session: &str) -> bool {
        self.sessions.get(session).is_some_and(|s| !s.closed && s.turn.in_progress)
    }

    /// The next output, or `None` when everything caused so far was drained.
    pub fn poll_output(&mut self) -> Option<Output> {
        self.out.pop_front()
    }

    /// Drains every queued output.
    pub fn drain(&mut self) -> Vec<Output> {
        self.out.drain(..).collect()
    }

    /// The session's replayable history: delivered user messages in delivery order (R-REPLAY-1).
    pub fn history(&self, session: &str) -> Option<&[UserInput]> {
        self.sessions.get(session).map(|s| s.history.as_slice())
    }

    /// The session's pending injects in delivery order (steers, then queued, each FIFO).
    pub fn pending(&self, session: &str) -> Vec<DroppedInject> {
        let Some(s) = self.sessions.get(session) else { return Vec::new() };
        s.steers
            .values()
            .chain(s.queued.values())
            .filter_map(|id| {
                s.pending.get(id).map(|p| DroppedInject {
                    message_id: MessageId(id.clone()),
                    mode: p.mode,
                    content: p.content.clone(),
                })
            })
            .collect()
    }

    // ----- client lines -----

    /// Applies one line from a client connection.
    pub fn handle_line(&mut self, conn: &str, line: &str) {
        if let Err(e) = jsonrpc::check_size(line.len(), self.config.policy.max_line_bytes) {
            return self.frame_error(conn, &e);
        }
        match jsonrpc::parse_line(line) {
            Ok(Frame::Single(msg)) => self.handle_message(conn, msg),
            Ok(Frame::Batch(items)) => {
                for item in items {
                    match item {
                        Ok(msg) => self.handle_message(conn, msg),
                        Err(e) => self.frame_error(conn, &e),
                    }
                }
            }
            Err(e) => self.frame_error(conn, &e),
        }
    }

    /// Like [`Agent::handle_line`] for raw bytes (invalid UTF-8 is a parse error).
    pub fn handle_bytes(&mut self, conn: &str, line: &[u8]) {
        if let Err(e) = jsonrpc::check_size(line.len(), self.config.policy.max_line_bytes) {
            return self.frame_error(conn, &e);
        }
        match std::str::from_utf8(line) {
            Ok(text) => self.handle_line(conn, text),
            Err(e) => self.frame_error(conn, &FrameError::Parse { detail: format!("invalid UTF-8: {e}") }),
        }
    }

    fn frame_error(&mut self, conn: &str, e: &FrameError) {
        let (id, error) = e.to_error();
        self.respond_err(conn, &id, error);
    }

    /// Applies one classified message from a client connection.
    pub fn handle_message(&mut self, conn: &str, msg: Incoming<'_>) {
        if !self.connections.contains_key(conn) {
            self.attach(conn, Role::Controller);
        }
        match msg {
            Incoming::Request { id, method, params } => {
                let result = self.request(conn, &method, params);
                match result {
                    Ok(line_result) => self.out.push_back(Output::Line {
                        to: Recipient::One(conn.to_owned()),
                        line: jsonrpc::result_line(&id, &line_result.0),
                    }),
                    Err(error) => self.respond_err(conn, &id, error),
                }
                // Notifications and actions caused by the request follow its response.
                let after = std::mem::take(&mut self.deferred);
                self.out.extend(after);
            }
            Incoming::Notification { method, params } => self.notification(conn, &method, params),
            // The core sends no requests, so any response is to an unknown id: ignored.
            Incoming::Response { .. } => self.ignored_notifications += 1,
        }
    }

    fn respond_err(&mut self, conn: &str, id: &RequestId, error: ErrorObject) {
        self.out.push_back(Output::Line { to: Recipient::One(conn.to_owned()), line: jsonrpc::error_line(id, &error) });
    }

    fn notification(&mut self, conn: &str, method: &str, params: Option<&RawValue>) {
        match method {
            "session/cancel" => {
                let Ok(p) = jsonrpc::decode_params::<CancelSessionNotification>(params) else { return };
                if self.connections.get(conn) == Some(&Role::Observer) {
                    return;
                }
                self.cancel(&p.session_id.0);
            }
            // R-CANCELREQ-1: the core answers synchronously, so the request was answered.
            "$/cancel_request" => {}
            _ => self.ignored_notifications += 1,
        }
    }

    fn request(&mut self, conn: &str, method: &str, params: Option<&RawValue>) -> Result<Answer, ErrorObject> {
        match method {
            "initialize" => Ok(Answer::of(&self.initialize_response())),
            "session/new" => {
                let id = loop {
                    let id = format!("sess_{}", self.next_session);
                    self.next_session += 1;
                    if !self.sessions.contains_key(&id) {
                        break id;
                    }
                };
                self.create_session(&id);
                Ok(Answer::of(&NewSessionResponse { session_id: SessionId(id), meta: None }))
            }
            "session/prompt" => {
                let p: PromptRequest = decode(params)?;
                self.session_exists(&p.session_id.0, None)?;
                self.not_observer(conn, None)?;
                let id = self.accept(conn, &p.session_id.0, InjectMode::Queue, p.prompt);
                Ok(Answer::of(&PromptResponse { message_id: id, meta: None }))
            }
            "session/inject" => {
                let p: InjectRequest = decode(params)?;
                self.session_exists(&p.session_id.0, None)?;
                let caps = self.config.inject.as_ref().ok_or_else(ErrorObject::method_not_found)?;
                if !caps.modes.contains(&p.mode) {
                    return Err(ErrorObject::reason(ErrorReason::ModeNotSupported, None));
                }
                self.not_observer(conn, None)?;
                let session = &p.session_id.0;
                if p.mode == InjectMode::Steer && !self.sessions[session].turn.in_progress {
                    return Err(ErrorObject::reason(ErrorReason::NoRunningTurn, None));
                }
                let id = self.accept(conn, session, p.mode, p.content);
                Ok(Answer::of(&InjectResponse { message_id: id, meta: None }))
            }
            "session/revoke_inject" => {
                let p: RevokeInjectRequest = decode(params)?;
                let mid = Some(&p.message_id);
                self.session_exists(&p.session_id.0, mid)?;
                self.config.inject.as_ref().ok_or_else(ErrorObject::method_not_found)?;
                self.not_observer(conn, mid)?;
                self.revoke(conn, &p.session_id.0, &p.message_id)?;
                Ok(Answer::of(&RevokeInjectResponse { meta: None }))
            }
            "session/replace_inject" => {
                let p: ReplaceInjectRequest = decode(params)?;
                let mid = Some(&p.message_id);
                self.session_exists(&p.session_id.0, mid)?;
                let caps = self.config.inject.as_ref().ok_or_else(ErrorObject::method_not_found)?;
                if !caps.pending.as_ref().is_some_and(|p| p.replace) {
                    return Err(ErrorObject::reason(ErrorReason::ReplaceNotSupported, mid));
                }
                self.not_observer(conn, mid)?;
                self.replace(conn, &p.session_id.0, &p.message_id, p.content)?;
                Ok(Answer::of(&ReplaceInjectResponse { message_id: p.message_id, meta: None }))
            }
            "session/close" => {
                let p: CloseSessionRequest = decode(params)?;
                self.session_exists(&p.session_id.0, None)?;
                self.not_observer(conn, None)?;
                self.close_deferred(&p.session_id.0);
                Ok(Answer(serde_json::json!({})))
            }
            "session/status" => {
                let p: SessionStatusRequest = decode(params)?;
                let status = if self.is_live(&p.session_id.0) { SessionStatus::Live } else { SessionStatus::NotFound };
                Ok(Answer::of(&SessionStatusResponse { status, meta: None }))
            }
            _ => Err(ErrorObject::method_not_found()),
        }
    }

    fn initialize_response(&self) -> InitializeResponse {
        InitializeResponse {
            protocol_version: acp_inject_wire::ProtocolVersion(2),
            info: Implementation {
                name: self.config.info.name.clone(),
                title: None,
                version: self.config.info.version.clone(),
                meta: None,
            },
            capabilities: Some(AgentCapabilities {
                session: Some(SessionCapabilities {
                    inject: self.config.inject.clone(),
                    status: Some(StatusCapabilities { meta: None }),
                    meta: None,
                }),
                meta: None,
            }),
            meta: None,
        }
    }

    fn session_exists(&self, session: &str, message_id: Option<&MessageId>) -> Result<(), ErrorObject> {
        if self.is_live(session) {
            Ok(())
        } else {
            Err(ErrorObject::reason(ErrorReason::SessionNotFound, message_id))
        }
    }

    fn not_observer(&self, conn: &str, message_id: Option<&MessageId>) -> Result<(), ErrorObject> {
        if self.connections.get(conn) == Some(&Role::Observer) {
            Err(ErrorObject::reason(ErrorReason::NotPermitted, message_id))
        } else {
            Ok(())
        }
    }

    /// Accepts a prompt or inject: idle → a turn starts with it (R-PROMPT-1, R-QUEUE-2);
    /// in progress → pending in its mode's FIFO (R-PROMPT-2, R-QUEUE-1, R-STEER-1).
    fn accept(&mut self, conn: &str, session: &str, mode: InjectMode, content: Vec<ContentBlock>) -> MessageId {
        let interrupt_allowed = self.interrupt_advertised();
        let bound = self.config.policy.remember_ids;
        let s = self.sessions.get_mut(session).expect("checked by session_exists");
        let id = s.mint();
        if !s.turn.in_progress {
            let input = UserInput { message_id: id.clone(), content };
            s.record_delivery(&mut self.deferred, session, &input, conn.to_owned(), bound);
            s.turn = Turn { in_progress: true, ..Turn::default() };
            self.deferred.push_back(state_line(session, StateUpdate::Running(Default::default())));
            self.deferred.push_back(Output::Action { session: session.to_owned(), action: RuntimeAction::StartTurn(vec![input]) });
            return id;
        }
        let seq = s.next_seq;
        s.next_seq += 1;
        s.pending.insert(id.0.clone(), Pending { mode, content, owner: conn.to_owned(), seq });
        match mode {
            InjectMode::Steer => {
                s.steers.insert(seq, id.0.clone());
                let t = &mut s.turn;
                if interrupt_allowed && t.streaming && !t.interrupted && t.permissions == 0 && !t.paused {
                    t.interrupted = true;
                    self.deferred.push_back(Output::Action {
                        session: session.to_owned(),
                        action: RuntimeAction::InterruptStream,
                    });
                }
            }
            InjectMode::Queue => {
                s.queued.insert(seq, id.0.clone());
            }
        }
        id
    }

    fn interrupt_advertised(&self) -> bool {
        self.config.policy.steer_in_stream == SteerInStream::Interrupt
            && self
                .config
                .inject
                .as_ref()
                .is_some_and(|c| c.steer_in_stream.contains(&SteerInStream::Interrupt))
    }

    fn may_edit(&self, conn: &str, owner: &str, message_id: &MessageId) -> Result<(), ErrorObject> {
        if self.config.policy.revoke_replace == RevokeReplace::CreatorOnly && conn != owner {
            return Err(ErrorObject::reason(ErrorReason::NotPermitted, Some(message_id)));
        }
        Ok(())
    }

    /// R-REVOKE-1..3.
    fn revoke(&mut self, conn: &str, session: &str, id: &MessageId) -> Result<(), ErrorObject> {
        let bound = self.config.policy.remember_ids;
        let s = &self.sessions[session];
        if let Some(p) = s.pending.get(&id.0) {
            self.may_edit(conn, &p.owner.clone(), id)?;
            let s = self.sessions.get_mut(session).expect("exists");
            let p = s.pending.remove(&id.0).expect("present");
            match p.mode {
                InjectMode::Steer => s.steers.remove(&p.seq),
                InjectMode::Queue => s.queued.remove(&p.seq),
            };
            s.remember(id.0.clone(), Fate::Revoked, p.owner, bound);
            return Ok(());
        }
        match s.remembered.get(&id.0) {
            Some(r) => {
                self.may_edit(conn, &r.owner, id)?;
                match r.fate {
                    Fate::Revoked => Ok(()),
                    Fate::Delivered => Err(ErrorObject::reason(ErrorReason::AlreadyDelivered, Some(id))),
                }
            }
            None => Err(ErrorObject::reason(ErrorReason::UnknownMessageId, Some(id))),
        }
    }

    /// R-REPLACE-1..2.
    fn replace(&mut self, conn: &str, session: &str, id: &MessageId, content: Vec<ContentBlock>) -> Result<(), ErrorObject> {
        let s = &self.sessions[session];
        if let Some(p) = s.pending.get(&id.0) {
            self.may_edit(conn, &p.owner.clone(), id)?;
            let s = self.sessions.get_mut(session).expect("exists");
            s.pending.get_mut(&id.0).expect("present").content = content;
            return Ok(());
        }
        match s.remembered.get(&id.0) {
            Some(r) => {
                self.may_edit(conn, &r.owner, id)?;
                match r.fate {
                    Fate::Revoked => Err(ErrorObject::reason(ErrorReason::UnknownMessageId, Some(id))),
                    Fate::Delivered => Err(ErrorObject::reason(ErrorReason::AlreadyDelivered, Some(id))),
                }
            }
            None => Err(ErrorObject::reason(ErrorReason::UnknownMessageId, Some(id))),
        }
    }

    /// R-CANCEL-1: once per turn; nothing while idle.
    fn cancel(&mut self, session: &str) {
        let Some(s) = self.sessions.get_mut(session).filter(|s| !s.closed) else { return };
        if s.turn.in_progress && !s.turn.cancel_requested {
            s.turn.cancel_requested = true;
            self.out.push_back(Output::Action { session: session.to_owned(), action: RuntimeAction::CancelTurn });
        }
    }

    fn close_deferred(&mut self, session: &str) {
        let dropped = self.pending(session);
        if let Some(s) = self.sessions.get_mut(session) {
            s.closed = true;
            s.turn = Turn::default();
            s.pending.clear();
            s.steers.clear();
            s.queued.clear();
        }
        if !dropped.is_empty() {
            self.deferred.push_back(Output::Action { session: session.to_owned(), action: RuntimeAction::Dropped(dropped) });
        }
    }

    // ----- runtime events -----

    /// Applies one runtime event of a session.
    pub fn runtime_event(&mut self, session: &str, event: RuntimeEvent) -> Result<(), HostError> {
        if !self.is_live(session) {
            return Err(HostError::SessionClosed);
        }
        if event == RuntimeEvent::Close {
            self.close_deferred(session);
            let after = std::mem::take(&mut self.deferred);
            self.out.extend(after);
            return Ok(());
        }
        match event {
            RuntimeEvent::Update(SessionUpdate::UserMessage(_) | SessionUpdate::StateUpdate(_)) => {
                return Err(HostError::ReservedUpdate)
            }
            RuntimeEvent::Update(update) => {
                self.out.push_back(update_line(session, update));
                return Ok(());
            }
            RuntimeEvent::ClearAgentMessage { message_id } => {
                let update = match self.config.policy.clear_style {
                    ClearStyle::Upsert => {
                        acp_inject_wire::AgentMessage { message_id, content: Patch::Value(Vec::new()), meta: None }.into()
                    }
                    ClearStyle::AgentMessageClear => {
                        acp_inject_wire::AgentMessageClear { message_id: Some(message_id), meta: None }.into()
                    }
                };
                self.out.push_back(update_line(session, update));
                return Ok(());
            }
            _ => {}
        }
        let policy = self.config.policy.clone();
        let s = self.sessions.get_mut(session).expect("checked");
        if !s.turn.in_progress {
            return Err(HostError::NoTurnInProgress);
        }
        match event {
            RuntimeEvent::BreakPoint(_) => {
                // R-PERM-1, R-PAUSE-1: nothing is delivered while requires_action or paused.
                if s.turn.permissions > 0 || s.turn.paused || s.steers.is_empty() {
                    return Ok(());
                }
                let steers: Vec<(bool, u64)> = s.steers.keys().map(|q| (true, *q)).collect();
                let delivered = s.deliver(&mut self.out, session, steers, policy.remember_ids);
                // The stream (if any) was cut or ended at this break-point.
                s.turn.streaming = false;
                s.turn.interrupted = false;
                self.out.push_back(Output::Action { session: session.to_owned(), action: RuntimeAction::Deliver(delivered) });
            }
            RuntimeEvent::StreamStarted => {
                s.turn.streaming = true;
                s.turn.interrupted = false;
            }
            RuntimeEvent::StreamFinished => {
                s.turn.streaming = false;
                s.turn.interrupted = false;
            }
            RuntimeEvent::PermissionRequested => {
                s.turn.permissions += 1;
                if s.turn.permissions == 1 {
                    self.out.push_back(state_line(session, StateUpdate::RequiresAction(Default::default())));
                }
            }
            RuntimeEvent::PermissionResolved => {
                if s.turn.permissions == 0 {
                    return Err(HostError::NoPermissionPending);
                }
                s.turn.permissions -= 1;
                if s.turn.permissions == 0 {
                    self.out.push_back(state_line(session, StateUpdate::Running(Default::default())));
                }
            }
            RuntimeEvent::Paused => s.turn.paused = true,
            RuntimeEvent::Resumed => s.turn.paused = false,
            RuntimeEvent::TurnEnded { stop_reason, usage } => {
                let stop_reason = if s.turn.cancel_requested { StopReason::Cancelled } else { stop_reason };
                s.turn = Turn::default();
                self.out.push_back(idle_line(session, &stop_reason, usage));
                self.open_next_turn(session);
            }
            RuntimeEvent::Close | RuntimeEvent::Update(_) | RuntimeEvent::ClearAgentMessage { .. } => {
                unreachable!("handled above")
            }
        }
        Ok(())
    }

    /// At a turn end: all pending steers (R-STEER-4), then the queued injects the policy
    /// allows (R-QUEUE-1, R-QUEUE-3), each its own `user_message`, then `running`.
    fn open_next_turn(&mut self, session: &str) {
        let policy = self.config.policy.clone();
        let s = self.sessions.get_mut(session).expect("exists");
        let queue_take = match policy.queue_drain {
            QueueDrain::Batch => usize::MAX,
            QueueDrain::OnePerTurn => 1,
        };
        let picks: Vec<(bool, u64)> = s
            .steers
            .keys()
            .map(|q| (true, *q))
            .chain(s.queued.keys().take(queue_take).map(|q| (false, *q)))
            .collect();
        let inputs = s.deliver(&mut self.out, session, picks, policy.remember_ids);
        if inputs.is_empty() {
            return;
        }
        s.turn = Turn { in_progress: true, ..Turn::default() };
        self.out.push_back(state_line(session, StateUpdate::Running(Default::default())));
        self.out.push_back(Output::Action { session: session.to_owned(), action: RuntimeAction::StartTurn(inputs) });
    }

    // ----- snapshot / restore -----

    /// The whole agent state (sessions, pending injects, tombstones, id counters) as a
    /// versioned JSON document. Undrained outputs are not part of it: drain first.
    pub fn snapshot(&self) -> String {
        let snap = Snapshot {
            version: SNAPSHOT_VERSION,
            config: self.config.clone(),
            next_session: self.next_session,
            sessions: self.sessions.clone(),
            connections: self.connections.clone(),
        };
        serde_json::to_string(&snap).unwrap_or_else(|e| unreachable!("the snapshot always serialises: {e}"))
    }

    /// Restores an agent from [`Agent::snapshot`].
    pub fn restore(json: &str) -> Result<Agent, RestoreError> {
        let version: serde_json::Value = serde_json::from_str(json).map_err(|e| RestoreError(e.to_string()))?;
        match version.get("version").and_then(serde_json::Value::as_u64) {
            Some(v) if v == u64::from(SNAPSHOT_VERSION) => {}
            Some(v) => return Err(RestoreError(format!("unsupported snapshot version {v}"))),
            None => return Err(RestoreError("missing `version`".into())),
        }
        let snap: Snapshot = serde_json::from_value(version).map_err(|e| RestoreError(e.to_string()))?;
        Ok(Agent {
            config: snap.config,
            next_session: snap.next_session,
            sessions: snap.sessions,
            connections: snap.connections,
            out: VecDeque::new(),
            deferred: VecDeque::new(),
            ignored_notifications: 0,
        })
    }
}

/// A successful result, already encoded.
struct Answer(serde_json::Value);

impl Answer {
    fn of<T: Serialize>(v: &T) -> Answer {
        Answer(serde_json::to_value(v).unwrap_or_else(|e| unreachable!("results always serialise: {e}")))
    }
}

impl Serialize for Answer {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

fn decode<T: serde::de::DeserializeOwned>(params: Option<&RawValue>) -> Result<T, ErrorObject> {
    jsonrpc::decode_params(params).map_err(|e| ErrorObject::invalid_params(&e.to_string()))
}

fn update_line(session: &str, update: SessionUpdate) -> Output {
    let params = UpdateSessionNotification { session_id: SessionId(session.to_owned()), update, meta: None };
    Output::Line { to: Recipient::All, line: jsonrpc::notification_line(acp_inject_wire::methods::SESSION_UPDATE, &params) }
}

/// The turn-end `idle`: always `stopReason`; `usage` verbatim when reported, never `null`.
fn idle_line(session: &str, stop_reason: &StopReason, usage: Option<serde_json::Value>) -> Output {
    let mut update = serde_json::json!({ "sessionUpdate": "state_update", "state": "idle", "stopReason": stop_reason });
    if let Some(usage) = usage {
        update["usage"] = usage;
    }
    let params = serde_json::json!({ "sessionId": session, "update": update });
    Output::Line { to: Recipient::All, line: jsonrpc::notification_line(acp_inject_wire::methods::SESSION_UPDATE, &params) }
}

fn state_line(session: &str, state: StateUpdate) -> Output {
    update_line(session, state.into())
}

/// R-DELIV-1: delivery is exactly the emission of the `user_message`.
fn deliver_user_message(out: &mut VecDeque<Output>, session: &str, input: &UserInput) {
    out.push_back(update_line(
        session,
        UserMessage { message_id: input.message_id.clone(), content: Patch::Value(input.content.clone()), meta: None }.into(),
    ));
}

#[allow(dead_code)]
fn _assert_send_sync() {
    fn is<T: Send + Sync>() {}
    is::<Agent>();
}

