//! Client requests and notifications. Each request handler returns a [`Reply`]: what precedes
//! the answer (a replay, a close notice), the answer, and what it caused afterwards, so output
//! order holds by construction.
//!
//! Error precedence when several apply: malformed params (-32602) → unknown session →
//! capability (method not advertised, mode, replace) → permission (`not_permitted`) →
//! message or turn state.

use acp_inject_wire::jsonrpc;
use acp_inject_wire::methods as m;
use acp_inject_wire::{
    AgentCapabilities, CancelRequestNotification, CancelSessionNotification, CloseSessionRequest, CloseSessionResponse, ContentBlock,
    ErrorObject, ErrorReason, Implementation, InitializeRequest, InitializeResponse, InjectMode, InjectRequest, InjectResponse,
    ListSessionsRequest, ListSessionsResponse, McpCapabilities, Method, NewSessionRequest, NewSessionResponse, PromptRequest,
    PromptResponse, ProtocolVersion, ReplaceInjectRequest, ReplaceInjectResponse, ReplayFrom, ResumeSessionRequest,
    ResumeSessionResponse, RevokeInjectRequest, RevokeInjectResponse, SessionAdditionalDirectoriesCapabilities, SessionCapabilities,
    SessionId, SessionInfo, SessionStatus, SessionStatusCapabilities, SessionStatusRequest, SessionStatusResponse, SteeringOutcome,
    SteeringRequest, SteeringResponse,
};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::output::{self, HostCall, Output, RuntimeAction, SessionSetup, UserInput};
use super::pending::Pending;
use super::record::SessionRecord;
use super::store::Change;
use super::{Agent, ConnId, ConnectionRole, Session, Turn, PENDING_EXTENSION, SESSION_CLOSED_EXTENSION, STEERING_MESSAGE_ID};

/// What a request produced, in the order it goes out.
pub(super) struct Reply {
    /// Sent before the answer (replay, close notices).
    pub before: Vec<Output>,
    /// The encoded result, or the error.
    pub answer: Result<Box<RawValue>, ErrorObject>,
    /// Caused by the request, sent after the answer.
    pub after: Vec<Output>,
    /// A held prompt (R-PROMPT-2): no answer now; the receipt for this message is owed to
    /// the request, and `answer` is not sent.
    pub held: Option<(SessionId, acp_inject_wire::MessageId)>,
    /// A call for the host (R-AUTH-2, R-EXT-2): no answer now; the host's answer goes to the
    /// request ([`super::Agent::answer_call`]), and `answer` is not sent.
    pub host: Option<HostCall>,
}

impl Reply {
    pub(super) fn err(error: ErrorObject) -> Reply {
        Reply { before: Vec::new(), answer: Err(error), after: Vec::new(), held: None, host: None }
    }

    fn ok<R: Method + Serialize>(result: &R) -> Reply {
        Reply { before: Vec::new(), answer: Ok(encode(result)), after: Vec::new(), held: None, host: None }
    }

    fn then(mut self, after: Vec<Output>) -> Reply {
        self.after = after;
        self
    }

    fn preceded_by(mut self, before: Vec<Output>) -> Reply {
        self.before = before;
        self
    }
}

pub(super) fn encode<R: Method + Serialize>(result: &R) -> Box<RawValue> {
    serde_json::value::to_raw_value(result).unwrap_or_else(|e| unreachable!("results always serialise: {e}"))
}

fn decode<T: DeserializeOwned>(params: Option<&RawValue>) -> Result<T, ErrorObject> {
    jsonrpc::decode_params(params).map_err(|e| ErrorObject::invalid_params(&e.to_string()))
}

/// Absolute on any platform a client may run on (`/…`, `C:\…`, `\\server\…`).
fn is_absolute(path: &str) -> bool {
    let b = path.as_bytes();
    path.starts_with('/')
        || path.starts_with("\\\\")
        || (b.len() > 2 && b[0].is_ascii_alphabetic() && b[1] == b':' && (b[2] == b'\\' || b[2] == b'/'))
}

fn absolute(member: &str, path: &str) -> Result<(), ErrorObject> {
    if is_absolute(path) {
        Ok(())
    } else {
        Err(ErrorObject::invalid_params(&format!("at `{member}`: {path:?} is not an absolute path")))
    }
}

/// `session/list` cursors: opaque to clients, the ordinal below which the next page starts.
fn parse_cursor(cursor: &str) -> Result<u64, ErrorObject> {
    cursor
        .strip_prefix("before-")
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| ErrorObject::invalid_params("at `cursor`: not a cursor this agent writes"))
}

macro_rules! tri {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(e) => return Reply::err(e),
        }
    };
}

impl Agent {
    pub(super) fn request(&mut self, conn: &ConnId, method: &str, params: Option<&RawValue>) -> Reply {
        match method {
            m::INITIALIZE => self.initialize(conn, params),
            m::SESSION_NEW => self.new_session(conn, params),
            m::SESSION_LIST => self.list_sessions(conn, params),
            m::SESSION_RESUME => self.resume(conn, params),
            m::SESSION_PROMPT => self.prompt(conn, params),
            m::SESSION_INJECT => self.inject(conn, params),
            m::SESSION_REVOKE_INJECT => self.revoke(conn, params),
            m::SESSION_REPLACE_INJECT => self.replace(conn, params),
            m::SESSION_STEERING if self.offers_steering() => self.steering(conn, params),
            m::AUTH_LOGIN if !self.config.auth.methods.is_empty() => self.login(params),
            m::AUTH_LOGOUT if !self.config.auth.methods.is_empty() => self.logout(conn),
            // R-EXT-2: the extension methods the host serves go to it.
            _ if self.config.extensions.iter().any(|e| e == method) => {
                let params = params.and_then(|p| serde_json::from_str(p.get()).ok());
                Reply {
                    host: Some(HostCall::Extension { method: method.to_owned(), params }),
                    ..Reply::err(ErrorObject::method_not_found())
                }
            }
            m::SESSION_CLOSE => self.close_request(conn, params),
            m::SESSION_STATUS => self.status(conn, params),
            // Extension methods (`_…`) and anything this agent does not serve.
            _ => Reply::err(ErrorObject::method_not_found()),
        }
    }

    pub(super) fn notification(&mut self, conn: &ConnId, method: &str, params: Option<&RawValue>) {
        match method {
            m::SESSION_CANCEL => {
                let Ok(p) = decode::<CancelSessionNotification>(params) else { return };
                if self.role(conn) == ConnectionRole::Observer || self.owned(conn, &p.session_id, None).is_err() {
                    return;
                }
                self.join(conn, &p.session_id);
                self.cancel(&p.session_id);
            }
            // R-CANCELREQ-1: the core answers every request at once, but a held prompt (R-PROMPT-2),
            // which leaves the queue and is answered -32800.
            m::CANCEL_REQUEST => {
                let Ok(p) = decode::<CancelRequestNotification>(params) else { return };
                self.cancel_held(conn, &p.request_id);
            }
            // R-EXT-2: an extension notification the host serves goes to it.
            _ if self.config.extensions.iter().any(|e| e == method) => {
                let params = params.and_then(|p| serde_json::from_str(p.get()).ok());
                self.next_call += 1;
                let call = HostCall::ExtensionNotification { method: method.to_owned(), params };
                self.out.push_back(Output::Call { id: self.next_call, connection: conn.to_owned(), call });
            }
            _ => self.ignored += 1,
        }
    }

    fn initialize(&mut self, conn: &ConnId, params: Option<&RawValue>) -> Reply {
        // R-INIT-1: the version first, so a client of another version learns that, not which
        // member its params lack.
        let requested = params.and_then(|p| acp_inject_wire::errors::protocol_version_of(p.get()));
        let supported = super::PROTOCOL_VERSIONS;
        let answered = requested.and_then(|r| supported.iter().copied().filter(|v| u64::from(*v) <= r).max());
        if let (Some(requested), None) = (requested, answered) {
            return Reply::err(ErrorObject::unsupported_protocol_version(u16::try_from(requested).unwrap_or(u16::MAX), &supported));
        }
        // R-V1-1: a v1 client gets a v1 agent; the connection is translated from now on.
        if answered == Some(1) {
            if let Some(c) = self.connections.get_mut(conn) {
                c.initialized = true;
            }
            self.v1.insert(conn.to_owned(), super::V1Connection::default());
            let answer = Ok(super::v1::initialize_result(&self.config, self.offers_steering()));
            return Reply { before: Vec::new(), answer, after: Vec::new(), held: None, host: None };
        }
        self.v1.remove(conn);
        let p: InitializeRequest = tri!(decode(params));
        let opted_in = p.capabilities.and_then(|c| c.meta).is_some_and(|meta| meta.contains_key(PENDING_EXTENSION));
        if let Some(c) = self.connections.get_mut(conn) {
            c.pending_updates = opted_in;
            c.initialized = true;
        }
        let setup = self.config.setup;
        let mut extensions = Map::new();
        extensions.insert(PENDING_EXTENSION.to_owned(), Value::Object(Map::new()));
        extensions.insert(SESSION_CLOSED_EXTENSION.to_owned(), Value::Object(Map::new()));
        let empty = || Some(Map::new());
        Reply::ok(
            &InitializeResponse::new(
                ProtocolVersion(answered.unwrap_or(supported[supported.len() - 1])),
                Implementation::new(self.config.info.name.clone(), self.config.info.version.clone()),
            )
            .capabilities(
                AgentCapabilities::new().session(
                    SessionCapabilities::new()
                        .mcp((setup.mcp_stdio || setup.mcp_http).then(|| {
                            McpCapabilities::new()
                                .stdio(setup.mcp_stdio.then(empty).flatten())
                                .http(setup.mcp_http.then(empty).flatten())
                        }))
                        .additional_directories(
                            setup.additional_directories.then_some(SessionAdditionalDirectoriesCapabilities::new()),
                        )
                        .inject(self.config.inject.clone())
                        .status(SessionStatusCapabilities::new())
                        .meta(extensions),
                ),
            )
            .auth_methods((!self.config.auth.methods.is_empty()).then(|| self.config.auth.methods.clone()))
            .meta(self.offers_steering().then(steering_advertisement)),
        )
    }

    /// `auth/login` (R-AUTH-2): one of the advertised `agent` methods goes to the host, which
    /// decides; anything else is -32602.
    fn login(&mut self, params: Option<&RawValue>) -> Reply {
        let p: acp_inject_wire::LoginAuthRequest = tri!(decode(params));
        let advertised = self.config.auth.methods.iter().find_map(|m| match m {
            acp_inject_wire::AuthMethod::Agent(a) if a.method_id == p.method_id => Some(true),
            acp_inject_wire::AuthMethod::Terminal(t) if t.method_id == p.method_id => Some(false),
            _ => None,
        });
        match advertised {
            Some(true) => {
                Reply { host: Some(HostCall::Authenticate { method_id: p.method_id }), ..Reply::err(ErrorObject::method_not_found()) }
            }
            Some(false) => Reply::err(ErrorObject::invalid_params(&format!(
                "at `methodId`: {:?} is a terminal method: the client runs the agent in a terminal for it, it is not sent",
                p.method_id
            ))),
            None => {
                Reply::err(ErrorObject::invalid_params(&format!("at `methodId`: {:?} is not an advertised auth method", p.method_id)))
            }
        }
    }

    /// `auth/logout` (R-AUTH-2): the connection is logged out; a login of its still being
    /// checked is refused (it does not log the connection in after its logout); on an agent
    /// that requires authentication it leaves its sessions.
    fn logout(&mut self, conn: &ConnId) -> Reply {
        if let Some(c) = self.connections.get_mut(conn) {
            c.authenticated = false;
        }
        let logins: Vec<u64> = self.calls.iter().filter(|(_, c)| c.conn == *conn && c.login).map(|(id, _)| *id).collect();
        for id in logins {
            let error = ErrorObject::with_detail(
                acp_inject_wire::errors::AUTH_REQUIRED,
                "the connection logged out while the login was checked",
            );
            let _ = self.answer_call(id, Err(error));
        }
        if self.config.auth.required {
            self.leave_sessions(conn);
        }
        Reply::ok(&acp_inject_wire::LogoutAuthResponse::new())
    }

    /// The agent takes steers (`session.inject` lists `steer`), so it serves the steering
    /// extension too (R-STEERING-1).
    pub(super) fn offers_steering(&self) -> bool {
        self.config.inject.as_ref().is_some_and(|caps| caps.modes.contains(&InjectMode::Steer))
    }

    /// `_session/steering` (R-STEERING-2 … R-STEERING-4): a steer for the running turn through
    /// the extension shipping clients use; on an idle session the message opens a turn, or,
    /// when the request asks for `promptRequired`, nothing happens and the client is told so.
    fn steering(&mut self, conn: &ConnId, params: Option<&RawValue>) -> Reply {
        let p: SteeringRequest = tri!(decode(params));
        let prompt_required = tri!(idle_behavior(p.meta.as_ref()));
        let session = p.session_id;
        tri!(self.owned(conn, &session, None));
        let in_progress = tri!(self.live_session(&session, None)).turn.in_progress();
        tri!(self.not_observer(conn, None));
        if !in_progress && prompt_required {
            return Reply::ok(&SteeringResponse::new(SteeringOutcome::PromptRequired).reason("noRunningTurn".to_owned()));
        }
        self.join(conn, &session);
        let mode = if in_progress { InjectMode::Steer } else { InjectMode::Queue };
        let (id, after) = self.accept(conn, &session, mode, p.prompt);
        // A v1 client shows what it steered itself; its echo would show it twice (R-V1-2).
        if let Some(v1) = self.v1.get_mut(conn) {
            v1.own_message(&id);
        }
        let outcome = if in_progress { SteeringOutcome::Injected } else { SteeringOutcome::StartedNewTurn };
        let mut meta = Map::new();
        meta.insert(STEERING_MESSAGE_ID.to_owned(), Value::from(id.0));
        Reply::ok(&SteeringResponse::new(outcome).meta(meta)).then(after)
    }

    fn check_directories(&self, dirs: &[String]) -> Result<(), ErrorObject> {
        if dirs.is_empty() {
            return Ok(());
        }
        if !self.config.setup.additional_directories {
            return Err(ErrorObject::invalid_params(
                "at `additionalDirectories`: the agent does not advertise `session.additionalDirectories`",
            ));
        }
        dirs.iter().enumerate().try_for_each(|(i, d)| absolute(&format!("additionalDirectories[{i}]"), d))
    }

    fn new_session(&mut self, conn: &ConnId, params: Option<&RawValue>) -> Reply {
        let p: NewSessionRequest = tri!(decode(params));
        tri!(absolute("cwd", &p.cwd));
        let dirs = p.additional_directories.unwrap_or_default();
        tri!(self.check_directories(&dirs));
        tri!(self.room_for_a_session());
        // The ordinal keeps ids unique (across hosts too); the random part keeps them from being
        // guessed.
        let unguessable = if self.config.policy.sequential_session_ids {
            String::new()
        } else {
            // 96 random bits: a version 4 UUID's bytes but those of its version and variant.
            let uuid = uuid::Uuid::new_v4();
            let b = uuid.as_bytes();
            let random = [b[0], b[1], b[2], b[3], b[4], b[5], b[7], b[9], b[10], b[11], b[12], b[13]];
            format!("_{}", random.iter().map(|b| format!("{b:02x}")).collect::<String>())
        };
        let id = loop {
            let id = SessionId(format!("sess_{}{}{unguessable}", self.scope, self.counters.next_session));
            if !self.sessions.contains_key(&id) && !matches!(self.store.session(&id), Ok(Some(_))) {
                break id;
            }
            self.counters.next_session += 1;
        };
        let principal = self.principal(conn).map(str::to_owned);
        self.create(&id, &p.cwd, principal);
        let mcp_servers = p.mcp_servers.unwrap_or_default();
        let setup = SessionSetup { cwd: p.cwd, additional_directories: dirs.clone(), mcp_servers: mcp_servers.clone() };
        if let Some(s) = self.sessions.get_mut(&id) {
            s.record.additional_directories = dirs;
            s.record.mcp_servers = mcp_servers;
            self.store.record(Change::SessionUpdated(&s.record));
        }
        self.join(conn, &id);
        Reply::ok(&NewSessionResponse::new(id.clone())).then(vec![Output::action(&id, RuntimeAction::SessionOpened(setup))])
    }

    fn list_sessions(&mut self, conn: &ConnId, params: Option<&RawValue>) -> Reply {
        let p: ListSessionsRequest = tri!(decode(params));
        if let Some(cwd) = &p.cwd {
            tri!(absolute("cwd", cwd));
        }
        let before = match &p.cursor {
            Some(c) => Some(tri!(parse_cursor(c))),
            None => None,
        };
        // R-TENANT-1: the principal's own sessions only.
        let principal = self.principal(conn).map(str::to_owned);
        let page =
            tri!(self.store.list(p.cwd.as_deref(), principal.as_deref(), before, self.config.policy.page_size()).map_err(internal));
        let next_cursor = page.more.then(|| page.sessions.last().map(|r| format!("before-{}", r.ordinal))).flatten();
        let sessions: Vec<_> = page
            .sessions
            .into_iter()
            .map(|r| {
                SessionInfo::new(r.session_id, r.cwd)
                    .additional_directories((!r.additional_directories.is_empty()).then_some(r.additional_directories))
                    .title(r.title)
                    .updated_at(r.updated_at)
            })
            .collect();
        Reply::ok(&ListSessionsResponse::new(sessions).next_cursor(next_cursor))
    }

    /// A resume refused after [`Agent::take_over`]: what the previous holder left pending still
    /// opens its turn here; otherwise the session is let go again.
    fn refuse_taken(&mut self, session: &SessionId, interrupted: bool, error: ErrorObject) -> Reply {
        let after = if interrupted { self.continue_interrupted(session) } else { Vec::new() };
        // Nothing pending opened a turn: nobody needs the session here.
        self.unload_if_unattended(session);
        self.let_go_if_absent(session);
        Reply::err(error).then(after)
    }

    /// `session/resume`: a live session, a closed one (reopened), or one from an earlier
    /// process (live again since the store reloaded it). With `replayFrom: start` the history
    /// goes to this connection before the answer, followed by the turn's state when one is in
    /// progress and the pending list when the connection opted in.
    fn resume(&mut self, conn: &ConnId, params: Option<&RawValue>) -> Reply {
        let p: ResumeSessionRequest = tri!(decode(params));
        let session = p.session_id.clone();
        let replay = match &p.replay_from {
            None => false,
            Some(ReplayFrom::Start(_)) => true,
            Some(ReplayFrom::Other(other)) => {
                let kind = other.tag("type").unwrap_or("?");
                return Reply::err(ErrorObject::invalid_params(&format!("at `replayFrom.type`: unknown replay cursor {kind:?}")));
            }
        };
        tri!(self.owned(conn, &session, None));
        // R-LIMIT-1: a resume that would load a session needs room for it (one the agent does
        // not know is still not found).
        if !self.sessions.contains_key(&session) {
            if let Err(full) = self.room_for_a_session() {
                return match tri!(self.store.session(&session).map_err(internal)) {
                    Some(_) => Reply::err(full),
                    None => Reply::err(ErrorObject::session_not_found(&session, None)),
                };
            }
        }
        let interrupted = tri!(self.take_over(&session));
        let record = match self.sessions.get(&session) {
            Some(s) => s.record.clone(),
            None => match tri!(self.store.session(&session).map_err(internal)) {
                Some(r) => r,
                None => return Reply::err(ErrorObject::session_not_found(&session, None)),
            },
        };
        if record.cwd != p.cwd {
            let e =
                ErrorObject::invalid_params(&format!("at `cwd`: {:?} is not the session's working directory {:?}", p.cwd, record.cwd));
            return self.refuse_taken(&session, interrupted, e);
        }
        let dirs = p.additional_directories.unwrap_or_default();
        let history = self.check_directories(&dirs).and_then(|()| {
            if replay {
                self.store.history(&session).map_err(internal)
            } else {
                Ok(Vec::new())
            }
        });
        let history = match history {
            Ok(h) => h,
            Err(e) => return self.refuse_taken(&session, interrupted, e),
        };
        let mcp_servers = p.mcp_servers.unwrap_or_default();
        let s = self.sessions.entry(session.clone()).or_insert_with(|| Session {
            record: SessionRecord { closed: false, ..record },
            turn: Turn::Idle,
            pending: Default::default(),
            attached: Default::default(),
            held: Default::default(),
            unobserved: false,
        });
        s.record.closed = false;
        s.record.additional_directories = dirs.clone();
        s.record.mcp_servers = mcp_servers.clone();
        s.attached.insert(conn.to_owned());
        let state = s.state_snapshot();
        self.store.record(Change::SessionUpdated(&s.record));

        let to = vec![conn.to_owned()];
        let line = |update| Output::Line { to: to.clone(), line: output::update_line(&session, update) };
        let mut before: Vec<Output> = super::replay(&history).into_iter().map(line).collect();
        // R-RESUME-3: a requested replay ends with `replay_complete`, even an empty one, and
        // before anything live (the turn's state below).
        if replay {
            before.push(line(acp_inject_wire::ReplayComplete::new().into()));
        }
        // R-RESUME-2: the current state after any replay and before the answer, idle included
        // (a snapshot, not a turn end: an idle one carries no stopReason).
        before.push(line(state.into()));
        before.extend(self.resend_open_requests(&session, conn));
        if self.connections.get(conn).is_some_and(|c| c.pending_updates) {
            before.push(line(output::pending_update(self.pending_of(&session))));
        }
        let setup = SessionSetup { cwd: p.cwd, additional_directories: dirs, mcp_servers };
        let mut after = vec![Output::action(&session, RuntimeAction::SessionResumed(setup))];
        if interrupted {
            after.extend(self.continue_interrupted(&session));
        }
        Reply { before, answer: Ok(encode(&ResumeSessionResponse::new())), after, held: None, host: None }
    }

    /// `session/prompt` (R-PROMPT-1, R-PROMPT-2): inserted at once on an idle session (the
    /// answer is the insertion receipt); refused with `turn_in_progress` during a turn.
    fn prompt(&mut self, conn: &ConnId, params: Option<&RawValue>) -> Reply {
        let p: PromptRequest = tri!(decode(params));
        let session = p.session_id;
        // R-IDEM-3: a key that is present is valid (1 to 255 characters), or decoding failed.
        let key = p.idempotency_key.as_deref().map(String::as_str);
        tri!(self.owned(conn, &session, None));
        let in_progress = tri!(self.live_session(&session, None)).turn.in_progress();
        tri!(self.not_observer(conn, None));
        self.join(conn, &session);
        if let Some(original) = tri!(self.submitted_with(&session, key)) {
            return self.retried_prompt(&session, original);
        }
        if in_progress {
            tri!(self.room_to_wait(&session));
        }
        let (id, after) = self.accept(conn, &session, InjectMode::Queue, p.prompt);
        self.record_key(&session, key, &id);
        let reply = Reply::ok(&PromptResponse::new(id.clone())).then(after);
        // R-PROMPT-2: during a turn the prompt is held in the queue; its answer, the insertion
        // receipt, goes out when its user_message does.
        if in_progress {
            return Reply { held: Some((session, id)), ..reply };
        }
        reply
    }

    /// `session/inject` (R-QUEUE-*, R-STEER-*).
    fn inject(&mut self, conn: &ConnId, params: Option<&RawValue>) -> Reply {
        let p: InjectRequest = tri!(decode(params));
        // R-IDEM-3: a key that is present is valid (1 to 255 characters), or decoding failed.
        let key = p.idempotency_key.as_deref().map(String::as_str);
        let session = p.session_id;
        tri!(self.owned(conn, &session, None));
        let in_progress = tri!(self.live_session(&session, None)).turn.in_progress();
        let Some(caps) = &self.config.inject else { return Reply::err(ErrorObject::method_not_found()) };
        if !caps.modes.contains(&p.mode) {
            return Reply::err(ErrorObject::reason(ErrorReason::ModeNotSupported, None));
        }
        tri!(self.not_observer(conn, None));
        // R-IDEM-2: a retry is answered with the original id whatever became of it since, so
        // it is looked up before the checks that depend on the turn (a steer retried after its
        // turn ended is not refused `no_running_turn`).
        if let Some(original) = tri!(self.submitted_with(&session, key)) {
            self.join(conn, &session);
            return Reply::ok(&InjectResponse::new(original));
        }
        if p.mode == InjectMode::Steer && !in_progress {
            return Reply::err(ErrorObject::reason(ErrorReason::NoRunningTurn, None));
        }
        if in_progress {
            tri!(self.room_to_wait(&session));
        }
        self.join(conn, &session);
        let (id, after) = self.accept(conn, &session, p.mode, p.content);
        self.record_key(&session, key, &id);
        Reply::ok(&InjectResponse::new(id)).then(after)
    }

    /// R-IDEM-1: the message an earlier prompt or inject with this idempotency key submitted
    /// to the session, if one did (the store knows keys across connections, restarts and, on a
    /// shared store, hosts).
    fn submitted_with(&self, session: &SessionId, key: Option<&str>) -> Result<Option<acp_inject_wire::MessageId>, ErrorObject> {
        match key {
            Some(key) => self.store.message_for_key(session, key).map_err(internal),
            None => Ok(None),
        }
    }

    /// R-IDEM-1: from now on `key` names `message_id` in the session.
    fn record_key(&mut self, session: &SessionId, key: Option<&str>, message_id: &acp_inject_wire::MessageId) {
        if let Some(key) = key {
            self.store.record(Change::KeyRecorded { session, key, message_id });
        }
    }

    /// R-IDEM-2: a retried `session/prompt` inserts nothing and is answered as its first
    /// attempt is: held while its message waits in the queue (then answered with the first
    /// attempt), `-32800` when the message was withdrawn before insertion (revoked, cancelled,
    /// or dropped by a close), and its receipt once it was inserted.
    fn retried_prompt(&mut self, session: &SessionId, original: acp_inject_wire::MessageId) -> Reply {
        use super::pending::Fate;
        let fate = match self.sessions.get(session) {
            Some(s) if s.pending.get(&original).is_some() => {
                return Reply { held: Some((session.clone(), original.clone())), ..Reply::ok(&PromptResponse::new(original)) };
            }
            Some(s) => s.pending.fate(&original),
            None => None,
        };
        let inserted = match fate {
            Some(Fate::Delivered) => true,
            Some(Fate::Revoked) => false,
            // Beyond the remembered ids (or dropped by a close): the history says.
            None => {
                let history = tri!(self.store.history(session).map_err(internal));
                history.iter().any(|e| matches!(e, super::record::HistoryEntry::User { message_id, .. } if *message_id == original))
            }
        };
        if inserted {
            Reply::ok(&PromptResponse::new(original))
        } else {
            Reply::err(ErrorObject::new(acp_inject_wire::errors::REQUEST_CANCELLED))
        }
    }

    /// Accepts a prompt or inject: idle → a turn starts with it (R-PROMPT-1, R-QUEUE-2);
    /// in progress → pending in its mode's queue (R-QUEUE-1, R-STEER-1). Returns the minted id
    /// and what follows the answer.
    fn accept(
        &mut self,
        conn: &ConnId,
        session: &SessionId,
        mode: InjectMode,
        content: Vec<ContentBlock>,
    ) -> (acp_inject_wire::MessageId, Vec<Output>) {
        let id = self.mint_user_message_id();
        let interrupts = self.config.interrupts_streams();
        let Some(s) = self.sessions.get_mut(session) else { return (id, Vec::new()) };
        if !s.turn.in_progress() {
            let input = UserInput { message_id: id.clone(), content };
            let after = self.start_turn(session, vec![(input, conn.to_owned())]);
            return (id, after);
        }
        let pending = Pending { message_id: id.clone(), content, owner: conn.to_owned() };
        self.store.record(Change::InjectAccepted { session, mode, pending: &pending });
        s.pending.push(mode, pending);
        let mut after = Vec::new();
        // R-STEER-3: under `interrupt`, a steer accepted mid stream asks once to cut it.
        if mode == InjectMode::Steer && interrupts && s.turn.request_interrupt().is_ok() {
            self.store.record(Change::Turn { session, turn: &s.turn });
            after.push(Output::action(session, RuntimeAction::InterruptStream));
        }
        after.extend(self.pending_notice(session));
        (id, after)
    }

    /// `$/cancel_request` for a held prompt of `conn` (R-PROMPT-2, R-CANCELREQ-1): it leaves the
    /// queue (remembered as revoked) and its request is answered `-32800`. Any other id is
    /// ignored: every other request was answered when it arrived.
    fn cancel_held(&mut self, conn: &ConnId, request: &acp_inject_wire::RequestId) {
        let found = self.sessions.iter_unnoted().find_map(|(id, s)| {
            // The first attempt or a retry (R-IDEM-2): either withdraws the one submission.
            s.held.iter().find(|(_, h)| h.waiters().any(|(c, r)| c == conn && r == request)).map(|(m, _)| (id.clone(), m.clone()))
        });
        let Some((session, message_id)) = found else { return };
        if self.withdraw_held(&session, &message_id) {
            self.out.extend(self.pending_notice(&session));
        }
    }

    /// Takes the held prompt `message_id` of `session` out of the queue (remembered as
    /// revoked) and answers its request `-32800` (R-PROMPT-2); `false` when it is not pending.
    pub(super) fn withdraw_held(&mut self, session: &SessionId, message_id: &acp_inject_wire::MessageId) -> bool {
        let bound = self.config.policy.remember_bound();
        let Some(s) = self.sessions.get_mut(session) else { return false };
        let Some(held) = s.held.get(message_id) else { return false };
        let (conn, mid) = (held.conn.clone(), message_id.clone());
        let owner_may = crate::agent::RevokeReplace::AnyController;
        if !matches!(s.pending.revoke(owner_may, &conn, &mid, bound), Ok(Some(_))) {
            return false;
        }
        let held = s.held.remove(message_id);
        self.store.record(Change::InjectRevoked { session, message_id: &mid });
        self.out.extend(held.into_iter().flat_map(output::prompt_cancelled));
        true
    }

    /// R-REVOKE-1..3.
    fn revoke(&mut self, conn: &ConnId, params: Option<&RawValue>) -> Reply {
        let p: RevokeInjectRequest = tri!(decode(params));
        let (session, mid) = (p.session_id, p.message_id);
        tri!(self.owned(conn, &session, Some(&mid)));
        tri!(self.live_session(&session, Some(&mid)));
        if self.config.inject.is_none() {
            return Reply::err(ErrorObject::method_not_found());
        }
        tri!(self.not_observer(conn, Some(&mid)));
        self.join(conn, &session);
        let (policy, bound) = (self.config.policy.revoke_replace, self.config.policy.remember_bound());
        let s = tri!(self.live_session_mut(&session));
        let revoked = tri!(s.pending.revoke(policy, conn, &mid, bound));
        let held = if revoked.is_some() { s.held.remove(&mid) } else { None };
        let mut after = Vec::new();
        if revoked.is_some() {
            self.store.record(Change::InjectRevoked { session: &session, message_id: &mid });
            // A held prompt revoked before its insertion: its request is cancelled.
            after.extend(held.into_iter().flat_map(output::prompt_cancelled));
            after.extend(self.pending_notice(&session));
        }
        Reply::ok(&RevokeInjectResponse::new()).then(after)
    }

    /// R-REPLACE-1..2.
    fn replace(&mut self, conn: &ConnId, params: Option<&RawValue>) -> Reply {
        let p: ReplaceInjectRequest = tri!(decode(params));
        let (session, mid) = (p.session_id, p.message_id);
        tri!(self.owned(conn, &session, Some(&mid)));
        tri!(self.live_session(&session, Some(&mid)));
        let Some(caps) = &self.config.inject else { return Reply::err(ErrorObject::method_not_found()) };
        if !caps.pending.as_ref().is_some_and(|p| p.replace) {
            return Reply::err(ErrorObject::reason(ErrorReason::ReplaceNotSupported, Some(&mid)));
        }
        tri!(self.not_observer(conn, Some(&mid)));
        self.join(conn, &session);
        let policy = self.config.policy.revoke_replace;
        let s = tri!(self.live_session_mut(&session));
        tri!(s.pending.replace(policy, conn, &mid, p.content.clone()));
        self.store.record(Change::InjectReplaced { session: &session, message_id: &mid, content: &p.content });
        let after = self.pending_notice(&session).into_iter().collect();
        Reply::ok(&ReplaceInjectResponse::new(mid)).then(after)
    }

    /// `session/close` (R-CLOSE-1): the notices go out before the answer, the `Closed`
    /// action after it.
    fn close_request(&mut self, conn: &ConnId, params: Option<&RawValue>) -> Reply {
        let p: CloseSessionRequest = tri!(decode(params));
        let session = p.session_id;
        tri!(self.not_observer(conn, None));
        // R-TENANT-1: another principal's session is closed as one this agent does not know.
        if self.owned(conn, &session, None).is_err() {
            return Reply::ok(&CloseSessionResponse::new());
        }
        // A shared store: a session live on no host here is taken first, so it closes for good.
        tri!(self.take_over(&session));
        // R-CLOSE-2: closing a session that is not live (closed, unknown) succeeds and changes
        // nothing.
        if !self.sessions.contains_key(&session) {
            self.let_go_if_absent(&session);
            return Reply::ok(&CloseSessionResponse::new());
        }
        self.join(conn, &session);
        let (before, action) = self.close(&session);
        Reply::ok(&CloseSessionResponse::new()).then(action.into_iter().collect()).preceded_by(before)
    }

    /// R-STATUS-1: side-effect free.
    fn status(&mut self, conn: &ConnId, params: Option<&RawValue>) -> Reply {
        let p: SessionStatusRequest = tri!(decode(params));
        let session = p.session_id;
        tri!(self.owned(conn, &session, None));
        // R-STATUS-1: open with the turn's state, saved when only the store knows it, and
        // -32002 for a session the agent never had.
        if let Some(s) = self.sessions.get(&session) {
            return Reply::ok(&SessionStatusResponse::new(SessionStatus::Open).state(s.state_snapshot()));
        }
        match tri!(self.store.session(&session).map_err(internal)) {
            Some(_) => Reply::ok(&SessionStatusResponse::new(SessionStatus::Saved)),
            None => Reply::err(ErrorObject::session_not_found(&session, None)),
        }
    }
}

/// The `_meta` member of an `initialize` result that advertises the steering extension.
pub(super) fn steering_advertisement() -> Map<String, Value> {
    let mut supported = Map::new();
    supported.insert("supported".to_owned(), Value::Bool(true));
    Map::from_iter([("steering".to_owned(), Value::Object(supported))])
}

/// Whether a steering request asks for `promptRequired` on an idle session: its
/// `_meta.steering.idleBehavior`, absent or `"promptRequired"`; any other value is -32602, as
/// the shipping agents answer it.
fn idle_behavior(meta: Option<&Map<String, Value>>) -> Result<bool, ErrorObject> {
    let steering = meta.and_then(|m| m.get("steering")).and_then(Value::as_object);
    match steering.and_then(|s| s.get("idleBehavior")) {
        None => Ok(false),
        Some(Value::String(b)) if b == "promptRequired" => Ok(true),
        Some(other) => Err(ErrorObject::invalid_params(&format!(
            "at `_meta.steering.idleBehavior`: unsupported value {other} (the one known is \"promptRequired\")"
        ))),
    }
}

fn internal(e: super::StoreError) -> ErrorObject {
    ErrorObject::with_detail(acp_inject_wire::errors::INTERNAL_ERROR, &e.to_string())
}
