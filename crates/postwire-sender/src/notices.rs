//! Operational notices: what a workspace's operators are told about its subscriptions,
//! and how a stored notice becomes a delivery to their operator endpoints.
//!
//! ## From a change to a delivery
//! 1. A change operators hear of (a health change of [`crate::health`], an automatic
//!    pause, a resume, a rotation) is stored as a [`Notification`] **in the transaction
//!    of the change itself**: each backend calls [`new_notice`] there. So a notice is
//!    never lost to a crash, and never written for a change that rolled back.
//! 2. The sender relays stored notices that are not relayed yet, oldest first
//!    ([`Store::relay_notices`](crate::Store::relay_notices): [`relay_event`] →
//!    [`Store::enqueue`](crate::Store::enqueue)): the enqueue that
//!    queues one marks it relayed in its own transaction, and queues nothing for one
//!    already relayed, so each notice is queued once, whichever process or restart relays
//!    it. The sender relays after every write that stored notices, when the dispatcher
//!    starts, and every [`RELAY_EVERY`] (notices another process stored before it died).
//! 3. From there a notice is a delivery like any other: the same queue, retries, SSRF
//!    checks and signing (each operator endpoint's own `whsec_` secret), in order per
//!    subscription concerned (ordering key `subscription:<id>`), to every operator
//!    endpoint of the workspace except the one it is about ([`crate::routing`]).
//!
//! The bodies are [`OperationalEvent`]s: ids and names of subscriptions, counts and
//! times, never a secret, a key, an endpoint URL or a customer payload (core's types
//! have no field for them).

use std::time::Duration;

use postwire_core::{
    AutomaticPauseCause, Event, OperationalData, OperationalEvent, OperationalEventType, OrderingKey, SubscriptionRef,
    Timestamp,
};

use crate::error::SenderError;
use crate::events::{BuiltEvent, Envelope, NoticeHeader};
use crate::health::{Health, HealthChange};
use crate::model::{Notification, PauseCause, ResumeSummary};

/// How often the dispatcher relays stored notices that no write relayed (one stored by
/// a process that stopped before relaying it).
pub const RELAY_EVERY: Duration = Duration::from_secs(30);

/// Most notices one relay queues in one transaction.
pub const RELAY_BATCH: usize = 100;

/// A notice to store, built inside the transaction of its change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewNotice {
    /// `webhook-id` of its deliveries.
    pub event_id: String,
    /// The workspace.
    pub workspace_id: String,
    /// Its type.
    pub kind: OperationalEventType,
    /// The subscription it is about.
    pub subscription_id: Option<String>,
    /// For `endpoint.paused`: why.
    pub cause: Option<PauseCause>,
    /// A sentence for people (the notifications list).
    pub message: String,
    /// The JSON body its deliveries carry.
    pub body: String,
    /// When.
    pub created_at: Timestamp,
}

/// A notice stored and not yet relayed, as [`Store::pending_notices`](crate::Store::pending_notices)
/// returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingNotice {
    /// The notification.
    pub notification: Notification,
    /// Its body.
    pub body: String,
}

impl NewNotice {
    /// The notification as stored under row `id`.
    pub fn stored(self, id: i64) -> Notification {
        Notification {
            id,
            workspace_id: self.workspace_id,
            kind: self.kind,
            subscription_id: self.subscription_id,
            cause: self.cause,
            message: self.message,
            event_id: self.event_id,
            created_at: self.created_at,
        }
    }
}

/// The notices of one attempt's outcome for `subscription`, in order: its health
/// `changes` ([`Health::apply_noting`]), then `paused_now`, the cause when the backend
/// paused the subscription with this outcome (not when it was paused already).
pub fn after_attempt(
    workspace_id: &str,
    subscription: SubscriptionRef,
    changes: Vec<HealthChange>,
    paused_now: Option<PauseCause>,
    health: &Health,
    now: Timestamp,
) -> Result<Vec<NewNotice>, SenderError> {
    let mut data: Vec<OperationalData> = changes
        .into_iter()
        .map(|change| health_data(subscription.clone(), change, health, now))
        .collect();
    if let Some(cause) = paused_now {
        data.push(paused_data(subscription, cause, health, now));
    }
    data.into_iter().map(|d| new_notice(workspace_id, d, now)).collect()
}

/// The notice of `data` in `workspace_id` at `now`, with a fresh `webhook-id`.
pub fn new_notice(workspace_id: &str, data: OperationalData, now: Timestamp) -> Result<NewNotice, SenderError> {
    let event_id = Event::generate_id(now).map_err(|_| SenderError::storage("no secure random source is available"))?;
    let kind = data.event_type();
    let subscription_id = data.subscription().map(|s| s.id.clone());
    let cause = match &data {
        OperationalData::EndpointPaused { cause, .. } => Some(match cause {
            AutomaticPauseCause::ConsecutiveFailures => PauseCause::ConsecutiveFailures,
            AutomaticPauseCause::FailingFor72Hours => PauseCause::FailingFor72Hours,
        }),
        _ => None,
    };
    let message = message(&data);
    let body = OperationalEvent {
        id: event_id.clone(),
        created_at: now,
        workspace_id: workspace_id.to_owned(),
        data,
    }
    .to_json()
    .to_string();
    Ok(NewNotice {
        event_id,
        workspace_id: workspace_id.to_owned(),
        kind,
        subscription_id,
        cause,
        message,
        body,
        created_at: now,
    })
}

/// The sentence shown in the notifications list.
fn message(data: &OperationalData) -> String {
    let name = |s: &SubscriptionRef| format!("Webhook subscription {} ({})", s.id, s.name);
    match data {
        OperationalData::EndpointFailing { subscription, .. } => format!(
            "{} is failing: a delivery failed after all its attempts. It pauses after 50 failed deliveries in a row or 72 hours without a success.",
            name(subscription)
        ),
        OperationalData::EndpointPauseWarning {
            subscription,
            consecutive_failures,
            ..
        } => format!(
            "{} is about to pause: {consecutive_failures} failed deliveries in a row, no success for a long time. It pauses at 50, or after 72 hours.",
            name(subscription)
        ),
        OperationalData::EndpointPaused {
            subscription, cause, ..
        } => {
            let cause = match cause {
                AutomaticPauseCause::ConsecutiveFailures => PauseCause::ConsecutiveFailures,
                AutomaticPauseCause::FailingFor72Hours => PauseCause::FailingFor72Hours,
            };
            crate::health::pause_notice(&subscription.id, cause)
        }
        OperationalData::EndpointResumed {
            subscription,
            released,
            expired,
        } => format!(
            "{} was resumed: {released} held deliveries are being sent, {expired} expired.",
            name(subscription)
        ),
        OperationalData::EndpointRecovered {
            subscription,
            failures_before,
            ..
        } => format!(
            "{} recovered: a delivery succeeded after {failures_before} failed ones.",
            name(subscription)
        ),
        OperationalData::EndpointSecretRotated {
            subscription,
            previous_secret_expires_at,
        } => format!(
            "{}'s signing secret was rotated; the previous one signs too until {previous_secret_expires_at}.",
            name(subscription)
        ),
        OperationalData::SigningKeyRotated {
            previous_key_expires_at,
        } => format!(
            "The workspace's v1a signing key was rotated; the previous one signs too until {previous_key_expires_at}."
        ),
    }
}

/// The `data` of a health change of `subscription`, whose health is now `health`.
fn health_data(
    subscription: SubscriptionRef,
    change: HealthChange,
    health: &Health,
    now: Timestamp,
) -> OperationalData {
    let failing_since = health.failing_since.unwrap_or(now);
    match change {
        HealthChange::Failing => OperationalData::EndpointFailing {
            subscription,
            consecutive_failures: health.consecutive_failures,
            failing_since,
            last_success_at: health.last_success_at,
        },
        HealthChange::PauseWarning(reason) => OperationalData::EndpointPauseWarning {
            subscription,
            reason,
            consecutive_failures: health.consecutive_failures,
            failing_since,
        },
        HealthChange::Recovered {
            failures_before,
            failing_since,
        } => OperationalData::EndpointRecovered {
            subscription,
            failures_before,
            failing_since,
        },
    }
}

/// The `data` of an automatic pause of `subscription`.
fn paused_data(subscription: SubscriptionRef, cause: PauseCause, health: &Health, now: Timestamp) -> OperationalData {
    OperationalData::EndpointPaused {
        subscription,
        cause: match cause {
            PauseCause::ConsecutiveFailures => AutomaticPauseCause::ConsecutiveFailures,
            PauseCause::FailingFor72Hours => AutomaticPauseCause::FailingFor72Hours,
        },
        consecutive_failures: health.consecutive_failures,
        failing_since: health.failing_since.unwrap_or(now),
    }
}

/// The `data` of a resume of a paused subscription.
pub fn resumed_data(subscription: SubscriptionRef, summary: ResumeSummary) -> OperationalData {
    OperationalData::EndpointResumed {
        subscription,
        released: summary.released,
        expired: summary.expired,
    }
}

/// The event that queues `pending` for the workspace's operator endpoints.
pub fn relay_event(pending: PendingNotice) -> BuiltEvent {
    let n = pending.notification;
    BuiltEvent {
        ordering_key: n.subscription_id.clone().map(OrderingKey::Subscription),
        envelope: Envelope::Notice(NoticeHeader {
            notification_id: n.id,
            id: n.event_id,
            workspace_id: n.workspace_id,
            kind: n.kind,
            created_at: n.created_at,
            about: n.subscription_id,
        }),
        body: pending.body,
        post_id: None,
        external_id: None,
        only_subscription: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routing::{EndpointRole, Route, Routed, route};

    fn sub(id: &str) -> SubscriptionRef {
        SubscriptionRef {
            id: id.into(),
            name: "Main".into(),
        }
    }

    #[test]
    fn a_notice_goes_to_every_operator_endpoint_but_the_one_it_is_about() {
        let now = Timestamp::from_unix_millis(1_800_000_000_000);
        let health = Health {
            consecutive_failures: 1,
            failing_since: Some(now),
            ..Health::default()
        };
        let notes = after_attempt("ws_1", sub("wh_op1"), vec![HealthChange::Failing], None, &health, now).unwrap();
        let [n] = notes.as_slice() else {
            panic!("one notice: {notes:?}")
        };
        let built = relay_event(PendingNotice {
            notification: n.clone().stored(7),
            body: n.body.clone(),
        });
        assert_eq!(built.id(), n.event_id);
        assert_eq!(built.ordering_key, Some(OrderingKey::Subscription("wh_op1".into())));
        let op = |id: &str, paused| Route {
            id: id.into(),
            paused,
            role: EndpointRole::Operator,
        };
        assert_eq!(route(&built, &op("wh_op1", false)), None);
        assert_eq!(route(&built, &op("wh_op2", false)), Some(Routed::Deliver));
        assert_eq!(route(&built, &op("wh_op3", true)), Some(Routed::Hold));
        let subscriber = Route {
            role: EndpointRole::Subscriber(Default::default()),
            ..op("wh_2", false)
        };
        assert_eq!(route(&built, &subscriber), None);
        let body: serde_json::Value = serde_json::from_str(&n.body).unwrap();
        assert_eq!(body["type"], "endpoint.failing");
        assert_eq!(body["data"]["subscription"]["id"], "wh_op1");
        assert_eq!(body["data"]["consecutiveFailures"], 1);
    }
}
