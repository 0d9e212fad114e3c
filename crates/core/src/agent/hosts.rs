//! Several agent hosts on one shared store ([`Store::id_scope`] is `Some`): a host serves a
//! session only while it holds the session's lease, takes a session over when a client resumes
//! it here, and lets go of a session nobody here uses, so a client that reconnects to another
//! host can have it at once.
//!
//! The store does the locking (a lease with a fencing epoch per session, checked on every
//! commit); the core decides when to take and when to let go:
//! - **take** on `session/resume` and `session/close` of a session not in memory. A turn the
//!   previous holder left running was cut off with it: it ends here as `cancelled` (no client
//!   sees that end: none is attached yet), and what it left pending opens the next turn right
//!   after the answer, exactly as after a restart on one host (R-DELIV-2).
//! - **let go** when the session is idle, holds nothing pending and has no connection
//!   attached and no open request to a client: after a detach, and after a turn ends.
//! - A session another host holds is refused with [`SESSION_HELD_ELSEWHERE`], naming the
//!   holder and when its lease runs out.

use acp_inject_wire::{ErrorObject, SessionId};
use serde::Serialize;

use super::output::{Output, RuntimeAction};
use super::store::{Acquired, Change, StoreError};
use super::{Agent, Session, Turn};

/// The error code of a request for a session another host serves (a JSON-RPC server error;
/// `data` has `sessionId`, `holder` and `retryAfterMs`). Resume again after `retryAfterMs`, on
/// this host or on the holder.
pub const SESSION_HELD_ELSEWHERE: i64 = -32030;

impl Agent {
    /// Takes `session` for this host if it is not in memory and the store is shared. Returns
    /// whether the previous holder left a turn running (cut off: the caller opens the next
    /// turn after its answer, [`Agent::continue_interrupted`]).
    pub(super) fn take_over(&mut self, session: &SessionId) -> Result<bool, ErrorObject> {
        if self.scope.is_empty() || self.sessions.contains_key(session) {
            return Ok(false);
        }
        match self.store.acquire(session) {
            Ok(Acquired::Unshared | Acquired::Taken(None)) => Ok(false),
            Ok(Acquired::Taken(Some(live))) => {
                let live = *live;
                let interrupted = live.turn.in_progress();
                let id = live.record.session_id.clone();
                let session = Session {
                    record: live.record,
                    turn: Turn::Idle,
                    pending: live.pending,
                    attached: Default::default(),
                    held: Default::default(),
                    unobserved: interrupted,
                };
                if interrupted {
                    self.store.record(Change::Turn { session: &id, turn: &Turn::Idle });
                }
                self.sessions.insert(id, session);
                Ok(interrupted)
            }
            Ok(Acquired::Held { holder, retry_after_ms }) => Err(held_elsewhere(session, &holder, retry_after_ms)),
            Err(e) => Err(ErrorObject::with_detail(acp_inject_wire::errors::INTERNAL_ERROR, &e.to_string())),
        }
    }

    /// After taking over a session whose turn was cut off: its pending injects open the next
    /// turn (steers first, then what the queue policy allows), as the outputs to send after
    /// the answer.
    pub(super) fn continue_interrupted(&mut self, session: &SessionId) -> Vec<Output> {
        let mark = self.out.len();
        self.open_next_turn(session);
        self.out.drain(mark..).collect()
    }

    /// After [`Agent::take_over`] of a session that did not come into memory (closed and not
    /// reopened, or unknown): the lease taken goes back at once.
    pub(super) fn let_go_if_absent(&mut self, session: &SessionId) {
        if !self.scope.is_empty() && !self.sessions.contains_key(session) {
            self.store.release(session);
        }
    }

    /// Lets go of `session` when this host no longer needs it in memory: a shared store, idle,
    /// nothing pending or held, nobody attached, no open request to a client. The runtime is
    /// told to free it ([`RuntimeAction::Closed`] with nothing dropped); the session stays
    /// live in the store for whichever host a client resumes it on next.
    pub(super) fn unload_if_unattended(&mut self, session: &SessionId) {
        if self.scope.is_empty() || self.poisoned {
            return;
        }
        let Some(s) = self.sessions.get(session) else { return };
        let busy = !s.attached.is_empty() || s.turn != Turn::Idle || !s.pending.is_empty() || !s.held.is_empty();
        if busy || self.outgoing.has_open_for(session) {
            return;
        }
        self.sessions.remove(session);
        self.store.release(session);
        self.out.push_back(Output::action(session, RuntimeAction::Closed { dropped: Vec::new(), turn_cancelled: false }));
    }
}

/// The `data` of a [`SESSION_HELD_ELSEWHERE`] error.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct HeldElsewhere<'a> {
    session_id: &'a str,
    holder: &'a str,
    retry_after_ms: u64,
    detail: String,
}

fn held_elsewhere(session: &SessionId, holder: &str, retry_after_ms: u64) -> ErrorObject {
    let mut e = ErrorObject::new(SESSION_HELD_ELSEWHERE);
    e.message = "Session served by another host".to_owned();
    let detail = format!("session {session:?} is served by host {holder:?}; its lease runs out in {retry_after_ms} ms unless renewed");
    e.data = serde_json::to_value(HeldElsewhere { session_id: session, holder, retry_after_ms, detail }).ok();
    e
}

impl StoreError {
    /// This host lost a session to another host ([`StoreError::LeaseLost`]).
    pub fn is_lease_lost(&self) -> bool {
        matches!(self, StoreError::LeaseLost { .. })
    }
}
