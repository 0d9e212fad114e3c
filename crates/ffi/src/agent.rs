//! `AgentCore`: the sans-IO agent core for hosts that run their own I/O (and the conformance
//! drivers of every language). One lock per call; every call returns what it caused.
//!
//! A host moves bytes and runs the turns; the core speaks the protocol: it frames each
//! connection's bytes ([`AgentCore::handle_bytes`]), answers every request, and sends and
//! routes the agent's own requests to the client ([`AgentCore::request_permission`], answered
//! by a `PermissionAnswered` action).

use std::sync::{Arc, Mutex};

use acp_inject_core::agent::{
    Agent, AgentConfig, ConnId, ConnectionRole, HistoryEntry, MemoryStore, Output, PermissionAsk, RuntimeEvent, Turn,
};
use acp_inject_core::wire::{MessageId, PendingInject, RequestId, SessionId};

use crate::{guard, lock, AcpError};

struct Inner {
    agent: Agent,
}

/// The agent-side core of one agent process (all its sessions), without I/O.
#[derive(uniffi::Object)]
pub struct AgentCore {
    inner: Mutex<Inner>,
}

/// A permission request the core sent: its id (the `PermissionAnswered` action that answers it
/// carries the same id) and the outputs the call caused (the `requires_action` update and the
/// request line, or the `cancelled` answer when no controller is attached).
#[derive(uniffi::Record)]
pub struct PermissionRequestSent {
    /// The request's id.
    pub request_id: RequestId,
    /// Every output the call caused, in order.
    pub outputs: Vec<Output>,
}

impl AgentCore {
    fn wrap(agent: Agent) -> Arc<AgentCore> {
        Arc::new(AgentCore { inner: Mutex::new(Inner { agent }) })
    }

    fn drained(agent: &mut Agent) -> Result<Vec<Output>, AcpError> {
        Ok(agent.drain()?)
    }
}

#[uniffi::export]
impl AgentCore {
    /// An agent keeping sessions in memory.
    #[uniffi::constructor]
    pub fn new(config: AgentConfig) -> Result<Arc<Self>, AcpError> {
        guard(|| Ok(AgentCore::wrap(Agent::new(config)?)))
    }

    /// An agent on a store at `path`: a SQLite file (created if missing), or a `postgres://`
    /// URL several agent hosts share. Its sessions outlive the process, and a new process
    /// continues from them. On a shared store the host calls `renew_leases` every
    /// `renew_every_ms`.
    #[uniffi::constructor]
    pub fn open(config: AgentConfig, path: String) -> Result<Arc<Self>, AcpError> {
        guard(|| {
            let store = acp_inject_store::open(&path, config.policy.remember_ids)?;
            Ok(AgentCore::wrap(Agent::with_store(config, store)?))
        })
    }

    /// An agent continuing from [`AgentCore::snapshot`] (history starts empty: it lives in a
    /// store, not in the snapshot).
    #[uniffi::constructor]
    pub fn restore(config: AgentConfig, snapshot: String) -> Result<Arc<Self>, AcpError> {
        guard(|| Ok(AgentCore::wrap(Agent::restore(config, &snapshot, Box::new(MemoryStore::new()))?)))
    }

    /// Registers a connection with a role.
    pub fn attach(&self, connection: ConnId, role: ConnectionRole) -> Result<(), AcpError> {
        guard(|| {
            lock(&self.inner).agent.attach(&connection, role);
            Ok(())
        })
    }

    /// A connection went away: it is detached from every session, and the agent's requests only
    /// it could answer are answered `cancelled` (drain them with the next call's outputs, or
    /// call [`AgentCore::detach_and_drain`]).
    pub fn detach(&self, connection: ConnId) -> Result<(), AcpError> {
        guard(|| {
            lock(&self.inner).agent.detach(&connection);
            Ok(())
        })
    }

    /// Like [`AgentCore::detach`], returning the outputs it caused.
    pub fn detach_and_drain(&self, connection: ConnId) -> Result<Vec<Output>, AcpError> {
        guard(|| {
            let agent = &mut lock(&self.inner).agent;
            agent.detach(&connection);
            AgentCore::drained(agent)
        })
    }

    /// Attaches a connection to a live session; `false` when the session is not live.
    pub fn attach_to_session(&self, connection: ConnId, session_id: String) -> Result<bool, AcpError> {
        guard(|| Ok(lock(&self.inner).agent.attach_to_session(&connection, &SessionId(session_id)).is_ok()))
    }

    /// The connections attached to a session.
    pub fn attached(&self, session_id: String) -> Result<Vec<ConnId>, AcpError> {
        guard(|| Ok(lock(&self.inner).agent.attached(&SessionId(session_id))))
    }

    /// Creates an idle session with a chosen id; `false` when the id is taken.
    pub fn create_session(&self, session_id: String, cwd: String) -> Result<bool, AcpError> {
        guard(|| Ok(lock(&self.inner).agent.create_session(&SessionId(session_id), &cwd).is_ok()))
    }

    /// Forgets a session and its history.
    pub fn forget_session(&self, session_id: String) -> Result<(), AcpError> {
        guard(|| {
            lock(&self.inner).agent.forget_session(&SessionId(session_id));
            Ok(())
        })
    }

    /// Whether the agent holds the session live (R-STATUS-1).
    pub fn is_live(&self, session_id: String) -> Result<bool, AcpError> {
        guard(|| Ok(lock(&self.inner).agent.is_live(&SessionId(session_id))))
    }

    /// On a store several hosts share: how often to call [`AgentCore::renew_leases`], in
    /// milliseconds; `None` otherwise.
    pub fn renew_every_ms(&self) -> Result<Option<u64>, AcpError> {
        guard(|| Ok(lock(&self.inner).agent.renew_every().map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))))
    }

    /// On a store several hosts share: extends this host's leases. An error means another
    /// host took one of its sessions over: stop serving, and let clients resume elsewhere.
    pub fn renew_leases(&self) -> Result<(), AcpError> {
        guard(|| Ok(lock(&self.inner).agent.renew_leases()?))
    }

    /// The live sessions.
    pub fn session_ids(&self) -> Result<Vec<String>, AcpError> {
        guard(|| Ok(lock(&self.inner).agent.session_ids().into_iter().map(String::from).collect()))
    }

    /// A live session's turn.
    pub fn turn(&self, session_id: String) -> Result<Option<Turn>, AcpError> {
        guard(|| Ok(lock(&self.inner).agent.turn(&SessionId(session_id)).copied()))
    }

    /// Applies one line from `connection`; returns every output it caused, in order.
    pub fn handle_line(&self, connection: ConnId, line: String) -> Result<Vec<Output>, AcpError> {
        guard(|| {
            let agent = &mut lock(&self.inner).agent;
            agent.handle_line(&connection, &line);
            AgentCore::drained(agent)
        })
    }

    /// Applies newline-separated lines given as one string (one crossing for many lines);
    /// returns every output, in order.
    pub fn handle_text(&self, connection: ConnId, lines: String) -> Result<Vec<Output>, AcpError> {
        guard(|| {
            let agent = &mut lock(&self.inner).agent;
            agent.handle_text(&connection, &lines);
            AgentCore::drained(agent)
        })
    }

    /// Feeds raw bytes from `connection` in any chunking (a read of its stream): complete
    /// lines are applied (invalid UTF-8 in a line is a parse error), a partial line waits for
    /// the next call. Returns every output, in order.
    pub fn handle_bytes(&self, connection: ConnId, bytes: Vec<u8>) -> Result<Vec<Output>, AcpError> {
        guard(|| {
            let agent = &mut lock(&self.inner).agent;
            agent.receive_bytes(&connection, &bytes);
            AgentCore::drained(agent)
        })
    }

    /// `connection`'s stream ended: a last line without a newline is applied. Returns every
    /// output, in order. Then call [`AgentCore::detach_and_drain`].
    pub fn handle_end(&self, connection: ConnId) -> Result<Vec<Output>, AcpError> {
        guard(|| {
            let agent = &mut lock(&self.inner).agent;
            agent.receive_end(&connection);
            AgentCore::drained(agent)
        })
    }

    /// Asks the session's controllers for permission (R-PERM-2): the core sends
    /// `session/request_permission` and returns its id with the outputs; the answer arrives
    /// later as a `PermissionAnswered` action with that id.
    pub fn request_permission(&self, session_id: String, ask: PermissionAsk) -> Result<PermissionRequestSent, AcpError> {
        guard(|| {
            let agent = &mut lock(&self.inner).agent;
            let request_id = agent.request_permission(&SessionId(session_id), ask)?;
            Ok(PermissionRequestSent { request_id, outputs: AgentCore::drained(agent)? })
        })
    }

    /// Applies a runtime event of a session; returns every output it caused.
    pub fn runtime_event(&self, session_id: String, event: RuntimeEvent) -> Result<Vec<Output>, AcpError> {
        guard(|| {
            let agent = &mut lock(&self.inner).agent;
            agent.runtime_event(&SessionId(session_id), event)?;
            AgentCore::drained(agent)
        })
    }

    /// A fresh id for an agent message or thought.
    pub fn mint_agent_message_id(&self) -> Result<MessageId, AcpError> {
        guard(|| Ok(lock(&self.inner).agent.mint_agent_message_id()))
    }

    /// The session's history (R-REPLAY-1), as stored.
    pub fn history(&self, session_id: String) -> Result<Vec<HistoryEntry>, AcpError> {
        guard(|| Ok(lock(&self.inner).agent.history(&SessionId(session_id))?))
    }

    /// The session's pending injects in delivery order.
    pub fn pending(&self, session_id: String) -> Result<Vec<PendingInject>, AcpError> {
        guard(|| Ok(lock(&self.inner).agent.pending(&SessionId(session_id))))
    }

    /// The live state as JSON, for [`AgentCore::restore`] (drain first).
    pub fn snapshot(&self) -> Result<String, AcpError> {
        guard(|| Ok(lock(&self.inner).agent.snapshot()))
    }
}
