//! The ordering rule: deliveries of one subscription with the same ordering key (the
//! post for post events, the account for account events, none for `webhook.test`) are
//! attempted one at a time, in publish order. A later one waits until the earlier one
//! is delivered, failed for good or expired.
//!
//! Think of one queue per (subscription, key) whose head alone the dispatcher may
//! claim. The functions here say where a new delivery goes and which outcomes end a
//! head; a store backend keeps the queues (see [`crate::store::Store`] for the
//! invariants it must hold).

use postwire_core::OrderingKey;

use crate::model::NextState;
use crate::routing::Routed;

/// Where a new delivery goes in its queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// The head of its queue: claimable when due.
    Head,
    /// Behind an unfinished delivery of its key: not claimable until that one ends.
    Waiting,
    /// Held: its subscription is paused (resume sorts held deliveries into heads and
    /// waiting ones again).
    Held,
}

/// Where a delivery that routing gave `routed` goes, when its key `has_unfinished`
/// deliveries in the subscription (always false for a delivery without a key).
///
/// ```
/// use postwire_sender::ordering::{Placement, place};
/// use postwire_sender::routing::Routed;
/// assert_eq!(place(Routed::Deliver, false), Placement::Head);
/// assert_eq!(place(Routed::Deliver, true), Placement::Waiting);
/// assert_eq!(place(Routed::Hold, true), Placement::Held);
/// ```
pub fn place(routed: Routed, has_unfinished: bool) -> Placement {
    match (routed, has_unfinished) {
        (Routed::Hold, _) => Placement::Held,
        (Routed::Deliver, true) => Placement::Waiting,
        (Routed::Deliver, false) => Placement::Head,
    }
}

/// Whether an attempt's outcome ends its delivery, so the next one of its queue
/// becomes the head (in the same transaction).
pub fn ends_delivery(next: NextState) -> bool {
    matches!(next, NextState::Delivered | NextState::Failed)
}

/// The account an event is ordered by (an account's own `integration.*` events), which
/// stores keep beside the event so that an erasure by account finds its events.
///
/// ```
/// use postwire_core::OrderingKey;
/// use postwire_sender::ordering::account_of;
/// assert_eq!(account_of(Some(&OrderingKey::Account("acc_1".into()))), Some("acc_1"));
/// assert_eq!(account_of(Some(&OrderingKey::Post("p_1".into()))), None);
/// ```
pub fn account_of(key: Option<&OrderingKey>) -> Option<&str> {
    match key {
        Some(OrderingKey::Account(id)) => Some(id),
        _ => None,
    }
}

/// The stored form of an ordering key: a 64-bit FNV-1a hash of its text
/// (`post:<id>` / `account:<id>`), stable across releases and platforms. Two keys that
/// collide are only delivered one after another when they could have gone in parallel;
/// order is never broken.
pub fn ordering_hash(key: &OrderingKey) -> i64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in key.to_string().bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h as i64
}
