//! The async client: `connect` starts an agent and returns a `Connection`; sessions are
//! `Session` objects with async calls and a batched event stream. The I/O runs on the
//! library's own tokio runtime; each async call is awaited by the caller's event loop
//! (asyncio, coroutines, Swift concurrency).

use std::sync::Arc;
use std::time::Duration;

use acp_inject_core::client::SteerFallback;
use acp_inject_core::wire::{
    ContentBlock, Implementation, InjectMode, McpServer, MessageId, RequestId, RequestPermissionOutcome, SessionId, SessionInfo,
};
use acp_inject_transport::ConnectOptions as Options;

use crate::{arg, guard, on_runtime, out, AcpError, FfiError};

/// How `connect` starts and talks to an agent (the value model's `ConnectOptions`).
#[derive(Debug, Clone)]
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
    pub steer_fallback: Option<SteerFallback>,
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
#[derive(Debug, Clone, PartialEq)]
pub struct SessionPage {
    /// Newest first.
    pub sessions: Vec<SessionInfo>,
    /// Pass as `cursor` for the next page; `None` at the end.
    pub next_cursor: Option<String>,
}

fn options(bytes: &[u8]) -> Result<Options, AcpError> {
    Ok(arg::<ConnectOptions>(bytes, "options")?.into())
}

/// Starts `command` (program and arguments) and connects to it over its stdio, with `options`
/// (a `ConnectOptions`); `initialize` is exchanged before this returns.
#[uniffi::export]
pub async fn connect(command: Vec<String>, options: Vec<u8>) -> Result<Arc<Connection>, FfiError> {
    let options = self::options(&options).map_err(FfiError::from)?;
    on_runtime(async move {
        let inner = acp_inject_transport::Connection::spawn(&command, options).await?;
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
pub async fn connect_url(url: String, bearer_token: Option<String>, options: Vec<u8>) -> Result<Arc<Connection>, FfiError> {
    let options = self::options(&options).map_err(FfiError::from)?;
    on_runtime(async move {
        let mut endpoint = acp_inject_remote::Endpoint::new(url);
        if let Some(token) = &bearer_token {
            endpoint = endpoint.bearer(token);
        }
        let inner = endpoint.connect(options).await?;
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
    /// The agent's `initialize` answer (an `InitializeResponse`).
    pub fn agent(&self) -> Vec<u8> {
        out(self.inner.agent())
    }

    /// Lines the connection could not use, most recent last.
    pub fn ignored(&self) -> Vec<String> {
        self.inner.ignored()
    }

    /// `session/new` with `mcp_servers` (a list of `McpServer`).
    pub async fn new_session(
        &self,
        cwd: String,
        additional_directories: Vec<String>,
        mcp_servers: Vec<u8>,
    ) -> Result<Arc<Session>, FfiError> {
        let mcp_servers = arg::<Vec<McpServer>>(&mcp_servers, "mcp_servers").map_err(FfiError::from)?;
        let c = self.inner.clone();
        on_runtime(async move {
            let inner = c.new_session(&cwd, additional_directories, mcp_servers).await?;
            Ok(Arc::new(Session { inner }))
        })
        .await
    }

    /// `session/list`: one page (a `SessionPage`).
    pub async fn list_sessions(&self, cwd: Option<String>, cursor: Option<String>) -> Result<Vec<u8>, FfiError> {
        let c = self.inner.clone();
        on_runtime(async move {
            let (sessions, next_cursor) = c.list_sessions(cwd.as_deref(), cursor.as_deref()).await?;
            Ok(out(&SessionPage { sessions, next_cursor }))
        })
        .await
    }

    /// `session/resume`; with `replay` the conversation is replayed into the session first.
    pub async fn resume(&self, session_id: String, cwd: String, replay: bool) -> Result<Arc<Session>, FfiError> {
        let c = self.inner.clone();
        on_runtime(async move {
            let inner = c.resume(&SessionId(session_id), &cwd, replay).await?;
            Ok(Arc::new(Session { inner }))
        })
        .await
    }

    /// `auth/login` with one of the agent's `authMethods` (`authenticate` to a version 1
    /// agent); refused locally (`AcpError.Rejected`) for a method the agent does not advertise
    /// or a `terminal` one.
    pub async fn authenticate(&self, method_id: String) -> Result<(), FfiError> {
        let c = self.inner.clone();
        on_runtime(async move { Ok(c.authenticate(&method_id).await?) }).await
    }

    /// `auth/logout`.
    pub async fn logout(&self) -> Result<(), FfiError> {
        let c = self.inner.clone();
        on_runtime(async move { Ok(c.logout().await?) }).await
    }

    /// A request of an extension (`method` starts with `_`) with `params` (encoded optional
    /// JSON: an object or an array); the agent's result (encoded JSON).
    pub async fn ext_request(&self, method: String, params: Vec<u8>) -> Result<Vec<u8>, FfiError> {
        let params = arg::<Option<serde_json::Value>>(&params, "params").map_err(FfiError::from)?;
        let c = self.inner.clone();
        on_runtime(async move { Ok(out(&c.ext_request(&method, params).await?)) }).await
    }

    /// A notification of an extension (`method` starts with `_`) with `params` (encoded
    /// optional JSON).
    pub fn ext_notify(&self, method: String, params: Vec<u8>) -> Result<(), FfiError> {
        guard(|| {
            let params = arg::<Option<serde_json::Value>>(&params, "params")?;
            Ok(self.inner.ext_notify(&method, params)?)
        })
    }

    /// Waits for the next notification of the agent's that the library does not handle (an
    /// extension's, or a method it does not know): an `Event` (`Notification`), encoded.
    /// `AcpError.Disconnected` once the connection has ended and none is left.
    pub async fn next_notification(&self) -> Result<Vec<u8>, FfiError> {
        let c = self.inner.clone();
        on_runtime(async move {
            let n = c.next_notification().await?;
            Ok(out(&acp_inject_core::client::Event::Notification { method: n.method, params: n.params }))
        })
        .await
    }

    /// Closes the connection: stdin closed, a grace period, then the agent is killed.
    pub async fn close(&self) -> Result<(), FfiError> {
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

    /// `session/prompt` of `content` (a list of `ContentBlock`): returns when the message is
    /// inserted, with its id (an optional `MessageId`).
    pub async fn prompt(&self, content: Vec<u8>) -> Result<Vec<u8>, FfiError> {
        let content = arg::<Vec<ContentBlock>>(&content, "content").map_err(FfiError::from)?;
        let s = self.inner.clone();
        on_runtime(async move { Ok(out(&s.prompt(content).await?)) }).await
    }

    /// `session/inject` of `content` (a list of `ContentBlock`) in `mode` (an `InjectMode`):
    /// returns when accepted, with the id its `user_message` will carry.
    pub async fn inject(&self, mode: Vec<u8>, content: Vec<u8>) -> Result<String, FfiError> {
        let mode = arg::<InjectMode>(&mode, "mode").map_err(FfiError::from)?;
        let content = arg::<Vec<ContentBlock>>(&content, "content").map_err(FfiError::from)?;
        let s = self.inner.clone();
        on_runtime(async move { Ok(s.inject(mode, content).await?.0) }).await
    }

    /// `session/revoke_inject`.
    pub async fn revoke(&self, message_id: String) -> Result<(), FfiError> {
        let s = self.inner.clone();
        on_runtime(async move { Ok(s.revoke(&MessageId(message_id)).await?) }).await
    }

    /// `session/replace_inject` with `content` (a list of `ContentBlock`).
    pub async fn replace(&self, message_id: String, content: Vec<u8>) -> Result<(), FfiError> {
        let content = arg::<Vec<ContentBlock>>(&content, "content").map_err(FfiError::from)?;
        let s = self.inner.clone();
        on_runtime(async move { Ok(s.replace(&MessageId(message_id), content).await?) }).await
    }

    /// `session/cancel`.
    pub fn cancel(&self) -> Result<(), FfiError> {
        guard(|| Ok(self.inner.cancel()?))
    }

    /// `session/status` (a `SessionStatusResponse`): `open` (with the session's state when
    /// reported) or `saved`; -32002 for a session the agent does not know.
    pub async fn status(&self) -> Result<Vec<u8>, FfiError> {
        let s = self.inner.clone();
        on_runtime(async move { Ok(out(&s.status().await?)) }).await
    }

    /// `session/close`.
    pub async fn close(&self) -> Result<(), FfiError> {
        let s = self.inner.clone();
        on_runtime(async move { Ok(s.close().await?) }).await
    }

    /// Answers the open permission request `request` (a `RequestId`) of this session with
    /// `outcome` (a `RequestPermissionOutcome`).
    pub fn answer_permission(&self, request: Vec<u8>, outcome: Vec<u8>) -> Result<(), FfiError> {
        guard(|| {
            let request = arg::<RequestId>(&request, "request")?;
            Ok(self.inner.answer_permission(&request, arg::<RequestPermissionOutcome>(&outcome, "outcome")?)?)
        })
    }

    /// Everything a UI renders for this session now (an optional `MirrorSnapshot`).
    pub fn snapshot(&self) -> Vec<u8> {
        out(&self.inner.snapshot())
    }

    /// Waits for activity, then returns all of it (a list of `SessionActivity`, one batch per
    /// read from the agent); raises `Disconnected` once the connection ended and nothing is left.
    pub async fn next_events(&self) -> Result<Vec<u8>, FfiError> {
        let s = self.inner.clone();
        on_runtime(async move { Ok(out(&s.next_events().await?)) }).await
    }

    /// Whatever activity is queued now, without waiting (a list of `SessionActivity`).
    pub fn take_events(&self) -> Vec<u8> {
        out(&self.inner.take_events())
    }
}
