//! The agent's live state as data: what a snapshot holds and a durable store reloads.

use std::collections::{BTreeMap, BTreeSet};

use acp_inject_wire::{MessageId, RequestId, SessionId};
use serde::{Deserialize, Serialize};

use super::pending::PendingQueue;
use super::record::SessionRecord;
use super::{ConnId, ConnectionRole, Turn};

/// The version of [`LiveState`] this build writes and reads.
pub const LIVE_STATE_VERSION: u32 = 2;

/// One request the agent sent and still waits on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenRequest {
    /// Its id (unique among the agent's open requests).
    pub id: RequestId,
    /// The session it belongs to.
    pub session: SessionId,
    /// The connections it was sent to; the first answer from any of them counts.
    pub to: BTreeSet<ConnId>,
    /// The request as sent, for a controller that resumes the session while it is open.
    #[serde(default)]
    pub line: String,
}

/// The id counters: session and message ids are minted from them and never reused (R-ID-1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Counters {
    /// The next session ordinal (`sess_N`).
    pub next_session: u64,
    /// The next message ordinal (`msg_N`), agent-wide.
    pub next_message: u64,
    /// The next ordinal of the agent's own requests to clients (`permission-N`), agent-wide,
    /// so an id is never reused, not even by a later process on the same store (R-PERM-2).
    #[serde(default = "one")]
    pub next_request: u64,
}

fn one() -> u64 {
    1
}

impl Default for Counters {
    fn default() -> Self {
        Counters { next_session: 1, next_message: 1, next_request: 1 }
    }
}

/// A connection's standing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Connection {
    /// Controller or observer (R-ORDER-2).
    pub role: ConnectionRole,
    /// It opted into the pending-list extension at `initialize`.
    #[serde(default)]
    pub pending_updates: bool,
    /// Its `initialize` succeeded: it may send other requests (R-INIT-2). A snapshot written
    /// before this member existed held only connections that were serving.
    #[serde(default = "initialized_by_default")]
    pub initialized: bool,
    /// It logged in (`auth/login` with a method the host accepted, R-AUTH-2).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub authenticated: bool,
    /// Who it speaks for, as the host's authentication named them: it sees the sessions that
    /// principal created and no other (R-TENANT-1). `None`: no principal (stdio, a listener
    /// with one shared token), which sees the sessions created without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
}

impl Connection {
    /// A connection in `role`, not yet initialized, with no principal.
    pub fn new(role: ConnectionRole) -> Connection {
        Connection { role, pending_updates: false, initialized: false, authenticated: false, principal: None }
    }
}

fn initialized_by_default() -> bool {
    true
}

/// One live session.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LiveSession {
    /// Its record.
    pub record: SessionRecord,
    /// Its turn.
    pub turn: Turn,
    /// Its pending injects and remembered ids.
    pub pending: PendingQueue,
    /// Connections attached to it (only a snapshot has these; a restarted process has none).
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub attached: BTreeSet<ConnId>,
    /// Prompts held in the queue whose receipt is owed, by message id (only a snapshot has
    /// these: after a restart their requests are gone, and they are delivered as queued).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub held: BTreeMap<MessageId, HeldPrompt>,
}

/// A `session/prompt` received during a turn and held in the queue (R-PROMPT-2): who asked, so
/// the insertion receipt (or `-32800`) answers that request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HeldPrompt {
    /// The asking connection.
    pub conn: ConnId,
    /// The request to answer.
    pub request: acp_inject_wire::RequestId,
    /// Retries of the same submission (its idempotency key, R-IDEM-2) that arrived while it
    /// was held: each is answered as the first request is.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retries: Vec<(ConnId, acp_inject_wire::RequestId)>,
}

impl HeldPrompt {
    /// A held prompt with one asking request.
    pub fn new(conn: ConnId, request: acp_inject_wire::RequestId) -> HeldPrompt {
        HeldPrompt { conn, request, retries: Vec::new() }
    }

    /// The most retries kept waiting for one held prompt: past it the oldest retry is let go.
    pub const MAX_RETRIES: usize = 7;

    /// Adds a retry of the same submission; past [`HeldPrompt::MAX_RETRIES`] the oldest retry
    /// is returned, no longer waiting (the caller answers it `-32800`), so a client that
    /// retries without end cannot grow the agent's memory.
    pub(crate) fn retry(&mut self, conn: ConnId, request: acp_inject_wire::RequestId) -> Option<(ConnId, acp_inject_wire::RequestId)> {
        self.retries.push((conn, request));
        (self.retries.len() > Self::MAX_RETRIES).then(|| self.retries.remove(0))
    }

    /// Every request owed the answer, the first one first.
    pub(crate) fn waiters(&self) -> impl Iterator<Item = (&ConnId, &acp_inject_wire::RequestId)> {
        std::iter::once((&self.conn, &self.request)).chain(self.retries.iter().map(|(c, r)| (c, r)))
    }
}

/// Everything an agent holds in memory, as data.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LiveState {
    /// [`LIVE_STATE_VERSION`].
    pub version: u32,
    /// The id counters.
    pub counters: Counters,
    /// The live sessions.
    pub sessions: Vec<LiveSession>,
    /// Known connections (only a snapshot has these).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub connections: BTreeMap<ConnId, Connection>,
    /// The agent's open requests to clients (only a snapshot has these: a process restarted
    /// from a store holds none, their connections being gone).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requests: Vec<OpenRequest>,
    /// The connections that negotiated ACP v1, with what their translation keeps (only a
    /// snapshot has these).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub v1: BTreeMap<ConnId, super::V1Connection>,
}

/// A snapshot or stored state the core cannot continue from.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RestoreError {
    /// Not a snapshot (malformed JSON, wrong shape).
    #[error("not an agent snapshot: {0}")]
    Malformed(String),
    /// Written by a version whose format this build does not read.
    #[error("unsupported snapshot version {found} (this build reads version {LIVE_STATE_VERSION})")]
    Version {
        /// The version found.
        found: u64,
    },
}

impl LiveState {
    /// Reads a snapshot, checking its version first so an old one gets a clear error.
    pub fn from_json(json: &str) -> Result<LiveState, RestoreError> {
        #[derive(Deserialize)]
        struct Versioned {
            version: Option<u64>,
        }
        let v: Versioned = serde_json::from_str(json).map_err(|e| RestoreError::Malformed(e.to_string()))?;
        match v.version {
            Some(found) if found == u64::from(LIVE_STATE_VERSION) => {}
            Some(found) => return Err(RestoreError::Version { found }),
            None => return Err(RestoreError::Malformed("missing `version`".into())),
        }
        // The pending queues rebuild their index as they deserialise.
        serde_json::from_str(json).map_err(|e| RestoreError::Malformed(e.to_string()))
    }

    /// The snapshot as JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| unreachable!("the live state always serialises: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_prompt_keeps_a_bounded_number_of_retries() {
        let conn = ConnId::from("c1");
        let mut held = HeldPrompt::new(conn.clone(), acp_inject_wire::RequestId::Number(0));
        for i in 1..=HeldPrompt::MAX_RETRIES as i64 {
            assert_eq!(held.retry(conn.clone(), acp_inject_wire::RequestId::Number(i)), None);
        }
        let let_go = held.retry(conn.clone(), acp_inject_wire::RequestId::Number(99));
        assert_eq!(let_go, Some((conn, acp_inject_wire::RequestId::Number(1))), "the oldest retry goes");
        let waiting: Vec<_> = held.waiters().map(|(_, r)| r.clone()).collect();
        assert_eq!(waiting.len(), HeldPrompt::MAX_RETRIES + 1);
        assert_eq!(waiting.first(), Some(&acp_inject_wire::RequestId::Number(0)), "the first request stays");
        assert_eq!(waiting.last(), Some(&acp_inject_wire::RequestId::Number(99)));
    }
}
