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
//! ## What operators are told
//! [`Health::apply_noting`] also says which changes the workspace's operators hear of
//! ([`HealthChange`], sent as operational notices by [`crate::notices`]): the first
//! delivery that failed for good after a success (`endpoint.failing`), one warning per
//! failing run at 40 failed deliveries or 60 hours (`endpoint.pause_warning`, always
//! before the pause, even when both come with one attempt), and the first success after
//! failed deliveries (`endpoint.recovered`). The pause itself is the backend's to notice,
//! since only it knows whether the subscription was paused already.
//!
//! Every delivered attempt resets `consecutiveFailures` to 0, sets `lastSuccessAt` and
//! clears `failing_since` and the warning. The rules live here, in pure functions, so every storage
//! backend applies exactly the same ones inside its own transaction.

use postwire_core::Timestamp;

use postwire_core::PauseWarningReason;

use crate::model::{NextState, PauseCause};

/// Failed deliveries in a row that pause a subscription.
pub const PAUSE_AFTER_FAILED_DELIVERIES: u32 = 50;
/// How long deliveries may fail without any success before the subscription is paused.
pub const PAUSE_AFTER_FAILING_MS: i64 = 72 * 3_600_000;
/// Failed deliveries in a row that send `endpoint.pause_warning`.
pub const WARN_AFTER_FAILED_DELIVERIES: u32 = 40;
/// How long deliveries may fail without any success before `endpoint.pause_warning`.
pub const WARN_AFTER_FAILING_MS: i64 = 60 * 3_600_000;

/// The counters kept per subscription.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Health {
    /// Deliveries failed for good since the last success.
    pub consecutive_failures: u32,
    /// Time of the last delivered attempt.
    pub last_success_at: Option<Timestamp>,
    /// First failed attempt since the last success.
    pub failing_since: Option<Timestamp>,
    /// `endpoint.pause_warning` was sent in this failing run.
    pub pause_warned: bool,
}

/// A change of health the workspace's operators are told about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HealthChange {
    /// The first delivery failed for good after a success (or since creation).
    Failing,
    /// The pause is near.
    PauseWarning(PauseWarningReason),
    /// The first success after `failures_before` failed deliveries.
    Recovered {
        /// Failed deliveries in a row before it.
        failures_before: u32,
        /// When the failing run began.
        failing_since: Timestamp,
    },
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
        self.apply_noting(verdict, now).0
    }

    /// [`apply`](Self::apply), and the changes operators are told about, in order.
    ///
    /// ```
    /// use postwire_core::Timestamp;
    /// use postwire_sender::health::{Health, HealthChange, Verdict};
    /// let mut h = Health::default();
    /// let t0 = Timestamp::from_unix_millis(0);
    /// assert_eq!(h.apply_noting(Verdict::FailedForGood, t0).1, vec![HealthChange::Failing]);
    /// let (_, changes) = h.apply_noting(Verdict::Delivered, t0.add_millis(1));
    /// assert_eq!(changes, vec![HealthChange::Recovered { failures_before: 1, failing_since: t0 }]);
    /// ```
    pub fn apply_noting(&mut self, verdict: Verdict, now: Timestamp) -> (Option<PauseCause>, Vec<HealthChange>) {
        let mut changes = Vec::new();
        match verdict {
            Verdict::Delivered => {
                if self.consecutive_failures > 0 {
                    changes.push(HealthChange::Recovered {
                        failures_before: self.consecutive_failures,
                        failing_since: self.failing_since.unwrap_or(now),
                    });
                }
                *self = Health {
                    last_success_at: Some(now),
                    ..Health::default()
                };
                (None, changes)
            }
            Verdict::WillRetry | Verdict::FailedForGood => {
                let since = *self.failing_since.get_or_insert(now);
                if verdict == Verdict::FailedForGood {
                    self.consecutive_failures = self.consecutive_failures.saturating_add(1);
                    if self.consecutive_failures == 1 {
                        changes.push(HealthChange::Failing);
                    }
                }
                let failing_ms = now.unix_millis() - since.unix_millis();
                let warning = if self.consecutive_failures >= WARN_AFTER_FAILED_DELIVERIES {
                    Some(PauseWarningReason::ConsecutiveFailures)
                } else if failing_ms >= WARN_AFTER_FAILING_MS {
                    Some(PauseWarningReason::FailingFor60Hours)
                } else {
                    None
                };
                if let Some(reason) = warning
                    && !self.pause_warned
                {
                    self.pause_warned = true;
                    changes.push(HealthChange::PauseWarning(reason));
                }
                let pause = if self.consecutive_failures >= PAUSE_AFTER_FAILED_DELIVERIES {
                    Some(PauseCause::ConsecutiveFailures)
                } else {
                    (failing_ms >= PAUSE_AFTER_FAILING_MS).then_some(PauseCause::FailingFor72Hours)
                };
                (pause, changes)
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
                failing_since: None,
                pause_warned: false,
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

    #[test]
    fn one_run_notes_failing_one_warning_at_40_then_the_pause_and_recovery() {
        let mut h = Health::default();
        let t = Timestamp::from_unix_millis(1_000);
        let mut noted = Vec::new();
        for _ in 0..50 {
            let (pause, changes) = h.apply_noting(Verdict::FailedForGood, t);
            noted.extend(changes.into_iter().map(|c| (h.consecutive_failures, c)));
            assert_eq!(pause.is_some(), h.consecutive_failures >= 50);
        }
        assert_eq!(
            noted,
            vec![
                (1, HealthChange::Failing),
                (40, HealthChange::PauseWarning(PauseWarningReason::ConsecutiveFailures)),
            ]
        );
        let (_, changes) = h.apply_noting(Verdict::Delivered, t.add_millis(5));
        assert_eq!(
            changes,
            vec![HealthChange::Recovered {
                failures_before: 50,
                failing_since: t
            }]
        );
        // A new run warns again.
        assert_eq!(h.apply_noting(Verdict::FailedForGood, t).1, vec![HealthChange::Failing]);
    }

    #[test]
    fn sixty_hours_warn_once_and_a_late_attempt_warns_before_it_pauses() {
        let t0 = Timestamp::from_unix_millis(0);
        let mut h = Health::default();
        h.apply_noting(Verdict::WillRetry, t0);
        assert_eq!(
            h.apply_noting(Verdict::WillRetry, t0.add_millis(WARN_AFTER_FAILING_MS - 1))
                .1,
            vec![]
        );
        assert_eq!(
            h.apply_noting(Verdict::WillRetry, t0.add_millis(WARN_AFTER_FAILING_MS))
                .1,
            vec![HealthChange::PauseWarning(PauseWarningReason::FailingFor60Hours)]
        );
        assert_eq!(
            h.apply_noting(Verdict::WillRetry, t0.add_millis(WARN_AFTER_FAILING_MS + 1))
                .1,
            vec![]
        );
        // No attempt between 60 h and 72 h: the warning comes with the pause, first.
        let mut late = Health::default();
        late.apply_noting(Verdict::WillRetry, t0);
        let (pause, changes) = late.apply_noting(Verdict::WillRetry, t0.add_millis(PAUSE_AFTER_FAILING_MS));
        assert_eq!(pause, Some(PauseCause::FailingFor72Hours));
        assert_eq!(
            changes,
            vec![HealthChange::PauseWarning(PauseWarningReason::FailingFor60Hours)]
        );
        // Failed attempts that are retried are not failed deliveries: nothing to recover from.
        assert_eq!(late.apply_noting(Verdict::Delivered, t0).1, vec![]);
    }
}
