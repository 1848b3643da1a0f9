//! The webhook subscription resource, as the API returns it.
//!
//! `disabled` and `disabledReason` travel as two JSON fields, but here they are one
//! [`SubscriptionStatus`], so "paused without a reason" or "enabled with a reason" cannot
//! be built. The signing secret appears in exactly one type, [`CreatedSubscription`],
//! the response of creation: no other response can carry it by mistake.

use serde::{Deserialize, Serialize};

use crate::event::{EventType, Integration, string_enum};
use crate::{Event, Secret, Timestamp};

string_enum! {
    /// How a subscription was created (`createdByKind`).
    CreatedByKind, "creator kind" {
        /// In the web dashboard.
        Dashboard = "dashboard",
        /// With a user API token.
        ApiToken = "api_token",
        /// By an OAuth client.
        OauthClient = "oauth_client",
    }
}

string_enum! {
    /// Which signatures a subscription's deliveries carry (`signing`, an extension of the
    /// spec; see `docs/api.md`).
    #[derive(Default)]
    SigningMode, "signing choice" {
        /// `v1` (HMAC-SHA256 with the subscription's `whsec_` secret) only: the spec's
        /// behaviour, and the default.
        #[default]
        Symmetric = "symmetric",
        /// `v1a` (ed25519 with the workspace's signing key) only.
        Asymmetric = "asymmetric",
        /// The `v1` entries, then the `v1a` ones.
        Both = "both",
    }
}

impl SigningMode {
    /// Whether deliveries carry `v1` (HMAC) entries.
    pub const fn symmetric(self) -> bool {
        matches!(self, SigningMode::Symmetric | SigningMode::Both)
    }

    /// Whether deliveries carry `v1a` (ed25519) entries, so the workspace needs a key pair.
    pub const fn asymmetric(self) -> bool {
        matches!(self, SigningMode::Asymmetric | SigningMode::Both)
    }
}

/// Whether a subscription receives deliveries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SubscriptionStatus {
    /// Deliveries are attempted (`disabled: false`, `disabledReason: null`).
    Enabled,
    /// Events are held (`disabled: true`), for this reason.
    Paused {
        /// Why, e.g. `50 failed deliveries in a row` or `paused by request`.
        reason: String,
    },
}

impl SubscriptionStatus {
    /// True while paused.
    pub fn is_paused(&self) -> bool {
        matches!(self, SubscriptionStatus::Paused { .. })
    }
}

/// A webhook subscription (every response but creation's).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "SubscriptionWire", into = "SubscriptionWire")]
pub struct Subscription {
    /// Subscription identifier.
    pub id: String,
    /// Label given at creation.
    pub name: String,
    /// Endpoint that receives events.
    pub url: String,
    /// Subscribed event types; empty means every type.
    pub events: Vec<EventType>,
    /// Accounts the subscription is limited to; empty means all accounts.
    pub integrations: Vec<Integration>,
    /// Enabled or paused.
    pub status: SubscriptionStatus,
    /// How it was created.
    pub created_by_kind: CreatedByKind,
    /// Failed deliveries in a row.
    pub consecutive_failures: u32,
    /// Time of the last successful delivery.
    pub last_success_at: Option<Timestamp>,
    /// Creation time.
    pub created_at: Timestamp,
    /// Which signatures its deliveries carry.
    pub signing: SigningMode,
}

#[derive(Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SubscriptionWire {
    id: String,
    name: String,
    url: String,
    events: Vec<EventType>,
    integrations: Vec<Integration>,
    disabled: bool,
    disabled_reason: Option<String>,
    created_by_kind: CreatedByKind,
    consecutive_failures: u32,
    last_success_at: Option<Timestamp>,
    created_at: Timestamp,
    /// Absent in documents written before the extension: the spec's `symmetric`.
    #[serde(default)]
    signing: SigningMode,
}

impl TryFrom<SubscriptionWire> for Subscription {
    type Error = crate::Error;
    fn try_from(w: SubscriptionWire) -> Result<Self, crate::Error> {
        let status = match (w.disabled, w.disabled_reason) {
            (false, None) => SubscriptionStatus::Enabled,
            (true, Some(reason)) => SubscriptionStatus::Paused { reason },
            // A paused subscription without a reason is still paused; say so.
            (true, None) => SubscriptionStatus::Paused { reason: String::new() },
            (false, Some(_)) => {
                return Err(crate::Error::payload(
                    "`disabledReason` must be null while `disabled` is false",
                ));
            }
        };
        Ok(Subscription {
            id: w.id,
            name: w.name,
            url: w.url,
            events: w.events,
            integrations: w.integrations,
            status,
            created_by_kind: w.created_by_kind,
            consecutive_failures: w.consecutive_failures,
            last_success_at: w.last_success_at,
            created_at: w.created_at,
            signing: w.signing,
        })
    }
}

impl From<Subscription> for SubscriptionWire {
    fn from(s: Subscription) -> Self {
        let (disabled, disabled_reason) = match s.status {
            SubscriptionStatus::Enabled => (false, None),
            SubscriptionStatus::Paused { reason } => (true, Some(reason)),
        };
        SubscriptionWire {
            id: s.id,
            name: s.name,
            url: s.url,
            events: s.events,
            integrations: s.integrations,
            disabled,
            disabled_reason,
            created_by_kind: s.created_by_kind,
            consecutive_failures: s.consecutive_failures,
            last_success_at: s.last_success_at,
            created_at: s.created_at,
            signing: s.signing,
        }
    }
}

impl Subscription {
    /// Whether `event` goes to this subscription (see [`crate::matches`]).
    pub fn matches(&self, event: &Event) -> bool {
        crate::matching::matches(
            &self.events,
            self.integrations.iter().map(|i| i.id.as_str()),
            event.event_type(),
            event.data().account_id(),
        )
    }
}

/// The response of creation: the subscription plus its `secret`, shown this once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreatedSubscription {
    /// The subscription.
    #[serde(flatten)]
    pub subscription: Subscription,
    /// The signing secret, serialized as `whsec_<base64>`.
    #[serde(with = "secret_as_string")]
    pub secret: Secret,
}

mod secret_as_string {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::Secret;

    pub fn serialize<S: Serializer>(secret: &Secret, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&secret.expose())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Secret, D::Error> {
        let s = String::deserialize(d)?;
        Secret::parse(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Subscription {
        Subscription {
            id: "wh_1".into(),
            name: "prod".into(),
            url: "https://example.com/hook".into(),
            events: vec![EventType::PostPublished],
            integrations: vec![],
            status: SubscriptionStatus::Enabled,
            created_by_kind: CreatedByKind::ApiToken,
            consecutive_failures: 0,
            last_success_at: None,
            created_at: Timestamp::from_unix_millis(1_700_000_000_123),
            signing: SigningMode::Symmetric,
        }
    }

    #[test]
    fn wire_form_has_the_spec_fields() {
        let v = serde_json::to_value(sample()).unwrap();
        assert_eq!(v["disabled"], false);
        assert!(v["disabledReason"].is_null());
        assert_eq!(v["createdByKind"], "api_token");
        assert_eq!(v["createdAt"], "2023-11-14T22:13:20.123Z");
        assert!(v.get("secret").is_none());
        assert!(v.get("status").is_none());
        assert_eq!(v["signing"], "symmetric");
    }

    #[test]
    fn signing_defaults_to_symmetric_and_round_trips() {
        let mut v = serde_json::to_value(sample()).unwrap();
        v.as_object_mut().unwrap().remove("signing");
        assert_eq!(
            serde_json::from_value::<Subscription>(v.clone()).unwrap().signing,
            SigningMode::Symmetric
        );
        v["signing"] = "both".into();
        assert_eq!(
            serde_json::from_value::<Subscription>(v.clone()).unwrap().signing,
            SigningMode::Both
        );
        v["signing"] = "hmac".into();
        assert!(serde_json::from_value::<Subscription>(v).is_err());
        assert!(SigningMode::Both.symmetric() && SigningMode::Both.asymmetric());
        assert!(!SigningMode::Asymmetric.symmetric() && !SigningMode::Symmetric.asymmetric());
    }

    #[test]
    fn only_the_creation_response_carries_the_secret() {
        let secret = Secret::generate().unwrap();
        let created = CreatedSubscription {
            subscription: sample(),
            secret: secret.clone(),
        };
        let json = serde_json::to_string(&created).unwrap();
        assert!(json.contains(&secret.expose()));
        let back: CreatedSubscription = serde_json::from_str(&json).unwrap();
        assert_eq!(back, created);
        assert!(!format!("{created:?}").contains(&secret.expose()[6..]));
    }

    #[test]
    fn inconsistent_pause_state_is_rejected() {
        let mut v = serde_json::to_value(sample()).unwrap();
        v["disabledReason"] = "why".into();
        assert!(serde_json::from_value::<Subscription>(v).is_err());
    }
}
