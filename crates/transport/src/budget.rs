//! A memory budget a server's connections draw from: the bytes it holds for clients (output
//! not yet read, messages being handled, events kept for a reconnect) counted in one place, so
//! a crowd of clients that stop reading cannot grow the process without bound.
//!
//! Past the budget a server sheds load instead of growing: it refuses new connections and
//! large incoming messages, and ends the connections that hold the most unread output
//! ([`SHED_ABOVE`] bytes or more); their clients resume their sessions later, and the core
//! replays what they missed. A connection holding less keeps being served, so a client that
//! reads is not punished for one that does not.
//!
//! A host that measures its whole memory (a counting allocator, say) passes that measure as
//! the budget's gauge ([`MemoryBudget::with_gauge`]): the budget then compares the whole
//! process, not only the buffers, with its limit.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// A connection holding less unread output than this is never shed for the budget.
pub const SHED_ABOVE: usize = 64 * 1024;

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

    /// Whether the budget is spent: load is shed until it is not.
    pub fn over(&self) -> bool {
        self.used() > self.limit
    }

    /// Whether `bytes` more fit.
    pub fn fits(&self, bytes: usize) -> bool {
        self.used().saturating_add(bytes) <= self.limit
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
        let a = budget.try_hold(60).expect("60 of 100 fit");
        assert!(budget.try_hold(41).is_none(), "60 + 41 is past 100");
        let b = budget.try_hold(40).expect("60 + 40 fit exactly");
        assert!(!budget.over());
        budget.hold(1);
        assert!(budget.over(), "101 of 100");
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
