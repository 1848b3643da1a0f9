//! The event envelope and the nine event types of the webhooks spec, typed.
//!
//! Every delivery body is an envelope `{id, type, createdAt, workspaceId, data}`. Here
//! it is [`Event`], whose [`EventData`] is one enum variant per type, so the shape of
//! `data` always agrees with `type`. Parsing checks the spec's rules: `post.published`
//! carries `releaseURL` and `releaseId`; a failure with code `unknown` is never
//! retryable; the envelope id is a valid `webhook-id`. Unknown fields are accepted and
//! ignored, so new fields on the sender's side do not break receivers.
//!
//! Where the spec leaves a shape "not shown", this crate chooses (see ARCHITECTURE.md):
//! `integration` is the [`Integration`] object; `reason` a [`DisconnectReason`] string;
//! `deletedBy` an [`Actor`] object `{kind, id}`; `message` a string.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::{Error, Timestamp};

macro_rules! string_enum {
    ($(#[$meta:meta])* $name:ident, $what:literal { $($(#[$vmeta:meta])* $variant:ident = $s:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name { $($(#[$vmeta])* $variant),+ }

        impl $name {
            /// Every value, in the order of the spec.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The wire form.
            pub const fn as_str(self) -> &'static str {
                match self { $($name::$variant => $s),+ }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result { f.write_str(self.as_str()) }
        }

        impl ::std::str::FromStr for $name {
            type Err = $crate::Error;
            fn from_str(s: &str) -> Result<Self, $crate::Error> {
                match s {
                    $($s => Ok($name::$variant),)+
                    _ => Err($crate::Error::payload(format_args!(
                        concat!("unknown ", $what, " `{}`; expected one of: {}"),
                        crate::time::Truncated(s),
                        [$($s),+].join(", ")
                    ))),
                }
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = <::std::borrow::Cow<'de, str> as ::serde::Deserialize>::deserialize(d)?;
                s.parse().map_err(::serde::de::Error::custom)
            }
        }
    };
}
pub(crate) use string_enum;

string_enum! {
    /// The type of an event, e.g. `post.published`.
    EventType, "event type" {
        /// An approved post is queued, rescheduled, or edited.
        PostScheduled = "post.scheduled",
        /// A queued post went back to draft or to awaiting approval.
        PostUnscheduled = "post.unscheduled",
        /// Publishing to the provider starts.
        PostPublishing = "post.publishing",
        /// The provider accepted the post.
        PostPublished = "post.published",
        /// The post could not be published.
        PostFailed = "post.failed",
        /// The post was deleted.
        PostDeleted = "post.deleted",
        /// An account must be reconnected, or was disabled or deleted.
        IntegrationDisconnected = "integration.disconnected",
        /// An account that needed reconnecting works again.
        IntegrationReconnected = "integration.reconnected",
        /// A test event was sent.
        WebhookTest = "webhook.test",
    }
}

string_enum! {
    /// The code of a post failure (`data.error.code` on `post.failed`).
    FailureCode, "failure code" {
        /// The account's posting quota is used up.
        QuotaExceeded = "quota_exceeded",
        /// The account must be reconnected.
        IntegrationDisconnected = "integration_disconnected",
        /// The provider rejected the content.
        ContentRejected = "content_rejected",
        /// A media file was invalid.
        MediaInvalid = "media_invalid",
        /// The provider rate-limited the request.
        RateLimited = "rate_limited",
        /// The provider failed.
        ProviderError = "provider_error",
        /// Unknown outcome: never retryable, the provider may have accepted the post.
        Unknown = "unknown",
    }
}

string_enum! {
    /// Why an account was disconnected (`data.reason` on `integration.disconnected`).
    /// The spec names three cases; these are their codes.
    DisconnectReason, "disconnect reason" {
        /// The account must be reconnected (e.g. its token expired or was revoked).
        ReconnectRequired = "reconnect_required",
        /// The account was disabled.
        Disabled = "disabled",
        /// The account was deleted.
        Deleted = "deleted",
    }
}

string_enum! {
    /// Who did something: the `kind` of an [`Actor`].
    ActorKind, "actor kind" {
        /// A person in the web dashboard.
        Dashboard = "dashboard",
        /// A call with a user API token.
        ApiToken = "api_token",
        /// A call by an OAuth client.
        OauthClient = "oauth_client",
        /// The service itself (e.g. a retention job).
        System = "system",
    }
}

/// Who caused an event (`data.deletedBy` on `post.deleted`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Actor {
    /// What kind of actor.
    pub kind: ActorKind,
    /// Its identifier (user, token or client id), when there is one.
    #[serde(default)]
    pub id: Option<String>,
}

/// A connected social account, as it appears in subscriptions and events.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Integration {
    /// Connected account identifier.
    pub id: String,
    /// Account display name.
    pub name: String,
    /// Identifier of the social provider, e.g. `x`, `linkedin`.
    pub provider_identifier: String,
    /// Picture address; absent or null when there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub picture: Option<String>,
}

/// A post's state. The spec names only `ERROR`; the others are this crate's reading of
/// the lifecycle, and any other value is kept as [`PostState::Other`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PostState {
    /// Queued for publishing (`QUEUE`).
    Queue,
    /// Being published (`PUBLISHING`).
    Publishing,
    /// Published (`PUBLISHED`).
    Published,
    /// Failed (`ERROR`), the value the spec names for a failed post.
    Error,
    /// Any other value, kept as sent.
    Other(String),
}

impl PostState {
    /// The wire form.
    pub fn as_str(&self) -> &str {
        match self {
            PostState::Queue => "QUEUE",
            PostState::Publishing => "PUBLISHING",
            PostState::Published => "PUBLISHED",
            PostState::Error => "ERROR",
            PostState::Other(s) => s,
        }
    }
}

impl From<&str> for PostState {
    fn from(s: &str) -> Self {
        match s {
            "QUEUE" => PostState::Queue,
            "PUBLISHING" => PostState::Publishing,
            "PUBLISHED" => PostState::Published,
            "ERROR" => PostState::Error,
            other => PostState::Other(other.to_owned()),
        }
    }
}

impl Serialize for PostState {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for PostState {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(PostState::from(&*<std::borrow::Cow<'de, str>>::deserialize(d)?))
    }
}

/// The post summary carried by post events (`data.post`).
///
/// It has no content field, by design: the spec forbids the post content in events,
/// and a type without the field cannot leak it. A `content` field in a received payload
/// is ignored, and never re-serialized.
///
/// The fields are private: build one with [`PostSummary::new`] (and
/// [`with_release`](PostSummary::with_release) / [`with_error`](PostSummary::with_error)),
/// read it through the accessors. Whether a `post.published` summary carries its release
/// is checked in one place, [`PostSummary::require_release`], which [`Event::new`] and
/// parsing both call.
///
/// ```
/// use postwire_core::{Integration, PostState, PostSummary, Timestamp};
/// let account = Integration { id: "acc_1".into(), provider_identifier: "x".into(), name: "Acme".into(), picture: None };
/// let post = PostSummary::new("p1", "ext-1", "g1", PostState::Published, Timestamp::from_unix_millis(0), account)
///     .with_release("https://x.com/1", "1");
/// assert_eq!(post.release_url(), Some("https://x.com/1"));
/// assert!(PostSummary::require_release(post.release_url(), post.release_id()).is_ok());
/// assert!(PostSummary::require_release(Some("https://x.com/1"), None).is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PostSummary {
    id: String,
    external_id: String,
    group: String,
    state: PostState,
    publish_date: Timestamp,
    integration: Integration,
    #[serde(rename = "releaseURL", default)]
    release_url: Option<String>,
    #[serde(default)]
    release_id: Option<String>,
    #[serde(default)]
    error: Option<String>,
}

impl PostSummary {
    /// A summary without release fields or failure text.
    pub fn new(
        id: impl Into<String>,
        external_id: impl Into<String>,
        group: impl Into<String>,
        state: PostState,
        publish_date: Timestamp,
        integration: Integration,
    ) -> Self {
        PostSummary {
            id: id.into(),
            external_id: external_id.into(),
            group: group.into(),
            state,
            publish_date,
            integration,
            release_url: None,
            release_id: None,
            error: None,
        }
    }

    /// The same summary with its release: the address and the provider's id of the
    /// published post (what `post.published` must carry).
    pub fn with_release(mut self, url: impl Into<String>, id: impl Into<String>) -> Self {
        self.release_url = Some(url.into());
        self.release_id = Some(id.into());
        self
    }

    /// The same summary with optional release fields, as a host's record has them (a
    /// `post.published` event still requires both: see [`PostSummary::require_release`]).
    pub fn with_optional_release(mut self, url: Option<String>, id: Option<String>) -> Self {
        self.release_url = url;
        self.release_id = id;
        self
    }

    /// The same summary in another state.
    pub fn with_state(mut self, state: PostState) -> Self {
        self.state = state;
        self
    }

    /// The same summary with (or without) a failure text.
    pub fn with_error(mut self, error: Option<String>) -> Self {
        self.error = error;
        self
    }

    /// The rule of `post.published`: the post carries both `releaseURL` and `releaseId`.
    /// This is the one place the rule is checked; callers that hold the two fields
    /// apart (an API body, a summary) pass them here and get both back.
    pub fn require_release<'a>(url: Option<&'a str>, id: Option<&'a str>) -> Result<(&'a str, &'a str), Error> {
        match (url, id) {
            (Some(url), Some(id)) => Ok((url, id)),
            _ => Err(Error::payload(
                "`post.published` must carry `releaseURL` and `releaseId`",
            )),
        }
    }

    /// Post identifier.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Client-supplied reference of the post.
    pub fn external_id(&self) -> &str {
        &self.external_id
    }

    /// Group identifier.
    pub fn group(&self) -> &str {
        &self.group
    }

    /// Post state.
    pub fn state(&self) -> &PostState {
        &self.state
    }

    /// Planned publish time.
    pub fn publish_date(&self) -> Timestamp {
        self.publish_date
    }

    /// The account the post is for (`id`, `providerIdentifier`, `name`).
    pub fn integration(&self) -> &Integration {
        &self.integration
    }

    /// Address of the published post; set on `post.published`.
    pub fn release_url(&self) -> Option<&str> {
        self.release_url.as_deref()
    }

    /// Provider's id of the published post; set on `post.published`.
    pub fn release_id(&self) -> Option<&str> {
        self.release_id.as_deref()
    }

    /// Human-readable failure text on a failed post.
    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }
}

/// Why a post failed (`data.error` on `post.failed`).
///
/// The fields are private so the rule "`unknown` is never retryable" holds for every
/// value: [`EventError::new`] and parsing both enforce it.
///
/// ```
/// use postwire_core::{EventError, FailureCode};
/// assert!(EventError::new(FailureCode::RateLimited, "slow down", true).is_ok());
/// assert!(EventError::new(FailureCode::Unknown, "?", true).is_err());
/// assert!(!EventError::unknown("provider timed out").retryable());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "EventErrorWire")]
pub struct EventError {
    code: FailureCode,
    message: String,
    retryable: bool,
}

#[derive(Deserialize)]
struct EventErrorWire {
    code: FailureCode,
    message: String,
    retryable: bool,
}

impl TryFrom<EventErrorWire> for EventError {
    type Error = Error;
    fn try_from(w: EventErrorWire) -> Result<Self, Error> {
        EventError::new(w.code, w.message, w.retryable)
    }
}

impl EventError {
    /// A failure; `retryable` must be false when `code` is [`FailureCode::Unknown`].
    pub fn new(code: FailureCode, message: impl Into<String>, retryable: bool) -> Result<Self, Error> {
        if code == FailureCode::Unknown && retryable {
            return Err(Error::payload(
                "a failure with code `unknown` is never retryable: the provider may already have accepted the post",
            ));
        }
        Ok(EventError {
            code,
            message: message.into(),
            retryable,
        })
    }

    /// A failure of unknown outcome, never retryable.
    pub fn unknown(message: impl Into<String>) -> Self {
        EventError {
            code: FailureCode::Unknown,
            message: message.into(),
            retryable: false,
        }
    }

    /// The failure code.
    pub fn code(&self) -> FailureCode {
        self.code
    }

    /// Human-readable text.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Whether a retry may succeed. Always false for `unknown`.
    pub fn retryable(&self) -> bool {
        self.retryable
    }
}

/// `data` of the post events other than `post.failed` and `post.deleted`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PostData {
    /// The post.
    pub post: PostSummary,
}

/// `data` of `post.failed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PostFailedData {
    /// The post (its `state` is `ERROR` and `error` carries the failure text).
    pub post: PostSummary,
    /// Why it failed.
    pub error: EventError,
}

/// `data` of `post.deleted`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PostDeletedData {
    /// The post as it was.
    pub post: PostSummary,
    /// Who deleted it.
    pub deleted_by: Actor,
}

/// `data` of `integration.disconnected`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IntegrationDisconnectedData {
    /// The account.
    pub integration: Integration,
    /// Why.
    pub reason: DisconnectReason,
}

/// `data` of `integration.reconnected`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IntegrationData {
    /// The account.
    pub integration: Integration,
}

/// `data` of `webhook.test`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestData {
    /// Free text chosen by whoever sent the test.
    pub message: String,
}

/// The `data` of an event, one variant per event type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventData {
    /// `post.scheduled`
    PostScheduled(PostData),
    /// `post.unscheduled`
    PostUnscheduled(PostData),
    /// `post.publishing`
    PostPublishing(PostData),
    /// `post.published` (`releaseURL` and `releaseId` are set)
    PostPublished(PostData),
    /// `post.failed`
    PostFailed(PostFailedData),
    /// `post.deleted`
    PostDeleted(PostDeletedData),
    /// `integration.disconnected`
    IntegrationDisconnected(IntegrationDisconnectedData),
    /// `integration.reconnected`
    IntegrationReconnected(IntegrationData),
    /// `webhook.test`
    WebhookTest(TestData),
}

impl EventData {
    /// The type that goes with this data.
    pub fn event_type(&self) -> EventType {
        match self {
            EventData::PostScheduled(_) => EventType::PostScheduled,
            EventData::PostUnscheduled(_) => EventType::PostUnscheduled,
            EventData::PostPublishing(_) => EventType::PostPublishing,
            EventData::PostPublished(_) => EventType::PostPublished,
            EventData::PostFailed(_) => EventType::PostFailed,
            EventData::PostDeleted(_) => EventType::PostDeleted,
            EventData::IntegrationDisconnected(_) => EventType::IntegrationDisconnected,
            EventData::IntegrationReconnected(_) => EventType::IntegrationReconnected,
            EventData::WebhookTest(_) => EventType::WebhookTest,
        }
    }

    /// The post this event is about, for post events.
    pub fn post(&self) -> Option<&PostSummary> {
        match self {
            EventData::PostScheduled(d)
            | EventData::PostUnscheduled(d)
            | EventData::PostPublishing(d)
            | EventData::PostPublished(d) => Some(&d.post),
            EventData::PostFailed(d) => Some(&d.post),
            EventData::PostDeleted(d) => Some(&d.post),
            _ => None,
        }
    }

    /// The connected account this event concerns: the post's account for post events,
    /// the account itself for integration events, none for `webhook.test`.
    pub fn account_id(&self) -> Option<&str> {
        match self {
            EventData::IntegrationDisconnected(d) => Some(&d.integration.id),
            EventData::IntegrationReconnected(d) => Some(&d.integration.id),
            EventData::WebhookTest(_) => None,
            _ => self.post().map(|p| p.integration().id.as_str()),
        }
    }

    /// Checks the rules a type alone cannot: `post.published` has its release fields.
    fn validate(&self) -> Result<(), Error> {
        if let EventData::PostPublished(d) = self {
            PostSummary::require_release(d.post.release_url(), d.post.release_id())?;
        }
        Ok(())
    }

    fn parse(event_type: EventType, data: serde_json::Value) -> Result<Self, Error> {
        fn de<T: DeserializeOwned>(t: EventType, v: serde_json::Value) -> Result<T, Error> {
            serde_json::from_value(v).map_err(|e| Error::payload(format_args!("`data` of `{t}`: {e}")))
        }
        let t = event_type;
        let data = match t {
            EventType::PostScheduled => EventData::PostScheduled(de(t, data)?),
            EventType::PostUnscheduled => EventData::PostUnscheduled(de(t, data)?),
            EventType::PostPublishing => EventData::PostPublishing(de(t, data)?),
            EventType::PostPublished => EventData::PostPublished(de(t, data)?),
            EventType::PostFailed => EventData::PostFailed(de(t, data)?),
            EventType::PostDeleted => EventData::PostDeleted(de(t, data)?),
            EventType::IntegrationDisconnected => EventData::IntegrationDisconnected(de(t, data)?),
            EventType::IntegrationReconnected => EventData::IntegrationReconnected(de(t, data)?),
            EventType::WebhookTest => EventData::WebhookTest(de(t, data)?),
        };
        data.validate()?;
        Ok(data)
    }
}

impl Serialize for EventData {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            EventData::PostScheduled(d)
            | EventData::PostUnscheduled(d)
            | EventData::PostPublishing(d)
            | EventData::PostPublished(d) => d.serialize(s),
            EventData::PostFailed(d) => d.serialize(s),
            EventData::PostDeleted(d) => d.serialize(s),
            EventData::IntegrationDisconnected(d) => d.serialize(s),
            EventData::IntegrationReconnected(d) => d.serialize(s),
            EventData::WebhookTest(d) => d.serialize(s),
        }
    }
}

/// The body of every delivery.
///
/// ```
/// use postwire_core::{Event, EventData, EventType, TestData, Timestamp};
/// let event = Event::new(
///     "msg_1".into(),
///     Timestamp::from_unix_millis(1_700_000_000_000),
///     "ws_1".into(),
///     EventData::WebhookTest(TestData { message: "hello".into() }),
/// ).unwrap();
/// let json = event.to_json();
/// assert_eq!(json, r#"{"id":"msg_1","type":"webhook.test","createdAt":"2023-11-14T22:13:20.000Z","workspaceId":"ws_1","data":{"message":"hello"}}"#);
/// assert_eq!(Event::from_json(json.as_bytes()).unwrap(), event);
/// assert_eq!(event.event_type(), EventType::WebhookTest);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "EventWire")]
pub struct Event {
    // Private, so that the rules [`Event::new`] checks (a valid `webhook-id`, the data's
    // rules) hold for every `Event` there is; read them through the accessors.
    id: String,
    created_at: Timestamp,
    workspace_id: String,
    data: EventData,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct EventWire {
    id: String,
    #[serde(rename = "type")]
    event_type: EventType,
    created_at: Timestamp,
    workspace_id: String,
    data: serde_json::Value,
}

impl TryFrom<EventWire> for Event {
    type Error = Error;
    fn try_from(w: EventWire) -> Result<Self, Error> {
        let data = EventData::parse(w.event_type, w.data)?;
        Event::new(w.id, w.created_at, w.workspace_id, data)
    }
}

impl Serialize for Event {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Event", 5)?;
        st.serialize_field("id", &self.id)?;
        st.serialize_field("type", &self.event_type())?;
        st.serialize_field("createdAt", &self.created_at)?;
        st.serialize_field("workspaceId", &self.workspace_id)?;
        st.serialize_field("data", &self.data)?;
        st.end()
    }
}

/// Random bytes for event ids, taken from the operating system 64 ids' worth at a time:
/// a sender makes an id per event, and a system call for each was one of the costs of
/// publishing. The bytes only need to make ids unique (they are no secret); a process
/// that forks without exec would share the unused rest of the pool with its child.
fn id_randomness(out: &mut [u8; 10]) -> Result<(), getrandom::Error> {
    use std::cell::RefCell;
    const POOL: usize = 64 * 10;
    thread_local! {
        static RANDOM: RefCell<([u8; POOL], usize)> = const { RefCell::new(([0; POOL], POOL)) };
    }
    RANDOM.with_borrow_mut(|(pool, used)| {
        let n = out.len();
        if *used + n > POOL {
            getrandom::fill(pool)?;
            *used = 0;
        }
        match pool.get(*used..*used + n) {
            Some(fresh) => out.copy_from_slice(fresh),
            None => getrandom::fill(out)?, // unreachable: POOL is a multiple of n
        }
        *used += n;
        Ok(())
    })
}

impl Event {
    /// Builds an event, checking that `id` is a valid `webhook-id` and the data's rules.
    pub fn new(id: String, created_at: Timestamp, workspace_id: String, data: EventData) -> Result<Self, Error> {
        crate::headers::validate_id(&id).map_err(|e| Error::payload(format_args!("envelope `id`: {e}")))?;
        data.validate()?;
        Ok(Event {
            id,
            created_at,
            workspace_id,
            data,
        })
    }

    /// A fresh event id made at `now`: `msg_` and a 26-character [ULID] (48 bits of
    /// Unix milliseconds, then 80 random bits, in Crockford base32).
    ///
    /// Ids sort by creation time (to the millisecond), as Svix's KSUID-based ids do, so a
    /// store's index of ids grows at one end instead of taking inserts at random pages.
    ///
    /// ```
    /// use postwire_core::{Event, Timestamp};
    /// let earlier = Event::generate_id(Timestamp::from_unix_millis(1_800_000_000_000))?;
    /// let later = Event::generate_id(Timestamp::from_unix_millis(1_800_000_000_001))?;
    /// assert!(earlier.starts_with("msg_") && earlier.len() == 30);
    /// assert!(earlier < later);
    /// # Ok::<(), postwire_core::Error>(())
    /// ```
    ///
    /// [ULID]: https://github.com/ulid/spec
    pub fn generate_id(now: Timestamp) -> Result<String, Error> {
        /// Crockford's base32 alphabet, in ASCII order, so text order is numeric order.
        const CROCKFORD: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
        let mut random = [0u8; 10];
        id_randomness(&mut random).map_err(|_| Error::InvalidSecret {
            reason: "no secure random source is available",
        })?;
        let millis = (now.unix_millis().max(0) as u128) & 0xFFFF_FFFF_FFFF;
        let value = random.iter().fold(millis, |v, b| (v << 8) | u128::from(*b));
        let mut id = String::with_capacity(30);
        id.push_str("msg_");
        id.extend(
            (0..26)
                .rev()
                .filter_map(|i| CROCKFORD.get(((value >> (5 * i)) & 31) as usize).map(|&c| c as char)),
        );
        Ok(id)
    }

    /// Event identifier; equals `webhook-id` and never changes across retries.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Event creation time.
    pub fn created_at(&self) -> Timestamp {
        self.created_at
    }

    /// Workspace the event belongs to.
    pub fn workspace_id(&self) -> &str {
        &self.workspace_id
    }

    /// The type's data.
    pub fn data(&self) -> &EventData {
        &self.data
    }

    /// The event's parts, by value: id, creation time, workspace and data.
    pub fn into_parts(self) -> (String, Timestamp, String, EventData) {
        (self.id, self.created_at, self.workspace_id, self.data)
    }

    /// The event type.
    pub fn event_type(&self) -> EventType {
        self.data.event_type()
    }

    /// Parses a delivery body. Bodies that are not UTF-8 JSON, or not an envelope of a known
    /// type with the right `data`, are [`Error::InvalidPayload`].
    pub fn from_json(body: &[u8]) -> Result<Self, Error> {
        serde_json::from_slice(body).map_err(Error::payload)
    }

    /// The JSON body of a delivery.
    pub fn to_json(&self) -> String {
        // Serializing these types cannot fail: every map key is a string.
        serde_json::to_string(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post_json(extra: &str) -> String {
        format!(
            r#"{{"id":"p1","externalId":"ext-1","group":"g1","state":"QUEUE","publishDate":"2026-11-22T10:00:00.000Z",
            "integration":{{"id":"acc1","providerIdentifier":"x","name":"Acme"}}{extra}}}"#
        )
    }

    fn envelope(t: &str, data: &str) -> String {
        format!(
            r#"{{"id":"msg_1","type":"{t}","createdAt":"2026-11-22T09:00:00.000Z","workspaceId":"ws1","data":{data}}}"#
        )
    }

    #[test]
    fn parses_every_type_and_round_trips() {
        let post = post_json("");
        let published = post_json(r#","releaseURL":"https://x.com/1","releaseId":"1""#);
        let cases = [
            ("post.scheduled", format!(r#"{{"post":{post}}}"#)),
            ("post.unscheduled", format!(r#"{{"post":{post}}}"#)),
            ("post.publishing", format!(r#"{{"post":{post}}}"#)),
            ("post.published", format!(r#"{{"post":{published}}}"#)),
            (
                "post.failed",
                format!(r#"{{"post":{post},"error":{{"code":"rate_limited","message":"m","retryable":true}}}}"#),
            ),
            (
                "post.deleted",
                format!(r#"{{"post":{post},"deletedBy":{{"kind":"api_token","id":"tok_1"}}}}"#),
            ),
            (
                "integration.disconnected",
                r#"{"integration":{"id":"acc1","name":"A","providerIdentifier":"x"},"reason":"reconnect_required"}"#
                    .into(),
            ),
            (
                "integration.reconnected",
                r#"{"integration":{"id":"acc1","name":"A","providerIdentifier":"x","picture":null}}"#.into(),
            ),
            ("webhook.test", r#"{"message":"hi"}"#.into()),
        ];
        assert_eq!(cases.len(), EventType::ALL.len());
        for (t, data) in cases {
            let e = Event::from_json(envelope(t, &data).as_bytes()).unwrap_or_else(|e| panic!("{t}: {e}"));
            assert_eq!(e.event_type().as_str(), t);
            assert_eq!(Event::from_json(e.to_json().as_bytes()).unwrap(), e);
        }
    }

    #[test]
    fn content_is_never_carried() {
        let json = envelope(
            "post.scheduled",
            &format!(r#"{{"post":{}}}"#, post_json(r#","content":"secret draft text""#)),
        );
        let e = Event::from_json(json.as_bytes()).unwrap();
        assert!(!e.to_json().contains("secret draft text"));
    }

    #[test]
    fn rules_are_enforced_when_parsing() {
        let published = envelope("post.published", &format!(r#"{{"post":{}}}"#, post_json("")));
        assert!(
            Event::from_json(published.as_bytes())
                .unwrap_err()
                .to_string()
                .contains("releaseURL")
        );
        let unknown = envelope(
            "post.failed",
            &format!(
                r#"{{"post":{},"error":{{"code":"unknown","message":"m","retryable":true}}}}"#,
                post_json("")
            ),
        );
        assert!(
            Event::from_json(unknown.as_bytes())
                .unwrap_err()
                .to_string()
                .contains("never retryable")
        );
        assert!(Event::from_json(envelope("post.exploded", "{}").as_bytes()).is_err());
        assert!(Event::from_json(b"\xff\xfe").is_err());
        assert!(Event::from_json(envelope("webhook.test", "[]").as_bytes()).is_err());
    }

    #[test]
    fn generated_ids_are_valid_and_distinct() {
        let now = Timestamp::from_unix_millis(1_800_000_000_000);
        let a = Event::generate_id(now).unwrap();
        assert!(crate::headers::validate_id(&a).is_ok());
        assert_eq!(a.len(), 30);
        assert_ne!(a, Event::generate_id(now).unwrap());
        // The first 10 characters are the time: equal within a millisecond...
        assert_eq!(a[..14], Event::generate_id(now).unwrap()[..14]);
        // ...and ordered across milliseconds, whatever the random part.
        let mut previous = a;
        for ms in [1, 2, 1_000, 86_400_000, 1 << 40] {
            let id = Event::generate_id(now.add_millis(ms)).unwrap();
            assert!(id > previous, "{id} sorts after {previous}");
            previous = id;
        }
        // The known ULID form of a known time: 1_800_000_000_000 ms is 01MCC5RM00 in Crockford base32.
        assert!(Event::generate_id(now).unwrap().starts_with("msg_01MCC5RM00"));
    }

    #[test]
    fn ids_made_in_one_millisecond_stay_distinct_across_refills_of_the_random_pool() {
        let now = Timestamp::from_unix_millis(1_800_000_000_000);
        let ids: std::collections::HashSet<String> = (0..1_000).map(|_| Event::generate_id(now).unwrap()).collect();
        assert_eq!(ids.len(), 1_000);
    }
}
