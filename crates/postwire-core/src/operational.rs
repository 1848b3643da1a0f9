//! The operational catalogue: notices to a workspace's operators about its own webhook
//! subscriptions (failing, about to pause, paused, resumed, recovered, a secret or
//! signing key rotated), sent as signed webhooks to the operators' endpoints.
//!
//! Kept apart from the spec's events ([`crate::EventType`]): a subscriber's endpoint
//! never receives these, and an operator endpoint receives nothing else. The envelope is
//! the same (`id`, `type`, `createdAt`, `workspaceId`, `data`); `data` names the
//! subscription concerned and counts, and never holds a secret, a key, an endpoint URL
//! (URLs often carry tokens) or a customer payload: the types have no field for them.
//!
//! [`operational_json_schema`] is the JSON Schema of every notice, built from this one
//! catalogue (an exhaustive `match` per type), and `docs/events.md` carries it verbatim
//! (a test compares them).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::Timestamp;

/// The type of an operational notice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OperationalEventType {
    /// `endpoint.failing`: the first failed delivery after a success (or since creation).
    EndpointFailing,
    /// `endpoint.pause_warning`: 40 failed deliveries in a row, or 60 hours without a
    /// success while failing; the pause comes at 50, or at 72 hours.
    EndpointPauseWarning,
    /// `endpoint.paused`: the subscription was paused automatically, with the cause.
    EndpointPaused,
    /// `endpoint.resumed`: the subscription was resumed, with the released and expired
    /// counts of its held deliveries.
    EndpointResumed,
    /// `endpoint.recovered`: the first successful delivery after failures.
    EndpointRecovered,
    /// `endpoint.secret_rotated`: the subscription's signing secret was replaced.
    EndpointSecretRotated,
    /// `signing_key.rotated`: the workspace's `v1a` signing key was replaced.
    SigningKeyRotated,
}

impl OperationalEventType {
    /// Every type, in the catalogue's order.
    pub const ALL: &'static [OperationalEventType] = &[
        OperationalEventType::EndpointFailing,
        OperationalEventType::EndpointPauseWarning,
        OperationalEventType::EndpointPaused,
        OperationalEventType::EndpointResumed,
        OperationalEventType::EndpointRecovered,
        OperationalEventType::EndpointSecretRotated,
        OperationalEventType::SigningKeyRotated,
    ];

    /// The wire name, e.g. `"endpoint.paused"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            OperationalEventType::EndpointFailing => "endpoint.failing",
            OperationalEventType::EndpointPauseWarning => "endpoint.pause_warning",
            OperationalEventType::EndpointPaused => "endpoint.paused",
            OperationalEventType::EndpointResumed => "endpoint.resumed",
            OperationalEventType::EndpointRecovered => "endpoint.recovered",
            OperationalEventType::EndpointSecretRotated => "endpoint.secret_rotated",
            OperationalEventType::SigningKeyRotated => "signing_key.rotated",
        }
    }

    /// When it is sent, for the documentation and the schema.
    pub const fn description(self) -> &'static str {
        match self {
            OperationalEventType::EndpointFailing => {
                "The first failed delivery of a subscription after a success (or since its creation)."
            }
            OperationalEventType::EndpointPauseWarning => {
                "40 failed deliveries in a row, or 60 hours without a success while failing: the subscription pauses at 50, or at 72 hours."
            }
            OperationalEventType::EndpointPaused => "The subscription was paused automatically; `cause` says why.",
            OperationalEventType::EndpointResumed => {
                "The subscription was resumed: `released` held deliveries are sent, `expired` ones (held over 7 days) never will be."
            }
            OperationalEventType::EndpointRecovered => "The first successful delivery after failures.",
            OperationalEventType::EndpointSecretRotated => {
                "The subscription's signing secret was replaced; the previous one signs too until `previousSecretExpiresAt`."
            }
            OperationalEventType::SigningKeyRotated => {
                "The workspace's `v1a` signing key was replaced; the previous one signs too until `previousKeyExpiresAt`."
            }
        }
    }
}

impl fmt::Display for OperationalEventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not an operational notice's type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown operational event type")]
pub struct UnknownOperationalEventType;

impl FromStr for OperationalEventType {
    type Err = UnknownOperationalEventType;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        OperationalEventType::ALL
            .iter()
            .copied()
            .find(|t| t.as_str() == s)
            .ok_or(UnknownOperationalEventType)
    }
}

/// The subscription a notice is about: its id and name, nothing else.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SubscriptionRef {
    /// Subscription identifier.
    pub id: String,
    /// Its name.
    pub name: String,
}

/// Why a pause warning was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PauseWarningReason {
    /// 40 failed deliveries in a row (the pause comes at 50).
    ConsecutiveFailures,
    /// 60 hours without a success while failing (the pause comes at 72).
    #[serde(rename = "failing_for_60_hours")]
    FailingFor60Hours,
}

/// Why a subscription was paused automatically.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AutomaticPauseCause {
    /// 50 failed deliveries in a row.
    ConsecutiveFailures,
    /// 72 hours without a success while failing.
    #[serde(rename = "failing_for_72_hours")]
    FailingFor72Hours,
}

/// `data` of each operational notice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OperationalData {
    /// `endpoint.failing`.
    EndpointFailing {
        /// The subscription.
        subscription: SubscriptionRef,
        /// Failed deliveries in a row (1).
        consecutive_failures: u32,
        /// When the failing began.
        failing_since: Timestamp,
        /// The last success before, if any.
        last_success_at: Option<Timestamp>,
    },
    /// `endpoint.pause_warning`.
    EndpointPauseWarning {
        /// The subscription.
        subscription: SubscriptionRef,
        /// Why now.
        reason: PauseWarningReason,
        /// Failed deliveries in a row.
        consecutive_failures: u32,
        /// When the failing began.
        failing_since: Timestamp,
    },
    /// `endpoint.paused`.
    EndpointPaused {
        /// The subscription.
        subscription: SubscriptionRef,
        /// Why.
        cause: AutomaticPauseCause,
        /// Failed deliveries in a row.
        consecutive_failures: u32,
        /// When the failing began.
        failing_since: Timestamp,
    },
    /// `endpoint.resumed`.
    EndpointResumed {
        /// The subscription.
        subscription: SubscriptionRef,
        /// Held deliveries released for sending.
        released: u64,
        /// Held deliveries expired (never sent).
        expired: u64,
    },
    /// `endpoint.recovered`.
    EndpointRecovered {
        /// The subscription.
        subscription: SubscriptionRef,
        /// Failed deliveries in a row before this success.
        failures_before: u32,
        /// When the failing began.
        failing_since: Timestamp,
    },
    /// `endpoint.secret_rotated`.
    EndpointSecretRotated {
        /// The subscription.
        subscription: SubscriptionRef,
        /// Until then the previous secret signs too.
        previous_secret_expires_at: Timestamp,
    },
    /// `signing_key.rotated`.
    SigningKeyRotated {
        /// Until then the previous key signs too.
        previous_key_expires_at: Timestamp,
    },
}

impl OperationalData {
    /// Its type.
    pub const fn event_type(&self) -> OperationalEventType {
        match self {
            OperationalData::EndpointFailing { .. } => OperationalEventType::EndpointFailing,
            OperationalData::EndpointPauseWarning { .. } => OperationalEventType::EndpointPauseWarning,
            OperationalData::EndpointPaused { .. } => OperationalEventType::EndpointPaused,
            OperationalData::EndpointResumed { .. } => OperationalEventType::EndpointResumed,
            OperationalData::EndpointRecovered { .. } => OperationalEventType::EndpointRecovered,
            OperationalData::EndpointSecretRotated { .. } => OperationalEventType::EndpointSecretRotated,
            OperationalData::SigningKeyRotated { .. } => OperationalEventType::SigningKeyRotated,
        }
    }

    /// The subscription it is about (`None` for a workspace's signing key): the
    /// ordering key of its delivery, and the one operator endpoint it never targets.
    pub fn subscription(&self) -> Option<&SubscriptionRef> {
        match self {
            OperationalData::EndpointFailing { subscription, .. }
            | OperationalData::EndpointPauseWarning { subscription, .. }
            | OperationalData::EndpointPaused { subscription, .. }
            | OperationalData::EndpointResumed { subscription, .. }
            | OperationalData::EndpointRecovered { subscription, .. }
            | OperationalData::EndpointSecretRotated { subscription, .. } => Some(subscription),
            OperationalData::SigningKeyRotated { .. } => None,
        }
    }

    /// The JSON form of `data`.
    pub fn to_json(&self) -> Value {
        let ts = |t: &Timestamp| Value::String(t.to_string());
        match self {
            OperationalData::EndpointFailing {
                subscription,
                consecutive_failures,
                failing_since,
                last_success_at,
            } => json!({
                "subscription": subscription,
                "consecutiveFailures": consecutive_failures,
                "failingSince": ts(failing_since),
                "lastSuccessAt": last_success_at.as_ref().map(ts),
            }),
            OperationalData::EndpointPauseWarning {
                subscription,
                reason,
                consecutive_failures,
                failing_since,
            } => json!({
                "subscription": subscription,
                "reason": reason,
                "consecutiveFailures": consecutive_failures,
                "failingSince": ts(failing_since),
            }),
            OperationalData::EndpointPaused {
                subscription,
                cause,
                consecutive_failures,
                failing_since,
            } => json!({
                "subscription": subscription,
                "cause": cause,
                "consecutiveFailures": consecutive_failures,
                "failingSince": ts(failing_since),
            }),
            OperationalData::EndpointResumed {
                subscription,
                released,
                expired,
            } => json!({ "subscription": subscription, "released": released, "expired": expired }),
            OperationalData::EndpointRecovered {
                subscription,
                failures_before,
                failing_since,
            } => json!({
                "subscription": subscription,
                "failuresBefore": failures_before,
                "failingSince": ts(failing_since),
            }),
            OperationalData::EndpointSecretRotated {
                subscription,
                previous_secret_expires_at,
            } => json!({
                "subscription": subscription,
                "previousSecretExpiresAt": ts(previous_secret_expires_at),
            }),
            OperationalData::SigningKeyRotated {
                previous_key_expires_at,
            } => json!({ "previousKeyExpiresAt": ts(previous_key_expires_at) }),
        }
    }
}

/// One operational notice: the spec's envelope around [`OperationalData`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperationalEvent {
    /// `webhook-id` (made like an event's, [`crate::Event::generate_id`]).
    pub id: String,
    /// When it happened.
    pub created_at: Timestamp,
    /// The workspace.
    pub workspace_id: String,
    /// What happened.
    pub data: OperationalData,
}

impl OperationalEvent {
    /// The JSON body sent.
    pub fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "type": self.data.event_type().as_str(),
            "createdAt": self.created_at.to_string(),
            "workspaceId": self.workspace_id,
            "data": self.data.to_json(),
        })
    }
}

/// The schema of `data` for `t`, from the catalogue.
fn data_schema(t: OperationalEventType) -> Value {
    let subscription = json!({
        "type": "object", "additionalProperties": false, "required": ["id", "name"],
        "properties": { "id": {"type": "string"}, "name": {"type": "string"} }
    });
    let time = json!({"type": "string", "format": "date-time"});
    let count = json!({"type": "integer", "minimum": 0});
    let object = |properties: Value| {
        let required: Vec<&String> = properties.as_object().map(|p| p.keys().collect()).unwrap_or_default();
        json!({ "type": "object", "required": required, "properties": properties })
    };
    match t {
        OperationalEventType::EndpointFailing => object(json!({
            "subscription": subscription, "consecutiveFailures": count, "failingSince": time,
            "lastSuccessAt": {"type": ["string", "null"], "format": "date-time"},
        })),
        OperationalEventType::EndpointPauseWarning => object(json!({
            "subscription": subscription,
            "reason": {"enum": ["consecutive_failures", "failing_for_60_hours"]},
            "consecutiveFailures": count, "failingSince": time,
        })),
        OperationalEventType::EndpointPaused => object(json!({
            "subscription": subscription,
            "cause": {"enum": ["consecutive_failures", "failing_for_72_hours"]},
            "consecutiveFailures": count, "failingSince": time,
        })),
        OperationalEventType::EndpointResumed => object(json!({
            "subscription": subscription, "released": count, "expired": count,
        })),
        OperationalEventType::EndpointRecovered => object(json!({
            "subscription": subscription, "failuresBefore": count, "failingSince": time,
        })),
        OperationalEventType::EndpointSecretRotated => object(json!({
            "subscription": subscription, "previousSecretExpiresAt": time,
        })),
        OperationalEventType::SigningKeyRotated => object(json!({ "previousKeyExpiresAt": time })),
    }
}

/// The JSON Schema (draft 2020-12) of every operational notice's body, one branch per
/// type of the catalogue. Receivers ignore unknown fields, so `data` objects allow more.
pub fn operational_json_schema() -> Value {
    let branches: Vec<Value> = OperationalEventType::ALL
        .iter()
        .map(|t| {
            json!({
                "title": t.as_str(),
                "description": t.description(),
                "type": "object",
                "required": ["id", "type", "createdAt", "workspaceId", "data"],
                "properties": {
                    "id": {"type": "string"},
                    "type": {"const": t.as_str()},
                    "createdAt": {"type": "string", "format": "date-time"},
                    "workspaceId": {"type": "string"},
                    "data": data_schema(*t),
                }
            })
        })
        .collect();
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "postwire operational notice",
        "oneOf": branches,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_and_cause_serializes_to_a_value_of_its_schema_enum() {
        let schema = operational_json_schema().to_string();
        for value in [
            serde_json::to_value(PauseWarningReason::ConsecutiveFailures),
            serde_json::to_value(PauseWarningReason::FailingFor60Hours),
            serde_json::to_value(AutomaticPauseCause::ConsecutiveFailures),
            serde_json::to_value(AutomaticPauseCause::FailingFor72Hours),
        ] {
            let value = value.unwrap().to_string();
            assert!(schema.contains(&value), "{value} is not in the schema");
        }
    }

    fn sub() -> SubscriptionRef {
        SubscriptionRef {
            id: "wh_1".into(),
            name: "Orders".into(),
        }
    }

    /// One notice of each type.
    fn examples() -> Vec<OperationalData> {
        let t = Timestamp::from_unix_millis(1_800_000_000_000);
        vec![
            OperationalData::EndpointFailing {
                subscription: sub(),
                consecutive_failures: 1,
                failing_since: t,
                last_success_at: None,
            },
            OperationalData::EndpointPauseWarning {
                subscription: sub(),
                reason: PauseWarningReason::ConsecutiveFailures,
                consecutive_failures: 40,
                failing_since: t,
            },
            OperationalData::EndpointPaused {
                subscription: sub(),
                cause: AutomaticPauseCause::FailingFor72Hours,
                consecutive_failures: 12,
                failing_since: t,
            },
            OperationalData::EndpointResumed {
                subscription: sub(),
                released: 3,
                expired: 1,
            },
            OperationalData::EndpointRecovered {
                subscription: sub(),
                failures_before: 7,
                failing_since: t,
            },
            OperationalData::EndpointSecretRotated {
                subscription: sub(),
                previous_secret_expires_at: t,
            },
            OperationalData::SigningKeyRotated {
                previous_key_expires_at: t,
            },
        ]
    }

    #[test]
    fn every_type_has_one_name_and_its_examples_fit_its_schema() {
        let examples = examples();
        let types: Vec<OperationalEventType> = examples.iter().map(OperationalData::event_type).collect();
        assert_eq!(types, OperationalEventType::ALL);
        let schema = operational_json_schema();
        for (data, branch) in examples.iter().zip(schema["oneOf"].as_array().unwrap()) {
            let t = data.event_type();
            assert_eq!(t.as_str().parse::<OperationalEventType>(), Ok(t));
            assert!(!t.as_str().starts_with("post.") && !t.as_str().starts_with("integration."));
            assert!(crate::EventType::ALL.iter().all(|e| e.as_str() != t.as_str()));
            let body = OperationalEvent {
                id: "msg_1".into(),
                created_at: Timestamp::from_unix_millis(1_800_000_000_000),
                workspace_id: "ws_1".into(),
                data: data.clone(),
            }
            .to_json();
            assert_eq!(branch["properties"]["type"]["const"], body["type"]);
            // The data's fields are exactly the schema's, all required.
            let fields: Vec<&String> = body["data"].as_object().unwrap().keys().collect();
            let mut required: Vec<&str> = branch["properties"]["data"]["required"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap())
                .collect();
            required.sort_unstable();
            assert_eq!(fields, required, "{t}");
            // Never a secret, key or URL.
            let text = body.to_string();
            for banned in ["whsec_", "whsk_", "http", "secret\"", "url"] {
                assert!(!text.to_lowercase().contains(banned), "{t}: {text}");
            }
        }
        assert!("post.failed".parse::<OperationalEventType>().is_err());
    }

    #[test]
    fn the_documented_schema_is_the_catalogues() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/events.md");
        let doc = std::fs::read_to_string(path).unwrap();
        let schema = serde_json::to_string_pretty(&operational_json_schema()).unwrap();
        assert!(
            doc.contains(&schema),
            "docs/events.md lacks the current operational schema; paste this in its JSON block:\n{schema}"
        );
    }
}
