//! One session's pending injects: a queue per mode that keeps arrival order, replacement in
//! place, and the bounded memory of ids that were revoked or delivered (tombstones).
//!
//! Pending injects are found by id in O(1) (a hash map from `messageId` to slot) and kept in
//! delivery order per mode in a linked list through a slab (a `Vec` whose freed slots are
//! reused: O(1) insert, remove and delivery), so no operation scans by `messageId`.

use std::collections::{BTreeMap, HashMap, VecDeque};

use acp_inject_wire::{ContentBlock, ErrorReason, InjectMode, MessageId, PendingInject};
use serde::{Deserialize, Serialize};

use super::config::RevokeReplace;
use super::ConnId;
use acp_inject_wire::ErrorObject;

/// An accepted inject not yet delivered (R-DELIV-1).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Pending {
    /// Its id, minted at accept time (R-ID-1).
    pub message_id: MessageId,
    /// The current content (a replace changes it, R-REPLACE-1).
    pub content: Vec<ContentBlock>,
    /// The connection that injected it (for the creator-only policy).
    pub owner: ConnId,
}

/// What became of an id the session no longer holds as pending.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fate {
    /// Revoked: a tombstone (R-REVOKE-1).
    Revoked,
    /// Its `user_message` was emitted.
    Delivered,
}

/// Ids that left the queue, remembered up to a bound, oldest forgotten first (R-REVOKE-2).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Remembered {
    fates: HashMap<String, (Fate, ConnId)>,
    order: VecDeque<String>,
}

impl Remembered {
    fn insert(&mut self, id: &str, fate: Fate, owner: ConnId, bound: usize) {
        if self.fates.insert(id.to_owned(), (fate, owner)).is_none() {
            self.order.push_back(id.to_owned());
        }
        while self.order.len() > bound {
            if let Some(old) = self.order.pop_front() {
                self.fates.remove(&old);
            }
        }
    }
}

/// No slot: the end of a lane.
const NIL: u32 = u32::MAX;

/// One pending inject in the slab, linked into its mode's lane.
#[derive(Clone, Debug)]
struct Slot {
    pending: Option<Pending>,
    mode: InjectMode,
    prev: u32,
    next: u32,
}

/// A mode's pending injects, first in first out, as a list through the slab.
#[derive(Clone, Copy, Debug)]
struct Lane {
    head: u32,
    tail: u32,
}

impl Default for Lane {
    fn default() -> Self {
        Lane { head: NIL, tail: NIL }
    }
}

/// The pending injects of one session. See the module docs.
///
/// The injects live in a slab (a `Vec` whose freed slots are reused) linked into one
/// first-in-first-out list per mode, with an index from id to slot: accept, revoke, replace
/// and delivery are O(1), and an inject costs its slot and its index entry, a few dozen bytes
/// beyond its id and content (see the `pending` bench of this crate).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(from = "QueueRepr", into = "QueueRepr")]
pub struct PendingQueue {
    slots: Vec<Slot>,
    free: Vec<u32>,
    steers: Lane,
    queued: Lane,
    /// Which slot each pending id is in.
    index: HashMap<String, u32>,
    remembered: Remembered,
}

/// The serialised form (live-state snapshots): each mode's injects by arrival number, and the
/// remembered ids.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct QueueRepr {
    next_seq: u64,
    steers: BTreeMap<u64, Pending>,
    queued: BTreeMap<u64, Pending>,
    remembered: Remembered,
}

impl From<QueueRepr> for PendingQueue {
    fn from(r: QueueRepr) -> Self {
        let mut q = PendingQueue { remembered: r.remembered, ..PendingQueue::default() };
        for (mode, lane) in [(InjectMode::Steer, r.steers), (InjectMode::Queue, r.queued)] {
            for pending in lane.into_values() {
                if !q.index.contains_key(&pending.message_id.0) {
                    q.push(mode, pending);
                }
            }
        }
        q
    }
}

impl From<PendingQueue> for QueueRepr {
    fn from(q: PendingQueue) -> Self {
        let mut next_seq = 0;
        let mut lane = |mode: InjectMode| -> BTreeMap<u64, Pending> {
            q.iter(mode)
                .map(|p| {
                    next_seq += 1;
                    (next_seq - 1, p.clone())
                })
                .collect()
        };
        let (steers, queued) = (lane(InjectMode::Steer), lane(InjectMode::Queue));
        QueueRepr { next_seq, steers, queued, remembered: q.remembered }
    }
}

impl PartialEq for PendingQueue {
    fn eq(&self, other: &Self) -> bool {
        self.list() == other.list()
            && self
                .iter(InjectMode::Steer)
                .chain(self.iter(InjectMode::Queue))
                .map(|p| &p.owner)
                .eq(other.iter(InjectMode::Steer).chain(other.iter(InjectMode::Queue)).map(|p| &p.owner))
            && self.remembered == other.remembered
    }
}

impl PendingQueue {
    /// Rebuilds a queue from stored parts (what a durable [`super::Store`] keeps, for
    /// [`super::Store::load`]): the pending steers and queued injects, each in arrival order,
    /// and the remembered ids (revoked or delivered) oldest first, with their owners.
    ///
    /// Give at most the agent's `remember_ids` remembered ids; any excess is kept only until
    /// the next id is remembered, which trims to the bound. An id given twice as pending is
    /// kept once (the first); a remembered id given twice keeps its first position and its
    /// last fate.
    pub fn from_parts(steers: Vec<Pending>, queued: Vec<Pending>, remembered: Vec<(String, Fate, ConnId)>) -> PendingQueue {
        let mut queue = PendingQueue::default();
        for (mode, lane) in [(InjectMode::Steer, steers), (InjectMode::Queue, queued)] {
            for pending in lane {
                if !queue.index.contains_key(&pending.message_id.0) {
                    queue.push(mode, pending);
                }
            }
        }
        for (id, fate, owner) in remembered {
            queue.remembered.insert(&id, fate, owner, usize::MAX);
        }
        queue
    }

    fn lane(&mut self, mode: InjectMode) -> &mut Lane {
        match mode {
            InjectMode::Steer => &mut self.steers,
            InjectMode::Queue => &mut self.queued,
        }
    }

    /// A mode's pending injects, first in first out.
    fn iter(&self, mode: InjectMode) -> impl Iterator<Item = &Pending> {
        let mut at = match mode {
            InjectMode::Steer => self.steers.head,
            InjectMode::Queue => self.queued.head,
        };
        std::iter::from_fn(move || {
            let slot = self.slots.get(at as usize)?;
            at = slot.next;
            slot.pending.as_ref()
        })
    }

    /// Unlinks a slot from its lane, frees it and returns its inject (the index entry is the
    /// caller's to remove).
    fn unlink(&mut self, at: u32) -> Option<(InjectMode, Pending)> {
        let slot = self.slots.get_mut(at as usize)?;
        let (mode, prev, next, pending) = (slot.mode, slot.prev, slot.next, slot.pending.take()?);
        slot.prev = NIL;
        slot.next = NIL;
        match self.slots.get_mut(prev as usize) {
            Some(p) => p.next = next,
            None => self.lane(mode).head = next,
        }
        match self.slots.get_mut(next as usize) {
            Some(n) => n.prev = prev,
            None => self.lane(mode).tail = prev,
        }
        if self.index.is_empty() || self.index.len() == 1 && self.index.contains_key(&pending.message_id.0) {
            // The last one: start the slab over (keeping its capacity).
            self.slots.clear();
            self.free.clear();
        } else {
            self.free.push(at);
        }
        Some((mode, pending))
    }

    /// Takes the first inject of a lane.
    fn pop_front(&mut self, mode: InjectMode) -> Option<Pending> {
        let head = match mode {
            InjectMode::Steer => self.steers.head,
            InjectMode::Queue => self.queued.head,
        };
        let (_, pending) = self.unlink(head)?;
        self.index.remove(&pending.message_id.0);
        Some(pending)
    }

    /// How many injects are pending.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// No inject is pending.
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// Steers are pending.
    pub fn has_steers(&self) -> bool {
        self.steers.head != NIL
    }

    /// Adds an accepted inject at the end of its mode's queue.
    pub(crate) fn push(&mut self, mode: InjectMode, pending: Pending) {
        let tail = self.lane(mode).tail;
        let slot = Slot { pending: None, mode, prev: tail, next: NIL };
        let at = match self.free.pop() {
            Some(at) => {
                self.slots[at as usize] = slot;
                at
            }
            None => {
                // More than u32::MAX - 1 pending injects in one session is far beyond any
                // memory; the conversion cannot fail before allocation does.
                let at = u32::try_from(self.slots.len()).unwrap_or(NIL - 1);
                self.slots.push(slot);
                at
            }
        };
        self.index.insert(pending.message_id.0.clone(), at);
        self.slots[at as usize].pending = Some(pending);
        match self.slots.get_mut(tail as usize) {
            Some(t) => t.next = at,
            None => self.lane(mode).head = at,
        }
        self.lane(mode).tail = at;
    }

    /// The pending inject with this id and its mode.
    pub fn get(&self, id: &MessageId) -> Option<(InjectMode, &Pending)> {
        let slot = self.slots.get(*self.index.get(&id.0)? as usize)?;
        slot.pending.as_ref().map(|p| (slot.mode, p))
    }

    /// The creator-only policy check, for a pending id or a remembered one.
    fn may_edit(policy: RevokeReplace, conn: &ConnId, owner: &ConnId, id: &MessageId) -> Result<(), ErrorObject> {
        if policy == RevokeReplace::CreatorOnly && conn != owner {
            return Err(ErrorObject::reason(ErrorReason::NotPermitted, Some(id)));
        }
        Ok(())
    }

    /// Where an id that is not pending went, as the error (or idempotent success) revoke and
    /// replace answer with.
    fn gone(&self, policy: RevokeReplace, conn: &ConnId, id: &MessageId) -> Result<Fate, ErrorObject> {
        match self.remembered.fates.get(&id.0) {
            Some((fate, owner)) => {
                Self::may_edit(policy, conn, owner, id)?;
                Ok(*fate)
            }
            None => Err(ErrorObject::reason(ErrorReason::UnknownMessageId, Some(id))),
        }
    }

    /// R-REVOKE-1..3: `Ok(Some(..))` when a pending inject was dropped now, `Ok(None)` when it
    /// was already revoked (idempotent).
    pub(crate) fn revoke(
        &mut self,
        policy: RevokeReplace,
        conn: &ConnId,
        id: &MessageId,
        bound: usize,
    ) -> Result<Option<(InjectMode, Pending)>, ErrorObject> {
        if let Some((_, p)) = self.get(id) {
            Self::may_edit(policy, conn, &p.owner, id)?;
            let at = self.index[&id.0];
            let (mode, pending) = self.unlink(at).unwrap_or_else(|| unreachable!("the index names a pending entry"));
            self.index.remove(&id.0);
            self.remembered.insert(&id.0, Fate::Revoked, pending.owner.clone(), bound);
            return Ok(Some((mode, pending)));
        }
        match self.gone(policy, conn, id)? {
            Fate::Revoked => Ok(None),
            Fate::Delivered => Err(ErrorObject::reason(ErrorReason::AlreadyDelivered, Some(id))),
        }
    }

    /// R-REPLACE-1..2: the content changes; id, mode and position stay.
    pub(crate) fn replace(
        &mut self,
        policy: RevokeReplace,
        conn: &ConnId,
        id: &MessageId,
        content: Vec<ContentBlock>,
    ) -> Result<(), ErrorObject> {
        if let Some(&at) = self.index.get(&id.0) {
            let entry = self.slots.get_mut(at as usize).and_then(|s| s.pending.as_mut());
            let entry = entry.unwrap_or_else(|| unreachable!("the index names a pending entry"));
            Self::may_edit(policy, conn, &entry.owner, id)?;
            entry.content = content;
            return Ok(());
        }
        match self.gone(policy, conn, id)? {
            // A tombstone cannot be replaced: for replace the id is unknown.
            Fate::Revoked => Err(ErrorObject::reason(ErrorReason::UnknownMessageId, Some(id))),
            Fate::Delivered => Err(ErrorObject::reason(ErrorReason::AlreadyDelivered, Some(id))),
        }
    }

    /// Takes every pending steer, first in first out (R-STEER-1).
    pub(crate) fn take_steers(&mut self) -> Vec<Pending> {
        std::iter::from_fn(|| self.pop_front(InjectMode::Steer)).collect()
    }

    /// What opens the next turn: every steer (R-STEER-4), then up to `queued` queued injects
    /// (R-QUEUE-1, R-QUEUE-3), each first in first out.
    pub(crate) fn take_for_turn(&mut self, queued: usize) -> Vec<Pending> {
        let mut out = self.take_steers();
        out.extend(std::iter::from_fn(|| self.pop_front(InjectMode::Queue)).take(queued));
        out
    }

    /// What became of an id that left the queue, while it is remembered.
    pub(crate) fn fate(&self, id: &MessageId) -> Option<Fate> {
        self.remembered.fates.get(&id.0).map(|(fate, _)| *fate)
    }

    /// Remembers a delivered id (R-REVOKE-3: revoke then answers `already_delivered`).
    pub(crate) fn remember_delivered(&mut self, id: &MessageId, owner: ConnId, bound: usize) {
        self.remembered.insert(&id.0, Fate::Delivered, owner, bound);
    }

    /// The pending injects in delivery order (steers, then queued, each first in first out).
    pub fn list(&self) -> Vec<PendingInject> {
        let entry = |mode: InjectMode| move |p: &Pending| PendingInject::new(p.message_id.clone(), mode, p.content.clone());
        self.iter(InjectMode::Steer)
            .map(entry(InjectMode::Steer))
            .chain(self.iter(InjectMode::Queue).map(entry(InjectMode::Queue)))
            .collect()
    }

    /// Empties the queue, returning what was pending in delivery order (R-CLOSE-1).
    pub(crate) fn drain(&mut self) -> Vec<PendingInject> {
        let list = self.list();
        *self = PendingQueue { remembered: std::mem::take(&mut self.remembered), ..PendingQueue::default() };
        list
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending(id: &str, owner: &str) -> Pending {
        Pending { message_id: MessageId(id.into()), content: Vec::new(), owner: owner.into() }
    }

    #[test]
    fn from_parts_keeps_order_and_remembered_fates() {
        let q = PendingQueue::from_parts(
            vec![pending("s1", "c1"), pending("s2", "c1")],
            vec![pending("q1", "c2"), pending("q1", "c9"), pending("q2", "c1")],
            vec![("r1".into(), Fate::Revoked, "c1".into()), ("d1".into(), Fate::Delivered, "c2".into())],
        );
        let ids: Vec<(String, InjectMode)> = q.list().into_iter().map(|p| (p.message_id.0, p.mode)).collect();
        let expected = [("s1", InjectMode::Steer), ("s2", InjectMode::Steer), ("q1", InjectMode::Queue), ("q2", InjectMode::Queue)];
        assert_eq!(ids, expected.map(|(id, m)| (id.to_owned(), m)));
        assert_eq!(q.get(&MessageId("q1".into())).map(|(_, p)| p.owner.as_str()), Some("c2"), "the first of a duplicated id is kept");
        let mut q = q;
        let policy = RevokeReplace::AnyController;
        assert_eq!(q.revoke(policy, &ConnId::from("c1"), &MessageId("r1".into()), 8), Ok(None));
        let delivered = q.revoke(policy, &ConnId::from("c1"), &MessageId("d1".into()), 8).unwrap_err();
        assert_eq!(delivered, ErrorObject::reason(ErrorReason::AlreadyDelivered, Some(&MessageId("d1".into()))));
        // The next remembered id trims to the bound, oldest first.
        q.remember_delivered(&MessageId("d2".into()), "c1".into(), 2);
        let unknown = q.revoke(policy, &ConnId::from("c1"), &MessageId("r1".into()), 2).unwrap_err();
        assert_eq!(unknown, ErrorObject::reason(ErrorReason::UnknownMessageId, Some(&MessageId("r1".into()))));
    }
}
