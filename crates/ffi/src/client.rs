//! `ClientCore`: the sans-IO client connection for hosts that run their own I/O, and the
//! fastest per-line path (one crossing per line or per read, events returned in bulk).

use std::sync::{Arc, Mutex};

use acp_inject_core::client::{ClientConnection, Event, ItemStatus, MirrorSnapshot, SessionMirror, SteerFallback};
use acp_inject_core::wire::{
    ContentBlock, Implementation, InjectCapabilities, InjectMode, McpServer, MessageId, RequestId, RequestPermissionOutcome, SessionId,
};

use crate::{guard, lock, AcpError};

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

    /// `initialize`; `pending_updates` opts into the pending-list extension.
    pub fn initialize(&self, client: Implementation, pending_updates: bool) -> Result<RequestId, AcpError> {
        guard(|| Ok(lock(&self.inner).initialize(client, pending_updates)))
    }

    /// Takes the agent's inject capabilities as known, without `initialize`. They are taken as
    /// an `initialize` answer's are: tolerantly (a `steer` without `steerInStream` is accepted,
    /// as ACP PR #2043 allows).
    pub fn assume_capabilities(&self, inject: Option<InjectCapabilities>) -> Result<(), AcpError> {
        guard(|| {
            lock(&self.inner).assume_capabilities(inject);
            Ok(())
        })
    }

    /// Takes the agent's protocol version (1 or 2) and inject capabilities as known, without
    /// `initialize`. A version 1 agent takes no injects: this client holds queued messages
    /// for it (C-HELD-1).
    pub fn assume_agent(&self, protocol_version: u16, inject: Option<InjectCapabilities>) -> Result<(), AcpError> {
        guard(|| {
            lock(&self.inner).assume_agent(protocol_version, inject);
            Ok(())
        })
    }

    /// What to do with a steer when the agent takes no injects (C-HELD-3); `None` refuses it
    /// with `CallRejected.SteerNotSupported`.
    pub fn set_steer_fallback(&self, fallback: Option<SteerFallback>) -> Result<(), AcpError> {
        guard(|| {
            lock(&self.inner).set_steer_fallback(fallback);
            Ok(())
        })
    }

    /// The protocol version `initialize` settled (2 until an agent answers 1).
    pub fn protocol_version(&self) -> u16 {
        lock(&self.inner).protocol_version()
    }

    /// Opens a session without `session/new` (restoring a mirror from `mirror_json`, or fresh).
    pub fn open_session(&self, session_id: String, mirror_json: Option<String>) -> Result<(), AcpError> {
        guard(|| {
            let mirror = mirror_json.map(|j| SessionMirror::from_json(&j)).transpose().map_err(AcpError::invalid)?;
            lock(&self.inner).open_session(&SessionId(session_id), mirror);
            Ok(())
        })
    }

    /// A session's mirror as JSON, for an app that restarts without resuming.
    pub fn mirror_json(&self, session_id: String) -> Result<Option<String>, AcpError> {
        guard(|| Ok(lock(&self.inner).mirror(&SessionId(session_id)).map(SessionMirror::to_json)))
    }

    /// `session/new`.
    pub fn new_session(
        &self,
        cwd: String,
        additional_directories: Vec<String>,
        mcp_servers: Vec<McpServer>,
    ) -> Result<RequestId, AcpError> {
        guard(|| Ok(lock(&self.inner).new_session(&cwd, additional_directories, mcp_servers)))
    }

    /// `session/list`.
    pub fn list_sessions(&self, cwd: Option<String>, cursor: Option<String>) -> Result<RequestId, AcpError> {
        guard(|| Ok(lock(&self.inner).list_sessions(cwd.as_deref(), cursor.as_deref())))
    }

    /// `session/resume`.
    pub fn resume(&self, session_id: String, cwd: String, replay: bool) -> Result<RequestId, AcpError> {
        guard(|| Ok(lock(&self.inner).resume(&SessionId(session_id), &cwd, replay, Vec::new(), Vec::new())))
    }

    /// `session/prompt`.
    pub fn prompt(&self, session_id: String, content: Vec<ContentBlock>) -> Result<RequestId, AcpError> {
        guard(|| Ok(lock(&self.inner).prompt(&SessionId(session_id), content)?))
    }

    /// `session/inject`.
    pub fn inject(&self, session_id: String, mode: InjectMode, content: Vec<ContentBlock>) -> Result<RequestId, AcpError> {
        guard(|| Ok(lock(&self.inner).inject(&SessionId(session_id), mode, content)?))
    }

    /// `session/revoke_inject`.
    pub fn revoke(&self, session_id: String, message_id: String) -> Result<RequestId, AcpError> {
        guard(|| Ok(lock(&self.inner).revoke(&SessionId(session_id), &MessageId(message_id))?))
    }

    /// `session/replace_inject`.
    pub fn replace(&self, session_id: String, message_id: String, content: Vec<ContentBlock>) -> Result<RequestId, AcpError> {
        guard(|| Ok(lock(&self.inner).replace(&SessionId(session_id), &MessageId(message_id), content)?))
    }

    /// `session/cancel`.
    pub fn cancel(&self, session_id: String) -> Result<(), AcpError> {
        guard(|| {
            lock(&self.inner).cancel(&SessionId(session_id));
            Ok(())
        })
    }

    /// `session/close`.
    pub fn close(&self, session_id: String) -> Result<RequestId, AcpError> {
        guard(|| Ok(lock(&self.inner).close(&SessionId(session_id))))
    }

    /// `session/status`.
    pub fn status(&self, session_id: String) -> Result<RequestId, AcpError> {
        guard(|| Ok(lock(&self.inner).status(&SessionId(session_id))))
    }

    /// Answers an open `session/request_permission`.
    pub fn answer_permission(&self, request: RequestId, outcome: RequestPermissionOutcome) -> Result<(), AcpError> {
        guard(|| Ok(lock(&self.inner).answer_permission(&request, outcome)?))
    }

    /// Applies one line from the agent and returns the events it caused (the per-line path:
    /// one crossing per line).
    pub fn receive(&self, line: String) -> Result<Vec<Event>, AcpError> {
        guard(|| Ok(self.receive_events(&line)))
    }

    /// Applies bytes the agent wrote, in any chunking, and returns the events (the per-read
    /// path: one crossing per read).
    pub fn receive_bytes(&self, bytes: Vec<u8>) -> Result<Vec<Event>, AcpError> {
        guard(|| {
            let mut c = lock(&self.inner);
            c.receive_bytes(&bytes);
            Ok(c.take_events())
        })
    }

    /// Like [`ClientCore::receive_bytes`], with the bytes borrowed instead of copied into a
    /// Rust buffer first: the cheapest call for a reader that hands over each line (or read)
    /// as it comes, e.g. Python's `bytes` from `readline()`.
    pub fn feed(&self, bytes: &[u8]) -> Result<Vec<Event>, AcpError> {
        guard(|| Ok(self.feed_events(bytes)))
    }

    /// Like [`ClientCore::receive_bytes`] for text (a string crosses as one copy).
    pub fn receive_text(&self, text: String) -> Result<Vec<Event>, AcpError> {
        guard(|| {
            let mut c = lock(&self.inner);
            c.receive_bytes(text.as_bytes());
            Ok(c.take_events())
        })
    }

    /// The agent's output ended: a last line without a newline is still read.
    pub fn finish(&self) -> Result<Vec<Event>, AcpError> {
        guard(|| {
            let mut c = lock(&self.inner);
            c.finish();
            Ok(c.take_events())
        })
    }

    /// Every line to send to the agent, in order.
    pub fn take_outgoing(&self) -> Result<Vec<String>, AcpError> {
        guard(|| Ok(lock(&self.inner).take_outgoing()))
    }

    /// Every event not yet returned (calls queue events too: an item is `sending`).
    pub fn take_events(&self) -> Result<Vec<Event>, AcpError> {
        guard(|| Ok(lock(&self.inner).take_events()))
    }

    /// Everything a UI renders for a session.
    pub fn snapshot(&self, session_id: String) -> Result<Option<MirrorSnapshot>, AcpError> {
        guard(|| Ok(lock(&self.inner).mirror(&SessionId(session_id)).map(|m| m.snapshot())))
    }

    /// The status of one of this client's items.
    pub fn item_status(&self, session_id: String, message_id: String) -> Result<Option<ItemStatus>, AcpError> {
        guard(|| Ok(lock(&self.inner).mirror(&SessionId(session_id)).and_then(|m| m.item_status(&MessageId(message_id)))))
    }

    /// Lines dropped (malformed, oversized, answers to no request), counted.
    pub fn ignored_lines(&self) -> Result<u64, AcpError> {
        guard(|| Ok(lock(&self.inner).ignored_lines()))
    }
}
