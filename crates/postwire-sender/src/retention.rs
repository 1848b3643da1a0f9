//! Retention: how long finished deliveries, their attempts and unreferenced events are
//! kept, and the loop that removes them in small batches.
//!
//! Without it the database grows forever. A delivery that is delivered, failed or
//! expired is removed, with its attempts, once it finished more than
//! [`RetentionPolicy::keep`] ago (default 30 days); an event goes once it is that old
//! and no delivery refers to it; an operational notice once it is that old and queued. Deliveries still pending, waiting or held, and their
//! events, are never removed: a paused subscription's held events follow the spec's
//! 7 days (resume expires the older ones, which are then removed like any finished
//! delivery). The delivery list and `posts/lookup` therefore show the last `keep` of
//! history.
//!
//! Work is done in batches ([`RetentionPolicy::batch`] rows per short transaction) with a
//! pause between batches, so the dispatcher's writes never wait long behind it. Time
//! comes from the sender's clock, so tests move a manual clock instead of waiting.

use std::time::Duration;

use crate::store::Purged;

/// Default retention of finished deliveries and unreferenced events: 30 days.
pub const DEFAULT_KEEP: Duration = Duration::from_secs(30 * 24 * 3600);
/// Default rows per batch.
pub const DEFAULT_BATCH: usize = 500;
/// Default time between two retention runs.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(60);
/// Pause between two batches of one run, so dispatch writes go first.
pub const PAUSE_BETWEEN_BATCHES: Duration = Duration::from_millis(20);

/// How long to keep history, and how to remove it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetentionPolicy {
    /// Finished deliveries and unreferenced events older than this are removed.
    pub keep: Duration,
    /// Rows per batch (one short transaction each).
    pub batch: usize,
    /// Time between runs (each run removes everything due, batch by batch).
    pub interval: Duration,
}

impl Default for RetentionPolicy {
    fn default() -> Self {
        RetentionPolicy {
            keep: DEFAULT_KEEP,
            batch: DEFAULT_BATCH,
            interval: DEFAULT_INTERVAL,
        }
    }
}

impl std::ops::AddAssign for Purged {
    fn add_assign(&mut self, o: Purged) {
        self.deliveries += o.deliveries;
        self.attempts += o.attempts;
        self.events += o.events;
        self.notifications += o.notifications;
    }
}
