//! A memory budget a server's connections draw from: the bytes it holds for clients (output
//! not yet read, messages being handled, events kept for a reconnect) counted in one place, so
//! a crowd of clients that stop reading cannot grow the process without bound.
//!
//! The limit is a ceiling: from half of it a server sheds load instead of growing.
//! It refuses new connections and large incoming messages, and ends the connections that hold
//! unread output ([`SHED_ABOVE`] bytes or more); their clients resume their sessions later,
//! and the core replays what they missed. A connection holding less keeps being served, so a
//! client that reads is not punished for one that does not. The other half is room for what
//! the count sees too late or not at all: such connections, the request in hand (a replay being
//! built), the allocator's slack.
//!
//! A host that measures its whole memory (a counting allocator, say) passes that measure as
//! the budget's gauge ([`MemoryBudget::with_gauge`]): the budget then compares the whole
//! process, not only the buffers, with its limit.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// A connection holding less unread output than this is never shed for the budget (a client
/// that reads holds next to nothing).
pub const SHED_ABOVE: usize = 16 * 1024;

/// The bytes a server holds for its clients, against a limit. Shared (`Arc`) by the agent
/// server and its listener.
#[derive(Debug)]
pub struct MemoryBudget {
    limit: usize,
    held: AtomicUsize,
    gauge: Option<fn() -> usize>,
}

impl MemoryBudget {
    /// A budget of `limit` bytes of buffers.
    pub fn new(limit: usize) -> Arc<MemoryBudget> {
        Arc::new(MemoryBudget { limit, held: AtomicUsize::new(0), gauge: None })
    }

    /// A budget of `limit` bytes measured by `gauge` (the process's memory in use, e.g. from a
    /// counting allocator) instead of by the buffers alone.
    pub fn with_gauge(limit: usize, gauge: fn() -> usize) -> Arc<MemoryBudget> {
        Arc::new(MemoryBudget { limit, held: AtomicUsize::new(0), gauge: Some(gauge) })
    }

    /// No limit (buffers are still counted).
    pub fn unlimited() -> Arc<MemoryBudget> {
        MemoryBudget::new(usize::MAX)
    }

    /// The limit, in bytes.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Bytes held in buffers for clients now.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    /// What the budget compares with its limit: the gauge's reading when it has one, else
    /// the buffers held.
    pub fn used(&self) -> usize {
        match self.gauge {
            Some(gauge) => gauge(),
            None => self.held(),
        }
    }

    /// Where shedding starts: half the limit.
    pub fn shed_from(&self) -> usize {
        self.limit / 2
    }

    /// Whether the budget is spent (past half the limit): load is shed until it is not.
    pub fn over(&self) -> bool {
        self.used() > self.shed_from()
    }

    /// Whether `bytes` more fit below where shedding starts.
    pub fn fits(&self, bytes: usize) -> bool {
        self.used().saturating_add(bytes) <= self.shed_from()
    }

    /// Counts `bytes` as held.
    pub fn hold(&self, bytes: usize) {
        self.held.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Counts `bytes` held before as given back.
    pub fn release(&self, bytes: usize) {
        // Every release matches a hold; saturating keeps a bug from wrapping to "spent forever".
        let _ = self.held.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |h| Some(h.saturating_sub(bytes)));
    }

    /// Holds `bytes` while the returned guard lives, whether they fit or not (what a writer
    /// took from a queue and is handing to the network).
    pub fn hold_while(self: &Arc<Self>, bytes: usize) -> Held {
        self.hold(bytes);
        Held { budget: Arc::clone(self), bytes }
    }

    /// Holds `bytes` while the returned guard lives, when they fit; `None` when they do not.
    pub fn try_hold(self: &Arc<Self>, bytes: usize) -> Option<Held> {
        if !self.fits(bytes) {
            return None;
        }
        self.hold(bytes);
        Some(Held { budget: Arc::clone(self), bytes })
    }
}

/// Bytes held from a [`MemoryBudget`] until dropped.
#[derive(Debug)]
pub struct Held {
    budget: Arc<MemoryBudget>,
    bytes: usize,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.budget.release(self.bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_fit_until_the_limit_and_come_back_when_dropped() {
        let budget = MemoryBudget::new(100);
        assert_eq!(budget.shed_from(), 50);
        let a = budget.try_hold(30).expect("30 of 50 fit");
        assert!(budget.try_hold(21).is_none(), "30 + 21 is past 50");
        let b = budget.try_hold(20).expect("30 + 20 fit exactly");
        assert!(!budget.over());
        budget.hold(1);
        assert!(budget.over(), "51 of 100 is past half");
        drop((a, b));
        budget.release(1);
        assert_eq!(budget.held(), 0);
        budget.release(5);
        assert_eq!(budget.held(), 0, "a stray release does not wrap");
    }

    #[test]
    fn a_gauge_replaces_the_buffers_count() {
        fn big() -> usize {
            1_000
        }
        let budget = MemoryBudget::with_gauge(500, big);
        assert!(budget.over());
        assert_eq!(budget.held(), 0);
        assert!(budget.try_hold(1).is_none());
    }
}
