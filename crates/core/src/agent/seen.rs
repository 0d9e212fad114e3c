//! Which sessions a batch looked at or changed ([`Seen`]), noted as the core touches them.
//!
//! A host whose store commits several batches at once (a database with a connection per group
//! of sessions) releases a batch's outputs only after the commits of every earlier batch that
//! touched the same sessions: an answer about a session (its status, a pending list, a turn's
//! next chunk) never shows a change that is not stored yet, while a batch about other sessions
//! goes out as soon as its own commit is done. [`super::Agent::drain_submit`] turns the set into
//! the store's lanes, returned with the outputs.

use std::cell::RefCell;
use std::collections::{btree_map, BTreeMap, BTreeSet};

use acp_inject_wire::SessionId;

use super::Session;

/// The sessions one batch looked at or changed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Seen {
    /// These sessions (none: the batch is about no session, `initialize` say).
    Sessions(BTreeSet<SessionId>),
    /// Possibly any session: the batch walked them all.
    #[default]
    All,
}

impl Seen {
    /// No session.
    pub fn none() -> Seen {
        Seen::Sessions(BTreeSet::new())
    }

    fn add(&mut self, id: &SessionId) {
        if let Seen::Sessions(set) = self {
            if !set.contains(id) {
                set.insert(id.clone());
            }
        }
    }
}

/// The live sessions by id, noting each one the batch being handled reaches.
pub(super) struct Sessions {
    map: BTreeMap<SessionId, Session>,
    seen: RefCell<Seen>,
}

impl Sessions {
    pub(super) fn new() -> Sessions {
        Sessions { map: BTreeMap::new(), seen: RefCell::new(Seen::none()) }
    }

    /// Notes `id` as touched by the batch.
    pub(super) fn mark(&self, id: &SessionId) {
        self.seen.borrow_mut().add(id);
    }

    /// What the batch touched since the last call; starts the next batch's set.
    pub(super) fn take_seen(&mut self) -> Seen {
        std::mem::replace(self.seen.get_mut(), Seen::none())
    }

    pub(super) fn get(&self, id: &SessionId) -> Option<&Session> {
        self.mark(id);
        self.map.get(id)
    }

    pub(super) fn get_mut(&mut self, id: &SessionId) -> Option<&mut Session> {
        self.seen.get_mut().add(id);
        self.map.get_mut(id)
    }

    pub(super) fn contains_key(&self, id: &SessionId) -> bool {
        self.mark(id);
        self.map.contains_key(id)
    }

    pub(super) fn insert(&mut self, id: SessionId, session: Session) -> Option<Session> {
        self.seen.get_mut().add(&id);
        self.map.insert(id, session)
    }

    pub(super) fn remove(&mut self, id: &SessionId) -> Option<Session> {
        self.seen.get_mut().add(id);
        self.map.remove(id)
    }

    pub(super) fn entry(&mut self, id: SessionId) -> btree_map::Entry<'_, SessionId, Session> {
        self.seen.get_mut().add(&id);
        self.map.entry(id)
    }

    /// How many are live (a count: no session's state).
    pub(super) fn len(&self) -> usize {
        self.map.len()
    }

    /// Their ids (ids only: no session's state).
    pub(super) fn ids(&self) -> impl Iterator<Item = &SessionId> {
        self.map.keys()
    }

    /// Every session, each one noted.
    pub(super) fn values(&self) -> impl Iterator<Item = &Session> {
        *self.seen.borrow_mut() = Seen::All;
        self.map.values()
    }

    /// Every session, without noting them: the caller notes those whose state it uses or
    /// changes ([`Sessions::mark`]).
    pub(super) fn iter_unnoted(&self) -> btree_map::Iter<'_, SessionId, Session> {
        self.map.iter()
    }

    /// Every session, mutably, without noting them (as [`Sessions::iter_unnoted`]).
    pub(super) fn iter_mut_unnoted(&mut self) -> btree_map::IterMut<'_, SessionId, Session> {
        self.map.iter_mut()
    }
}
