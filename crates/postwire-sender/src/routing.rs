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
//! and a backend only stores what it says. A backend builds a route's
//! [`EndpointRole`] from its stored columns with [`EndpointRole::from_stored`], which
//! refuses a row that makes no role (an operator endpoint with subscriber filters, an
//! unknown purpose): the rule never sees one.

use postwire_core::{EventType, matches};

use crate::events::{BuiltEvent, Envelope};
use crate::model::{InconsistentEndpoint, Purpose};

/// What routing needs to know of one subscription, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The subscription's id.
    pub id: String,
    /// Whether it is paused.
    pub paused: bool,
    /// What it receives: a subscriber's filtered events, or operational notices.
    pub role: EndpointRole,
}

/// What an endpoint is for, with what only a subscriber's endpoint has, its filters: an
/// operator endpoint with subscriber filters cannot be built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndpointRole {
    /// A subscriber's subscription: the spec's events its filters match.
    Subscriber(SubscriberFilters),
    /// An operator endpoint: the workspace's operational notices, and nothing else.
    Operator,
}

/// A subscriber's filters: an event goes to the subscription when both match.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SubscriberFilters {
    /// Event types (empty: every type).
    pub events: Vec<EventType>,
    /// Account ids (empty: every account).
    pub integration_ids: Vec<String>,
}

impl EndpointRole {
    /// The role of a stored endpoint whose `purpose` column says `purpose` and whose filter
    /// columns hold `events` and `integration_ids`: an [`InconsistentEndpoint`] when the
    /// purpose is unknown, or an operator endpoint's filters are not empty
    /// ([`Purpose::from_stored`], the one rule).
    ///
    /// ```
    /// use postwire_core::EventType;
    /// use postwire_sender::routing::EndpointRole;
    /// assert_eq!(EndpointRole::from_stored("operator", vec![], vec![]).unwrap(), EndpointRole::Operator);
    /// let filtered = EndpointRole::from_stored("operator", vec![EventType::PostPublished], vec![]);
    /// assert_eq!(filtered.unwrap_err().code(), "operator_with_filters");
    /// assert!(matches!(EndpointRole::from_stored("events", vec![], vec![]), Ok(EndpointRole::Subscriber(_))));
    /// ```
    pub fn from_stored(
        purpose: &str,
        events: Vec<EventType>,
        integration_ids: Vec<String>,
    ) -> Result<EndpointRole, InconsistentEndpoint> {
        let filtered = !events.is_empty() || !integration_ids.is_empty();
        Ok(match Purpose::from_stored(purpose, filtered)? {
            Purpose::Events => EndpointRole::Subscriber(SubscriberFilters {
                events,
                integration_ids,
            }),
            Purpose::Operator => EndpointRole::Operator,
        })
    }

    /// Its purpose, as stored.
    pub const fn purpose(&self) -> Purpose {
        match self {
            EndpointRole::Subscriber(_) => Purpose::Events,
            EndpointRole::Operator => Purpose::Operator,
        }
    }
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
/// use postwire_sender::routing::{EndpointRole, Route, Routed, SubscriberFilters, route};
/// use postwire_sender::{TestEvent, events::build_event};
/// let now = Timestamp::from_unix_millis(0);
/// let change = TestEvent { workspace_id: "ws".into(), subscription_id: None, message: "hi".into() }.into();
/// let event = build_event(&change, "msg_1".into(), now).unwrap().unwrap();
/// let filters = SubscriberFilters::default();
/// let all = Route { id: "wh_1".into(), paused: true, role: EndpointRole::Subscriber(filters) };
/// assert_eq!(route(&event, &all), Some(Routed::Hold));
/// let posts = SubscriberFilters { events: vec![EventType::PostPublished], integration_ids: vec![] };
/// let other = Route { paused: false, role: EndpointRole::Subscriber(posts), ..all };
/// assert_eq!(route(&event, &other), None);
/// ```
pub fn route(event: &BuiltEvent, route: &Route) -> Option<Routed> {
    let wanted = match (&event.envelope, &event.only_subscription, &route.role) {
        (Envelope::Notice(notice), _, EndpointRole::Operator) => notice.about.as_deref() != Some(route.id.as_str()),
        (Envelope::Notice(_), _, EndpointRole::Subscriber(_)) => false,
        (Envelope::Event(_), Some(only), _) => *only == route.id,
        (Envelope::Event(_), None, EndpointRole::Operator) => false,
        (Envelope::Event(e), None, EndpointRole::Subscriber(filters)) => matches(
            &filters.events,
            filters.integration_ids.iter().map(String::as_str),
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
