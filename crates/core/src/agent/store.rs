//! Where sessions live beyond the current process: the [`Store`] the core reads and writes.
//!
//! The core records every durable change as it happens ([`Store::record`]), inside the batch
//! the host is handling; [`super::Agent::drain`] commits the batch before it releases a single
//! output, so no client ever sees an answer for a change that is not stored (R-DELIV-2).
//! `session/list` and `session/resume` (with replay) read through the store, so history does
//! not have to live in memory.
//!
//! [`MemoryStore`] is the default: session records and history in memory, nothing durable.
//! `acp-inject-store` provides SQLite. A host can plug in any other backend (a server
//! database for several agent machines) by implementing this trait. The trait is an injected
//! dependency, like a session cache in a TLS library: the core itself does no I/O.
//!
//! Why a trait object and not store writes as outputs the host applies: the core also *reads*
//! the store in the middle of handling a request (`session/list` pages, `session/resume`
//! replays history, `session/new` checks an id is not taken, a prompt for a closed session
//! looks its record up), and those answers are part of the same ordered batch of outputs.
//! With writes as outputs, every such read would have to become a request to the host and a
//! resumption of the half-handled message, turning each handler into a state machine for
//! no gain: the writes would still have to be applied, in order and atomically, before any
//! line of the batch is released (R-DELIV-2), which is exactly what [`Store::commit`] inside
//! [`super::Agent::drain`] guarantees without the host having to get it right. Hosts that
//! want the writes as data get them: [`Store::record`] receives each [`Change`] as a value.

use std::collections::{BTreeMap, HashMap};

use acp_inject_wire::{ContentBlock, InjectMode, MessageId, PendingInject, SessionId, SessionUpdate};
use serde::{Deserialize, Serialize};

use super::record::{HistoryEntry, SessionRecord};
use super::snapshot::{LiveSession, LiveState};
use super::ConnId;

/// A durable change, recorded by the core as it happens.
#[derive(Clone, Copy, Debug)]
pub enum Change<'a> {
    /// The id counters moved (session and message ids are never reused, R-ID-1).
    Counters {
        /// The next session ordinal.
        next_session: u64,
        /// The next message ordinal.
        next_message: u64,
        /// The next ordinal of the agent's own requests to clients (`permission-N`).
        next_request: u64,
    },
    /// A session was created.
    SessionCreated(&'a SessionRecord),
    /// A session's record changed (metadata, additional roots, MCP servers, closed, reopened).
    SessionUpdated(&'a SessionRecord),
    /// A session and its history are gone for good.
    SessionForgotten(&'a SessionId),
    /// A live session's turn changed (stored so a restart knows a turn was interrupted).
    Turn {
        /// The session.
        session: &'a SessionId,
        /// Its turn.
        turn: &'a super::Turn,
    },
    /// An inject was accepted into the pending queue.
    InjectAccepted {
        /// The session.
        session: &'a SessionId,
        /// Its mode.
        mode: InjectMode,
        /// The inject.
        pending: &'a super::pending::Pending,
    },
    /// A pending inject's content was replaced.
    InjectReplaced {
        /// The session.
        session: &'a SessionId,
        /// Its id.
        message_id: &'a MessageId,
        /// The new content.
        content: &'a [ContentBlock],
    },
    /// A pending inject was revoked (its id is a tombstone).
    InjectRevoked {
        /// The session.
        session: &'a SessionId,
        /// Its id.
        message_id: &'a MessageId,
    },
    /// A user message was delivered: its `user_message` was emitted (a prompt, or a pending
    /// inject, which leaves the queue).
    Delivered {
        /// The session.
        session: &'a SessionId,
        /// Its id.
        message_id: &'a MessageId,
        /// Its final content.
        content: &'a [ContentBlock],
        /// Who sent it.
        owner: &'a ConnId,
    },
    /// Pending injects were handed back to the host at close (R-CLOSE-1).
    InjectsDropped {
        /// The session.
        session: &'a SessionId,
        /// What was pending.
        dropped: &'a [PendingInject],
    },
    /// A prompt or inject carrying an idempotency key was accepted (R-IDEM-1): the key names
    /// its message from now on, for as long as the store keeps the session.
    KeyRecorded {
        /// The session (keys are scoped to it).
        session: &'a SessionId,
        /// The client's key.
        key: &'a str,
        /// The message it submitted.
        message_id: &'a MessageId,
    },
    /// A conversation update joins the history.
    History {
        /// The session.
        session: &'a SessionId,
        /// The update.
        update: &'a SessionUpdate,
    },
}

/// A store failure. The batch it happened in is not committed; the agent stops.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The backend failed (I/O, database error).
    #[error("store backend error: {0}")]
    Backend(String),
    /// The stored data cannot be used (corrupt, or written by an unsupported version).
    #[error("the stored state is unusable: {0}")]
    Corrupt(String),
    /// An earlier commit failed; the process must restart from the store.
    #[error("an earlier store commit failed; restart from the store")]
    Poisoned,
    /// A shared store: this host no longer holds a session it was serving (its lease expired
    /// while the host was paused or cut off, and another host took the session over). The
    /// batch is not committed; the host must stop serving, and its clients resume elsewhere.
    #[error("lost the lease on session {session:?}: another host serves it now")]
    LeaseLost {
        /// The session.
        session: SessionId,
    },
}

/// What [`Store::acquire`] found.
#[derive(Clone, Debug, PartialEq)]
pub enum Acquired {
    /// The store serves one agent process: the core's memory is the truth (the default).
    Unshared,
    /// This host holds the session now. With its live state as the previous holder left it
    /// (its turn may have been cut off there), or `None` when the session is not live (closed,
    /// or unknown to the store).
    Taken(Option<Box<LiveSession>>),
    /// Another host serves the session and its lease has not run out.
    Held {
        /// The host that holds it.
        holder: String,
        /// When its lease runs out unless renewed, in milliseconds from now.
        retry_after_ms: u64,
    },
}

/// One page of [`Store::list`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SessionPage {
    /// Newest first.
    pub sessions: Vec<SessionRecord>,
    /// More sessions follow.
    pub more: bool,
}

/// Told once a batch handed over with [`Store::submit`] is durable, or failed.
pub type Committed = Box<dyn FnOnce(Result<(), StoreError>) + Send>;

/// A set of a store's *lanes* (bit `i`: lane `i`, at most 64). A store that commits several
/// batches at once ([`Store::lanes`] above 1) keeps each session on one lane and commits each
/// lane's batches in order; batches on different lanes commit independently, so one that
/// waits on the database does not hold back the others.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Lanes(pub u64);

impl Lanes {
    /// No lane: a batch that needs to wait for no commit.
    pub const NONE: Lanes = Lanes(0);

    /// Every lane of a store with `n` of them.
    pub fn all(n: usize) -> Lanes {
        Lanes(if n >= 64 { u64::MAX } else { (1u64 << n) - 1 })
    }

    /// Whether the two sets share a lane.
    pub fn meets(self, other: Lanes) -> bool {
        self.0 & other.0 != 0
    }
}

impl std::ops::BitOr for Lanes {
    type Output = Lanes;
    fn bitor(self, other: Lanes) -> Lanes {
        Lanes(self.0 | other.0)
    }
}

/// Where the core keeps sessions, history and (for durable backends) live state.
pub trait Store: Send {
    /// Records one change of the batch being handled. Errors are kept and reported by
    /// [`Store::commit`], which then fails.
    fn record(&mut self, change: Change<'_>);

    /// Makes every change recorded since the last commit durable, in one transaction.
    fn commit(&mut self) -> Result<(), StoreError> {
        Ok(())
    }

    /// How many lanes the store commits on at once ([`Lanes`]); 1 (the default): one batch
    /// at a time, and [`Store::submit`] is [`Store::commit`].
    fn lanes(&self) -> usize {
        1
    }

    /// The lanes of the sessions `seen` names (every lane when it names them all).
    fn lanes_of(&self, seen: &super::Seen) -> Lanes {
        let _ = seen;
        Lanes::all(self.lanes())
    }

    /// Hands the batch recorded since the last commit over to be made durable, in one
    /// transaction, and returns the lanes it commits on; `done` is told when it is durable or
    /// failed (on any thread, possibly before this returns). Batches on one lane commit in the
    /// order they were handed over; a batch on several lanes commits after the earlier
    /// batches of each; once one fails, no batch handed over after it commits, nor a later
    /// batch of its lanes. Reads of a session
    /// ([`Store::session`], [`Store::history`], [`Store::message_for_key`]) see every batch
    /// handed over before them; [`Store::list`] may show only what is committed (never less
    /// than a client was told). `Err` (and `done` never told) when the batch fails before
    /// anything was sent, or an earlier one failed.
    fn submit(&mut self, done: Committed) -> Result<Lanes, StoreError> {
        let result = self.commit();
        done(result.clone());
        result.map(|()| Lanes::all(self.lanes()))
    }

    /// The sessions of `principal` (those created without one when `None`, R-TENANT-1)
    /// with an ordinal below `before` (all when `None`), newest first, optionally only those
    /// whose `cwd` equals `cwd`, at most `limit`.
    fn list(&self, cwd: Option<&str>, principal: Option<&str>, before: Option<u64>, limit: usize) -> Result<SessionPage, StoreError>;

    /// The record of any session the store knows.
    fn session(&self, session_id: &SessionId) -> Result<Option<SessionRecord>, StoreError>;

    /// A session's history, in order.
    fn history(&self, session_id: &SessionId) -> Result<Vec<HistoryEntry>, StoreError>;

    /// The message a prompt or inject with idempotency key `key` submitted to the session
    /// (R-IDEM-1), if one did: what [`Change::KeyRecorded`] recorded, the current batch's
    /// changes included. Keys live as long as the session's record and history.
    fn message_for_key(&self, session_id: &SessionId, key: &str) -> Result<Option<MessageId>, StoreError>;

    /// The live state to continue from (durable backends), or `None` to start fresh. A shared
    /// store returns its counters and no sessions: each is taken when a client resumes it
    /// ([`Store::acquire`]).
    fn load(&mut self) -> Result<Option<LiveState>, StoreError> {
        Ok(None)
    }

    /// A store several agent hosts share (one database behind several processes): the name
    /// that keeps the ids this host mints apart from every other host's (`sess_<scope>-N`,
    /// `msg_<scope>-N`, `permission-<scope>-N`). `None` (the default): the store serves one
    /// agent process, whose memory holds every live session.
    fn id_scope(&self) -> Option<&str> {
        None
    }

    /// Shared stores: how long a session stays this host's without a renewal. The host calls
    /// [`super::Agent::renew_leases`] several times within it.
    fn lease(&self) -> Option<std::time::Duration> {
        None
    }

    /// Shared stores: takes a session this host does not hold in memory before the core serves
    /// it (`session/resume`, `session/close`). Taking it is part of the batch being handled:
    /// the lease, and every later write for the session, commit with [`Store::commit`] only
    /// while this host still holds it.
    fn acquire(&mut self, _session_id: &SessionId) -> Result<Acquired, StoreError> {
        Ok(Acquired::Unshared)
    }

    /// Shared stores: this host stops serving a session (idle, nobody attached), so another
    /// host may take it at once. Part of the batch being handled.
    fn release(&mut self, _session_id: &SessionId) {}

    /// Shared stores: extends this host's leases (the host calls
    /// [`super::Agent::renew_leases`] well within the lease time). [`StoreError::LeaseLost`]
    /// when a session was taken over meanwhile.
    fn renew(&mut self) -> Result<(), StoreError> {
        Ok(())
    }
}

/// Session records and history in memory: listing and replay within one process.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryStore {
    records: BTreeMap<SessionId, SessionRecord>,
    history: HashMap<SessionId, Vec<HistoryEntry>>,
    /// Idempotency keys per session (R-IDEM-1).
    #[serde(default, skip_serializing_if = "HashMap::is_empty")]
    keys: HashMap<SessionId, HashMap<String, MessageId>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        MemoryStore::default()
    }
}

impl Store for MemoryStore {
    fn record(&mut self, change: Change<'_>) {
        match change {
            Change::SessionCreated(r) | Change::SessionUpdated(r) => {
                self.records.insert(r.session_id.clone(), r.clone());
            }
            Change::SessionForgotten(id) => {
                self.records.remove(id);
                self.history.remove(id);
                self.keys.remove(id);
            }
            Change::KeyRecorded { session, key, message_id } => {
                self.keys.entry(session.clone()).or_default().insert(key.to_owned(), message_id.clone());
            }
            Change::Delivered { session, message_id, content, .. } => {
                let entry = HistoryEntry::User { message_id: message_id.clone(), content: content.to_vec() };
                self.history.entry(session.clone()).or_default().push(entry);
            }
            Change::History { session, update } => {
                self.history.entry(session.clone()).or_default().push(HistoryEntry::Update { update: update.clone() });
            }
            // Live state is the agent's own memory here; a restart starts from nothing.
            Change::Counters { .. }
            | Change::Turn { .. }
            | Change::InjectAccepted { .. }
            | Change::InjectReplaced { .. }
            | Change::InjectRevoked { .. }
            | Change::InjectsDropped { .. } => {}
        }
    }

    fn list(&self, cwd: Option<&str>, principal: Option<&str>, before: Option<u64>, limit: usize) -> Result<SessionPage, StoreError> {
        let mut matching: Vec<&SessionRecord> = self
            .records
            .values()
            .filter(|r| cwd.is_none_or(|c| r.cwd == c) && r.principal.as_deref() == principal && before.is_none_or(|b| r.ordinal < b))
            .collect();
        matching.sort_by_key(|r| std::cmp::Reverse(r.ordinal));
        let more = matching.len() > limit;
        Ok(SessionPage { sessions: matching.into_iter().take(limit).cloned().collect(), more })
    }

    fn session(&self, session_id: &SessionId) -> Result<Option<SessionRecord>, StoreError> {
        Ok(self.records.get(session_id).cloned())
    }

    fn history(&self, session_id: &SessionId) -> Result<Vec<HistoryEntry>, StoreError> {
        Ok(self.history.get(session_id).cloned().unwrap_or_default())
    }

    fn message_for_key(&self, session_id: &SessionId, key: &str) -> Result<Option<MessageId>, StoreError> {
        Ok(self.keys.get(session_id).and_then(|keys| keys.get(key)).cloned())
    }
}
