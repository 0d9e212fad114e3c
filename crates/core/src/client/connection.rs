//! One client connection to one agent: the owner of its JSON-RPC id space.
//!
//! [`ClientConnection`] builds every request the client sends (ids from one counter, so no two
//! requests share an id), routes each answer by id to the request that asked — and through it
//! to the right session — and each `session/update` by `sessionId` to that session's
//! [`SessionMirror`]. The agent's own requests surface as events (`session/request_permission`)
//! or are answered `-32601` at once. Like the agent core it does no I/O: feed it what the agent
//! wrote ([`ClientConnection::receive_bytes`] takes arbitrary chunks), send what
//! [`ClientConnection::take_outgoing`] returns, and read [`ClientConnection::take_events`].

use std::collections::{BTreeMap, HashMap, VecDeque};

use acp_inject_wire::framing::{Framed, LineFramer};
use acp_inject_wire::jsonrpc::{self, AgentLine, Incoming};
use acp_inject_wire::{
    collect_tolerated, AuthMethod, CancelSessionNotification, CancelledPermissionOutcome, ClientCapabilities, CloseSessionRequest,
    ContentBlock, ErrorObject, Implementation, InitializeRequest, InitializeResponse, InjectCapabilities, InjectMode, InjectRequest,
    InjectResponse, ListSessionsRequest, ListSessionsResponse, LoginAuthRequest, LogoutAuthRequest, McpServer, MessageId,
    NewSessionRequest, NewSessionResponse, PromptRequest, ProtocolVersion, ReplaceInjectRequest, ReplayFrom, ReplayFromStart,
    RequestId, RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse, ResumeSessionRequest,
    RevokeInjectRequest, SessionId, SessionStatus, SessionStatusRequest, SessionStatusResponse, SteeringOutcome, SteeringRequest,
    SteeringResponse, UpdateSessionNotification,
};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::event::{Answer, Event, ProtocolError, RequestKind, SessionEvent};
use super::item::ItemMode;
use super::mirror::SessionMirror;
use super::view::CallRejected;
use crate::agent::{PENDING_EXTENSION, STEERING_MESSAGE_ID};

/// How many permission requests the client answered itself it remembers, for the app's late
/// answers (C-PERM-1).
const SETTLED_REMEMBERED: usize = 256;

// What the agent writes: framing, routing by id and by session, the agent's own requests.
mod input;
// What this client holds for an agent that takes no injects, and when it goes out.
mod held;
// An agent that answered `initialize` with version 1.
mod v1;

/// What to do with a steer when the agent takes no injects
/// (C-HELD-3). Without one, such a steer is refused
/// with [`CallRejected::SteerNotSupported`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SteerFallback {
    /// Hold it like a queued message: it goes out as a prompt once the turn has ended.
    Queue,
    /// Cancel the running turn (`session/cancel`) and send the steer as the next prompt, ahead
    /// of the queued messages.
    CancelAndResend,
}

/// A request in flight: what was asked, and what its answer must update.
#[derive(Debug)]
enum Flight {
    Initialize,
    NewSession,
    ListSessions,
    /// `created`: the mirror was made for this resume (dropped if it fails).
    Resume {
        created: bool,
    },
    Accept {
        item: usize,
        prompt: bool,
    },
    Revoke(usize),
    Replace(usize, Vec<ContentBlock>),
    Close,
    Status,
    /// A held item sent as `session/prompt` to a v2 agent (C-HELD-2): the answer updates the
    /// item; no call of the app asked, so no [`Event::Answered`] reports it.
    HeldPrompt(usize),
    /// A prompt sent to a version 1 agent: its answer ends the turn (C-V1-2); the app's call
    /// was answered when the prompt went out.
    V1Turn,
    /// A steer sent as `_session/steering` (C-STEERING-1).
    Steering(usize),
    Authenticate,
    Logout,
    /// An extension request of the app's.
    Extension,
}

impl Flight {
    fn kind(&self) -> RequestKind {
        match self {
            Flight::Initialize => RequestKind::Initialize,
            Flight::NewSession => RequestKind::NewSession,
            Flight::ListSessions => RequestKind::ListSessions,
            Flight::Resume { .. } => RequestKind::Resume,
            Flight::Accept { prompt: true, .. } => RequestKind::Prompt,
            Flight::Accept { prompt: false, .. } | Flight::Steering(_) => RequestKind::Inject,
            Flight::Revoke(_) => RequestKind::Revoke,
            Flight::Replace(..) => RequestKind::Replace,
            Flight::Close => RequestKind::Close,
            Flight::Status => RequestKind::Status,
            Flight::HeldPrompt(_) | Flight::V1Turn => RequestKind::Prompt,
            Flight::Authenticate => RequestKind::Authenticate,
            Flight::Logout => RequestKind::Logout,
            Flight::Extension => RequestKind::Extension,
        }
    }
}

#[derive(Debug)]
struct InFlight {
    session: Option<SessionId>,
    flight: Flight,
}

/// A prompt answer as clients decode it: `messageId` is optional, so agents older than the
/// insertion receipt (which answer `{}`) still work (the item is bound by its `user_message`).
#[derive(Deserialize)]
struct LenientPromptResponse {
    #[serde(rename = "messageId", default)]
    message_id: Option<MessageId>,
}

/// Where a connection is in its handshake (C-INIT-1, C-V1-1), read off the type: the agent's
/// `initialize` answer once it came, and the wire version it settled.
#[derive(Clone, Debug, PartialEq)]
pub enum Phase {
    /// No `initialize` answer yet: the connection speaks version 2 until one says otherwise.
    AwaitingAgent,
    /// A version 2 agent: the native wire.
    V2(Box<InitializeResponse>),
    /// A version 1 agent, driven through v1 from here on (C-V1-1).
    V1(Box<InitializeResponse>),
}

impl Phase {
    /// The phase an agent's `initialize` answer settles, by its `protocolVersion`.
    fn of(agent: InitializeResponse) -> Phase {
        if agent.protocol_version.0 == 1 {
            Phase::V1(Box::new(agent))
        } else {
            Phase::V2(Box::new(agent))
        }
    }
}

/// One client connection. See the module docs.
#[derive(Debug)]
pub struct ClientConnection {
    next_id: i64,
    in_flight: HashMap<RequestId, InFlight>,
    phase: Phase,
    sessions: BTreeMap<SessionId, SessionMirror>,
    events: VecDeque<Event>,
    outbox: VecDeque<String>,
    framer: LineFramer,
    max_line_bytes: usize,
    /// The open `session/request_permission` requests, with their sessions (ordered: what the
    /// client answers for a cancel goes out in the agent's order).
    permissions: BTreeMap<RequestId, String>,
    /// Permission requests the client answered itself (C-PERM-1): the app's later answer to
    /// one is accepted and sends nothing. The newest [`SETTLED_REMEMBERED`] are kept.
    settled: VecDeque<RequestId>,
    ignored: u64,
    steer_fallback: Option<SteerFallback>,
    /// The calls of held prompts, answered when each goes out (C-V1-2): by session and item.
    held_calls: HashMap<(SessionId, usize), RequestId>,
}

impl Default for ClientConnection {
    fn default() -> Self {
        ClientConnection::new(jsonrpc::DEFAULT_MAX_LINE_BYTES)
    }
}

/// The id of an advertised auth method, whatever its type.
fn auth_method_id(method: &AuthMethod) -> Option<String> {
    match method {
        AuthMethod::Agent(m) => Some(m.method_id.clone()),
        AuthMethod::Terminal(m) => Some(m.method_id.clone()),
        AuthMethod::Other(other) => other.get("methodId").and_then(|v| v.as_str().map(str::to_owned)),
    }
}

/// An extension's method starts with `_`, and JSON-RPC params are an object or an array.
fn check_extension(method: &str, params: Option<&serde_json::Value>) -> Result<(), CallRejected> {
    if !method.starts_with('_') {
        return Err(CallRejected::InvalidArguments(format!(
            "{method:?} is not an extension method (their names start with `_`; this library sends ACP's own methods itself)"
        )));
    }
    match params {
        None | Some(serde_json::Value::Object(_)) | Some(serde_json::Value::Array(_)) => Ok(()),
        Some(other) => Err(CallRejected::InvalidArguments(format!("JSON-RPC params are an object or an array, not {other}"))),
    }
}

/// The line of an extension request (with an id) or notification.
fn extension_line(id: Option<&RequestId>, method: &str, params: Option<&serde_json::Value>) -> String {
    let mut message = serde_json::Map::new();
    message.insert("jsonrpc".into(), "2.0".into());
    if let Some(id) = id {
        message.insert("id".into(), serde_json::to_value(id).unwrap_or(serde_json::Value::Null));
    }
    message.insert("method".into(), method.into());
    if let Some(params) = params {
        message.insert("params".into(), params.clone());
    }
    serde_json::Value::Object(message).to_string()
}

fn content_check(content: &[ContentBlock]) -> Result<(), CallRejected> {
    if content.is_empty() {
        Err(CallRejected::InvalidArguments("content needs at least one block".into()))
    } else {
        Ok(())
    }
}

impl ClientConnection {
    /// A connection refusing agent lines longer than `max_line_bytes`.
    pub fn new(max_line_bytes: usize) -> Self {
        ClientConnection {
            next_id: 1,
            in_flight: HashMap::new(),
            phase: Phase::AwaitingAgent,
            sessions: BTreeMap::new(),
            events: VecDeque::new(),
            outbox: VecDeque::new(),
            framer: LineFramer::new(max_line_bytes),
            max_line_bytes,
            permissions: BTreeMap::new(),
            settled: VecDeque::new(),
            ignored: 0,
            steer_fallback: None,
            held_calls: HashMap::new(),
        }
    }

    /// The agent's `initialize` answer, once received.
    pub fn agent(&self) -> Option<&InitializeResponse> {
        match &self.phase {
            Phase::AwaitingAgent => None,
            Phase::V2(agent) | Phase::V1(agent) => Some(agent),
        }
    }

    /// Where the connection is in its handshake, and the wire it speaks.
    pub fn phase(&self) -> &Phase {
        &self.phase
    }

    /// The agent's advertised `session.inject`.
    pub fn inject_capabilities(&self) -> Option<&InjectCapabilities> {
        self.agent()?.capabilities.as_ref()?.session.as_ref()?.inject.as_ref()
    }

    /// The agent advertises the steering extension (`_meta.steering.supported: true` at the
    /// top of its `initialize` answer): steers go out as `_session/steering` when it takes no
    /// injects (C-STEERING-1).
    pub fn steering_offered(&self) -> bool {
        let meta = self.agent().and_then(|a| a.meta.as_ref());
        let steering = meta.and_then(|m| m.get("steering"));
        steering.and_then(|s| s.get("supported")).and_then(serde_json::Value::as_bool) == Some(true)
    }

    /// The protocol version `initialize` settled: 2 until an agent answers 1.
    pub fn protocol_version(&self) -> u16 {
        if self.v1() {
            1
        } else {
            2
        }
    }

    /// The agent answered `initialize` with version 1 (C-V1-1).
    fn v1(&self) -> bool {
        matches!(self.phase, Phase::V1(_))
    }

    /// What to do with a steer when the agent takes no injects (C-HELD-3); `None` (the
    /// default) refuses it.
    pub fn set_steer_fallback(&mut self, fallback: Option<SteerFallback>) {
        self.steer_fallback = fallback;
    }

    /// Takes the agent's capabilities as known without an `initialize` exchange (a restored
    /// app, or a test); its `protocolVersion` is the connection's.
    pub fn assume_initialized(&mut self, agent: InitializeResponse) {
        self.phase = Phase::of(agent);
    }

    /// Takes the agent's inject capabilities as known without an `initialize` exchange.
    pub fn assume_capabilities(&mut self, inject: Option<InjectCapabilities>) {
        self.assume_agent(2, inject);
    }

    /// Takes the agent's protocol version (1 or 2; any other reads as 2) and inject
    /// capabilities as known without an `initialize` exchange. A version 1 agent takes no
    /// injects, whatever `inject` says.
    pub fn assume_agent(&mut self, protocol_version: u16, inject: Option<InjectCapabilities>) {
        let inject = if protocol_version == 1 { None } else { inject };
        let session = acp_inject_wire::SessionCapabilities::new().inject(inject);
        self.assume_initialized(
            InitializeResponse::new(ProtocolVersion(protocol_version), Implementation::new("agent", String::new()))
                .capabilities(acp_inject_wire::AgentCapabilities::new().session(session)),
        );
    }

    /// Opens a session on this connection without `session/new` (a restored mirror, or a
    /// session created by another means).
    pub fn open_session(&mut self, session_id: &SessionId, mirror: Option<SessionMirror>) {
        let caps = self.inject_capabilities().cloned();
        let mut mirror = mirror.unwrap_or_else(|| SessionMirror::new(caps));
        mirror.set_steering(self.steering_offered());
        self.sessions.insert(session_id.clone(), mirror);
    }

    /// The mirror of a session open on this connection.
    pub fn mirror(&self, session_id: &SessionId) -> Option<&SessionMirror> {
        self.sessions.get(session_id)
    }

    /// The sessions open on this connection.
    pub fn session_ids(&self) -> Vec<SessionId> {
        self.sessions.keys().cloned().collect()
    }

    /// Lines dropped (malformed, oversized, answers to no request), counted.
    pub fn ignored_lines(&self) -> u64 {
        self.ignored
    }

    /// Requests sent and not yet answered.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Every line to send to the agent, in order.
    pub fn take_outgoing(&mut self) -> Vec<String> {
        self.outbox.drain(..).collect()
    }

    /// Every event since the last call, in order.
    pub fn take_events(&mut self) -> Vec<Event> {
        self.events.drain(..).collect()
    }

    // ----- calls -----

    fn next_id(&mut self) -> RequestId {
        let id = RequestId::Number(self.next_id);
        self.next_id += 1;
        id
    }

    fn send<R: acp_inject_wire::Request>(&mut self, params: &R, session: Option<&SessionId>, flight: Flight) -> RequestId {
        self.send_line(|id| jsonrpc::request_line(id, params), session, flight)
    }

    /// Sends the request `line` writes for a fresh id, and remembers what it asked.
    fn send_line(&mut self, line: impl FnOnce(&RequestId) -> String, session: Option<&SessionId>, flight: Flight) -> RequestId {
        let id = self.next_id();
        self.outbox.push_back(line(&id));
        self.in_flight.insert(id.clone(), InFlight { session: session.cloned(), flight });
        id
    }

    fn open(&mut self, session_id: &SessionId) -> Result<&mut SessionMirror, CallRejected> {
        self.sessions.get_mut(session_id).ok_or(CallRejected::UnknownSession)
    }

    /// `initialize`, announcing this client; `pending_updates` opts into the agent's
    /// pending-list extension (`_acp-inject/pending`), when it offers it.
    pub fn initialize(&mut self, info: Implementation, pending_updates: bool) -> RequestId {
        let meta = pending_updates.then(|| {
            let mut m = serde_json::Map::new();
            m.insert(PENDING_EXTENSION.to_owned(), serde_json::Value::Object(Default::default()));
            m
        });
        let params = InitializeRequest::new(ProtocolVersion(2), info).capabilities(ClientCapabilities::new().meta(meta));
        self.send(&params, None, Flight::Initialize)
    }

    /// The agent's advertised `authMethods` (a version 1 agent's, read as v2's), empty when it
    /// advertises none or has not answered `initialize` yet.
    pub fn auth_methods(&self) -> &[AuthMethod] {
        self.agent().and_then(|a| a.auth_methods.as_deref()).unwrap_or_default()
    }

    /// `auth/login` with one of the agent's advertised methods (`authenticate` to a version 1
    /// agent). Refused locally for a method the agent does not advertise, and for a
    /// `terminal` method, which the client runs rather than sends (upstream v2 draft,
    /// `AuthMethodTerminal`).
    pub fn authenticate(&mut self, method_id: &str) -> Result<RequestId, CallRejected> {
        match self.auth_methods().iter().find(|m| auth_method_id(m).as_deref() == Some(method_id)) {
            None => {
                let ids: Vec<String> = self.auth_methods().iter().filter_map(auth_method_id).collect();
                return Err(CallRejected::InvalidArguments(format!(
                    "the agent advertises no auth method {method_id:?} (it advertises {ids:?})"
                )));
            }
            Some(AuthMethod::Terminal(_)) => {
                return Err(CallRejected::InvalidArguments(format!(
                    "{method_id:?} is a terminal method: the client runs the agent in a terminal for it, and does not send it"
                )))
            }
            Some(_) => {}
        }
        let params = LoginAuthRequest::new(method_id.to_owned());
        if self.v1() {
            // v1's `authenticate` takes the same `{methodId}`.
            return Ok(self.send_line(|id| jsonrpc::request_line_for(id, v1::AUTHENTICATE, &params), None, Flight::Authenticate));
        }
        Ok(self.send(&params, None, Flight::Authenticate))
    }

    /// `auth/logout`. ACP v1 has no such stable method: to a version 1 agent nothing is sent,
    /// and the call is answered -32601 at once.
    pub fn logout(&mut self) -> RequestId {
        if self.v1() {
            let why = "auth/logout is not part of ACP v1, which this agent speaks";
            let outcome = Answer::Failed(ProtocolError::local(acp_inject_wire::errors::METHOD_NOT_FOUND, why));
            let request = self.next_id();
            self.events.push_back(Event::Answered { request: request.clone(), kind: RequestKind::Logout, session_id: None, outcome });
            return request;
        }
        self.send(&LogoutAuthRequest::new(), None, Flight::Logout)
    }

    /// A request of an extension (`method` starts with `_`), with `params` (an object or an
    /// array, or none); its answer comes as [`Answer::Extension`] with the result as it came.
    pub fn ext_request(&mut self, method: &str, params: Option<serde_json::Value>) -> Result<RequestId, CallRejected> {
        check_extension(method, params.as_ref())?;
        let line = |id: &RequestId| extension_line(Some(id), method, params.as_ref());
        Ok(self.send_line(line, None, Flight::Extension))
    }

    /// A notification of an extension (`method` starts with `_`), with `params`.
    pub fn ext_notify(&mut self, method: &str, params: Option<serde_json::Value>) -> Result<(), CallRejected> {
        check_extension(method, params.as_ref())?;
        self.outbox.push_back(extension_line(None, method, params.as_ref()));
        Ok(())
    }

    /// `session/new`.
    pub fn new_session(&mut self, cwd: &str, additional_directories: Vec<String>, mcp_servers: Vec<McpServer>) -> RequestId {
        let params = NewSessionRequest::new(cwd.to_owned())
            .additional_directories((!additional_directories.is_empty()).then_some(additional_directories))
            .mcp_servers(mcp_servers);
        if self.v1() {
            return self.send_line(|id| v1::new_session_line(id, &params), None, Flight::NewSession);
        }
        self.send(&params, None, Flight::NewSession)
    }

    /// `session/list`, optionally filtered by working directory, from `cursor` on.
    pub fn list_sessions(&mut self, cwd: Option<&str>, cursor: Option<&str>) -> RequestId {
        let params = ListSessionsRequest::new().cwd(cwd.map(str::to_owned)).cursor(cursor.map(str::to_owned));
        self.send(&params, None, Flight::ListSessions)
    }

    /// `session/resume`; with `replay` the agent replays the conversation first, into this
    /// session's mirror.
    pub fn resume(
        &mut self,
        session_id: &SessionId,
        cwd: &str,
        replay: bool,
        additional_directories: Vec<String>,
        mcp_servers: Vec<McpServer>,
    ) -> RequestId {
        let created = !self.sessions.contains_key(session_id);
        if created {
            self.open_session(session_id, None);
        }
        let params = ResumeSessionRequest::new(session_id.clone(), cwd.to_owned())
            .additional_directories((!additional_directories.is_empty()).then_some(additional_directories))
            .mcp_servers(mcp_servers)
            .replay_from(replay.then(|| ReplayFrom::Start(Box::new(ReplayFromStart::new()))));
        if self.v1() {
            if let Some(m) = self.sessions.get_mut(session_id) {
                m.v1_end_stream();
            }
            return self.send_line(|id| v1::resume_line(id, &params), Some(session_id), Flight::Resume { created });
        }
        self.send(&params, Some(session_id), Flight::Resume { created })
    }

    /// `session/prompt`. To a version 1 agent (C-V1-2) it goes out when the session is free,
    /// and the call is answered then, with an id of this client's: at once when idle, at the
    /// end of the running turn otherwise.
    pub fn prompt(&mut self, session_id: &SessionId, content: Vec<ContentBlock>) -> Result<RequestId, CallRejected> {
        content_check(&content)?;
        let v1 = self.v1();
        let mirror = self.open(session_id)?;
        if v1 {
            let (item, event) = mirror.hold(ItemMode::Prompt, content, false);
            self.session_event(session_id, event);
            let id = self.next_id();
            self.held_calls.insert((session_id.clone(), item), id.clone());
            self.drain_held(session_id);
            return Ok(id);
        }
        let (item, event) = mirror.sending(ItemMode::Prompt, content.clone());
        self.session_event(session_id, event);
        let params = PromptRequest::new(session_id.clone(), content).idempotency_key(fresh_key());
        Ok(self.send(&params, Some(session_id), Flight::Accept { item, prompt: true }))
    }

    /// `session/inject` (C-PEND-3: refused locally when the mode is not advertised). For an
    /// agent that takes no injects, this client holds the message (C-HELD-1, C-HELD-3) and
    /// answers the call itself.
    pub fn inject(&mut self, session_id: &SessionId, mode: InjectMode, content: Vec<ContentBlock>) -> Result<RequestId, CallRejected> {
        content_check(&content)?;
        let mirror = self.open(session_id)?;
        if mirror.holds_injects() {
            if mode == InjectMode::Steer && self.steering_offered() {
                return self.steer_through_extension(session_id, content);
            }
            return self.hold_inject(session_id, mode, content);
        }
        let mirror = self.open(session_id)?;
        mirror.check_inject(mode)?;
        let (item, event) = mirror.sending(mode.into(), content.clone());
        self.session_event(session_id, event);
        let params = InjectRequest::new(session_id.clone(), mode, content).idempotency_key(fresh_key());
        Ok(self.send(&params, Some(session_id), Flight::Accept { item, prompt: false }))
    }

    /// A steer as `_session/steering`, asking to be told `promptRequired` on an idle session
    /// rather than the message opening a turn this client cannot follow (C-STEERING-1).
    fn steer_through_extension(&mut self, session_id: &SessionId, content: Vec<ContentBlock>) -> Result<RequestId, CallRejected> {
        let (item, event) = self.open(session_id)?.sending(ItemMode::Steer, content.clone());
        self.session_event(session_id, event);
        let behavior = serde_json::Map::from_iter([("idleBehavior".to_owned(), serde_json::Value::from("promptRequired"))]);
        let meta = serde_json::Map::from_iter([("steering".to_owned(), serde_json::Value::Object(behavior))]);
        let params = SteeringRequest::new(session_id.clone(), content).meta(meta);
        Ok(self.send(&params, Some(session_id), Flight::Steering(item)))
    }

    /// `session/revoke_inject` of one of this client's pending items.
    pub fn revoke(&mut self, session_id: &SessionId, message_id: &MessageId) -> Result<RequestId, CallRejected> {
        if self.open(session_id)?.holds_injects() {
            return self.revoke_held(session_id, message_id);
        }
        let item = self.open(session_id)?.check_revoke(message_id)?;
        let params = RevokeInjectRequest::new(session_id.clone(), message_id.clone());
        Ok(self.send(&params, Some(session_id), Flight::Revoke(item)))
    }

    /// `session/replace_inject` (only where `pending.replace` is advertised).
    pub fn replace(
        &mut self,
        session_id: &SessionId,
        message_id: &MessageId,
        content: Vec<ContentBlock>,
    ) -> Result<RequestId, CallRejected> {
        content_check(&content)?;
        if self.open(session_id)?.holds_injects() {
            return self.replace_held(session_id, message_id, content);
        }
        let item = self.open(session_id)?.check_replace(message_id)?;
        let params = ReplaceInjectRequest::new(session_id.clone(), message_id.clone(), content.clone());
        Ok(self.send(&params, Some(session_id), Flight::Replace(item, content)))
    }

    /// `session/cancel` (a notification: nothing answers it). The session's open permission
    /// requests are answered `cancelled` right after it (C-PERM-1). Prompts held for a version 1
    /// agent's turn are dropped with it, their calls answered -32800 (C-V1-2); queued
    /// messages stay held.
    pub fn cancel(&mut self, session_id: &SessionId) {
        let params = CancelSessionNotification::new(session_id.clone());
        self.outbox.push_back(jsonrpc::notification_line(&params));
        let open: Vec<RequestId> = self.permissions.iter().filter(|(_, s)| **s == session_id.0).map(|(id, _)| id.clone()).collect();
        for id in open {
            self.settle_permission(&id);
        }
        let Some(m) = self.sessions.get_mut(session_id) else { return };
        let (dropped, events) = m.drop_held_prompts();
        for e in events {
            self.session_event(session_id, e);
        }
        self.fail_held_calls(session_id, &dropped, "the prompt was held for the running turn, which was cancelled");
    }

    /// `session/close`.
    pub fn close(&mut self, session_id: &SessionId) -> RequestId {
        let params = CloseSessionRequest::new(session_id.clone());
        self.send(&params, Some(session_id), Flight::Close)
    }

    /// `session/status`. ACP v1 has no such method: to a version 1 agent nothing is sent,
    /// and the call is answered -32601 at once (C-V1-1).
    pub fn status(&mut self, session_id: &SessionId) -> RequestId {
        if self.v1() {
            let why = "session/status is not part of ACP v1, which this agent speaks";
            let outcome = Answer::Failed(ProtocolError::local(acp_inject_wire::errors::METHOD_NOT_FOUND, why));
            return self.answer_locally(session_id, RequestKind::Status, outcome);
        }
        let params = SessionStatusRequest::new(session_id.clone());
        self.send(&params, Some(session_id), Flight::Status)
    }

    /// Answers an open `session/request_permission`. A request the client already answered
    /// `cancelled` itself (a `session/cancel`, the agent's `$/cancel_request`: C-PERM-1) takes
    /// the answer and sends nothing.
    pub fn answer_permission(&mut self, request: &RequestId, outcome: RequestPermissionOutcome) -> Result<(), CallRejected> {
        if self.permissions.remove(request).is_none() {
            if self.settled.contains(request) {
                return Ok(());
            }
            return Err(CallRejected::InvalidArguments(format!("no open permission request with id {request}")));
        }
        self.outbox.push_back(jsonrpc::result_line(request, &RequestPermissionResponse::new(outcome)));
        Ok(())
    }

    /// Answers the open permission request `id` `cancelled` on the app's behalf (C-PERM-1);
    /// false when it is not open.
    pub(super) fn settle_permission(&mut self, id: &RequestId) -> bool {
        if self.permissions.remove(id).is_none() {
            return false;
        }
        let cancelled = RequestPermissionOutcome::Cancelled(Box::new(CancelledPermissionOutcome::new()));
        self.outbox.push_back(jsonrpc::result_line(id, &RequestPermissionResponse::new(cancelled)));
        if self.settled.len() == SETTLED_REMEMBERED {
            self.settled.pop_front();
        }
        self.settled.push_back(id.clone());
        true
    }

    fn session_event(&mut self, session_id: &SessionId, event: SessionEvent) {
        self.events.push_back(Event::Session { session_id: session_id.clone(), event });
    }
}

/// A fresh idempotency key for one submission (C-IDEM-1): a random version 4 UUID, as upstream
/// suggests ("Generates a key from a random version 4 UUID"), so that no other client of the
/// session picks the same one.
pub(crate) fn fresh_key() -> acp_inject_wire::IdempotencyKey {
    acp_inject_wire::IdempotencyKey::try_from(uuid::Uuid::new_v4().to_string())
        .unwrap_or_else(|e| unreachable!("a UUID is 36 characters: {e}"))
}
