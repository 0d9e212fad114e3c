//! The agent side: sessions, their pending injects, turn state and delivery (R-… rules).
//!
//! [`Agent`] owns the sessions of one agent process. It reads client lines
//! ([`Agent::handle_line`]) and runtime events ([`Agent::runtime_event`]) and queues
//! [`Output`]s; it does no I/O, reads no clock and spawns nothing (the random part of a new
//! session's id is its one draw from the system). After each call (or each
//! batch of calls), [`Agent::drain`] commits what the batch changed to the [`Store`] and
//! returns the outputs, in order (the vectors call this an `expect`).
//!
//! ```
//! use acp_inject_core::agent::{Agent, AgentConfig, ConnId, Output};
//!
//! let mut agent = Agent::new(AgentConfig::default()).unwrap();
//! let app = ConnId::from("c1");
//! agent.handle_line(&app, r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"app","version":"1"}}}"#);
//! agent.handle_line(&app, r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/work"}}"#);
//! let outputs = agent.drain().unwrap();
//! let Output::Line { to, line } = &outputs[1] else { panic!() };
//! assert_eq!(to, &[app]);
//! // The ordinal, then 96 random bits (`policy.sequential_session_ids` leaves them out).
//! assert!(line.contains(r#""sessionId":"sess_1_"#));
//! ```

mod config;
mod hosts;
mod outgoing;
mod pending;
mod record;
mod replay;
mod requests;
mod runtime;
mod seen;
mod snapshot;
mod store;
mod turn;
mod v1;

pub mod output;

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use acp_inject_wire::framing::{Framed, LineFramer};
use acp_inject_wire::jsonrpc::{self, FrameError, Incoming};
use acp_inject_wire::{ErrorObject, ErrorReason, MessageId, RequestId, SessionId};
use serde::{Deserialize, Serialize};

pub use acp_inject_wire::PendingInject;
pub use config::{
    AgentConfig, AgentInfo, AuthSupport, ClearStyle, ConfigError, Policy, QueueDrain, RevokeReplace, SetupSupport,
    DEFAULT_LIST_PAGE_SIZE, DEFAULT_MAX_LIVE_SESSIONS, DEFAULT_MAX_PENDING, DEFAULT_REMEMBER_IDS,
};
pub use hosts::SESSION_HELD_ELSEWHERE;
pub use outgoing::cancelled_outcome;
pub use output::{HostCall, Output, RuntimeAction, SessionSetup, UserInput};
pub use pending::{Fate, Pending, PendingQueue};
pub use record::{HistoryEntry, SessionRecord};
pub use replay::replay;
pub use runtime::{BreakPoint, HostError, PermissionAsk, RuntimeEvent};
pub use seen::Seen;
pub use snapshot::{Connection, Counters, HeldPrompt, LiveSession, LiveState, OpenRequest, RestoreError, LIVE_STATE_VERSION};
pub use store::{Acquired, Change, Committed, Lanes, MemoryStore, SessionPage, Store, StoreError};
pub use turn::{Activity, Announce, NoPermissionOpen, NotRequested, Stream, Turn};
pub use v1::{V1Connection, PROTOCOL_VERSIONS};

/// A connection's id, the host's name for it (the vectors' `c1`, `o1`, …; the transport's
/// `client`): answers go back to the connection that asked, a session's lines to the
/// connections attached to it. Serialised as the bare string.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ConnId(String);

impl ConnId {
    /// The id named `name`.
    pub fn new(name: impl Into<String>) -> ConnId {
        ConnId(name.into())
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for ConnId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for ConnId {
    fn from(name: &str) -> ConnId {
        ConnId(name.to_owned())
    }
}

impl From<String> for ConnId {
    fn from(name: String) -> ConnId {
        ConnId(name)
    }
}

impl From<ConnId> for String {
    fn from(id: ConnId) -> String {
        id.0
    }
}

impl AsRef<str> for ConnId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// Hashing and ordering are the name's, so maps keyed by `ConnId` can be searched by `&str`.
impl std::borrow::Borrow<str> for ConnId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl PartialEq<str> for ConnId {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for ConnId {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

/// [`Agent::create_session`] with an id the agent already knows (live, or in its store).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("session {0} already exists")]
pub struct SessionExists(pub SessionId);

/// [`Agent::attach_to_session`] for a session that is not live.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("session {0} is not live")]
pub struct NotLive(pub SessionId);

/// The role of a connection (R-ORDER-2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConnectionRole {
    /// May prompt, inject, revoke, replace, cancel and close.
    Controller,
    /// Sees the session; its mutating requests get `not_permitted`.
    Observer,
}

/// The `_meta` key under which the agent advertises, and a client opts into, the pending-list
/// extension (`_acp-inject/pending` updates).
pub const PENDING_EXTENSION: &str = "acp-inject.dev/pending";

/// The `_meta` key under which the agent advertises the session-closed extension
/// (`_acp-inject/session_closed` updates).
pub const SESSION_CLOSED_EXTENSION: &str = "acp-inject.dev/sessionClosed";

/// The key of a `_session/steering` answer's `_meta` under which this toolkit's agent names
/// the message the steer became, so a client can follow it (R-STEERING-2).
pub const STEERING_MESSAGE_ID: &str = "acp-inject.dev/messageId";

/// One live session.
#[derive(Clone, Debug)]
struct Session {
    record: SessionRecord,
    turn: Turn,
    pending: PendingQueue,
    attached: BTreeSet<ConnId>,
    /// Prompts received during a turn, held in the queue until inserted: their answer (the
    /// insertion receipt) is owed to the asking request (R-PROMPT-2), by message id.
    held: BTreeMap<MessageId, HeldPrompt>,
    /// The session was taken over from a host that left its turn running (cut off there,
    /// where this host cannot observe it): its state is `unknown` (R-RESUME-2) until a turn
    /// starts here.
    unobserved: bool,
}

impl Session {
    /// The session's foreground state as a snapshot (R-RESUME-2, R-STATUS-1): `running` or
    /// `requires_action` during a turn, `unknown` for a turn another host left running (cut
    /// off where this host cannot observe it), otherwise an `idle` without `stopReason`.
    fn state_snapshot(&self) -> acp_inject_wire::StateUpdate {
        match self.turn {
            Turn::Idle if self.unobserved => output::unknown_state(),
            Turn::Idle => output::idle_state(),
            Turn::RequiresAction { .. } => output::requires_action_state(),
            Turn::Running { .. } | Turn::Paused { .. } => output::running_state(),
        }
    }
}

/// Building an agent on a store failed.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The configuration is refused.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The store failed to load.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The stored or given state cannot be continued from.
    #[error(transparent)]
    Restore(#[from] RestoreError),
}

/// The agent-side core of one agent process. See the module docs.
pub struct Agent {
    config: AgentConfig,
    counters: Counters,
    sessions: seen::Sessions,
    connections: BTreeMap<ConnId, Connection>,
    /// The agent's own open requests to clients.
    outgoing: outgoing::Outgoing,
    /// One line framer per connection that sent bytes ([`Agent::receive_bytes`]).
    framers: BTreeMap<ConnId, LineFramer>,
    out: VecDeque<Output>,
    store: Box<dyn Store>,
    /// What ids minted here carry after their kind (`"h1-"` on a shared store's host `h1`,
    /// else empty), so hosts sharing a store never mint the same id.
    scope: String,
    poisoned: bool,
    ignored: u64,
    /// The connections that negotiated ACP v1, translated at the edge (`v1.rs`).
    v1: BTreeMap<ConnId, V1Connection>,
    /// The host's calls not answered yet, by id (transient: not in the live state).
    calls: BTreeMap<u64, OpenCall>,
    next_call: u64,
}

/// A request a connection made of the host, waiting for [`Agent::answer_call`].
#[derive(Clone, Debug)]
struct OpenCall {
    conn: ConnId,
    request: RequestId,
    login: bool,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent").field("sessions", &self.sessions.len()).field("queued_outputs", &self.out.len()).finish()
    }
}

impl Agent {
    /// An agent keeping sessions in memory ([`MemoryStore`]).
    pub fn new(config: AgentConfig) -> Result<Agent, ConfigError> {
        config.check()?;
        Ok(Agent::build(config, Box::new(MemoryStore::new())))
    }

    /// An agent on `store`, continuing from the live state the store holds (a durable store
    /// after a restart: its sessions are live again, with no connection attached).
    pub fn with_store(config: AgentConfig, mut store: Box<dyn Store>) -> Result<Agent, OpenError> {
        config.check()?;
        let state = store.load()?;
        let mut agent = Agent::build(config, store);
        if let Some(state) = state {
            agent.adopt(state);
        }
        Ok(agent)
    }

    /// An agent continuing from a [`Agent::snapshot`], on `store`.
    pub fn restore(config: AgentConfig, snapshot: &str, store: Box<dyn Store>) -> Result<Agent, OpenError> {
        config.check()?;
        let state = LiveState::from_json(snapshot)?;
        let mut agent = Agent::build(config, store);
        agent.adopt(state);
        Ok(agent)
    }

    fn build(config: AgentConfig, store: Box<dyn Store>) -> Agent {
        let scope = store.id_scope().map(|s| format!("{s}-")).unwrap_or_default();
        Agent {
            scope,
            config,
            counters: Counters::default(),
            sessions: seen::Sessions::new(),
            connections: BTreeMap::new(),
            outgoing: outgoing::Outgoing::default(),
            framers: BTreeMap::new(),
            out: VecDeque::new(),
            store,
            poisoned: false,
            ignored: 0,
            v1: BTreeMap::new(),
            calls: BTreeMap::new(),
            next_call: 0,
        }
    }

    fn adopt(&mut self, state: LiveState) {
        self.counters = state.counters;
        self.connections = state.connections;
        self.v1 = state.v1;
        self.outgoing = outgoing::Outgoing::from_open(state.requests.clone());
        for s in state.sessions {
            // R-PERM-2: the turn waits on exactly the requests the agent still holds.
            let mut turn = s.turn;
            let open = state.requests.iter().filter(|r| r.session == s.record.session_id).count();
            turn.settle_permissions(u32::try_from(open).unwrap_or(u32::MAX));
            let session =
                Session { record: s.record, turn, pending: s.pending, attached: s.attached, held: s.held, unobserved: false };
            self.sessions.insert(session.record.session_id.clone(), session);
        }
    }

    /// The live state as data (sessions, pending injects, turns, counters, connections).
    /// History is the store's. Drain before taking it: undrained outputs are not part of it.
    pub fn live_state(&self) -> LiveState {
        LiveState {
            version: LIVE_STATE_VERSION,
            counters: self.counters,
            sessions: self
                .sessions
                .values()
                .map(|s| LiveSession {
                    record: s.record.clone(),
                    turn: s.turn,
                    pending: s.pending.clone(),
                    attached: s.attached.clone(),
                    held: s.held.clone(),
                })
                .collect(),
            connections: self.connections.clone(),
            requests: self.outgoing.open(),
            v1: self.v1.clone(),
        }
    }

    /// [`Agent::live_state`] as JSON, for [`Agent::restore`].
    pub fn snapshot(&self) -> String {
        self.live_state().to_json()
    }

    /// The configuration.
    pub fn config(&self) -> &AgentConfig {
        &self.config
    }

    /// Registers a connection with a role. Connections that send a line without being
    /// registered are controllers.
    pub fn attach(&mut self, conn: &ConnId, role: ConnectionRole) {
        self.connections.entry(conn.to_owned()).and_modify(|c| c.role = role).or_insert_with(|| Connection::new(role));
    }

    /// Registers a connection with a role, speaking for `principal` (who the host's
    /// authentication says it is): it sees the sessions that principal created and no other,
    /// and the sessions it creates are that principal's (R-TENANT-1). Set before its first
    /// line; a principal given again replaces the one before.
    pub fn attach_as(&mut self, conn: &ConnId, role: ConnectionRole, principal: Option<String>) {
        self.attach(conn, role);
        if let Some(c) = self.connections.get_mut(conn) {
            c.principal = principal;
        }
    }

    /// A connection went away: it is detached from every session, a partial line it sent is
    /// dropped, and the agent's requests only it could answer are answered `cancelled`.
    pub fn detach(&mut self, conn: &ConnId) {
        self.connections.remove(conn);
        self.framers.remove(conn);
        self.v1.remove(conn);
        // Its calls' answers would go nowhere.
        self.calls.retain(|_, c| c.conn != *conn);
        self.leave_sessions(conn);
    }

    /// Detaches `conn` from every session (it gets none of their output any more; permission
    /// requests only it could answer end `cancelled`), and unloads those nobody attends.
    pub(super) fn leave_sessions(&mut self, conn: &ConnId) {
        let mut left = Vec::new();
        for (id, s) in self.sessions.iter_mut_unnoted() {
            if s.attached.remove(conn) {
                left.push(id.clone());
            }
        }
        for id in &left {
            self.sessions.mark(id);
        }
        self.connection_gone(conn);
        for session in left {
            self.unload_if_unattended(&session);
        }
    }

    /// Answers the host call `id` ([`Output::Call`]): `Ok` with the result (for
    /// [`HostCall::Authenticate`], any value: the connection is logged in and answered `{}`),
    /// or `Err` with the JSON-RPC error the client gets. [`HostError::UnknownRequest`] for a call
    /// that is not open (answered already, a notification, or its connection went away).
    pub fn answer_call(&mut self, id: u64, outcome: Result<serde_json::Value, ErrorObject>) -> Result<(), HostError> {
        let call = self.calls.remove(&id).ok_or(HostError::UnknownRequest)?;
        let answer = match outcome {
            Ok(_) if call.login => {
                if let Some(c) = self.connections.get_mut(&call.conn) {
                    c.authenticated = true;
                }
                Ok(requests::encode(&acp_inject_wire::LoginAuthResponse::new()))
            }
            Ok(value) => Ok(serde_json::value::to_raw_value(&value).unwrap_or_else(|e| unreachable!("a JSON value encodes: {e}"))),
            Err(error) => Err(error),
        };
        self.answer(&call.conn, &call.request, answer);
        Ok(())
    }

    fn open_call(&mut self, call: OpenCall) -> u64 {
        self.next_call += 1;
        self.calls.insert(self.next_call, call);
        self.next_call
    }

    /// Whether `method` from `conn` must wait for a login (R-AUTH-3).
    fn must_log_in(&self, conn: &ConnId, method: &str) -> bool {
        use acp_inject_wire::methods as m;
        self.config.auth.required
            && ![m::INITIALIZE, m::AUTH_LOGIN, m::AUTH_LOGOUT].contains(&method)
            && !self.connections.get(conn).is_some_and(|c| c.authenticated)
    }

    /// Attaches a connection to a live session, so it receives the session's updates (done by
    /// `session/new`, `session/resume` and any session request from the connection). The
    /// connection is registered (a controller) even when the session is not live.
    pub fn attach_to_session(&mut self, conn: &ConnId, session: &SessionId) -> Result<(), NotLive> {
        if self.join(conn, session) {
            Ok(())
        } else {
            Err(NotLive(session.clone()))
        }
    }

    /// [`Agent::attach_to_session`]: `false` when the session is not live.
    fn join(&mut self, conn: &ConnId, session: &SessionId) -> bool {
        self.connections.entry(conn.to_owned()).or_insert_with(|| Connection::new(ConnectionRole::Controller));
        match self.sessions.get_mut(session) {
            Some(s) => {
                s.attached.insert(conn.to_owned());
                true
            }
            None => false,
        }
    }

    /// The connections attached to a session.
    pub fn attached(&self, session: &SessionId) -> Vec<ConnId> {
        self.attached_to(session)
    }

    fn attached_to(&self, session: &SessionId) -> Vec<ConnId> {
        self.sessions.get(session).map(|s| s.attached.iter().cloned().collect()).unwrap_or_default()
    }

    /// Creates an idle session with a chosen id (hosts that mint their own ids, and tests).
    /// Refused with [`SessionExists`] (nothing changed) when the id is live or the store
    /// already knows it.
    pub fn create_session(&mut self, id: &SessionId, cwd: &str) -> Result<(), SessionExists> {
        if self.create(id, cwd, None) {
            Ok(())
        } else {
            Err(SessionExists(id.clone()))
        }
    }

    /// [`Agent::create_session`]: `false` when the id is taken. The session is `principal`'s
    /// (R-TENANT-1).
    fn create(&mut self, id: &SessionId, cwd: &str, principal: Option<String>) -> bool {
        if self.sessions.contains_key(id) || matches!(self.store.session(id), Ok(Some(_))) {
            return false;
        }
        let ordinal = self.counters.next_session;
        self.counters.next_session += 1;
        self.record_counters();
        let record = SessionRecord {
            session_id: id.to_owned(),
            ordinal,
            cwd: cwd.to_owned(),
            additional_directories: Vec::new(),
            mcp_servers: Vec::new(),
            title: None,
            updated_at: None,
            closed: false,
            principal,
        };
        self.store.record(Change::SessionCreated(&record));
        self.sessions.insert(
            id.to_owned(),
            Session {
                record,
                turn: Turn::Idle,
                pending: PendingQueue::default(),
                attached: BTreeSet::new(),
                held: BTreeMap::new(),
                unobserved: false,
            },
        );
        true
    }

    /// Forgets a session entirely, history included (it is no longer listed or resumable).
    /// Pending injects are dropped without a `Closed` action: close the session first to get
    /// them back.
    pub fn forget_session(&mut self, id: &SessionId) {
        self.sessions.remove(id);
        self.store.record(Change::SessionForgotten(id));
    }

    /// `true` while the agent holds the session live (R-STATUS-1).
    pub fn is_live(&self, id: &SessionId) -> bool {
        self.sessions.contains_key(id)
    }

    /// The ids of the live sessions.
    pub fn session_ids(&self) -> Vec<SessionId> {
        self.sessions.ids().cloned().collect()
    }

    /// A live session's turn (R-TURN-1).
    pub fn turn(&self, session: &SessionId) -> Option<&Turn> {
        self.sessions.get(session).map(|s| &s.turn)
    }

    /// The session's pending injects in delivery order (steers, then queued, each FIFO).
    pub fn pending(&self, session: &SessionId) -> Vec<PendingInject> {
        self.pending_of(session)
    }

    fn pending_of(&self, session: &SessionId) -> Vec<PendingInject> {
        self.sessions.get(session).map(|s| s.pending.list()).unwrap_or_default()
    }

    /// A session's record (live or closed).
    pub fn session_record(&self, session: &SessionId) -> Result<Option<SessionRecord>, StoreError> {
        match self.sessions.get(session) {
            Some(s) => Ok(Some(s.record.clone())),
            None => self.store.session(session),
        }
    }

    /// The session's replayable history, folded as `session/resume` replays it (R-REPLAY-1).
    pub fn history(&self, session: &SessionId) -> Result<Vec<HistoryEntry>, StoreError> {
        self.store.history(session)
    }

    /// A fresh message id for an agent message or thought (never one the core uses for a user
    /// message). Runtimes may also pick their own ids, outside the core's `msg_N` form.
    pub fn mint_agent_message_id(&mut self) -> MessageId {
        let n = self.next_message_ordinal();
        MessageId(format!("agent_{}{n}", self.scope))
    }

    /// Shared stores ([`Store::id_scope`]): extends this host's leases on the sessions it
    /// serves. The host calls this well within the store's lease time (the tokio server does).
    /// On [`StoreError::LeaseLost`] the agent is poisoned like on a failed commit: another host
    /// serves one of its sessions now, so this process must stop serving and restart from the
    /// store, and its clients resume elsewhere.
    pub fn renew_leases(&mut self) -> Result<(), StoreError> {
        if self.poisoned {
            return Err(StoreError::Poisoned);
        }
        self.store.renew().inspect_err(|_| self.poisoned = true)
    }

    /// How often a host must call [`Agent::renew_leases`]: a quarter of the shared store's
    /// lease ([`Store::lease`]); `None` when the store is not shared.
    pub fn renew_every(&self) -> Option<std::time::Duration> {
        if self.scope.is_empty() {
            return None;
        }
        self.store.lease().map(|l| l / 4)
    }

    /// Lines that were notifications of no known method, or responses to no open request of
    /// the agent's (ignored, counted).
    pub fn ignored_lines(&self) -> u64 {
        self.ignored
    }

    /// Commits every change since the last drain to the store, then returns every queued
    /// output in order. On a store failure nothing is released, and the agent stays poisoned:
    /// its memory is ahead of the store, so the host must restart from the store.
    pub fn drain(&mut self) -> Result<Vec<Output>, StoreError> {
        if self.poisoned {
            return Err(StoreError::Poisoned);
        }
        self.sessions.take_seen();
        if let Err(e) = self.store.commit() {
            self.poisoned = true;
            return Err(e);
        }
        Ok(self.take_outputs())
    }

    /// [`Agent::drain`] for a host whose store commits several batches at once
    /// ([`Store::lanes`]): hands the batch to the store ([`Store::submit`]) and returns its
    /// outputs at once, with the lanes whose earlier commits they must wait for: the lanes it
    /// commits on and those of every session it looked at ([`Seen`]). The host releases them
    /// once `done` was told `Ok` and every earlier batch on those lanes was released; on `Err`
    /// it releases nothing more and restarts from the store.
    pub fn drain_submit(&mut self, done: Committed) -> Result<(Vec<Output>, Lanes), StoreError> {
        if self.poisoned {
            return Err(StoreError::Poisoned);
        }
        let seen = self.sessions.take_seen();
        let committing = match self.store.submit(done) {
            Ok(lanes) => lanes,
            Err(e) => {
                self.poisoned = true;
                return Err(e);
            }
        };
        Ok((self.take_outputs(), committing | self.store.lanes_of(&seen)))
    }

    /// How many lanes the store commits on ([`Store::lanes`]).
    pub fn store_lanes(&self) -> usize {
        self.store.lanes()
    }

    fn take_outputs(&mut self) -> Vec<Output> {
        let out: Vec<Output> = self.out.drain(..).collect();
        if self.v1.is_empty() {
            out
        } else {
            self.translate_for_v1(out)
        }
    }

    /// Lines for v1 connections in v1's shape (`v1.rs`); the other connections' lines as they
    /// are. Each connection's lines keep their order.
    fn translate_for_v1(&mut self, outputs: Vec<Output>) -> Vec<Output> {
        for output in &outputs {
            if let Output::Line { to, line } = output {
                for conn in to {
                    if let Some(v1) = self.v1.get_mut(conn) {
                        for entry in batch_entries(line) {
                            v1.note_receipt(&entry);
                        }
                    }
                }
            }
        }
        let mut out = Vec::with_capacity(outputs.len());
        for output in outputs {
            match output {
                Output::Line { to, line } if to.iter().any(|c| self.v1.contains_key(c)) => {
                    let (v1, v2): (Vec<ConnId>, Vec<ConnId>) = to.into_iter().partition(|c| self.v1.contains_key(c));
                    if !v2.is_empty() {
                        out.push(Output::Line { to: v2, line: line.clone() });
                    }
                    for conn in v1 {
                        let lines = self.v1.get_mut(&conn).map(|c| v1_outbound(c, &line)).unwrap_or_default();
                        out.extend(lines.into_iter().map(|line| Output::Line { to: vec![conn.clone()], line }));
                    }
                }
                other => out.push(other),
            }
        }
        out
    }

    // ----- ids -----

    fn next_message_ordinal(&mut self) -> u64 {
        let n = self.counters.next_message;
        self.counters.next_message += 1;
        self.record_counters();
        n
    }

    fn mint_user_message_id(&mut self) -> MessageId {
        let n = self.next_message_ordinal();
        MessageId(format!("msg_{}{n}", self.scope))
    }

    fn record_counters(&mut self) {
        let Counters { next_session, next_message, next_request } = self.counters;
        self.store.record(Change::Counters { next_session, next_message, next_request });
    }

    // ----- client lines -----

    /// Applies one line from a client connection.
    pub fn handle_line(&mut self, conn: &ConnId, line: &str) {
        if let Err(e) = jsonrpc::check_size(line.len(), self.config.policy.line_limit()) {
            return self.frame_error(conn, &e);
        }
        if jsonrpc::is_batch(line) {
            return self.handle_batch(conn, line);
        }
        match jsonrpc::parse_line(line) {
            Ok(msg) => self.handle_message(conn, msg),
            Err(e) => self.frame_error(conn, &e),
        }
    }

    /// Applies a JSON-RPC batch (R-WIRE-5): each entry as a line of its own, in order, an invalid
    /// entry answered -32600 on its own; the answers the batch gets while it is handled go out
    /// as one array, where the first of them would have gone; a batch of notifications gets no
    /// reply. An answer that waits on the session (a prompt held during a turn, a v1 prompt
    /// answered at its turn's end) goes out on its own line when it comes.
    fn handle_batch(&mut self, conn: &ConnId, line: &str) {
        let entries = match jsonrpc::parse_batch(line) {
            Ok(entries) => entries,
            Err(e) => return self.frame_error(conn, &e),
        };
        let start = self.out.len();
        for entry in entries {
            match jsonrpc::parse_entry(entry) {
                Ok(msg) => self.handle_message(conn, msg),
                Err(e) => self.frame_error(conn, &e),
            }
        }
        let mut answers = Vec::new();
        let mut first = None;
        let mut i = start;
        while i < self.out.len() {
            let answer =
                matches!(&self.out[i], Output::Line { to, line } if to.len() == 1 && &to[0] == conn && jsonrpc::is_response(line));
            if answer {
                first.get_or_insert(i);
                if let Some(Output::Line { line, .. }) = self.out.remove(i) {
                    answers.push(line);
                }
            } else {
                i += 1;
            }
        }
        if let Some(at) = first {
            self.out.insert(at, Output::Line { to: vec![conn.to_owned()], line: format!("[{}]", answers.join(",")) });
        }
    }

    /// Feeds bytes read from a connection's stream, in any chunking: each complete line is
    /// applied as [`Agent::handle_bytes`] applies it, an over-long line is answered as
    /// [`Agent::oversized_line`] answers it (and skipped up to its newline), and a partial line
    /// waits for the next call. Call [`Agent::receive_end`] when the stream ends.
    pub fn receive_bytes(&mut self, conn: &ConnId, bytes: &[u8]) {
        let limit = self.config.policy.line_limit();
        let mut framer = self.framers.remove(conn).unwrap_or_else(|| LineFramer::new(limit));
        framer.push(bytes, |f| self.framed(conn, f));
        self.framers.insert(conn.to_owned(), framer);
    }

    /// Applies newline-separated lines given as one text (the last one may lack its newline),
    /// framed apart from the connection's byte stream ([`Agent::receive_bytes`]): each line
    /// as [`Agent::handle_bytes`] applies it, an over-long one as [`Agent::oversized_line`].
    pub fn handle_text(&mut self, conn: &ConnId, text: &str) {
        let mut framer = LineFramer::new(self.config.policy.line_limit());
        framer.push(text.as_bytes(), |f| self.framed(conn, f));
        framer.finish(|f| self.framed(conn, f));
    }

    /// The connection's stream ended: a last line without a newline is applied. The
    /// connection stays attached until [`Agent::detach`].
    pub fn receive_end(&mut self, conn: &ConnId) {
        if let Some(mut framer) = self.framers.remove(conn) {
            framer.finish(|f| self.framed(conn, f));
        }
    }

    fn framed(&mut self, conn: &ConnId, framed: Framed<'_>) {
        match framed {
            Framed::Line(line) => self.handle_bytes(conn, line),
            Framed::Oversized { len } => self.oversized_line(conn, len),
        }
    }

    /// Like [`Agent::handle_line`] for raw bytes (invalid UTF-8 is a parse error).
    pub fn handle_bytes(&mut self, conn: &ConnId, line: &[u8]) {
        if let Err(e) = jsonrpc::check_size(line.len(), self.config.policy.line_limit()) {
            return self.frame_error(conn, &e);
        }
        match std::str::from_utf8(line) {
            Ok(text) => self.handle_line(conn, text),
            Err(e) => self.frame_error(conn, &FrameError::Parse { detail: format!("invalid UTF-8: {e}") }),
        }
    }

    /// Answers a line the framer refused as too long (-32600, id `null`).
    pub fn oversized_line(&mut self, conn: &ConnId, len: usize) {
        let limit = self.config.policy.line_limit();
        let e = FrameError::Invalid { id: None, detail: format!("line of {len} bytes exceeds the limit of {limit} bytes") };
        self.frame_error(conn, &e);
    }

    fn frame_error(&mut self, conn: &ConnId, e: &FrameError) {
        let (id, error) = match e {
            FrameError::Parse { detail } => (RequestId::Null, ErrorObject::parse_error(detail)),
            FrameError::Invalid { id, detail } => (id.clone().unwrap_or(RequestId::Null), ErrorObject::invalid_request(detail)),
        };
        self.answer(conn, &id, Err(error));
    }

    fn answer(&mut self, conn: &ConnId, id: &RequestId, answer: Result<Box<serde_json::value::RawValue>, ErrorObject>) {
        let line = match answer {
            Ok(result) => jsonrpc::raw_result_line(id, &result),
            Err(error) => jsonrpc::error_line(id, &error),
        };
        self.out.push_back(Output::Line { to: vec![conn.to_owned()], line });
    }

    /// Applies one classified message from a client connection.
    pub fn handle_message(&mut self, conn: &ConnId, msg: Incoming<'_>) {
        self.connections.entry(conn.to_owned()).or_insert_with(|| Connection::new(ConnectionRole::Controller));
        // A v1 connection's request, as the core handles it (`v1.rs`).
        let rewritten;
        let msg = match (self.v1.get_mut(conn), msg) {
            (Some(v1), Incoming::Request { id, method, params }) => match v1.inbound(&id, &method, params) {
                v1::Inbound::AsIs => Incoming::Request { id, method, params },
                v1::Inbound::Refused(error) => return self.answer(conn, &id, Err(error)),
                v1::Inbound::Rewritten { method, params } => {
                    rewritten = params;
                    Incoming::Request { id, method: method.into(), params: Some(&*rewritten) }
                }
            },
            (_, msg) => msg,
        };
        let checked = jsonrpc::check_method(&msg);
        match msg {
            Incoming::Request { id, method, params } => {
                let initialized = self.connections.get(conn).is_some_and(|c| c.initialized);
                let reply = match checked {
                    // R-INIT-2: nothing but `initialize` before a successful `initialize`.
                    Ok(()) if !initialized && method != acp_inject_wire::methods::INITIALIZE => requests::Reply::err(
                        ErrorObject::invalid_request(&format!("the connection must be initialized before `{method}`")),
                    ),
                    // R-AUTH-3: a connection that must log in gets -32000 until it did.
                    Ok(()) if self.must_log_in(conn, &method) => requests::Reply::err(ErrorObject::auth_required()),
                    Ok(()) => self.request(conn, &method, params),
                    Err(e) => requests::Reply::err(e.to_error()),
                };
                // Replay and close notices precede the answer; everything the request caused
                // afterwards follows it. A held prompt is answered when it is inserted.
                self.out.extend(reply.before);
                match (reply.held, reply.host) {
                    (Some((session, message_id)), _) => {
                        if let Some(s) = self.sessions.get_mut(&session) {
                            // A retry of a prompt held already waits for the same insertion (R-IDEM-2).
                            match s.held.get_mut(&message_id) {
                                Some(held) => {
                                    if let Some((conn, request)) = held.retry(conn.to_owned(), id) {
                                        let error = ErrorObject::new(acp_inject_wire::errors::REQUEST_CANCELLED);
                                        self.out
                                            .push_back(Output::Line { to: vec![conn], line: jsonrpc::error_line(&request, &error) });
                                    }
                                }
                                None => {
                                    s.held.insert(message_id, HeldPrompt::new(conn.to_owned(), id));
                                }
                            }
                        }
                    }
                    // The host answers it (R-AUTH-2, R-EXT-2).
                    (None, Some(call)) => {
                        let login = matches!(call, HostCall::Authenticate { .. });
                        let call_id = self.open_call(OpenCall { conn: conn.to_owned(), request: id, login });
                        self.out.push_back(Output::Call { id: call_id, connection: conn.to_owned(), call });
                    }
                    (None, None) => self.answer(conn, &id, reply.answer),
                }
                self.out.extend(reply.after);
            }
            // R-INIT-2, R-AUTH-3: a notification counts only from a connection that may send
            // requests (a `session/cancel` attaches its sender to the session).
            Incoming::Notification { method, params }
                if checked.is_ok()
                    && self.connections.get(conn).is_some_and(|c| c.initialized)
                    && !self.must_log_in(conn, &method) =>
            {
                self.notification(conn, &method, params)
            }
            // A request method sent without an id (the schema rejects it), or a notification from
            // a connection not initialized or not logged in: nothing to answer.
            Incoming::Notification { .. } => self.ignored += 1,
            // An answer to one of the core's own requests, or to none (ignored).
            Incoming::Response { id, outcome } => self.response(conn, &id, outcome),
        }
    }

    // ----- shared helpers -----

    fn role(&self, conn: &ConnId) -> ConnectionRole {
        self.connections.get(conn).map_or(ConnectionRole::Controller, |c| c.role)
    }

    fn not_observer(&self, conn: &ConnId, message_id: Option<&MessageId>) -> Result<(), ErrorObject> {
        match self.role(conn) {
            ConnectionRole::Observer => Err(ErrorObject::reason(ErrorReason::NotPermitted, message_id)),
            ConnectionRole::Controller => Ok(()),
        }
    }

    /// The principal that created a live session (R-TENANT-1): `None` when it is not live,
    /// `Some(None)` when it was created without one.
    pub fn principal_of(&self, session: &SessionId) -> Option<Option<&str>> {
        self.sessions.get(session).map(|s| s.record.principal.as_deref())
    }

    /// The principal `conn` speaks for (R-TENANT-1).
    fn principal(&self, conn: &ConnId) -> Option<&str> {
        self.connections.get(conn).and_then(|c| c.principal.as_deref())
    }

    /// R-TENANT-1: `session_not_found` when `session` belongs to a principal other than the
    /// one `conn` speaks for, exactly as for a session the agent does not know; `Ok` for its
    /// own, and for one nobody has (the method answers as for it).
    fn owned(&self, conn: &ConnId, session: &SessionId, message_id: Option<&MessageId>) -> Result<(), ErrorObject> {
        let owner = match self.sessions.get(session) {
            Some(s) => s.record.principal.clone(),
            None => match self.store.session(session) {
                Ok(Some(record)) => record.principal,
                Ok(None) => return Ok(()),
                Err(e) => return Err(ErrorObject::with_detail(acp_inject_wire::errors::INTERNAL_ERROR, &e.to_string())),
            },
        };
        if owner.as_deref() == self.principal(conn) {
            Ok(())
        } else {
            Err(ErrorObject::session_not_found(session, message_id))
        }
    }

    /// R-LIMIT-1: `too_many_sessions` when the agent holds as many live sessions as its policy
    /// allows.
    fn room_for_a_session(&self) -> Result<(), ErrorObject> {
        if u64::try_from(self.sessions.len()).unwrap_or(u64::MAX) >= self.config.policy.max_live_sessions {
            Err(ErrorObject::reason(ErrorReason::TooManySessions, None))
        } else {
            Ok(())
        }
    }

    /// R-LIMIT-1: `too_many_pending` when a message that would wait finds the session holding
    /// as many waiting messages as the policy allows.
    fn room_to_wait(&self, session: &SessionId) -> Result<(), ErrorObject> {
        let waiting = self.sessions.get(session).map_or(0, |s| s.pending.len());
        if u64::try_from(waiting).unwrap_or(u64::MAX) >= self.config.policy.max_pending {
            Err(ErrorObject::reason(ErrorReason::TooManyPending, None))
        } else {
            Ok(())
        }
    }

    /// The live session, or `session_not_found`.
    fn live_session(&self, session: &SessionId, message_id: Option<&MessageId>) -> Result<&Session, ErrorObject> {
        self.sessions.get(session).ok_or_else(|| ErrorObject::session_not_found(session, message_id))
    }

    /// The live session, mutably, or `session_not_found`.
    fn live_session_mut(&mut self, session: &SessionId) -> Result<&mut Session, ErrorObject> {
        self.sessions.get_mut(session).ok_or_else(|| ErrorObject::session_not_found(session, None))
    }

    /// A notification for every connection attached to the session.
    fn broadcast(&self, session: &SessionId, update: acp_inject_wire::SessionUpdate) -> Output {
        Output::Line { to: self.attached_to(session), line: output::update_line(session, update) }
    }

    /// The pending list for attached connections that opted in, when any did.
    fn pending_notice(&self, session: &SessionId) -> Option<Output> {
        let s = self.sessions.get(session)?;
        let to: Vec<ConnId> =
            s.attached.iter().filter(|c| self.connections.get(*c).is_some_and(|c| c.pending_updates)).cloned().collect();
        if to.is_empty() {
            return None;
        }
        Some(Output::Line { to, line: output::update_line(session, output::pending_update(s.pending.list())) })
    }
}

#[allow(dead_code)]
fn _assert_send() {
    fn is<T: Send>() {}
    is::<Agent>();
}

/// The messages of a line: the entries of a batch of answers ([`Agent::handle_batch`]), else
/// the line itself.
fn batch_entries(line: &str) -> Vec<String> {
    if jsonrpc::is_batch(line) {
        if let Ok(entries) = jsonrpc::parse_batch(line) {
            return entries.into_iter().map(|e| e.get().to_owned()).collect();
        }
    }
    vec![line.to_owned()]
}

/// A line for a v1 connection in v1's shape; a batch of answers entry by entry, the answers
/// still one array (a v1 prompt's receipt is kept back: it is answered at its turn's end).
fn v1_outbound(conn: &mut V1Connection, line: &str) -> Vec<String> {
    if !jsonrpc::is_batch(line) {
        return conn.outbound(line);
    }
    let mut answers = Vec::new();
    let mut others = Vec::new();
    for entry in batch_entries(line) {
        for translated in conn.outbound(&entry) {
            if jsonrpc::is_response(&translated) {
                answers.push(translated);
            } else {
                others.push(translated);
            }
        }
    }
    if !answers.is_empty() {
        others.insert(0, format!("[{}]", answers.join(",")));
    }
    others
}
