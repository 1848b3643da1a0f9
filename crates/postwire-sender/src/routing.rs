//! Routing: which subscriptions an event goes to, and whether its delivery is held.
//!
//! The rule is the spec's: a subscription receives an event when its `events` list is
//! empty or names the event's type, and its account restriction is empty or names the
//! account concerned (`postwire_core::matches`); a test event goes only to the
//! subscription it names, or to every subscription of its workspace. A paused
//! subscription still receives the delivery, held until it is resumed.
//!
//! Operational notices ([`crate::notices`]) go the other way: only to the workspace's
//! operator endpoints, never to the subscription a notice is about, and an operator
//! endpoint gets nothing else.
//!
//! Every store backend loads the [`Route`]s of a workspace inside its enqueue
//! transaction and asks [`route`] which get a delivery, so the rule lives here once
//! and a backend only stores what it says.

use postwire_core::{EventType, matches};

use crate::events::{BuiltEvent, Envelope};

/// What routing needs to know of one subscription, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The subscription's id.
    pub id: String,
    /// Its event filter (empty: every type).
    pub events: Vec<EventType>,
    /// Its account filter (empty: every account).
    pub integration_ids: Vec<String>,
    /// Whether it is paused.
    pub paused: bool,
    /// Whether it is an operator endpoint (operational notices only).
    pub operator: bool,
}

/// What a subscription gets of an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Routed {
    /// A delivery to send.
    Deliver,
    /// A delivery held until the subscription is resumed.
    Hold,
}

/// The delivery `route`'s subscription gets of `event`, if any.
///
/// ```
/// use postwire_core::{EventType, Timestamp};
/// use postwire_sender::routing::{Route, Routed, route};
/// use postwire_sender::{TestEvent, events::build_event};
/// let now = Timestamp::from_unix_millis(0);
/// let change = TestEvent { workspace_id: "ws".into(), subscription_id: None, message: "hi".into() }.into();
/// let event = build_event(&change, "msg_1".into(), now).unwrap().unwrap();
/// let all = Route { id: "wh_1".into(), events: vec![], integration_ids: vec![], paused: true, operator: false };
/// assert_eq!(route(&event, &all), Some(Routed::Hold));
/// let other = Route { events: vec![EventType::PostPublished], paused: false, ..all };
/// assert_eq!(route(&event, &other), None);
/// ```
pub fn route(event: &BuiltEvent, route: &Route) -> Option<Routed> {
    let wanted = match (&event.envelope, &event.only_subscription) {
        (Envelope::Notice(notice), _) => route.operator && notice.about.as_deref() != Some(route.id.as_str()),
        (Envelope::Event(_), Some(only)) => *only == route.id,
        (Envelope::Event(_), None) if route.operator => false,
        (Envelope::Event(e), None) => matches(
            &route.events,
            route.integration_ids.iter().map(String::as_str),
            e.event_type(),
            e.data().account_id(),
        ),
    };
    match (wanted, route.paused) {
        (false, _) => None,
        (true, true) => Some(Routed::Hold),
        (true, false) => Some(Routed::Deliver),
    }
}
