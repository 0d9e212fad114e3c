//! One session's pending injects: a queue per mode that keeps arrival order, replacement in
//! place, and the bounded memory of ids that were revoked or delivered (tombstones).
//!
//! Pending injects are found by id in O(1) and kept in delivery order per mode by arrival
//! sequence (O(log n) insert and remove), so no operation scans by `messageId`.

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

/// The pending injects of one session. See the module docs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingQueue {
    next_seq: u64,
    steers: BTreeMap<u64, Pending>,
    queued: BTreeMap<u64, Pending>,
    /// Where each pending id sits.
    #[serde(skip)]
    index: HashMap<String, (InjectMode, u64)>,
    remembered: Remembered,
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

    /// Rebuilds the id index after deserialising (it is derived state).
    pub(crate) fn reindex(&mut self) {
        self.index = self
            .steers
            .iter()
            .map(|(seq, p)| (p.message_id.0.clone(), (InjectMode::Steer, *seq)))
            .chain(self.queued.iter().map(|(seq, p)| (p.message_id.0.clone(), (InjectMode::Queue, *seq))))
            .collect();
    }

    fn lane(&mut self, mode: InjectMode) -> &mut BTreeMap<u64, Pending> {
        match mode {
            InjectMode::Steer => &mut self.steers,
            InjectMode::Queue => &mut self.queued,
        }
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
        !self.steers.is_empty()
    }

    /// Adds an accepted inject at the end of its mode's queue.
    pub(crate) fn push(&mut self, mode: InjectMode, pending: Pending) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.index.insert(pending.message_id.0.clone(), (mode, seq));
        self.lane(mode).insert(seq, pending);
    }

    /// The pending inject with this id and its mode.
    pub fn get(&self, id: &str) -> Option<(InjectMode, &Pending)> {
        let (mode, seq) = *self.index.get(id)?;
        let lane = match mode {
            InjectMode::Steer => &self.steers,
            InjectMode::Queue => &self.queued,
        };
        lane.get(&seq).map(|p| (mode, p))
    }

    /// The creator-only policy check, for a pending id or a remembered one.
    fn may_edit(policy: RevokeReplace, conn: &str, owner: &str, id: &MessageId) -> Result<(), ErrorObject> {
        if policy == RevokeReplace::CreatorOnly && conn != owner {
            return Err(ErrorObject::reason(ErrorReason::NotPermitted, Some(id)));
        }
        Ok(())
    }

    /// Where an id that is not pending went, as the error (or idempotent success) revoke and
    /// replace answer with.
    fn gone(&self, policy: RevokeReplace, conn: &str, id: &MessageId) -> Result<Fate, ErrorObject> {
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
        conn: &str,
        id: &MessageId,
        bound: usize,
    ) -> Result<Option<(InjectMode, Pending)>, ErrorObject> {
        if let Some(&(mode, seq)) = self.index.get(&id.0) {
            let owner = &self.lane(mode)[&seq].owner;
            Self::may_edit(policy, conn, owner, id)?;
            self.index.remove(&id.0);
            let pending = self.lane(mode).remove(&seq).unwrap_or_else(|| unreachable!("the index names a pending entry"));
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
        conn: &str,
        id: &MessageId,
        content: Vec<ContentBlock>,
    ) -> Result<(), ErrorObject> {
        if let Some(&(mode, seq)) = self.index.get(&id.0) {
            let entry = self.lane(mode).get_mut(&seq).unwrap_or_else(|| unreachable!("the index names a pending entry"));
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
        let steers: Vec<Pending> = std::mem::take(&mut self.steers).into_values().collect();
        for p in &steers {
            self.index.remove(&p.message_id.0);
        }
        steers
    }

    /// What opens the next turn: every steer (R-STEER-4), then up to `queued` queued injects
    /// (R-QUEUE-1, R-QUEUE-3), each first in first out.
    pub(crate) fn take_for_turn(&mut self, queued: usize) -> Vec<Pending> {
        let mut out = self.take_steers();
        let seqs: Vec<u64> = self.queued.keys().take(queued).copied().collect();
        for seq in seqs {
            if let Some(p) = self.queued.remove(&seq) {
                self.index.remove(&p.message_id.0);
                out.push(p);
            }
        }
        out
    }

    /// Remembers a delivered id (R-REVOKE-3: revoke then answers `already_delivered`).
    pub(crate) fn remember_delivered(&mut self, id: &MessageId, owner: ConnId, bound: usize) {
        self.remembered.insert(&id.0, Fate::Delivered, owner, bound);
    }

    /// The pending injects in delivery order (steers, then queued, each first in first out).
    pub fn list(&self) -> Vec<PendingInject> {
        let entry = |mode: InjectMode| {
            move |p: &Pending| PendingInject { message_id: p.message_id.clone(), mode, content: p.content.clone(), meta: None }
        };
        self.steers.values().map(entry(InjectMode::Steer)).chain(self.queued.values().map(entry(InjectMode::Queue))).collect()
    }

    /// Empties the queue, returning what was pending in delivery order (R-CLOSE-1).
    pub(crate) fn drain(&mut self) -> Vec<PendingInject> {
        let list = self.list();
        self.steers.clear();
        self.queued.clear();
        self.index.clear();
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
        assert_eq!(q.get("q1").map(|(_, p)| p.owner.as_str()), Some("c2"), "the first of a duplicated id is kept");
        let mut q = q;
        let policy = RevokeReplace::AnyController;
        assert_eq!(q.revoke(policy, "c1", &MessageId("r1".into()), 8), Ok(None));
        let delivered = q.revoke(policy, "c1", &MessageId("d1".into()), 8).unwrap_err();
        assert_eq!(delivered, ErrorObject::reason(ErrorReason::AlreadyDelivered, Some(&MessageId("d1".into()))));
        // The next remembered id trims to the bound, oldest first.
        q.remember_delivered(&MessageId("d2".into()), "c1".into(), 2);
        let unknown = q.revoke(policy, "c1", &MessageId("r1".into()), 2).unwrap_err();
        assert_eq!(unknown, ErrorObject::reason(ErrorReason::UnknownMessageId, Some(&MessageId("r1".into()))));
    }
}
