//! What the dispatcher reports as it works, for metrics: each attempt's outcome, the time
//! from publish to a `2xx`, and how long claims take.
//!
//! The sender records nothing itself; a host that wants metrics sets
//! [`SenderConfig::observer`](crate::SenderConfig::observer) and counts what it is told
//! (`postwire serve` exports them as Prometheus metrics). Calls are made on the
//! dispatcher's tasks, so an observer must be quick and must not block.

use std::time::Duration;

/// Receives the dispatcher's reports. Every method has an empty default.
pub trait DeliveryObserver: Send + Sync + 'static {
    /// An attempt finished. `outcome` is `delivered` (a `2xx`), `http_error` (another
    /// status) or the error kind (`timeout`, `connection`, `dns`, `blocked_address`,
    /// `invalid_url`, `protocol`). `publish_to_success` is the time from the delivery's
    /// creation (its publish) to this `2xx`, on the sender's clock; `None` unless
    /// delivered.
    fn attempt_finished(&self, outcome: &'static str, publish_to_success: Option<Duration>) {
        let _ = (outcome, publish_to_success);
    }

    /// A claim returned `deliveries` after `took`.
    fn claimed(&self, took: Duration, deliveries: usize) {
        let _ = (took, deliveries);
    }
}
