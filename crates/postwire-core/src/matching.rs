//! Which subscriptions an event goes to, and which events must stay in order.
//!
//! The matching rule of the spec: a subscription matches an event when its `events` list
//! is empty or contains the event's type, and its account restriction is empty or
//! contains the account the event concerns. An event that concerns no account
//! (`webhook.test`) passes any account restriction.
//!
//! The ordering rule: events about the same post, or the same account, are delivered in
//! order. An event's [`OrderingKey`] is its post for post events and its account for
//! integration events; the sender delivers events with equal keys one after another, and
//! events with different keys in parallel. (A post event is keyed by its post, not its
//! account, because the spec lets events about different posts arrive in any order.)

use std::fmt;

use crate::{Event, EventData, EventType};

/// The matching rule, on plain parts (for callers that store subscriptions their own way).
///
/// ```
/// use postwire_core::{matches, EventType};
/// let no_ids: [&str; 0] = [];
/// assert!(matches(&[], no_ids, EventType::PostFailed, Some("acc1")));
/// assert!(matches(&[EventType::PostFailed], ["acc1"], EventType::PostFailed, Some("acc1")));
/// assert!(!matches(&[EventType::PostPublished], no_ids, EventType::PostFailed, None));
/// assert!(!matches(&[], ["acc2"], EventType::PostFailed, Some("acc1")));
/// assert!(matches(&[], ["acc2"], EventType::WebhookTest, None));
/// ```
pub fn matches<'a>(
    events: &[EventType],
    integration_ids: impl IntoIterator<Item = &'a str>,
    event_type: EventType,
    account_id: Option<&str>,
) -> bool {
    let type_ok = events.is_empty() || events.contains(&event_type);
    let account_ok = match account_id {
        None => true,
        Some(account) => {
            let mut ids = integration_ids.into_iter().peekable();
            ids.peek().is_none() || ids.any(|id| id == account)
        }
    };
    type_ok && account_ok
}

/// What an event must stay in order with.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OrderingKey {
    /// Events about this post id.
    Post(String),
    /// Events about this account (integration) id.
    Account(String),
    /// Operational notices about this subscription id (`crate::operational`); never the
    /// key of one of the spec's events.
    Subscription(String),
}

impl OrderingKey {
    /// The key of `event`; `None` for events that need no ordering (`webhook.test`).
    ///
    /// ```
    /// use postwire_core::{Event, OrderingKey};
    /// let json = br#"{"id":"m","type":"integration.reconnected","createdAt":"2026-01-01T00:00:00Z","workspaceId":"w","data":{"integration":{"id":"acc1","name":"A","providerIdentifier":"x"}}}"#;
    /// let event = Event::from_json(json).unwrap();
    /// assert_eq!(OrderingKey::of(&event), Some(OrderingKey::Account("acc1".into())));
    /// assert_eq!(OrderingKey::of(&event).unwrap().to_string(), "account:acc1");
    /// ```
    pub fn of(event: &Event) -> Option<OrderingKey> {
        match event.data() {
            EventData::WebhookTest(_) => None,
            EventData::IntegrationDisconnected(d) => Some(OrderingKey::Account(d.integration.id.clone())),
            EventData::IntegrationReconnected(d) => Some(OrderingKey::Account(d.integration.id.clone())),
            data => data.post().map(|p| OrderingKey::Post(p.id().to_owned())),
        }
    }
}

impl fmt::Display for OrderingKey {
    /// `post:<id>`, `account:<id>` or `subscription:<id>`: a flat string for storage.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OrderingKey::Post(id) => write!(f, "post:{id}"),
            OrderingKey::Account(id) => write!(f, "account:{id}"),
            OrderingKey::Subscription(id) => write!(f, "subscription:{id}"),
        }
    }
}
