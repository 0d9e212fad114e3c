//! A client connection to an agent: spawn the agent's command (or take any reader/writer
//! pair), run one read loop, and expose async calls and per-session event streams on top of
//! the sans-IO [`ClientConnection`], which owns the id space and the routing.

use std::collections::{HashMap, VecDeque};
use std::process::Stdio;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use acp_inject_core::client::{
    Answer, CallRejected, ClientConnection, Event, MirrorSnapshot, ProtocolError, SessionEvent, SteerFallback,
};
use acp_inject_core::wire::{
    AuthMethod, ContentBlock, Implementation, InitializeResponse, InjectMode, McpServer, MessageId, RequestId,
    RequestPermissionOutcome, RequestPermissionRequest, SessionId, SessionInfo, SessionStatusResponse,
};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::{mpsc, oneshot, Notify};

/// A connection-level failure.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TransportError {
    /// The agent command could not be started.
    #[error("cannot start the agent {command:?}: {reason}")]
    Spawn {
        /// The command.
        command: Vec<String>,
        /// The OS error.
        reason: String,
    },
    /// The agent's output ended (it exited or closed stdout); `status` and the last lines of
    /// its stderr say why.
    #[error("the agent ended the connection ({status}){}", if stderr.is_empty() { String::new() } else { format!("; its stderr ended with:\n{stderr}") })]
    Closed {
        /// The exit status, when it exited.
        status: String,
        /// The last lines it wrote to stderr.
        stderr: String,
    },
    /// Reading or writing failed.
    #[error("I/O error talking to the agent: {0}")]
    Io(String),
    /// The agent answered with an error.
    #[error("the agent refused: {0}")]
    Protocol(ProtocolError),
    /// The call was refused locally and nothing was sent (C-PEND-3).
    #[error("refused locally: {0}")]
    Rejected(CallRejected),
    /// The agent did not answer `initialize` in time, or answered something else.
    #[error("handshake failed: {0}")]
    Handshake(String),
}

/// Something that happened in a session, as its event stream delivers it.
#[derive(Clone, Debug, PartialEq)]
pub enum SessionActivity {
    /// The mirror applied this (an update, an item change, a violation, …).
    Event(SessionEvent),
    /// The agent asks for permission; answer with [`Session::answer_permission`].
    PermissionRequested {
        /// The agent's request id.
        request: RequestId,
        /// What it asks.
        params: Box<RequestPermissionRequest>,
    },
}

/// How a connection is made.
#[derive(Clone, Debug)]
pub struct ConnectOptions {
    /// This client, as `initialize` announces it.
    pub client: Implementation,
    /// Opt into the agent's pending-list extension (`_acp-inject/pending`).
    pub pending_updates: bool,
    /// Longest agent line accepted.
    pub max_line_bytes: usize,
    /// How long `initialize` may take.
    pub handshake_timeout: Duration,
    /// How long [`Connection::close`] waits for the agent to exit after its stdin closes,
    /// before killing it.
    pub close_grace: Duration,
    /// Copy the agent's stderr to this process's stderr (it is always kept for errors).
    pub forward_stderr: bool,
    /// What to do with a steer when the agent takes no injects (an ACP v1 agent, or one
    /// without `session.inject`; C-HELD-3): `None` refuses it with
    /// [`CallRejected::SteerNotSupported`].
    pub steer_fallback: Option<SteerFallback>,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            client: Implementation::new("acp-inject", env!("CARGO_PKG_VERSION")),
            pending_updates: true,
            max_line_bytes: acp_inject_core::wire::jsonrpc::DEFAULT_MAX_LINE_BYTES,
            handshake_timeout: Duration::from_secs(30),
            close_grace: Duration::from_secs(2),
            forward_stderr: true,
            steer_fallback: None,
        }
    }
}

type Waiter = oneshot::Sender<Result<Answer, TransportError>>;

#[derive(Default)]
struct Queue {
    items: VecDeque<SessionActivity>,
}

/// How many notifications the app has not read are kept; past it the oldest is dropped (and
/// logged), so an app that never reads them does not grow without bound.
const NOTIFICATIONS_KEPT: usize = 1024;

/// A notification of the agent's this library does not handle: its method and params.
#[derive(Clone, Debug, PartialEq)]
pub struct Notification {
    /// Its method (`_auth/status_update`, …).
    pub method: String,
    /// Its params, as they came.
    pub params: Option<serde_json::Value>,
}

struct State {
    conn: ClientConnection,
    waiters: HashMap<RequestId, Waiter>,
    queues: HashMap<SessionId, Queue>,
    notifications: VecDeque<Notification>,
    closed: Option<TransportError>,
    stderr_tail: VecDeque<String>,
    log: VecDeque<String>,
}

struct Shared {
    state: Mutex<State>,
    notify: Notify,
    writer: mpsc::UnboundedSender<Vec<u8>>,
    child: Mutex<Option<Child>>,
    options: ConnectOptions,
}

/// A lock poisoned by a panic elsewhere still holds consistent data (every critical section
/// here either completes or changes nothing), so keep going.
fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl State {
    /// Keeps a line for [`Connection::ignored`] (the last 64).
    fn note(&mut self, detail: String) {
        if self.log.len() >= 64 {
            self.log.pop_front();
        }
        self.log.push_back(detail);
    }
}

impl Shared {
    /// Sends what the connection queued, in order.
    fn flush(&self, state: &mut State) {
        for line in state.conn.take_outgoing() {
            let mut bytes = line.into_bytes();
            bytes.push(b'\n');
            // A send fails only after the writer stopped, which the read loop reports.
            let _ = self.writer.send(bytes);
        }
    }

    /// Routes the connection's events: answers to their waiters, session activity to queues.
    fn dispatch(&self, state: &mut State) {
        for event in state.conn.take_events() {
            match event {
                Event::Answered { request, outcome, .. } => {
                    if let Some(w) = state.waiters.remove(&request) {
                        let _ = w.send(match outcome {
                            Answer::Failed(e) => Err(TransportError::Protocol(e)),
                            answer => Ok(answer),
                        });
                    }
                }
                Event::Session { session_id, event } => {
                    state.queues.entry(session_id).or_default().items.push_back(SessionActivity::Event(event));
                }
                Event::PermissionRequested { request, params } => {
                    let session = params.session_id.clone();
                    state.queues.entry(session).or_default().items.push_back(SessionActivity::PermissionRequested { request, params });
                }
                Event::Notification { method, params } => {
                    if state.notifications.len() >= NOTIFICATIONS_KEPT {
                        if let Some(dropped) = state.notifications.pop_front() {
                            let detail =
                                format!("a notification {:?} nobody read (the oldest past {NOTIFICATIONS_KEPT})", dropped.method);
                            state.note(detail);
                        }
                    }
                    state.notifications.push_back(Notification { method, params });
                }
                Event::Ignored { detail } => state.note(detail),
            }
        }
        self.flush(state);
        self.notify.notify_waiters();
    }

    fn fail(&self, error: TransportError) {
        let mut state = lock(&self.state);
        if state.closed.is_none() {
            state.closed = Some(error.clone());
        }
        for (_, w) in state.waiters.drain() {
            let _ = w.send(Err(error.clone()));
        }
        drop(state);
        self.notify.notify_waiters();
    }

    /// Makes a call on the connection and waits for its answer.
    async fn call(
        &self,
        make: impl FnOnce(&mut ClientConnection) -> Result<RequestId, CallRejected>,
    ) -> Result<Answer, TransportError> {
        let rx = {
            let mut state = lock(&self.state);
            if let Some(e) = &state.closed {
                return Err(e.clone());
            }
            let id = make(&mut state.conn).map_err(TransportError::Rejected)?;
            let (tx, rx) = oneshot::channel();
            state.waiters.insert(id, tx);
            // The call may have queued session events (the item now `sending`).
            self.dispatch(&mut state);
            rx
        };
        rx.await.unwrap_or_else(|_| Err(TransportError::Io("the connection stopped".into())))
    }
}

/// A connection to one agent. Cheap to clone; every clone is the same connection.
#[derive(Clone)]
pub struct Connection {
    shared: Arc<Shared>,
    agent: Arc<InitializeResponse>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection").field("agent", &self.agent.info.name).finish()
    }
}

impl Connection {
    /// Starts `command` (program and arguments) and connects to it over its stdio: the
    /// agent's stderr is kept (and forwarded, by default), its exit is reported as
    /// [`TransportError::Closed`], and `initialize` is exchanged before this returns.
    pub async fn spawn(command: &[String], options: ConnectOptions) -> Result<Connection, TransportError> {
        let (program, args) =
            command.split_first().ok_or_else(|| TransportError::Spawn { command: vec![], reason: "empty command".into() })?;
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| TransportError::Spawn { command: command.to_vec(), reason: e.to_string() })?;
        let (Some(stdin), Some(stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take()) else {
            return Err(TransportError::Spawn { command: command.to_vec(), reason: "no stdio pipes".into() });
        };
        Connection::start(stdout, stdin, Some((child, stderr)), options).await
    }

    /// Connects over any reader/writer pair (a socket, a pipe, an in-process agent).
    pub async fn over<R, W>(reader: R, writer: W, options: ConnectOptions) -> Result<Connection, TransportError>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        Connection::start(reader, writer, None, options).await
    }

    async fn start<R, W>(
        mut reader: R,
        mut writer: W,
        child: Option<(Child, tokio::process::ChildStderr)>,
        options: ConnectOptions,
    ) -> Result<Connection, TransportError>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (tx, mut rx) = mpsc::unbounded_channel::<Vec<u8>>();
        let (child, stderr) = match child {
            Some((c, e)) => (Some(c), Some(e)),
            None => (None, None),
        };
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                conn: {
                    let mut conn = ClientConnection::new(options.max_line_bytes);
                    conn.set_steer_fallback(options.steer_fallback);
                    conn
                },
                waiters: HashMap::new(),
                queues: HashMap::new(),
                notifications: VecDeque::new(),
                closed: None,
                stderr_tail: VecDeque::new(),
                log: VecDeque::new(),
            }),
            notify: Notify::new(),
            writer: tx,
            child: Mutex::new(child),
            options: options.clone(),
        });

        // Writer: one task, so lines go out whole and in order.
        let w = Arc::clone(&shared);
        tokio::spawn(async move {
            while let Some(bytes) = rx.recv().await {
                // An empty message is the close signal: stop, which shuts the agent's stdin.
                if bytes.is_empty() {
                    break;
                }
                if let Err(e) = async {
                    writer.write_all(&bytes).await?;
                    writer.flush().await
                }
                .await
                {
                    w.fail(TransportError::Io(format!("writing to the agent: {e}")));
                    break;
                }
            }
            let _ = writer.shutdown().await;
        });

        // Stderr: kept (the tail explains an exit) and optionally forwarded.
        if let Some(stderr) = stderr {
            let s = Arc::clone(&shared);
            tokio::spawn(async move {
                let mut lines = BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    if s.options.forward_stderr {
                        eprintln!("[agent] {line}");
                    }
                    let mut state = lock(&s.state);
                    if state.stderr_tail.len() >= 20 {
                        state.stderr_tail.pop_front();
                    }
                    state.stderr_tail.push_back(line);
                }
            });
        }

        // Reader: one read, one batch through the connection, one dispatch.
        let r = Arc::clone(&shared);
        tokio::spawn(async move {
            let mut buf = vec![0u8; 64 * 1024];
            let end = loop {
                match reader.read(&mut buf).await {
                    Ok(0) => break None,
                    Ok(n) => {
                        let mut state = lock(&r.state);
                        state.conn.receive_bytes(&buf[..n]);
                        r.dispatch(&mut state);
                    }
                    Err(e) => break Some(e.to_string()),
                }
            };
            {
                let mut state = lock(&r.state);
                state.conn.finish();
                r.dispatch(&mut state);
            }
            // Give the stderr reader a moment to catch the last lines before reporting.
            tokio::time::sleep(Duration::from_millis(50)).await;
            let status = Connection::exit_status(&r).await;
            let stderr = lock(&r.state).stderr_tail.iter().cloned().collect::<Vec<_>>().join("\n");
            let status = match end {
                Some(e) => format!("read error: {e}; {status}"),
                None => status,
            };
            r.fail(TransportError::Closed { status, stderr });
        });

        let answer = {
            let call = shared.call(|c| Ok(c.initialize(options.client.clone(), options.pending_updates)));
            match tokio::time::timeout(options.handshake_timeout, call).await {
                Ok(answer) => answer?,
                Err(_) => {
                    return Err(TransportError::Handshake(format!("no answer to initialize within {:?}", options.handshake_timeout)))
                }
            }
        };
        let Answer::Initialized(agent) = answer else {
            return Err(TransportError::Handshake("initialize was answered with something else".into()));
        };
        Ok(Connection { shared, agent: Arc::from(agent) })
    }

    async fn exit_status(shared: &Shared) -> String {
        let child = shared.child.lock().unwrap_or_else(|e| e.into_inner()).take();
        match child {
            None => "its output closed".into(),
            Some(mut c) => {
                let status = match tokio::time::timeout(Duration::from_secs(2), c.wait()).await {
                    Ok(Ok(s)) => format!("it exited: {s}"),
                    Ok(Err(e)) => format!("its exit status is unknown: {e}"),
                    Err(_) => "its output closed but it is still running".into(),
                };
                *shared.child.lock().unwrap_or_else(|e| e.into_inner()) = Some(c);
                status
            }
        }
    }

    /// The agent's `initialize` answer: protocol version, identity, capabilities.
    pub fn agent(&self) -> &InitializeResponse {
        &self.agent
    }

    /// Lines the connection could not use, most recent last (for logs).
    pub fn ignored(&self) -> Vec<String> {
        lock(&self.shared.state).log.iter().cloned().collect()
    }

    fn session(&self, session_id: SessionId) -> Session {
        Session { shared: Arc::clone(&self.shared), id: session_id }
    }

    /// `session/new`.
    pub async fn new_session(
        &self,
        cwd: &str,
        additional_directories: Vec<String>,
        mcp_servers: Vec<McpServer>,
    ) -> Result<Session, TransportError> {
        let cwd = cwd.to_owned();
        match self.shared.call(move |c| Ok(c.new_session(&cwd, additional_directories, mcp_servers))).await? {
            Answer::SessionCreated { session_id } => Ok(self.session(session_id)),
            other => Err(TransportError::Io(format!("unexpected answer {other:?}"))),
        }
    }

    /// `session/list`: one page, and the cursor of the next.
    pub async fn list_sessions(
        &self,
        cwd: Option<&str>,
        cursor: Option<&str>,
    ) -> Result<(Vec<SessionInfo>, Option<String>), TransportError> {
        let (cwd, cursor) = (cwd.map(str::to_owned), cursor.map(str::to_owned));
        match self.shared.call(move |c| Ok(c.list_sessions(cwd.as_deref(), cursor.as_deref()))).await? {
            Answer::Sessions { sessions, next_cursor } => Ok((sessions, next_cursor)),
            other => Err(TransportError::Io(format!("unexpected answer {other:?}"))),
        }
    }

    /// `session/resume`; with `replay` the conversation is replayed into the session's mirror
    /// (and its event stream) before this returns.
    pub async fn resume(&self, session_id: &SessionId, cwd: &str, replay: bool) -> Result<Session, TransportError> {
        let (id, cwd) = (session_id.clone(), cwd.to_owned());
        self.shared.call(move |c| Ok(c.resume(&id, &cwd, replay, Vec::new(), Vec::new()))).await?;
        Ok(self.session(session_id.clone()))
    }

    /// The agent's advertised `authMethods` (empty: it needs no authentication, or does not say).
    pub fn auth_methods(&self) -> &[AuthMethod] {
        self.agent.auth_methods.as_deref().unwrap_or_default()
    }

    /// `auth/login` with one of [`Connection::auth_methods`] (`authenticate` to a version 1
    /// agent): once it succeeds, the calls the agent refused with -32000 (Authentication
    /// required) may be made again.
    pub async fn authenticate(&self, method_id: &str) -> Result<(), TransportError> {
        let method_id = method_id.to_owned();
        self.shared.call(move |c| c.authenticate(&method_id)).await.map(drop)
    }

    /// `auth/logout`.
    pub async fn logout(&self) -> Result<(), TransportError> {
        self.shared.call(|c| Ok(c.logout())).await.map(drop)
    }

    /// A request of an extension (`method` starts with `_`; `params` an object or an array):
    /// the agent's result, as it came.
    pub async fn ext_request(&self, method: &str, params: Option<serde_json::Value>) -> Result<serde_json::Value, TransportError> {
        let method = method.to_owned();
        match self.shared.call(move |c| c.ext_request(&method, params)).await? {
            Answer::Extension { result } => Ok(result),
            other => Err(TransportError::Io(format!("unexpected answer {other:?}"))),
        }
    }

    /// A notification of an extension (`method` starts with `_`); returns once sent.
    pub fn ext_notify(&self, method: &str, params: Option<serde_json::Value>) -> Result<(), TransportError> {
        let mut state = lock(&self.shared.state);
        if let Some(e) = &state.closed {
            return Err(e.clone());
        }
        state.conn.ext_notify(method, params).map_err(TransportError::Rejected)?;
        self.shared.flush(&mut state);
        Ok(())
    }

    /// Waits for the next notification of the agent's that this library does not handle
    /// itself (an extension's, such as `_auth/status_update`, or a method it does not know),
    /// in order. Returns `Err` once the connection has ended and none is left.
    pub async fn next_notification(&self) -> Result<Notification, TransportError> {
        loop {
            let notified = self.shared.notify.notified();
            {
                let mut state = lock(&self.shared.state);
                if let Some(n) = state.notifications.pop_front() {
                    return Ok(n);
                }
                if let Some(e) = &state.closed {
                    return Err(e.clone());
                }
            }
            notified.await;
        }
    }

    /// Closes the connection: the agent's stdin is closed, it gets `close_grace` to exit, then
    /// it is killed.
    pub async fn close(&self) {
        // Closing the channel ends the writer task, which shuts the agent's stdin.
        let child = self.shared.child.lock().unwrap_or_else(|e| e.into_inner()).take();
        self.shared.fail(TransportError::Closed { status: "closed by this client".into(), stderr: String::new() });
        let _ = self.shared.writer.send(Vec::new());
        if let Some(mut child) = child {
            if tokio::time::timeout(self.shared.options.close_grace, child.wait()).await.is_err() {
                let _ = child.kill().await;
            }
        }
    }
}

/// A session open on a [`Connection`].
#[derive(Clone)]
pub struct Session {
    shared: Arc<Shared>,
    id: SessionId,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").field("id", &self.id).finish()
    }
}

fn accepted(answer: Answer) -> Result<Option<MessageId>, TransportError> {
    match answer {
        Answer::Accepted { message_id } => Ok(message_id),
        other => Err(TransportError::Io(format!("unexpected answer {other:?}"))),
    }
}

impl Session {
    /// The session's id.
    pub fn id(&self) -> &SessionId {
        &self.id
    }

    /// `session/prompt`: returns when the message is inserted, with its id (the insertion
    /// receipt; `None` from an agent that answers `{}`).
    pub async fn prompt(&self, content: Vec<ContentBlock>) -> Result<Option<MessageId>, TransportError> {
        let id = self.id.clone();
        accepted(self.shared.call(move |c| c.prompt(&id, content)).await?)
    }

    /// `session/inject`: returns when the inject is accepted, with its id.
    pub async fn inject(&self, mode: InjectMode, content: Vec<ContentBlock>) -> Result<MessageId, TransportError> {
        let id = self.id.clone();
        accepted(self.shared.call(move |c| c.inject(&id, mode, content)).await?)?
            .ok_or_else(|| TransportError::Io("the agent accepted the inject without a messageId".into()))
    }

    /// `session/revoke_inject`.
    pub async fn revoke(&self, message_id: &MessageId) -> Result<(), TransportError> {
        let (id, m) = (self.id.clone(), message_id.clone());
        self.shared.call(move |c| c.revoke(&id, &m)).await.map(drop)
    }

    /// `session/replace_inject`.
    pub async fn replace(&self, message_id: &MessageId, content: Vec<ContentBlock>) -> Result<(), TransportError> {
        let (id, m) = (self.id.clone(), message_id.clone());
        self.shared.call(move |c| c.replace(&id, &m, content)).await.map(drop)
    }

    /// `session/cancel` (a notification: returns once sent).
    pub fn cancel(&self) -> Result<(), TransportError> {
        let mut state = lock(&self.shared.state);
        if let Some(e) = &state.closed {
            return Err(e.clone());
        }
        state.conn.cancel(&self.id);
        self.shared.flush(&mut state);
        Ok(())
    }

    /// `session/status`: whether the agent has the session in memory (`open`, with its state
    /// when the agent reports it) or can resume it (`saved`). A session the agent does not know
    /// is an error (-32002).
    pub async fn status(&self) -> Result<SessionStatusResponse, TransportError> {
        let id = self.id.clone();
        match self.shared.call(move |c| Ok(c.status(&id))).await? {
            Answer::Status { status, state } => Ok(SessionStatusResponse::new(status).state(state)),
            other => Err(TransportError::Io(format!("unexpected answer {other:?}"))),
        }
    }

    /// `session/close`.
    pub async fn close(&self) -> Result<(), TransportError> {
        let id = self.id.clone();
        self.shared.call(move |c| Ok(c.close(&id))).await.map(drop)
    }

    /// Answers an open permission request of this session.
    pub fn answer_permission(&self, request: &RequestId, outcome: RequestPermissionOutcome) -> Result<(), TransportError> {
        let mut state = lock(&self.shared.state);
        state.conn.answer_permission(request, outcome).map_err(TransportError::Rejected)?;
        self.shared.flush(&mut state);
        Ok(())
    }

    /// Everything a UI renders for this session now.
    pub fn snapshot(&self) -> Option<MirrorSnapshot> {
        lock(&self.shared.state).conn.mirror(&self.id).map(|m| m.snapshot())
    }

    /// Waits until the session has activity, then returns all of it, in order (one batch per
    /// read from the agent). Returns `Err` once the connection has ended and nothing is left.
    pub async fn next_events(&self) -> Result<Vec<SessionActivity>, TransportError> {
        loop {
            let notified = self.shared.notify.notified();
            {
                let mut state = lock(&self.shared.state);
                if let Some(q) = state.queues.get_mut(&self.id) {
                    if !q.items.is_empty() {
                        return Ok(q.items.drain(..).collect());
                    }
                }
                if let Some(e) = &state.closed {
                    return Err(e.clone());
                }
            }
            notified.await;
        }
    }

    /// Whatever activity is queued now, without waiting.
    pub fn take_events(&self) -> Vec<SessionActivity> {
        let mut state = lock(&self.shared.state);
        state.queues.get_mut(&self.id).map(|q| q.items.drain(..).collect()).unwrap_or_default()
    }
}
