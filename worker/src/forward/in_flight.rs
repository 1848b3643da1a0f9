//! The ids being forwarded by this isolate right now, held in memory, so that copies of one
//! delivery arriving at the same isolate at the same moment are not all forwarded.
//!
//! Workers KV has no compare-and-set: its `claim` is a read then a write, and every copy that
//! reads before the first marker is written would go through. A Worker isolate serves many
//! requests concurrently on one thread, so a set in its memory, checked and filled
//! *synchronously* (before the first `await` of the claim), is atomic for every request it
//! serves. [`IsolateGuardedStore`] wraps any [`DedupStore`] with it: a copy whose id is in
//! the set gets [`Claim::InFlight`] (`409 delivery_in_progress`) without touching the store.
//!
//! An entry lives from the claim until `confirm` or `release` returns, or until the wrapper
//! is dropped. A request that never finishes (the runtime can abandon a request's future
//! without dropping it) would otherwise hold its id for the isolate's lifetime; so an entry
//! older than the in-flight TTL counts as gone, like the store's own marker, and is
//! replaced. Only this isolate is covered: other isolates and other locations rely on the
//! store (see the README).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

use postwire_core::UnixTime;

use crate::forward::dedup::{Claim, DedupStore, StoreError};

/// Entries kept before stale ones are swept out (each sweep is one pass over the set).
const SWEEP_ABOVE: usize = 1024;

/// The ids in flight in one isolate: id → (ticket, entered at, in ms).
#[derive(Debug, Default)]
pub struct InFlightSet {
    entries: RefCell<HashMap<String, (u64, f64)>>,
    next_ticket: Cell<u64>,
}

impl InFlightSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Marks `id` in flight unless a live entry (younger than `stale_after_ms`) holds it.
    /// Returns the entry's ticket, which [`InFlightSet::leave`] needs. Synchronous: nothing
    /// can run between the check and the insert.
    pub fn try_enter(&self, id: &str, now_ms: f64, stale_after_ms: f64) -> Option<u64> {
        let mut entries = self.entries.borrow_mut();
        if let Some(&(_, since)) = entries.get(id)
            && now_ms - since < stale_after_ms
        {
            return None;
        }
        if entries.len() >= SWEEP_ABOVE {
            entries.retain(|_, (_, since)| now_ms - *since < stale_after_ms);
        }
        let ticket = self.next_ticket.get();
        self.next_ticket.set(ticket.wrapping_add(1));
        entries.insert(id.to_owned(), (ticket, now_ms));
        Some(ticket)
    }

    /// Removes `id` if the entry is still the one `ticket` made (a stale entry may have been
    /// replaced by a newer attempt, which keeps it).
    pub fn leave(&self, id: &str, ticket: u64) {
        let mut entries = self.entries.borrow_mut();
        if entries.get(id).is_some_and(|&(t, _)| t == ticket) {
            entries.remove(id);
        }
    }

    /// How many ids are held (live or stale).
    pub fn len(&self) -> usize {
        self.entries.borrow().len()
    }

    /// Whether no id is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A [`DedupStore`] behind this isolate's [`InFlightSet`]. Made per request: it remembers
/// the one id it entered, and leaves the set when that attempt's outcome is recorded, or
/// when it is dropped.
pub struct IsolateGuardedStore<S> {
    inner: S,
    set: Rc<InFlightSet>,
    clock_ms: fn() -> f64,
    stale_after_ms: f64,
    entered: RefCell<Option<(String, u64)>>,
}

impl<S: DedupStore> IsolateGuardedStore<S> {
    /// Wraps `inner`. `clock_ms` reads the time in milliseconds; an entry older than
    /// `stale_after_ms` no longer blocks (use the in-flight TTL).
    pub fn new(inner: S, set: Rc<InFlightSet>, clock_ms: fn() -> f64, stale_after_ms: f64) -> Self {
        IsolateGuardedStore {
            inner,
            set,
            clock_ms,
            stale_after_ms,
            entered: RefCell::new(None),
        }
    }

    fn leave(&self) {
        if let Some((id, ticket)) = self.entered.borrow_mut().take() {
            self.set.leave(&id, ticket);
        }
    }
}

impl<S> Drop for IsolateGuardedStore<S> {
    fn drop(&mut self) {
        if let Some((id, ticket)) = self.entered.get_mut().take() {
            self.set.leave(&id, ticket);
        }
    }
}

impl<S: DedupStore> DedupStore for IsolateGuardedStore<S> {
    async fn claim(&self, id: &str, now: UnixTime) -> Result<Claim, StoreError> {
        // Check and enter before the first await: this is the atomic step.
        let Some(ticket) = self.set.try_enter(id, (self.clock_ms)(), self.stale_after_ms) else {
            return Ok(Claim::InFlight);
        };
        self.leave();
        *self.entered.borrow_mut() = Some((id.to_owned(), ticket));
        let claim = self.inner.claim(id, now).await;
        if !matches!(claim, Ok(Claim::Claimed)) {
            // Not forwarded by this attempt: nothing to hold off.
            self.leave();
        }
        claim
    }

    async fn confirm(&self, id: &str, now: UnixTime) -> Result<(), StoreError> {
        let result = self.inner.confirm(id, now).await;
        self.leave();
        result
    }

    async fn release(&self, id: &str) -> Result<(), StoreError> {
        let result = self.inner.release(id).await;
        self.leave();
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forward::dedup::memory::MemoryDedupStore;
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};

    fn run<F: Future>(f: F) -> F::Output {
        match pin!(f).poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(v) => v,
            Poll::Pending => panic!("waited in a test"),
        }
    }

    const NOW: UnixTime = UnixTime::from_secs(1_700_000_000);
    fn clock() -> f64 {
        1_000_000.0
    }

    fn guarded(set: &Rc<InFlightSet>) -> IsolateGuardedStore<MemoryDedupStore> {
        IsolateGuardedStore::new(MemoryDedupStore::default(), set.clone(), clock, 60_000.0)
    }

    #[test]
    fn a_second_attempt_in_the_same_isolate_is_in_flight_whatever_its_store_says() {
        let set = Rc::new(InFlightSet::new());
        // Separate stores that know nothing of each other: as two KV reads that both find
        // nothing.
        let (first, second) = (guarded(&set), guarded(&set));
        assert_eq!(run(first.claim("msg_1", NOW)), Ok(Claim::Claimed));
        assert_eq!(run(second.claim("msg_1", NOW)), Ok(Claim::InFlight));
        assert_eq!(run(second.claim("msg_2", NOW)), Ok(Claim::Claimed), "other ids pass");
        run(first.confirm("msg_1", NOW)).unwrap();
        let third = guarded(&set);
        assert_eq!(run(third.claim("msg_1", NOW)), Ok(Claim::Claimed), "left after confirm");
    }

    #[test]
    fn release_and_drop_leave_the_set() {
        let set = Rc::new(InFlightSet::new());
        let a = guarded(&set);
        run(a.claim("msg_1", NOW)).unwrap();
        run(a.release("msg_1")).unwrap();
        assert!(set.is_empty());
        {
            let b = guarded(&set);
            run(b.claim("msg_1", NOW)).unwrap();
            assert_eq!(set.len(), 1);
        }
        assert!(set.is_empty(), "a dropped attempt leaves");
    }

    #[test]
    fn an_attempt_that_is_not_forwarded_does_not_hold_the_id() {
        let set = Rc::new(InFlightSet::new());
        let a = guarded(&set);
        a.inner.fail_claim.set(true);
        assert!(run(a.claim("msg_1", NOW)).is_err());
        assert!(set.is_empty());
        let b = guarded(&set);
        run(b.inner.confirm("msg_1", NOW)).unwrap();
        assert_eq!(run(b.claim("msg_1", NOW)), Ok(Claim::Delivered));
        assert!(set.is_empty());
    }

    #[test]
    fn a_stale_entry_is_replaced_and_its_owner_cannot_remove_the_new_one() {
        let set = InFlightSet::new();
        let old = set.try_enter("msg_1", 0.0, 60_000.0).unwrap();
        assert_eq!(set.try_enter("msg_1", 59_999.0, 60_000.0), None);
        let new = set.try_enter("msg_1", 60_000.0, 60_000.0).unwrap();
        set.leave("msg_1", old);
        assert_eq!(set.try_enter("msg_1", 60_001.0, 60_000.0), None, "the new entry holds");
        set.leave("msg_1", new);
        assert!(set.is_empty());
    }

    #[test]
    fn stale_entries_are_swept_when_the_set_grows() {
        let set = InFlightSet::new();
        for i in 0..SWEEP_ABOVE {
            set.try_enter(&format!("msg_{i}"), 0.0, 1_000.0).unwrap();
        }
        set.try_enter("fresh", 5_000.0, 1_000.0).unwrap();
        assert_eq!(set.len(), 1);
    }
}
