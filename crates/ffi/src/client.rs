//! `ClientCore`: the sans-IO client connection for hosts that run their own I/O, and the
//! fastest per-line path (one crossing per line or per read, events returned in bulk).
//!
//! Values cross encoded (`crate::codec`): the encoded argument's type is named in each method's
//! docs, and so is the result's.

use std::sync::{Arc, Mutex};

use acp_inject_core::client::{ClientConnection, Event, SessionMirror, SteerFallback};
use acp_inject_core::wire::{
    ContentBlock, Implementation, InitializeResponse, InjectCapabilities, InjectMode, McpServer, MessageId, RequestId,
    RequestPermissionOutcome, SessionId,
};

use crate::{arg, guard, lock, out, AcpError, FfiError};

/// One client connection to an agent, without I/O: calls queue lines to send, received bytes
/// produce events.
#[derive(uniffi::Object)]
pub struct ClientCore {
    inner: Mutex<ClientConnection>,
}

impl ClientCore {
    /// One line in, its events out (for [`ClientCore::receive`] and the per-line path of
    /// `lines.rs`).
    pub(crate) fn receive_events(&self, line: &str) -> Vec<Event> {
        let mut c = lock(&self.inner);
        c.receive_line(line);
        c.take_events()
    }

    /// Bytes in any chunking in, their events out (for [`ClientCore::feed`] and the per-read
    /// path of `lines.rs`).
    pub(crate) fn feed_events(&self, bytes: &[u8]) -> Vec<Event> {
        let mut c = lock(&self.inner);
        c.receive_bytes(bytes);
        c.take_events()
    }

    fn call<T>(&self, f: impl FnOnce(&mut ClientConnection) -> Result<T, AcpError>) -> Result<T, FfiError> {
        guard(|| f(&mut lock(&self.inner)))
    }
}

#[uniffi::export]
impl ClientCore {
    /// A handle of this connection for the per-line functions of `lines.rs`
    /// (`acp_inject_line_port_receive_into`), which the Kotlin and Python layers call with
    /// primitive arguments. It keeps the connection alive until
    /// `acp_inject_line_port_free(port)`, which must be called exactly once.
    pub fn line_port(self: Arc<Self>) -> u64 {
        crate::lines::open_port(self)
    }

    /// A connection refusing agent lines longer than `max_line_bytes`.
    #[uniffi::constructor]
    pub fn new(max_line_bytes: u64) -> Arc<Self> {
        let limit = usize::try_from(max_line_bytes).unwrap_or(usize::MAX);
        Arc::new(ClientCore { inner: Mutex::new(ClientConnection::new(limit)) })
    }

    /// `initialize` as `client` (an `Implementation`); `pending_updates` opts into the
    /// pending-list extension. The request's id (a `RequestId`).
    pub fn initialize(&self, client: Vec<u8>, pending_updates: bool) -> Result<Vec<u8>, FfiError> {
        self.call(|c| Ok(out(&c.initialize(arg::<Implementation>(&client, "client")?, pending_updates))))
    }

    /// Takes the agent's inject capabilities (an optional `InjectCapabilities`) as known,
    /// without `initialize`, tolerantly as an `initialize` answer's (a `steer` without
    /// `steerInStream` is accepted, as ACP PR #2043 allows).
    pub fn assume_capabilities(&self, inject: Vec<u8>) -> Result<(), FfiError> {
        self.call(|c| {
            c.assume_capabilities(arg::<Option<InjectCapabilities>>(&inject, "inject")?);
            Ok(())
        })
    }

    /// Takes the agent's protocol version (1 or 2) and inject capabilities (an optional
    /// `InjectCapabilities`) as known, without `initialize`. A version 1 agent takes no
    /// injects: this client holds queued messages for it (C-HELD-1).
    pub fn assume_agent(&self, protocol_version: u16, inject: Vec<u8>) -> Result<(), FfiError> {
        self.call(|c| {
            c.assume_agent(protocol_version, arg::<Option<InjectCapabilities>>(&inject, "inject")?);
            Ok(())
        })
    }

    /// Takes the agent's whole `initialize` answer (an `InitializeResponse`) as known, without
    /// an `initialize` exchange (a restored app): its version, its `session.inject`, and the
    /// extensions its `_meta` advertises (steering, C-STEERING-1).
    pub fn assume_initialized(&self, agent: Vec<u8>) -> Result<(), FfiError> {
        self.call(|c| {
            c.assume_initialized(arg::<InitializeResponse>(&agent, "agent")?);
            Ok(())
        })
    }

    /// What to do with a steer when the agent takes no injects (an optional `SteerFallback`,
    /// C-HELD-3); absent refuses it with `CallRejected.SteerNotSupported`.
    pub fn set_steer_fallback(&self, fallback: Vec<u8>) -> Result<(), FfiError> {
        self.call(|c| {
            c.set_steer_fallback(arg::<Option<SteerFallback>>(&fallback, "fallback")?);
            Ok(())
        })
    }

    /// The protocol version `initialize` settled (2 until an agent answers 1).
    pub fn protocol_version(&self) -> u16 {
        lock(&self.inner).protocol_version()
    }

    /// Opens a session without `session/new` (restoring a mirror from `mirror_json`, or fresh).
    pub fn open_session(&self, session_id: String, mirror_json: Option<String>) -> Result<(), FfiError> {
        self.call(|c| {
            let mirror = mirror_json.map(|j| SessionMirror::from_json(&j)).transpose().map_err(AcpError::invalid)?;
            c.open_session(&SessionId(session_id), mirror);
            Ok(())
        })
    }

    /// A session's mirror as JSON, for an app that restarts without resuming.
    pub fn mirror_json(&self, session_id: String) -> Result<Option<String>, FfiError> {
        self.call(|c| Ok(c.mirror(&SessionId(session_id)).map(SessionMirror::to_json)))
    }

    /// `session/new` with `mcp_servers` (a list of `McpServer`); the request's id.
    pub fn new_session(&self, cwd: String, additional_directories: Vec<String>, mcp_servers: Vec<u8>) -> Result<Vec<u8>, FfiError> {
        self.call(|c| Ok(out(&c.new_session(&cwd, additional_directories, arg::<Vec<McpServer>>(&mcp_servers, "mcp_servers")?))))
    }

    /// `session/list`; the request's id.
    pub fn list_sessions(&self, cwd: Option<String>, cursor: Option<String>) -> Result<Vec<u8>, FfiError> {
        self.call(|c| Ok(out(&c.list_sessions(cwd.as_deref(), cursor.as_deref()))))
    }

    /// `session/resume`; the request's id.
    pub fn resume(&self, session_id: String, cwd: String, replay: bool) -> Result<Vec<u8>, FfiError> {
        self.call(|c| Ok(out(&c.resume(&SessionId(session_id), &cwd, replay, Vec::new(), Vec::new()))))
    }

    /// `session/prompt` of `content` (a list of `ContentBlock`); the request's id.
    pub fn prompt(&self, session_id: String, content: Vec<u8>) -> Result<Vec<u8>, FfiError> {
        self.call(|c| Ok(out(&c.prompt(&SessionId(session_id), arg::<Vec<ContentBlock>>(&content, "content")?)?)))
    }

    /// `session/inject` of `content` (a list of `ContentBlock`) in `mode` (an `InjectMode`);
    /// the request's id.
    pub fn inject(&self, session_id: String, mode: Vec<u8>, content: Vec<u8>) -> Result<Vec<u8>, FfiError> {
        self.call(|c| {
            let mode = arg::<InjectMode>(&mode, "mode")?;
            Ok(out(&c.inject(&SessionId(session_id), mode, arg::<Vec<ContentBlock>>(&content, "content")?)?))
        })
    }

    /// `session/revoke_inject`; the request's id.
    pub fn revoke(&self, session_id: String, message_id: String) -> Result<Vec<u8>, FfiError> {
        self.call(|c| Ok(out(&c.revoke(&SessionId(session_id), &MessageId(message_id))?)))
    }

    /// `session/replace_inject` with `content` (a list of `ContentBlock`); the request's id.
    pub fn replace(&self, session_id: String, message_id: String, content: Vec<u8>) -> Result<Vec<u8>, FfiError> {
        self.call(|c| {
            let content = arg::<Vec<ContentBlock>>(&content, "content")?;
            Ok(out(&c.replace(&SessionId(session_id), &MessageId(message_id), content)?))
        })
    }

    /// `session/cancel`.
    pub fn cancel(&self, session_id: String) -> Result<(), FfiError> {
        self.call(|c| {
            c.cancel(&SessionId(session_id));
            Ok(())
        })
    }

    /// `session/close`; the request's id.
    pub fn close(&self, session_id: String) -> Result<Vec<u8>, FfiError> {
        self.call(|c| Ok(out(&c.close(&SessionId(session_id)))))
    }

    /// `session/status`; the request's id.
    pub fn status(&self, session_id: String) -> Result<Vec<u8>, FfiError> {
        self.call(|c| Ok(out(&c.status(&SessionId(session_id)))))
    }

    /// Answers the open `session/request_permission` `request` (a `RequestId`) with `outcome`
    /// (a `RequestPermissionOutcome`).
    pub fn answer_permission(&self, request: Vec<u8>, outcome: Vec<u8>) -> Result<(), FfiError> {
        self.call(|c| {
            let request = arg::<RequestId>(&request, "request")?;
            Ok(c.answer_permission(&request, arg::<RequestPermissionOutcome>(&outcome, "outcome")?)?)
        })
    }

    /// Applies one line from the agent; the events it caused (a list of `Event`).
    pub fn receive(&self, line: String) -> Result<Vec<u8>, FfiError> {
        guard(|| Ok(out(&self.receive_events(&line))))
    }

    /// Applies bytes the agent wrote, in any chunking; the events (a list of `Event`).
    pub fn feed(&self, bytes: &[u8]) -> Result<Vec<u8>, FfiError> {
        guard(|| Ok(out(&self.feed_events(bytes))))
    }

    /// Like [`ClientCore::feed`] for text (a string crosses as one copy).
    pub fn receive_text(&self, text: String) -> Result<Vec<u8>, FfiError> {
        guard(|| Ok(out(&self.feed_events(text.as_bytes()))))
    }

    /// The agent's output ended: a last line without a newline is still read. The events.
    pub fn finish(&self) -> Result<Vec<u8>, FfiError> {
        self.call(|c| {
            c.finish();
            Ok(out(&c.take_events()))
        })
    }

    /// Every line to send to the agent, in order.
    pub fn take_outgoing(&self) -> Result<Vec<String>, FfiError> {
        self.call(|c| Ok(c.take_outgoing()))
    }

    /// Every event not yet returned (calls queue events too: an item is `sending`).
    pub fn take_events(&self) -> Result<Vec<u8>, FfiError> {
        self.call(|c| Ok(out(&c.take_events())))
    }

    /// Everything a UI renders for a session (an optional `MirrorSnapshot`).
    pub fn snapshot(&self, session_id: String) -> Result<Vec<u8>, FfiError> {
        self.call(|c| Ok(out(&c.mirror(&SessionId(session_id)).map(|m| m.snapshot()))))
    }

    /// The status of one of this client's items (an optional `ItemStatus`).
    pub fn item_status(&self, session_id: String, message_id: String) -> Result<Vec<u8>, FfiError> {
        self.call(|c| Ok(out(&c.mirror(&SessionId(session_id)).and_then(|m| m.item_status(&MessageId(message_id))))))
    }

    /// Lines dropped (malformed, oversized, answers to no request), counted.
    pub fn ignored_lines(&self) -> Result<u64, FfiError> {
        self.call(|c| Ok(c.ignored_lines()))
    }
}
