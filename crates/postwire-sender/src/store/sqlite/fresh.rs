//! What a claim needs of a delivery that was just published, kept in memory.
//!
//! A delivery's first claim needs its event's id and body and its creation time. The
//! publish that made it had all three in hand, so they are kept here, and the claim takes
//! them instead of reading the delivery's and the event's rows back: two look-ups, a copy
//! of the body, and (since every commit of the writer drops the claims connection's page
//! cache) the reads of the pages those rows are on.
//!
//! An entry is never stale:
//! * it holds only what never changes in the file: the event's id and body (events are
//!   never updated or deleted) and the delivery's creation time;
//! * it stands for a delivery that has had no attempt: it is added in the write that
//!   makes the delivery, so before any claim can see the row, and the first claim that
//!   chooses the row takes it out; every attempt follows a claim, so every later claim
//!   of that delivery (a retry, or a lease that ran out) reads the row from the file;
//! * delivery row numbers are never reused while the process runs (the store hands them
//!   out from a counter that only goes up, rolled-back writes included), so an entry
//!   can only ever describe its own delivery, and one whose write rolled back is never
//!   asked for.
//!
//! A delivery that is not here (the cache was full, or the process restarted) is simply
//! read from the file, so the cache is never needed for correctness.
//!
//! Bounded: at most [`MAX_DELIVERIES`] entries and [`MAX_BYTES`] of bodies (counted per
//! delivery, so an event shared by several counts several times: a bound on memory, not
//! a measure of it). When it is full, new deliveries are not added (the oldest are the
//! next to be claimed, so they are the ones worth keeping). An entry that no claim takes
//! within [`MAX_AGE`] (its subscription was paused or deleted) is dropped.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;

/// Most deliveries kept.
const MAX_DELIVERIES: usize = 1 << 16;
/// Most bytes of event bodies kept, counted once per delivery.
const MAX_BYTES: usize = 32 << 20;
/// An entry no claim has taken after this long is dropped.
const MAX_AGE: Duration = Duration::from_secs(120);

/// A published event, shared by its deliveries' entries.
#[derive(Debug)]
pub(super) struct FreshEvent {
    /// `webhook-id`.
    pub(super) id: String,
    /// The exact body.
    pub(super) body: Bytes,
}

/// A delivery that has not been claimed yet.
#[derive(Debug)]
pub(super) struct FreshDelivery {
    /// Its event.
    pub(super) event: Arc<FreshEvent>,
    /// When the delivery was made (ms).
    pub(super) created_at: i64,
}

/// Fresh deliveries by delivery row number.
#[derive(Debug, Default)]
pub(super) struct FreshDeliveries {
    entries: HashMap<i64, FreshDelivery>,
    /// Delivery rows in the order they were added, with when: a row leaves the front
    /// once it was taken, or is too old, or this list is over twice [`MAX_DELIVERIES`]
    /// long (an old entry nobody takes must not let it grow behind it).
    order: VecDeque<(i64, Instant)>,
    /// The sum of the entries' body lengths.
    bytes: usize,
}

impl FreshDeliveries {
    /// Keeps the deliveries `rows` of `event`, made at `created_at`, as far as there is
    /// room.
    pub(super) fn add(&mut self, event: Arc<FreshEvent>, rows: &[i64], created_at: i64) {
        let now = Instant::now();
        self.drop_old(now);
        let size = event.body.len() * rows.len();
        if rows.is_empty() || self.entries.len() + rows.len() > MAX_DELIVERIES || self.bytes + size > MAX_BYTES {
            return;
        }
        for &row in rows {
            let entry = FreshDelivery {
                event: event.clone(),
                created_at,
            };
            self.bytes += entry.event.body.len();
            if let Some(replaced) = self.entries.insert(row, entry) {
                // Row numbers are never given twice; if one were, the newer write wins.
                self.release(&replaced);
            }
            self.order.push_back((row, now));
        }
    }

    /// Takes delivery `row`'s entry, if it is here, for its first claim.
    pub(super) fn take(&mut self, row: i64) -> Option<FreshDelivery> {
        let entry = self.entries.remove(&row)?;
        self.release(&entry);
        Some(entry)
    }

    /// Counts out the body of `entry`, which just left.
    fn release(&mut self, entry: &FreshDelivery) {
        self.bytes -= entry.event.body.len();
    }

    /// Drops entries older than [`MAX_AGE`], and the record of entries taken already.
    fn drop_old(&mut self, now: Instant) {
        while let Some(&(row, added)) = self.order.front() {
            let taken = !self.entries.contains_key(&row);
            let too_long = self.order.len() > 2 * MAX_DELIVERIES;
            if !taken && !too_long && now.duration_since(added) < MAX_AGE {
                break;
            }
            self.order.pop_front();
            self.take(row);
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(seq: i64, size: usize) -> Arc<FreshEvent> {
        Arc::new(FreshEvent {
            id: format!("msg_{seq}"),
            body: Bytes::from(vec![b'x'; size]),
        })
    }

    #[test]
    fn an_entry_is_taken_once() {
        let mut fresh = FreshDeliveries::default();
        fresh.add(event(1, 10), &[7, 8], 1_000);
        let taken = fresh.take(7).unwrap();
        assert_eq!((taken.event.id.as_str(), taken.created_at), ("msg_1", 1_000));
        assert!(fresh.take(7).is_none(), "a second claim reads the file");
        assert_eq!(fresh.take(8).unwrap().event.id, "msg_1");
        assert_eq!(fresh.bytes, 0, "each delivery's share is counted out when it leaves");
    }

    #[test]
    fn when_full_new_deliveries_are_not_kept_and_old_ones_stay() {
        let mut fresh = FreshDeliveries::default();
        let size = MAX_BYTES / 4;
        for seq in 0..4 {
            fresh.add(event(seq, size), &[seq], 0);
        }
        fresh.add(event(4, size), &[4], 0);
        assert!(fresh.take(4).is_none(), "no room for the newest");
        assert!(fresh.take(0).is_some(), "the oldest, next to be claimed, stayed");
        fresh.add(event(5, size), &[5], 0);
        assert!(fresh.take(5).is_some(), "room again once one was claimed");
    }

    #[test]
    fn entries_no_claim_takes_are_dropped_when_old() {
        let mut fresh = FreshDeliveries::default();
        fresh.add(event(1, 10), &[1], 0);
        fresh.drop_old(Instant::now() + MAX_AGE);
        assert_eq!((fresh.len(), fresh.bytes, fresh.order.len()), (0, 0, 0));
    }

    #[test]
    fn an_entry_nobody_takes_does_not_let_the_record_grow_behind_it() {
        let mut fresh = FreshDeliveries::default();
        fresh.add(event(0, 10), &[0], 0); // held, say: never taken
        for row in 1..(3 * MAX_DELIVERIES as i64) {
            fresh.add(event(row, 10), &[row], 0);
            assert!(fresh.take(row).is_some());
        }
        assert!(fresh.order.len() <= 2 * MAX_DELIVERIES + 1, "{}", fresh.order.len());
        assert!(fresh.take(0).is_none(), "dropped to keep the record bounded");
    }

    #[test]
    fn the_record_of_claimed_entries_does_not_grow() {
        let mut fresh = FreshDeliveries::default();
        for row in 0..10_000 {
            fresh.add(event(row, 10), &[row], 0);
            assert!(fresh.take(row).is_some());
        }
        assert!(fresh.order.len() <= 1, "{}", fresh.order.len());
    }
}
