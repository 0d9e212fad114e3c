//! `AgentCore`: the sans-IO agent core for hosts that run their own I/O (and the conformance
//! drivers of every language). One lock per call; every call returns what it caused (a list
//! of `Output`, encoded: values cross in the boundary encoding, `crate::codec`).
//!
//! A host moves bytes and runs the turns; the core speaks the protocol: it frames each
//! connection's bytes ([`AgentCore::handle_bytes`]), answers every request, and sends and
//! routes the agent's own requests to the client ([`AgentCore::request_permission`], answered
//! by a `PermissionAnswered` action).

use std::sync::{Arc, Mutex};

use acp_inject_core::agent::{Agent, AgentConfig, ConnId, ConnectionRole, MemoryStore, Output, PermissionAsk, RuntimeEvent};
use acp_inject_core::wire::{ErrorObject, RequestId, SessionId, TurnFailure};

use crate::{arg, guard, lock, out, AcpError, FfiError};

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

    fn drained(agent: &mut Agent) -> Result<Vec<u8>, AcpError> {
        Ok(out(&agent.drain()?))
    }

    fn call<T>(&self, f: impl FnOnce(&mut Agent) -> Result<T, AcpError>) -> Result<T, FfiError> {
        guard(|| f(&mut lock(&self.inner).agent))
    }
}

fn config(bytes: &[u8]) -> Result<AgentConfig, AcpError> {
    arg(bytes, "config")
}

#[uniffi::export]
impl AgentCore {
    /// An agent keeping sessions in memory, configured by `config` (an `AgentConfig`).
    #[uniffi::constructor]
    pub fn new(config: Vec<u8>) -> Result<Arc<Self>, FfiError> {
        guard(|| Ok(AgentCore::wrap(Agent::new(self::config(&config)?)?)))
    }

    /// An agent on a store at `path`: a SQLite file (created if missing), or a `postgres://`
    /// URL several agent hosts share. Its sessions outlive the process, and a new process
    /// continues from them. On a shared store the host calls `renew_leases` every
    /// `renew_every_ms`.
    #[uniffi::constructor]
    pub fn open(config: Vec<u8>, path: String) -> Result<Arc<Self>, FfiError> {
        guard(|| {
            let config = self::config(&config)?;
            let store = acp_inject_store::open(&path, config.policy.remember_ids)?;
            Ok(AgentCore::wrap(Agent::with_store(config, store)?))
        })
    }

    /// An agent continuing from [`AgentCore::snapshot`] (history starts empty: it lives in a
    /// store, not in the snapshot).
    #[uniffi::constructor]
    pub fn restore(config: Vec<u8>, snapshot: String) -> Result<Arc<Self>, FfiError> {
        guard(|| Ok(AgentCore::wrap(Agent::restore(self::config(&config)?, &snapshot, Box::new(MemoryStore::new()))?)))
    }

    /// Registers a connection with a role (a `ConnectionRole`).
    pub fn attach(&self, connection: String, role: Vec<u8>) -> Result<(), FfiError> {
        self.call(|agent| {
            agent.attach(&ConnId::from(connection), arg::<ConnectionRole>(&role, "role")?);
            Ok(())
        })
    }

    /// Registers a connection with a role (a `ConnectionRole`), speaking for `principal`: it
    /// sees the sessions that principal created and no other (R-TENANT-1).
    pub fn attach_as(&self, connection: String, role: Vec<u8>, principal: Option<String>) -> Result<(), FfiError> {
        self.call(|agent| {
            agent.attach_as(&ConnId::from(connection), arg::<ConnectionRole>(&role, "role")?, principal);
            Ok(())
        })
    }

    /// A connection went away: it is detached from every session, and the agent's requests only
    /// it could answer are answered `cancelled` (drain them with the next call's outputs, or
    /// call [`AgentCore::detach_and_drain`]).
    pub fn detach(&self, connection: String) -> Result<(), FfiError> {
        self.call(|agent| {
            agent.detach(&ConnId::from(connection));
            Ok(())
        })
    }

    /// Like [`AgentCore::detach`], returning the outputs it caused.
    pub fn detach_and_drain(&self, connection: String) -> Result<Vec<u8>, FfiError> {
        self.call(|agent| {
            agent.detach(&ConnId::from(connection));
            AgentCore::drained(agent)
        })
    }

    /// Attaches a connection to a live session; `false` when the session is not live.
    pub fn attach_to_session(&self, connection: String, session_id: String) -> Result<bool, FfiError> {
        self.call(|agent| Ok(agent.attach_to_session(&ConnId::from(connection), &SessionId(session_id)).is_ok()))
    }

    /// The connections attached to a session.
    pub fn attached(&self, session_id: String) -> Result<Vec<String>, FfiError> {
        self.call(|agent| Ok(agent.attached(&SessionId(session_id)).into_iter().map(String::from).collect()))
    }

    /// Creates an idle session with a chosen id; `false` when the id is taken.
    pub fn create_session(&self, session_id: String, cwd: String) -> Result<bool, FfiError> {
        self.call(|agent| Ok(agent.create_session(&SessionId(session_id), &cwd).is_ok()))
    }

    /// Forgets a session and its history.
    pub fn forget_session(&self, session_id: String) -> Result<(), FfiError> {
        self.call(|agent| {
            agent.forget_session(&SessionId(session_id));
            Ok(())
        })
    }

    /// Whether the agent holds the session live (R-STATUS-1).
    pub fn is_live(&self, session_id: String) -> Result<bool, FfiError> {
        self.call(|agent| Ok(agent.is_live(&SessionId(session_id))))
    }

    /// On a store several hosts share: how often to call [`AgentCore::renew_leases`], in
    /// milliseconds; `None` otherwise.
    pub fn renew_every_ms(&self) -> Result<Option<u64>, FfiError> {
        self.call(|agent| Ok(agent.renew_every().map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))))
    }

    /// On a store several hosts share: extends this host's leases. An error means another
    /// host took one of its sessions over: stop serving, and let clients resume elsewhere.
    pub fn renew_leases(&self) -> Result<(), FfiError> {
        self.call(|agent| Ok(agent.renew_leases()?))
    }

    /// The live sessions.
    pub fn session_ids(&self) -> Result<Vec<String>, FfiError> {
        self.call(|agent| Ok(agent.session_ids().into_iter().map(String::from).collect()))
    }

    /// A live session's turn (an optional `TurnPhase`).
    pub fn turn(&self, session_id: String) -> Result<Vec<u8>, FfiError> {
        self.call(|agent| Ok(out(&agent.turn(&SessionId(session_id)).copied())))
    }

    /// Applies one line from `connection`; returns every output it caused, in order.
    pub fn handle_line(&self, connection: String, line: String) -> Result<Vec<u8>, FfiError> {
        self.call(|agent| {
            agent.handle_line(&ConnId::from(connection), &line);
            AgentCore::drained(agent)
        })
    }

    /// Applies newline-separated lines given as one string (one crossing for many lines);
    /// returns every output, in order.
    pub fn handle_text(&self, connection: String, lines: String) -> Result<Vec<u8>, FfiError> {
        self.call(|agent| {
            agent.handle_text(&ConnId::from(connection), &lines);
            AgentCore::drained(agent)
        })
    }

    /// Feeds raw bytes from `connection` in any chunking (a read of its stream): complete
    /// lines are applied (invalid UTF-8 in a line is a parse error), a partial line waits for
    /// the next call. Returns every output, in order.
    pub fn handle_bytes(&self, connection: String, bytes: &[u8]) -> Result<Vec<u8>, FfiError> {
        self.call(|agent| {
            agent.receive_bytes(&ConnId::from(connection), bytes);
            AgentCore::drained(agent)
        })
    }

    /// `connection`'s stream ended: a last line without a newline is applied. Returns every
    /// output, in order. Then call [`AgentCore::detach_and_drain`].
    pub fn handle_end(&self, connection: String) -> Result<Vec<u8>, FfiError> {
        self.call(|agent| {
            agent.receive_end(&ConnId::from(connection));
            AgentCore::drained(agent)
        })
    }

    /// Asks the session's controllers for permission (R-PERM-2): the core sends
    /// `session/request_permission` and returns its id with the outputs; the answer arrives
    /// later as a `PermissionAnswered` action with that id. `ask` is a `PermissionAsk`; the
    /// result a `PermissionRequestSent`.
    pub fn request_permission(&self, session_id: String, ask: Vec<u8>) -> Result<Vec<u8>, FfiError> {
        self.call(|agent| {
            let request_id = agent.request_permission(&SessionId(session_id), arg::<PermissionAsk>(&ask, "ask")?)?;
            Ok(out(&PermissionRequestSent { request_id, outputs: agent.drain()? }))
        })
    }

    /// Applies a runtime event (a `RuntimeEvent`) of a session; returns every output it caused.
    pub fn runtime_event(&self, session_id: String, event: Vec<u8>) -> Result<Vec<u8>, FfiError> {
        self.call(|agent| {
            agent.runtime_event(&SessionId(session_id), arg::<RuntimeEvent>(&event, "event")?)?;
            AgentCore::drained(agent)
        })
    }

    /// Answers the host call `id` (an `Output.Call`) with `result` (encoded JSON; for an
    /// `Authenticate` call any value: the connection is logged in); returns the outputs.
    /// `AcpError.Host` (`UnknownRequest`) when the call is not open.
    pub fn answer_call(&self, id: u64, result: Vec<u8>) -> Result<Vec<u8>, FfiError> {
        self.call(|agent| {
            agent.answer_call(id, Ok(arg::<serde_json::Value>(&result, "result")?))?;
            AgentCore::drained(agent)
        })
    }

    /// Refuses the host call `id` with `error` (a `TurnFailure`: the JSON-RPC error the client
    /// gets, -32000 for credentials that do not check out, say); returns the outputs.
    pub fn refuse_call(&self, id: u64, error: Vec<u8>) -> Result<Vec<u8>, FfiError> {
        self.call(|agent| {
            let e = arg::<TurnFailure>(&error, "error")?;
            agent.answer_call(id, Err(ErrorObject { code: i64::from(e.code), message: e.message, data: e.data }))?;
            AgentCore::drained(agent)
        })
    }

    /// A fresh id for an agent message or thought.
    pub fn mint_agent_message_id(&self) -> Result<String, FfiError> {
        self.call(|agent| Ok(agent.mint_agent_message_id().0))
    }

    /// The session's history (R-REPLAY-1), as stored (a list of `HistoryEntry`).
    pub fn history(&self, session_id: String) -> Result<Vec<u8>, FfiError> {
        self.call(|agent| Ok(out(&agent.history(&SessionId(session_id))?)))
    }

    /// The session's pending injects in delivery order (a list of `PendingInject`).
    pub fn pending(&self, session_id: String) -> Result<Vec<u8>, FfiError> {
        self.call(|agent| Ok(out(&agent.pending(&SessionId(session_id)))))
    }

    /// The live state as JSON, for [`AgentCore::restore`] (drain first).
    pub fn snapshot(&self) -> Result<String, FfiError> {
        self.call(|agent| Ok(agent.snapshot()))
    }
}
