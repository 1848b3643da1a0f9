//! Which subscriptions may have deliveries to claim, and from when.
//!
//! A claim looks at each subscription's own queue (the `deliveries_due` index is keyed
//! by subscription first), so a subscription with a long backlog or a slow endpoint
//! never hides another subscription's deliveries behind its own. To know which queues to
//! look at without visiting every subscription, the store keeps here, per subscription
//! with pending deliveries, the earliest time one of them may become claimable.
//!
//! The map is a hint that may be early, never late:
//! * every write that makes a delivery due, or may unblock one, lowers its
//!   subscription's time (a new event, a retry time, a resume, a finished delivery
//!   whose successor waited on it);
//! * only a claim raises it, after looking at the queue: to the next retry time, or to
//!   the end of a lease it saw, or removes it when the queue is empty.
//!
//! An early hint costs one indexed look at a queue; a late one would delay deliveries,
//! which the rules above rule out. At start-up it is rebuilt from the file. Its size is
//! bounded by the number of subscriptions.

use std::collections::HashMap;

/// Subscription row number -> earliest time (ms) it may have something to claim.
#[derive(Debug, Default)]
pub(super) struct DueSubscriptions {
    next: HashMap<i64, i64>,
}

impl DueSubscriptions {
    /// Something in `sub`'s queue may be claimable from `at_ms` on.
    pub(super) fn lower(&mut self, sub: i64, at_ms: i64) {
        self.next
            .entry(sub)
            .and_modify(|t| *t = (*t).min(at_ms))
            .or_insert(at_ms);
    }

    /// After looking at `sub`'s queue: nothing is claimable before `at_ms`, or ever
    /// (`None`) until a write lowers it again.
    pub(super) fn set(&mut self, sub: i64, at_ms: Option<i64>) {
        match at_ms {
            Some(t) => {
                self.next.insert(sub, t);
            }
            None => {
                self.next.remove(&sub);
            }
        }
    }

    /// Subscriptions that may have something claimable at `now_ms`, earliest first (ties
    /// by row number, so the order is stable).
    pub(super) fn due(&self, now_ms: i64) -> Vec<i64> {
        let mut due: Vec<(i64, i64)> = self
            .next
            .iter()
            .filter(|(_, t)| **t <= now_ms)
            .map(|(sub, t)| (*t, *sub))
            .collect();
        due.sort_unstable();
        due.into_iter().map(|(_, sub)| sub).collect()
    }

    /// The earliest time anything may be claimable.
    pub(super) fn earliest(&self) -> Option<i64> {
        self.next.values().min().copied()
    }

    /// Replaces everything (start-up), from the file's pending deliveries: per
    /// subscription, the earliest due time.
    pub(super) fn reset(&mut self, queues: impl IntoIterator<Item = (i64, i64)>) {
        self.next = queues.into_iter().collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lowering_keeps_the_earliest_time_and_claims_may_raise_or_remove() {
        let mut d = DueSubscriptions::default();
        d.lower(1, 500);
        d.lower(1, 900);
        d.lower(2, 100);
        assert_eq!(d.due(499), vec![2]);
        assert_eq!(d.due(500), vec![2, 1], "earliest first");
        assert_eq!(d.earliest(), Some(100));
        d.set(2, Some(2_000));
        assert_eq!(d.due(1_000), vec![1]);
        d.set(1, None);
        assert_eq!(d.due(i64::MAX), vec![2]);
        assert_eq!(d.earliest(), Some(2_000));
    }

    #[test]
    fn reset_replaces_every_hint() {
        let mut d = DueSubscriptions::default();
        d.lower(9, 1);
        d.reset([(1, 50), (2, 10)]);
        assert_eq!(d.due(50), vec![2, 1]);
        assert_eq!(d.earliest(), Some(10));
    }
}
