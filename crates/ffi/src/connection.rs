//! The async client: `connect` starts an agent and returns a `Connection`; sessions are
//! `Session` objects with async calls and a batched event stream. The I/O runs on the
//! library's own tokio runtime; each async call is awaited by the caller's event loop
//! (asyncio, coroutines, Swift concurrency).

use std::sync::Arc;
use std::time::Duration;

use acp_inject_core::client::{MirrorSnapshot, SteerFallback};
use acp_inject_core::wire::{
    ContentBlock, Implementation, InitializeResponse, InjectMode, McpServer, MessageId, RequestId, RequestPermissionOutcome,
    SessionId, SessionInfo, SessionStatusResponse,
};
use acp_inject_transport::{ConnectOptions as Options, SessionActivity};

use crate::{guard, on_runtime, AcpError};

/// How `connect` starts and talks to an agent.
#[derive(Debug, Clone, uniffi::Record)]
pub struct ConnectOptions {
    /// This client, as `initialize` announces it.
    pub client: Implementation,
    /// Opt into the agent's pending-list extension (`_acp-inject/pending`).
    pub pending_updates: bool,
    /// Longest agent line accepted, in bytes.
    pub max_line_bytes: u64,
    /// How long `initialize` may take, in milliseconds.
    pub handshake_timeout_ms: u64,
    /// How long `close` waits for the agent to exit before killing it, in milliseconds.
    pub close_grace_ms: u64,
    /// Copy the agent's stderr to this process's stderr.
    pub forward_stderr: bool,
    /// What to do with a steer when the agent takes no injects (an ACP v1 agent, or one
    /// without `session.inject`): `None` refuses it with `CallRejected.SteerNotSupported`.
    #[uniffi(default = None)]
    pub steer_fallback: Option<SteerFallback>,
}

/// The defaults: pending updates on, 16 MiB lines, 30 s handshake, 2 s close grace, stderr
/// forwarded.
#[uniffi::export]
pub fn default_connect_options() -> ConnectOptions {
    let o = Options::default();
    ConnectOptions {
        client: o.client,
        pending_updates: o.pending_updates,
        max_line_bytes: o.max_line_bytes as u64,
        handshake_timeout_ms: o.handshake_timeout.as_millis() as u64,
        close_grace_ms: o.close_grace.as_millis() as u64,
        forward_stderr: o.forward_stderr,
        steer_fallback: o.steer_fallback,
    }
}

impl From<ConnectOptions> for Options {
    fn from(o: ConnectOptions) -> Self {
        Options {
            client: o.client,
            pending_updates: o.pending_updates,
            max_line_bytes: usize::try_from(o.max_line_bytes).unwrap_or(usize::MAX),
            handshake_timeout: Duration::from_millis(o.handshake_timeout_ms),
            close_grace: Duration::from_millis(o.close_grace_ms),
            forward_stderr: o.forward_stderr,
            steer_fallback: o.steer_fallback,
        }
    }
}

/// One page of `session/list`.
#[derive(Debug, Clone, uniffi::Record)]
pub struct SessionPage {
    /// Newest first.
    pub sessions: Vec<SessionInfo>,
    /// Pass as `cursor` for the next page; `None` at the end.
    pub next_cursor: Option<String>,
}

/// Starts `command` (program and arguments) and connects to it over its stdio; `initialize`
/// is exchanged before this returns.
#[uniffi::export]
pub async fn connect(command: Vec<String>, options: ConnectOptions) -> Result<Arc<Connection>, AcpError> {
    on_runtime(async move {
        let inner = acp_inject_transport::Connection::spawn(&command, options.into()).await?;
        Ok(Arc::new(Connection { inner }))
    })
    .await
}

/// Connects to an agent by URL over the network: `ws://` or `wss://` over WebSocket, `http://`
/// or `https://` over Streamable HTTP (the upstream remote transport; the `/acp` path included).
/// With `bearer_token`, every request carries `Authorization: Bearer <token>`. `initialize` is
/// exchanged before this returns; the connection then works as one over stdio. When the
/// network drops, calls fail with `AcpError.Disconnected`: connect again and `resume` each
/// session with replay (its turns went on in the agent).
#[uniffi::export]
pub async fn connect_url(url: String, bearer_token: Option<String>, options: ConnectOptions) -> Result<Arc<Connection>, AcpError> {
    on_runtime(async move {
        let mut endpoint = acp_inject_remote::Endpoint::new(url);
        if let Some(token) = &bearer_token {
            endpoint = endpoint.bearer(token);
        }
        let inner = endpoint.connect(options.into()).await?;
        Ok(Arc::new(Connection { inner }))
    })
    .await
}

/// A connection to one agent (a process over stdio, or an endpoint over the network).
#[derive(uniffi::Object)]
pub struct Connection {
    inner: acp_inject_transport::Connection,
}

#[uniffi::export]
impl Connection {
    /// The agent's `initialize` answer.
    pub fn agent(&self) -> InitializeResponse {
        self.inner.agent().clone()
    }

    /// Lines the connection could not use, most recent last.
    pub fn ignored(&self) -> Vec<String> {
        self.inner.ignored()
    }

    /// `session/new`.
    pub async fn new_session(
        &self,
        cwd: String,
        additional_directories: Vec<String>,
        mcp_servers: Vec<McpServer>,
    ) -> Result<Arc<Session>, AcpError> {
        let c = self.inner.clone();
        on_runtime(async move {
            let inner = c.new_session(&cwd, additional_directories, mcp_servers).await?;
            Ok(Arc::new(Session { inner }))
        })
        .await
    }

    /// `session/list`: one page.
    pub async fn list_sessions(&self, cwd: Option<String>, cursor: Option<String>) -> Result<SessionPage, AcpError> {
        let c = self.inner.clone();
        on_runtime(async move {
            let (sessions, next_cursor) = c.list_sessions(cwd.as_deref(), cursor.as_deref()).await?;
            Ok(SessionPage { sessions, next_cursor })
        })
        .await
    }

    /// `session/resume`; with `replay` the conversation is replayed into the session first.
    pub async fn resume(&self, session_id: String, cwd: String, replay: bool) -> Result<Arc<Session>, AcpError> {
        let c = self.inner.clone();
        on_runtime(async move {
            let inner = c.resume(&SessionId(session_id), &cwd, replay).await?;
            Ok(Arc::new(Session { inner }))
        })
        .await
    }

    /// Closes the connection: stdin closed, a grace period, then the agent is killed.
    pub async fn close(&self) -> Result<(), AcpError> {
        let c = self.inner.clone();
        on_runtime(async move {
            c.close().await;
            Ok(())
        })
        .await
    }
}

/// A session open on a [`Connection`].
#[derive(uniffi::Object)]
pub struct Session {
    inner: acp_inject_transport::Session,
}

#[uniffi::export]
impl Session {
    /// The session's id.
    pub fn id(&self) -> String {
        self.inner.id().0.clone()
    }

    /// `session/prompt`: returns when the message is inserted, with its id.
    pub async fn prompt(&self, content: Vec<ContentBlock>) -> Result<Option<MessageId>, AcpError> {
        let s = self.inner.clone();
        on_runtime(async move { Ok(s.prompt(content).await?) }).await
    }

    /// `session/inject`: returns when accepted, with the id its `user_message` will carry.
    pub async fn inject(&self, mode: InjectMode, content: Vec<ContentBlock>) -> Result<MessageId, AcpError> {
        let s = self.inner.clone();
        on_runtime(async move { Ok(s.inject(mode, content).await?) }).await
    }

    /// `session/revoke_inject`.
    pub async fn revoke(&self, message_id: MessageId) -> Result<(), AcpError> {
        let s = self.inner.clone();
        on_runtime(async move { Ok(s.revoke(&message_id).await?) }).await
    }

    /// `session/replace_inject`.
    pub async fn replace(&self, message_id: MessageId, content: Vec<ContentBlock>) -> Result<(), AcpError> {
        let s = self.inner.clone();
        on_runtime(async move { Ok(s.replace(&message_id, content).await?) }).await
    }

    /// `session/cancel`.
    pub fn cancel(&self) -> Result<(), AcpError> {
        guard(|| Ok(self.inner.cancel()?))
    }

    /// `session/status`: `open` (with the session's state when reported) or `saved`; -32002
    /// for a session the agent does not know.
    pub async fn status(&self) -> Result<SessionStatusResponse, AcpError> {
        let s = self.inner.clone();
        on_runtime(async move { Ok(s.status().await?) }).await
    }

    /// `session/close`.
    pub async fn close(&self) -> Result<(), AcpError> {
        let s = self.inner.clone();
        on_runtime(async move { Ok(s.close().await?) }).await
    }

    /// Answers an open permission request of this session.
    pub fn answer_permission(&self, request: RequestId, outcome: RequestPermissionOutcome) -> Result<(), AcpError> {
        guard(|| Ok(self.inner.answer_permission(&request, outcome)?))
    }

    /// Everything a UI renders for this session now.
    pub fn snapshot(&self) -> Option<MirrorSnapshot> {
        self.inner.snapshot()
    }

    /// Waits for activity, then returns all of it (one batch per read from the agent); raises
    /// `Disconnected` once the connection ended and nothing is left.
    pub async fn next_events(&self) -> Result<Vec<SessionActivity>, AcpError> {
        let s = self.inner.clone();
        on_runtime(async move { Ok(s.next_events().await?) }).await
    }

    /// Whatever activity is queued now, without waiting.
    pub fn take_events(&self) -> Vec<SessionActivity> {
        self.inner.take_events()
    }
}
