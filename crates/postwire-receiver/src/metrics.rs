//! [`OnceMetrics`]: counters of the cases where once-processing did not hold as planned,
//! kept by an [`OnceLayer`](crate::OnceLayer) for the application to export (each case is
//! also logged at `warn`). Every count should stay at zero; one that grows says a handler
//! outlives its claim (a store too slow or unreachable to renew it) and may have run twice.

use std::sync::atomic::{AtomicU64, Ordering};

/// The layer's counters (see the [module docs](self)), read with
/// [`OnceLayer::metrics`](crate::OnceLayer::metrics). They only grow.
#[derive(Debug, Default)]
pub struct OnceMetrics {
    completes_refused: AtomicU64,
    leases_lost: AtomicU64,
    renewals_failed: AtomicU64,
}

impl OnceMetrics {
    /// Handlers that returned 2xx after their claim was lost: `complete` answered false,
    /// since the lease ran out and another copy holds the id (or has done it). That
    /// delivery's handler may have run twice.
    pub fn completes_refused(&self) -> u64 {
        self.completes_refused.load(Ordering::Relaxed)
    }

    /// Renewals that found the claim gone while the handler still ran: the lease had run
    /// out (the store was not reached in time) and the id is no longer this copy's.
    pub fn leases_lost(&self) -> u64 {
        self.leases_lost.load(Ordering::Relaxed)
    }

    /// Renewals the store failed or did not answer within `store_timeout` (tried again at
    /// the next third of the lease; the claim holds until its lease ends).
    pub fn renewals_failed(&self) -> u64 {
        self.renewals_failed.load(Ordering::Relaxed)
    }

    pub(crate) fn complete_refused(&self) {
        self.completes_refused.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn lease_lost(&self) {
        self.leases_lost.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn renewal_failed(&self) {
        self.renewals_failed.fetch_add(1, Ordering::Relaxed);
    }
}
