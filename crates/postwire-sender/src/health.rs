//! Subscription health: the failure counters and the rule that pauses a subscription.
//!
//! ## What counts as a failed delivery
//! `consecutiveFailures` counts **deliveries that failed for good** (all nine attempts
//! failed) since the last delivered one; a single failed attempt that is still being
//! retried does not count. A delivery is one event to one subscription, which is how the
//! spec's delivery state machine uses the word. Counting attempts instead would pause a
//! busy subscription after a one-minute outage, which the 24-hour retry schedule exists
//! to ride out.
//!
//! ## The two pause rules
//! * **50 failed deliveries in a row**: when `consecutiveFailures` reaches 50.
//! * **72 hours without a success while deliveries fail**: `failing_since` is the time of
//!   the first failed attempt after the last success; when a failed attempt happens 72 h
//!   or more after it, the subscription is paused. A success clears it.
//!
//! Every delivered attempt resets `consecutiveFailures` to 0, sets `lastSuccessAt` and
//! clears `failing_since`. The rules live here, in pure functions, so every storage
//! backend applies exactly the same ones inside its own transaction.

use postwire_core::Timestamp;

use crate::model::{NextState, PauseCause};

/// Failed deliveries in a row that pause a subscription.
pub const PAUSE_AFTER_FAILED_DELIVERIES: u32 = 50;
/// How long deliveries may fail without any success before the subscription is paused.
pub const PAUSE_AFTER_FAILING_MS: i64 = 72 * 3_600_000;

/// The counters kept per subscription.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Health {
    /// Deliveries failed for good since the last success.
    pub consecutive_failures: u32,
    /// Time of the last delivered attempt.
    pub last_success_at: Option<Timestamp>,
    /// First failed attempt since the last success.
    pub failing_since: Option<Timestamp>,
}

/// The text of the notification stored for workspace admins when `subscription_id` is
/// paused by `cause`.
pub fn pause_notice(subscription_id: &str, cause: PauseCause) -> String {
    format!(
        "Webhook subscription {subscription_id} was paused: {}. Events are held until it is resumed; \
         events held for more than 7 days expire.",
        cause.reason()
    )
}

/// The result of one attempt, as far as health is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// A `2xx` in time.
    Delivered,
    /// Failed; another attempt is scheduled.
    WillRetry,
    /// Failed, and it was the last attempt.
    FailedForGood,
}

impl Verdict {
    /// The verdict of an attempt after which the delivery goes to `next`.
    pub fn of(next: NextState) -> Verdict {
        match next {
            NextState::Delivered => Verdict::Delivered,
            NextState::RetryAt(_) => Verdict::WillRetry,
            NextState::Failed => Verdict::FailedForGood,
        }
    }
}

impl Health {
    /// Applies one attempt's verdict at `now`; returns why to pause, if the subscription
    /// must be paused now.
    ///
    /// ```
    /// use postwire_core::Timestamp;
    /// use postwire_sender::health::{Health, Verdict};
    /// let mut h = Health::default();
    /// let t0 = Timestamp::from_unix_millis(0);
    /// assert_eq!(h.apply(Verdict::WillRetry, t0), None);
    /// assert_eq!(h.consecutive_failures, 0);
    /// assert!(h.apply(Verdict::WillRetry, t0.add_millis(72 * 3_600_000)).is_some());
    /// ```
    pub fn apply(&mut self, verdict: Verdict, now: Timestamp) -> Option<PauseCause> {
        match verdict {
            Verdict::Delivered => {
                self.consecutive_failures = 0;
                self.last_success_at = Some(now);
                self.failing_since = None;
                None
            }
            Verdict::WillRetry | Verdict::FailedForGood => {
                let since = *self.failing_since.get_or_insert(now);
                if verdict == Verdict::FailedForGood {
                    self.consecutive_failures = self.consecutive_failures.saturating_add(1);
                    if self.consecutive_failures >= PAUSE_AFTER_FAILED_DELIVERIES {
                        return Some(PauseCause::ConsecutiveFailures);
                    }
                }
                (now.unix_millis() - since.unix_millis() >= PAUSE_AFTER_FAILING_MS)
                    .then_some(PauseCause::FailingFor72Hours)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifty_final_failures_pause_and_success_resets() {
        let mut h = Health::default();
        let t = Timestamp::from_unix_millis(1_000);
        for _ in 0..49 {
            assert_eq!(h.apply(Verdict::FailedForGood, t), None);
        }
        assert_eq!(
            h.apply(Verdict::FailedForGood, t),
            Some(PauseCause::ConsecutiveFailures)
        );
        h.apply(Verdict::Delivered, t);
        assert_eq!(
            h,
            Health {
                consecutive_failures: 0,
                last_success_at: Some(t),
                failing_since: None
            }
        );
    }

    #[test]
    fn seventy_two_hours_of_failing_pause_exactly_at_the_limit() {
        let mut h = Health::default();
        let t0 = Timestamp::from_unix_millis(0);
        assert_eq!(h.apply(Verdict::WillRetry, t0), None);
        assert_eq!(
            h.apply(Verdict::WillRetry, t0.add_millis(PAUSE_AFTER_FAILING_MS - 1)),
            None
        );
        assert_eq!(
            h.apply(Verdict::FailedForGood, t0.add_millis(PAUSE_AFTER_FAILING_MS)),
            Some(PauseCause::FailingFor72Hours)
        );
    }
}
