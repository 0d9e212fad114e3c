//! The agent server for authors in other languages: they implement `AgentRuntime` (async
//! methods), the library runs the protocol. Values cross encoded (`crate::codec`).

use std::sync::Arc;

use acp_inject_core::agent::{AgentConfig, BreakPoint, HostError, PendingInject, PermissionAsk, SessionSetup, UserInput};
use acp_inject_core::wire::{ErrorObject, MessageId, PermissionOption, SessionId, SessionUpdate, ToolCallId, ToolCallUpdate};
use acp_inject_transport::{ServeOptions, TurnEnd};

use crate::{arg, guard, on_runtime, out, AcpError, FfiError};

/// What an agent author implements (each language's layer implements it over the author's
/// own agent class, with defaults for the optional methods). Values cross encoded.
#[uniffi::export(with_foreign)]
#[async_trait::async_trait]
pub trait AgentRuntime: Send + Sync {
    /// Runs one turn whose opening input is `input` (a list of `UserInput`; empty when the
    /// runtime started it); returns how it ended (a `TurnEnd`).
    async fn run_turn(&self, turn: Arc<TurnContext>, input: Vec<u8>) -> Result<Vec<u8>, FfiError>;
    /// A client created a session (`setup` is a `SessionSetup`).
    async fn session_opened(&self, session_id: String, setup: Vec<u8>) -> Result<(), FfiError>;
    /// A client resumed a session (its history was already replayed).
    async fn session_resumed(&self, session_id: String, setup: Vec<u8>) -> Result<(), FfiError>;
    /// The session was closed; `dropped` (a list of `PendingInject`) were pending, never delivered.
    async fn session_closed(&self, session_id: String, dropped: Vec<u8>) -> Result<(), FfiError>;
    /// A client logs in with `method_id`, one of the configured `agent` methods: check the
    /// credentials it stands for. An `AcpError.Protocol` (or `AuthRequired`) error is the
    /// client's error, its code and message as given; any other error is -32603.
    async fn authenticate(&self, method_id: String) -> Result<(), FfiError>;
    /// A request of an extension the agent serves, `params` encoded (optional JSON); its
    /// result, encoded JSON. Errors as for `authenticate`.
    async fn extension(&self, method: String, params: Vec<u8>) -> Result<Vec<u8>, FfiError>;
    /// A notification of an extension the agent serves, `params` encoded (optional JSON).
    async fn extension_notification(&self, method: String, params: Vec<u8>) -> Result<(), FfiError>;
}

/// What a foreign runtime's error tells the client: the agent's own JSON-RPC error when it
/// raised one (`AcpError.Protocol` or `AuthRequired`), else a generic internal error (what the
/// author's code raised stays in this process's log).
fn client_error(what: &str, e: FfiError) -> ErrorObject {
    match AcpError::from(e) {
        AcpError::Protocol { error } | AcpError::AuthRequired { error } => {
            let data = error.detail.map(|d| ErrorObject::with_detail(error.code, &d).data).unwrap_or_default();
            ErrorObject { code: error.code, message: error.message, data }
        }
        other => {
            eprintln!("acp-inject: {what} failed: {other}");
            ErrorObject::with_detail(acp_inject_core::wire::errors::INTERNAL_ERROR, &format!("the agent's {what} code failed"))
        }
    }
}

/// What one network listener allows its clients (the value model's `ListenLimits`; the
/// defaults are [`acp_inject_remote::Limits`]'s).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenLimits {
    /// The largest message (request body or WebSocket message), in bytes: 413, or close 1009.
    pub max_message_bytes: u64,
    /// Client connections at once, HTTP and WebSocket: 503.
    pub max_connections: u64,
    /// TCP connections open at once, before any authentication.
    pub max_sockets: u64,
    /// How long a TCP connection may go without sending a whole request, in milliseconds.
    pub first_request_timeout_ms: u64,
    /// Sessions whose messages one connection carries: 429.
    pub max_sessions_per_connection: u64,
    /// Bytes waiting for one client to read them before its connection is ended.
    pub max_buffered_bytes: u64,
    /// Bytes of events a Streamable HTTP stream keeps for a reconnect with `Last-Event-ID`.
    pub replay_window_bytes: u64,
    /// How long a connection may be silent, in milliseconds.
    pub idle_timeout_ms: u64,
    /// How often an open stream or socket is kept alive, in milliseconds.
    pub keepalive_ms: u64,
    /// The listener's memory budget, in bytes.
    pub max_memory: u64,
}

impl From<ListenLimits> for acp_inject_remote::Limits {
    fn from(l: ListenLimits) -> Self {
        // A count beyond the address space is as good as no limit.
        let size = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        acp_inject_remote::Limits {
            max_message_bytes: size(l.max_message_bytes),
            max_connections: size(l.max_connections),
            max_sockets: size(l.max_sockets),
            first_request_timeout: std::time::Duration::from_millis(l.first_request_timeout_ms),
            max_sessions_per_connection: size(l.max_sessions_per_connection),
            max_buffered_bytes: size(l.max_buffered_bytes),
            replay_window_bytes: size(l.replay_window_bytes),
            idle_timeout: std::time::Duration::from_millis(l.idle_timeout_ms),
            keepalive: std::time::Duration::from_millis(l.keepalive_ms),
            max_memory: size(l.max_memory),
            memory_gauge: None,
        }
    }
}

/// Adapts a foreign runtime to the transport's trait.
struct Foreign(Arc<dyn AgentRuntime>);

#[async_trait::async_trait]
impl acp_inject_transport::AgentRuntime for Foreign {
    async fn session_opened(&self, session: &SessionId, setup: SessionSetup) {
        if let Err(e) = self.0.session_opened(session.to_string(), out(&setup)).await {
            eprintln!("acp-inject: session_opened({session}) failed: {}", AcpError::from(e));
        }
    }

    async fn session_resumed(&self, session: &SessionId, setup: SessionSetup) {
        if let Err(e) = self.0.session_resumed(session.to_string(), out(&setup)).await {
            eprintln!("acp-inject: session_resumed({session}) failed: {}", AcpError::from(e));
        }
    }

    async fn run_turn(&self, turn: acp_inject_transport::TurnContext, input: Vec<UserInput>) -> TurnEnd {
        let session = turn.session_id().to_owned();
        let ended = self.0.run_turn(Arc::new(TurnContext { inner: turn }), out(&input)).await;
        match ended.map_err(AcpError::from).and_then(|end| arg::<TurnEnd>(&end, "the turn's end")) {
            Ok(end) => end,
            // The session was closed, or the client went away, under the running turn: the
            // runtime's next call failed and ended it. Nothing is wrong; the turn's end is
            // refused or unseen either way.
            Err(AcpError::Host { error: HostError::SessionClosed, .. } | AcpError::Disconnected { .. }) => TurnEnd::cancelled(),
            Err(e) => {
                eprintln!("acp-inject: run_turn({session}) failed: {e}");
                // Upstream's `error` end, with a generic internal error: what the author's code
                // raised stays in this process's log, not on the wire.
                TurnEnd::failed(acp_inject_core::wire::TurnFailure::internal("the agent's turn code failed"))
            }
        }
    }

    async fn session_closed(&self, session: &SessionId, dropped: Vec<PendingInject>) {
        if let Err(e) = self.0.session_closed(session.to_string(), out(&dropped)).await {
            eprintln!("acp-inject: session_closed({session}) failed: {}", AcpError::from(e));
        }
    }

    async fn authenticate(&self, method_id: &str) -> Result<(), ErrorObject> {
        self.0.authenticate(method_id.to_owned()).await.map_err(|e| client_error("authenticate", e))
    }

    async fn extension(&self, method: &str, params: Option<serde_json::Value>) -> Result<serde_json::Value, ErrorObject> {
        let result = self.0.extension(method.to_owned(), out(&params)).await.map_err(|e| client_error(method, e))?;
        arg::<serde_json::Value>(&result, "the extension's result").map_err(|e| client_error(method, e.into()))
    }

    async fn extension_notification(&self, method: &str, params: Option<serde_json::Value>) {
        if let Err(e) = self.0.extension_notification(method.to_owned(), out(&params)).await {
            eprintln!("acp-inject: {method} failed: {}", AcpError::from(e));
        }
    }
}

/// What a running turn can do.
#[derive(uniffi::Object)]
pub struct TurnContext {
    inner: acp_inject_transport::TurnContext,
}

#[uniffi::export]
impl TurnContext {
    /// The session this turn belongs to.
    pub fn session_id(&self) -> String {
        self.inner.session_id().to_string()
    }

    /// The session's working directory.
    pub fn cwd(&self) -> String {
        self.inner.cwd().to_owned()
    }

    /// Sends one of the runtime's own updates (a `SessionUpdate`: chunks, upserts, tool calls,
    /// plan, usage, …).
    pub fn send(&self, update: Vec<u8>) -> Result<(), FfiError> {
        guard(|| Ok(self.inner.send(arg::<SessionUpdate>(&update, "update")?)?))
    }

    /// A fresh id for an agent message or thought.
    pub fn new_message_id(&self) -> String {
        self.inner.new_message_id().0
    }

    /// Streams a piece of text of an agent message.
    pub fn send_text(&self, message_id: String, text: String) -> Result<(), FfiError> {
        guard(|| Ok(self.inner.send_text(&MessageId(message_id), &text)?))
    }

    /// Clears what was streamed so far for an agent message.
    pub fn clear_message(&self, message_id: String) -> Result<(), FfiError> {
        guard(|| Ok(self.inner.clear_message(&MessageId(message_id))?))
    }

    /// A model stream with no tool call pending began.
    pub fn stream_started(&self) -> Result<(), FfiError> {
        guard(|| Ok(self.inner.stream_started()?))
    }

    /// That stream ended.
    pub fn stream_finished(&self) -> Result<(), FfiError> {
        guard(|| Ok(self.inner.stream_finished()?))
    }

    /// A safe break-point (a `BreakPoint`): pending steers are delivered and returned for the
    /// model (a list of `UserInput`).
    pub fn break_point(&self, kind: Vec<u8>) -> Result<Vec<u8>, FfiError> {
        guard(|| Ok(out(&self.inner.break_point(arg::<BreakPoint>(&kind, "kind")?)?)))
    }

    /// A model-process pause began.
    pub fn paused(&self) -> Result<(), FfiError> {
        guard(|| Ok(self.inner.paused()?))
    }

    /// The pause cleared.
    pub fn resumed(&self) -> Result<(), FfiError> {
        guard(|| Ok(self.inner.resumed()?))
    }

    /// Whether the client cancelled the turn.
    pub fn is_cancelled(&self) -> bool {
        self.inner.is_cancelled()
    }

    /// Waits until the client cancels the turn.
    pub async fn cancelled(&self) {
        let t = self.inner.clone();
        let _ = on_runtime(async move {
            t.cancelled().await;
            Ok(())
        })
        .await;
    }

    /// Whether a steer asked to cut the current model stream.
    pub fn interrupt_requested(&self) -> bool {
        self.inner.interrupt_requested()
    }

    /// Waits until a steer asks to cut the current model stream.
    pub async fn interrupted(&self) {
        let t = self.inner.clone();
        let _ = on_runtime(async move {
            t.interrupted().await;
            Ok(())
        })
        .await;
    }

    /// Asks the user for permission; `requires_action` until answered (a cancel answers
    /// `cancelled`). With `tool_call_id`, the request is about that tool call (the subject
    /// `{"type": "tool_call", "toolCall": {"toolCallId": …}}`; a v1 client gets it as the
    /// request's `toolCall`); without, v1 clients get a tool call named after the request.
    /// `options` is a list of `PermissionOption`; the result a `RequestPermissionOutcome`.
    pub async fn request_permission(
        &self,
        title: String,
        description: Option<String>,
        options: Vec<u8>,
        tool_call_id: Option<String>,
    ) -> Result<Vec<u8>, FfiError> {
        let options = arg::<Vec<PermissionOption>>(&options, "options").map_err(FfiError::from)?;
        let t = self.inner.clone();
        let subject = tool_call_id.map(|id| PermissionAsk::tool_call_subject(&ToolCallUpdate::new(ToolCallId(id))));
        on_runtime(async move { Ok(out(&t.request_permission(&title, description.as_deref(), options, subject).await?)) }).await
    }
}

/// An agent server around a runtime.
#[derive(uniffi::Object)]
pub struct AgentServer {
    inner: acp_inject_transport::AgentServer,
    /// Stops the network listener, when one runs.
    listening: std::sync::Mutex<Option<tokio::sync::oneshot::Sender<()>>>,
}

#[uniffi::export]
impl AgentServer {
    /// Builds the agent around `runtime`, configured by `config` (an `AgentConfig`); with
    /// `store_path`, sessions live in that store and outlive the process: a SQLite file's path,
    /// or a `postgres://` URL that several agent hosts share (`acp_inject_store::open`
    /// describes its `acp_host` and `acp_lease_ms` parameters).
    #[uniffi::constructor]
    pub fn new(runtime: Arc<dyn AgentRuntime>, config: Vec<u8>, store_path: Option<String>) -> Result<Arc<Self>, FfiError> {
        guard(|| {
            let config = arg::<AgentConfig>(&config, "config")?;
            let store = match store_path {
                Some(location) => Some(acp_inject_store::open(&location, config.policy.remember_ids)?),
                None => None,
            };
            let options = ServeOptions { config, store };
            let inner = acp_inject_transport::AgentServer::new(Arc::new(Foreign(runtime)), options)?;
            Ok(Arc::new(AgentServer { inner, listening: std::sync::Mutex::new(None) }))
        })
    }

    /// Serves over this process's stdin/stdout until the client closes stdin.
    pub async fn run_stdio(&self) -> Result<(), FfiError> {
        let s = self.inner.clone();
        on_runtime(async move { Ok(s.run_stdio().await?) }).await
    }

    /// Serves over the network on `addr` (`HOST:PORT`; port 0 picks a free one): the upstream
    /// Streamable HTTP & WebSocket transport on `/acp`. Returns the endpoint's URL
    /// (`http://HOST:PORT/acp`; WebSocket clients use `ws://` on the same path) once bound;
    /// serving goes on in the background until `shutdown`. Anything but a loopback address
    /// needs `bearer_token` (clients send `Authorization: Bearer <token>`) or `principal_tokens`,
    /// or it is refused with `AcpError.Config`; so is a token shorter than 16 bytes (an empty one
    /// included). `principal_tokens` maps each principal (a user, a tenant) to its own token: a
    /// client sees the sessions its principal created and no other (R-TENANT-1); the shared
    /// `bearer_token`, when given beside them, sees the sessions created without one.
    /// `allowed_origins` lists the browser origins that may call. `limits` (a `ListenLimits`) bounds
    /// what clients may take (connections, messages, buffered output, memory); a zero limit
    /// is refused with `AcpError.Config`.
    pub async fn listen(
        &self,
        addr: String,
        bearer_token: Option<String>,
        principal_tokens: std::collections::HashMap<String, String>,
        allowed_origins: Vec<String>,
        limits: Vec<u8>,
    ) -> Result<String, FfiError> {
        let limits: acp_inject_remote::Limits = arg::<ListenLimits>(&limits, "limits")?.into();
        let server = self.inner.clone();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let url = on_runtime(async move {
            let auth: Option<Arc<dyn acp_inject_remote::Authorize>> = match (bearer_token, principal_tokens.is_empty()) {
                (None, true) => None,
                (Some(t), true) => Some(Arc::new(acp_inject_remote::BearerToken::new(t)?)),
                (shared, false) => {
                    // In name order, so a refusal names the same principal every time.
                    let mut principals: Vec<_> = principal_tokens.into_iter().collect();
                    principals.sort();
                    let mut tokens = acp_inject_remote::BearerTokens::new();
                    for (principal, token) in principals {
                        tokens = tokens.principal(&principal, token)?;
                    }
                    if let Some(t) = shared {
                        tokens = tokens.shared(t)?;
                    }
                    Some(Arc::new(tokens))
                }
            };
            let options = acp_inject_remote::ListenOptions { auth, allowed_origins, limits, ..Default::default() };
            let listener = acp_inject_remote::listen(server, &addr, options).await?;
            let url = format!("http://{}/acp", listener.local_addr()?);
            tokio::spawn(listener.serve(async move {
                let _ = stopped.await;
            }));
            Ok::<_, AcpError>(url)
        })
        .await?;
        if let Some(previous) = crate::lock(&self.listening).replace(stop) {
            let _ = previous.send(());
        }
        Ok(url)
    }

    /// Waits until the server stops serving because its store failed, then raises
    /// `AcpError.Store` saying why: a database error, or, on a store several hosts share, a
    /// session another host took over while this one was paused or cut off. Every connection
    /// was dropped by then; a network host should stop and be started again.
    pub async fn stopped(&self) -> Result<(), FfiError> {
        let s = self.inner.clone();
        let why = on_runtime(async move { Ok::<_, AcpError>(s.stopped().await) }).await?;
        Err(AcpError::Store { detail: why }.into())
    }

    /// Stops serving: the network listener (if any) closes its connections, every running
    /// turn is cancelled and given a moment to end.
    pub async fn shutdown(&self) {
        if let Some(stop) = crate::lock(&self.listening).take() {
            let _ = stop.send(());
        }
        let s = self.inner.clone();
        let _ = on_runtime(async move {
            s.shutdown().await;
            Ok::<_, AcpError>(())
        })
        .await;
    }

    /// Starts a turn in a session with no user message.
    pub fn start_turn(&self, session_id: String) -> Result<(), FfiError> {
        // The turn task is spawned on the library's runtime.
        let handle = crate::runtime();
        let _context = handle.enter();
        guard(|| Ok(self.inner.start_turn(&SessionId(session_id))?))
    }

    /// Closes a session from the agent's side.
    pub fn close_session(&self, session_id: String) -> Result<(), FfiError> {
        let handle = crate::runtime();
        let _context = handle.enter();
        guard(|| Ok(self.inner.close_session(&SessionId(session_id))?))
    }

    /// The live sessions.
    pub fn sessions(&self) -> Vec<String> {
        self.inner.sessions().into_iter().map(String::from).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::ListenLimits;

    /// A `ListenLimits` built in another language without changes is the Rust listener's
    /// default (the value model's defaults and `Limits::default()` cannot drift apart).
    #[test]
    fn the_value_models_default_limits_are_the_listeners() {
        let mut w = crate::codec::Writer::new(Vec::new());
        w.map(0);
        let limits: acp_inject_remote::Limits = crate::arg::<ListenLimits>(&w.into_bytes(), "limits").unwrap().into();
        assert_eq!(format!("{limits:?}"), format!("{:?}", acp_inject_remote::Limits::default()));
    }
}
