//! `AgentCore`: the sans-IO agent core for hosts that run their own I/O (and the conformance
//! drivers of every language). One lock per call; every call returns what it caused.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use acp_inject_core::agent::{Agent, AgentConfig, ConnectionRole, HistoryEntry, MemoryStore, Output, RuntimeEvent, Turn};
use acp_inject_core::wire::framing::{Framed, LineFramer};
use acp_inject_core::wire::{MessageId, PendingInject};

use crate::{guard, lock, AcpError};

struct Inner {
    agent: Agent,
    /// One framer per connection, for [`AgentCore::handle_bytes`].
    framers: HashMap<String, LineFramer>,
}

/// The agent-side core of one agent process (all its sessions), without I/O.
#[derive(uniffi::Object)]
pub struct AgentCore {
    inner: Mutex<Inner>,
}

impl AgentCore {
    fn wrap(agent: Agent) -> Arc<AgentCore> {
        Arc::new(AgentCore { inner: Mutex::new(Inner { agent, framers: HashMap::new() }) })
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

    /// An agent on a SQLite store at `path` (created if missing): its sessions outlive the
    /// process, and a new process continues from them.
    #[uniffi::constructor]
    pub fn open(config: AgentConfig, path: String) -> Result<Arc<Self>, AcpError> {
        guard(|| {
            let store = acp_inject_store::SqliteStore::open(&path)?.with_remember_ids(config.policy.remember_ids);
            Ok(AgentCore::wrap(Agent::with_store(config, Box::new(store))?))
        })
    }

    /// An agent continuing from [`AgentCore::snapshot`] (history starts empty: it lives in a
    /// store, not in the snapshot).
    #[uniffi::constructor]
    pub fn restore(config: AgentConfig, snapshot: String) -> Result<Arc<Self>, AcpError> {
        guard(|| Ok(AgentCore::wrap(Agent::restore(config, &snapshot, Box::new(MemoryStore::new()))?)))
    }

    /// Registers a connection with a role.
    pub fn attach(&self, connection: String, role: ConnectionRole) -> Result<(), AcpError> {
        guard(|| {
            lock(&self.inner).agent.attach(&connection, role);
            Ok(())
        })
    }

    /// A connection went away: it is detached from every session.
    pub fn detach(&self, connection: String) -> Result<(), AcpError> {
        guard(|| {
            let mut inner = lock(&self.inner);
            inner.agent.detach(&connection);
            inner.framers.remove(&connection);
            Ok(())
        })
    }

    /// Attaches a connection to a live session; `false` when the session is not live.
    pub fn attach_to_session(&self, connection: String, session_id: String) -> Result<bool, AcpError> {
        guard(|| Ok(lock(&self.inner).agent.attach_to_session(&connection, &session_id)))
    }

    /// The connections attached to a session.
    pub fn attached(&self, session_id: String) -> Result<Vec<String>, AcpError> {
        guard(|| Ok(lock(&self.inner).agent.attached(&session_id)))
    }

    /// Creates an idle session with a chosen id; `false` when the id is taken.
    pub fn create_session(&self, session_id: String, cwd: String) -> Result<bool, AcpError> {
        guard(|| Ok(lock(&self.inner).agent.create_session(&session_id, &cwd)))
    }

    /// Forgets a session and its history.
    pub fn forget_session(&self, session_id: String) -> Result<(), AcpError> {
        guard(|| {
            lock(&self.inner).agent.forget_session(&session_id);
            Ok(())
        })
    }

    /// Whether the agent holds the session live (R-STATUS-1).
    pub fn is_live(&self, session_id: String) -> Result<bool, AcpError> {
        guard(|| Ok(lock(&self.inner).agent.is_live(&session_id)))
    }

    /// The live sessions.
    pub fn session_ids(&self) -> Result<Vec<String>, AcpError> {
        guard(|| Ok(lock(&self.inner).agent.session_ids()))
    }

    /// A live session's turn.
    pub fn turn(&self, session_id: String) -> Result<Option<Turn>, AcpError> {
        guard(|| Ok(lock(&self.inner).agent.turn(&session_id).copied()))
    }

    /// Applies one line from `connection`; returns every output it caused, in order.
    pub fn handle_line(&self, connection: String, line: String) -> Result<Vec<Output>, AcpError> {
        guard(|| {
            let agent = &mut lock(&self.inner).agent;
            agent.handle_line(&connection, &line);
            AgentCore::drained(agent)
        })
    }

    /// Applies newline-separated lines given as one string (one crossing for many lines);
    /// returns every output, in order.
    pub fn handle_text(&self, connection: String, lines: String) -> Result<Vec<Output>, AcpError> {
        guard(|| {
            let mut inner = lock(&self.inner);
            let Inner { agent, framers } = &mut *inner;
            let limit = agent.config().policy.line_limit();
            let mut framer = LineFramer::new(limit);
            let mut feed = |f: Framed<'_>| match f {
                Framed::Line(l) => agent.handle_bytes(&connection, l),
                Framed::Oversized { len } => agent.oversized_line(&connection, len),
            };
            framer.push(lines.as_bytes(), &mut feed);
            framer.finish(&mut feed);
            let _ = framers;
            AgentCore::drained(agent)
        })
    }

    /// Feeds raw bytes from `connection` in any chunking (a read of its stream): complete
    /// lines are applied (invalid UTF-8 in a line is a parse error), a partial line waits for
    /// the next call. Returns every output, in order.
    pub fn handle_bytes(&self, connection: String, bytes: Vec<u8>) -> Result<Vec<Output>, AcpError> {
        guard(|| {
            let mut inner = lock(&self.inner);
            let Inner { agent, framers } = &mut *inner;
            let limit = agent.config().policy.line_limit();
            let framer = framers.entry(connection.clone()).or_insert_with(|| LineFramer::new(limit));
            framer.push(&bytes, |f| match f {
                Framed::Line(l) => agent.handle_bytes(&connection, l),
                Framed::Oversized { len } => agent.oversized_line(&connection, len),
            });
            AgentCore::drained(agent)
        })
    }

    /// Applies a runtime event of a session; returns every output it caused.
    pub fn runtime_event(&self, session_id: String, event: RuntimeEvent) -> Result<Vec<Output>, AcpError> {
        guard(|| {
            let agent = &mut lock(&self.inner).agent;
            agent.runtime_event(&session_id, event)?;
            AgentCore::drained(agent)
        })
    }

    /// A fresh id for an agent message or thought.
    pub fn mint_agent_message_id(&self) -> Result<MessageId, AcpError> {
        guard(|| Ok(lock(&self.inner).agent.mint_agent_message_id()))
    }

    /// The session's history (R-REPLAY-1), as stored.
    pub fn history(&self, session_id: String) -> Result<Vec<HistoryEntry>, AcpError> {
        guard(|| Ok(lock(&self.inner).agent.history(&session_id)?))
    }

    /// The session's pending injects in delivery order.
    pub fn pending(&self, session_id: String) -> Result<Vec<PendingInject>, AcpError> {
        guard(|| Ok(lock(&self.inner).agent.pending(&session_id)))
    }

    /// The live state as JSON, for [`AgentCore::restore`] (drain first).
    pub fn snapshot(&self) -> Result<String, AcpError> {
        guard(|| Ok(lock(&self.inner).agent.snapshot()))
    }
}
