//! The records the sender keeps and returns: workspaces, subscriptions as stored,
//! deliveries, attempts, pages and notifications.
//!
//! These are plain data, shared by the public API and the [`Store`](crate::store::Store)
//! interface, so a second storage backend speaks exactly the same types.

use std::fmt;
use std::str::FromStr;

use postwire_core::{
    CreatedByKind, EventType, Integration, OperationalEventType, PublicKey, Secret, SigningMode, Subscription,
    Timestamp,
};
use serde::Serialize;

use crate::error::SenderError;
use crate::signer::WorkspaceKey;

/// A workspace, as registered by the host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Workspace {
    /// Workspace identifier.
    pub id: String,
    /// Display name.
    pub name: String,
}

/// What a client asks for when creating a subscription.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSubscription {
    /// The workspace it belongs to; must be registered.
    pub workspace_id: String,
    /// Label (1 to 200 characters).
    pub name: String,
    /// Public `https` endpoint.
    pub url: String,
    /// Event types; empty means every type. Duplicates are removed.
    pub events: Vec<EventType>,
    /// Account ids to limit to, each a registered account of the workspace; empty
    /// means all accounts.
    pub integration_ids: Vec<String>,
    /// Who is creating it.
    pub created_by_kind: CreatedByKind,
    /// Which signatures its deliveries carry (`symmetric`, the spec's, by default).
    pub signing: SigningMode,
}

/// A change to a subscription; `None` leaves a field as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SubscriptionUpdate {
    /// New label.
    pub name: Option<String>,
    /// New endpoint (checked like at creation).
    pub url: Option<String>,
    /// New event types.
    pub events: Option<Vec<EventType>>,
    /// New account restriction.
    pub integration_ids: Option<Vec<String>>,
    /// New signing choice.
    pub signing: Option<SigningMode>,
}

/// A subscription as the API shows it, with the workspace it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubscriptionRecord {
    /// The workspace, for access checks.
    pub workspace_id: String,
    /// The subscription (never its secret).
    pub subscription: Subscription,
    /// While a rotation is in its dual-signature window: when the old secret stops
    /// being used.
    pub previous_secret_valid_until: Option<Timestamp>,
    /// Start of the current run of failed attempts (none since the last success).
    pub failing_since: Option<Timestamp>,
    /// What it is for: a subscriber's, or an operator endpoint.
    pub purpose: Purpose,
}

/// The result of a rotation: the new secret (shown this once) and the end of the window
/// during which deliveries are signed with both secrets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RotatedSecret {
    /// The new signing secret. Never log it.
    pub secret: Secret,
    /// Until then every delivery also carries a signature made with the old secret.
    pub previous_valid_until: Timestamp,
}

/// A subscription as stored, with its secrets and the health counters. Internal to the
/// sender and its stores; never returned through the API.
#[derive(Debug, Clone)]
pub struct StoredSubscription {
    /// The workspace.
    pub workspace_id: String,
    /// The public part.
    pub subscription: Subscription,
    /// The current signing secret.
    pub secret: Secret,
    /// The previous secret and until when it still signs.
    pub previous_secret: Option<(Secret, Timestamp)>,
    /// Start of the current run of failed attempts (none since the last success).
    pub failing_since: Option<Timestamp>,
    /// What it is for.
    pub purpose: Purpose,
}

impl StoredSubscription {
    /// The public view.
    pub fn record(&self) -> SubscriptionRecord {
        SubscriptionRecord {
            workspace_id: self.workspace_id.clone(),
            subscription: self.subscription.clone(),
            previous_secret_valid_until: self.previous_secret.as_ref().map(|(_, until)| *until),
            failing_since: self.failing_since,
            purpose: self.purpose,
        }
    }
}

/// The fields of a subscription that an update may change, already validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubscriptionChanges {
    /// New label.
    pub name: Option<String>,
    /// New endpoint.
    pub url: Option<String>,
    /// New event types.
    pub events: Option<Vec<EventType>>,
    /// New account restriction, as full records.
    pub integrations: Option<Vec<Integration>>,
    /// New signing choice.
    pub signing: Option<SigningMode>,
}

/// A workspace's ed25519 key pair as stored (its `v1a` signing keys), with the previous
/// one during a rotation's window. Internal to the sender and its stores; only the
/// public halves leave it ([`SigningKeyInfo`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkspaceKeys {
    /// The current signing key (in this process or in a hardware module).
    pub current: WorkspaceKey,
    /// When it was made.
    pub created_at: Timestamp,
    /// The previous key while a rotation's window is open (or was: the window's end is
    /// stored and compared with the clock by [`crate::signing`]).
    pub previous: Option<PreviousKey>,
    /// The id of the workspace's published key set (`ks_` and 32 hex digits, 128 random
    /// bits; [`crate::signing::new_key_set_id`]), made with its first key and kept
    /// across rotations. Not a secret, but unguessable: it is the only way to the key
    /// set, so that the public URL names no workspace.
    pub key_set_id: String,
}

/// The key a rotation replaced, and until when it still signs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreviousKey {
    /// The key.
    pub key: WorkspaceKey,
    /// When it was made.
    pub created_at: Timestamp,
    /// It signs until then (exclusive).
    pub until: Timestamp,
}

/// One published public key of a workspace (`GET …/signing-keys`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SigningKeyInfo {
    /// The `whpk_` public key receivers verify `v1a` entries with.
    pub public_key: PublicKey,
    /// When its key pair was made.
    pub created_at: Timestamp,
    /// For the key a rotation replaced: when deliveries stop carrying its signature.
    /// `None` for the current key.
    pub expires_at: Option<Timestamp>,
}

/// A `webhook.test` delivery signed now by a workspace's current `v1a` key only (what an
/// `asymmetric` subscription would receive), for pages that show how to verify with the
/// public key. Never sent anywhere; holds no secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedSample {
    /// `webhook-id`.
    pub id: String,
    /// `webhook-timestamp`, seconds.
    pub timestamp: i64,
    /// `webhook-signature`: one `v1a` entry.
    pub signature: String,
    /// The body, exactly as signed.
    pub body: String,
}

/// The result of a rotation of a workspace's key pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RotatedSigningKey {
    /// The workspace's public keys after the rotation, the new one first.
    pub keys: Vec<SigningKeyInfo>,
    /// Until then every `v1a` delivery also carries a signature by the old key.
    pub previous_valid_until: Timestamp,
}

/// A delivery's identifier: `dlv_<n>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeliveryId(pub i64);

impl fmt::Display for DeliveryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "dlv_{}", self.0)
    }
}

impl FromStr for DeliveryId {
    type Err = SenderError;
    /// ```
    /// use postwire_sender::DeliveryId;
    /// assert_eq!("dlv_42".parse::<DeliveryId>().unwrap(), DeliveryId(42));
    /// assert!("42".parse::<DeliveryId>().is_err() && "dlv_042".parse::<DeliveryId>().is_err());
    /// ```
    /// The form the API shows: `^dlv_[1-9][0-9]{0,17}$`.
    fn from_str(s: &str) -> Result<Self, SenderError> {
        s.strip_prefix("dlv_")
            .filter(|n| (1..=18).contains(&n.len()) && !n.starts_with('0') && n.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|n| n.parse::<i64>().ok())
            .map(DeliveryId)
            .ok_or_else(|| SenderError::invalid("`deliveryId` is not a delivery id (`dlv_<n>`)"))
    }
}

impl Serialize for DeliveryId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Where a delivery (one event to one subscription) stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryState {
    /// Waiting for its first attempt or for a retry (see `next_attempt_at`).
    Pending,
    /// Held while the subscription is paused.
    Held,
    /// A `2xx` arrived in time.
    Delivered,
    /// Every attempt failed.
    Failed,
    /// Held for longer than 7 days when the subscription was resumed; never sent.
    Expired,
    /// Cancelled before it was delivered, because its event's payload was erased
    /// ([`crate::Sender::erase_payloads`]); never attempted again.
    Cancelled,
}

impl DeliveryState {
    /// The stable string form.
    pub const fn as_str(self) -> &'static str {
        match self {
            DeliveryState::Pending => "pending",
            DeliveryState::Held => "held",
            DeliveryState::Delivered => "delivered",
            DeliveryState::Failed => "failed",
            DeliveryState::Expired => "expired",
            DeliveryState::Cancelled => "cancelled",
        }
    }

    /// True for the states a delivery never leaves.
    pub const fn is_final(self) -> bool {
        matches!(
            self,
            DeliveryState::Delivered | DeliveryState::Failed | DeliveryState::Expired | DeliveryState::Cancelled
        )
    }
}

/// Why an attempt got no usable response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AttemptErrorKind {
    /// No response within the attempt timeout (10 s by default).
    Timeout,
    /// The connection could not be made or broke.
    Connection,
    /// The host name did not resolve.
    Dns,
    /// Every address of the host is in a blocked range (see [`crate::ssrf`]).
    BlockedAddress,
    /// The stored URL is no longer acceptable (e.g. not https).
    InvalidUrl,
    /// The response was not valid HTTP, or the request could not be built.
    Protocol,
    /// The hardware module that keeps the workspace's `v1a` key did not sign (unreachable,
    /// token absent, PIN refused); nothing was sent. Retried like any failure.
    Signing,
}

impl AttemptErrorKind {
    /// The stable string form, e.g. `"timeout"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            AttemptErrorKind::Timeout => "timeout",
            AttemptErrorKind::Connection => "connection",
            AttemptErrorKind::Dns => "dns",
            AttemptErrorKind::BlockedAddress => "blocked_address",
            AttemptErrorKind::InvalidUrl => "invalid_url",
            AttemptErrorKind::Protocol => "protocol",
            AttemptErrorKind::Signing => "signing",
        }
    }

    /// What it means, in a sentence for people reading a delivery log.
    pub const fn describe(self) -> &'static str {
        match self {
            AttemptErrorKind::Timeout => "no answer within the attempt timeout (10 s by default)",
            AttemptErrorKind::Connection => "the connection could not be made (refused, reset or unreachable)",
            AttemptErrorKind::Dns => {
                "the endpoint's host name did not resolve (a typo, or a DNS record not set up yet)"
            }
            AttemptErrorKind::BlockedAddress => {
                "the host name resolves only to private, loopback or other non-public addresses, where deliveries never go"
            }
            AttemptErrorKind::InvalidUrl => "the stored URL is not acceptable any more (for example not https)",
            AttemptErrorKind::Protocol => "the answer was not valid HTTP",
            AttemptErrorKind::Signing => {
                "the hardware module holding the signing key did not sign (unreachable, token absent or PIN refused); nothing was sent"
            }
        }
    }

    pub(crate) fn parse(s: &str) -> AttemptErrorKind {
        match s {
            "timeout" => AttemptErrorKind::Timeout,
            "connection" => AttemptErrorKind::Connection,
            "dns" => AttemptErrorKind::Dns,
            "blocked_address" => AttemptErrorKind::BlockedAddress,
            "invalid_url" => AttemptErrorKind::InvalidUrl,
            "signing" => AttemptErrorKind::Signing,
            _ => AttemptErrorKind::Protocol,
        }
    }
}

/// What one attempt got.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AttemptOutcome {
    /// The receiver answered with `status` in time (a `2xx` is a success; anything
    /// else, including every `3xx`, a failure).
    Response {
        /// HTTP status.
        status: u16,
        /// The start of the response body (at most 4 KiB, lossily decoded as UTF-8).
        body_prefix: String,
    },
    /// No usable answer.
    Error {
        /// Why.
        error: AttemptErrorKind,
    },
}

impl AttemptOutcome {
    /// True for a `2xx` response.
    pub fn is_success(&self) -> bool {
        matches!(self, AttemptOutcome::Response { status, .. } if (200..300).contains(status))
    }
}

/// One attempt of a delivery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AttemptRecord {
    /// 1 for the first attempt, up to 9.
    pub number: u32,
    /// When the request was sent (also its `webhook-timestamp`).
    pub started_at: Timestamp,
    /// How long it took until the outcome, in milliseconds (real time, not the clock's).
    pub duration_ms: u64,
    /// What it got.
    pub outcome: AttemptOutcome,
}

/// One event to one subscription, with its attempts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryRecord {
    /// Delivery identifier.
    pub id: DeliveryId,
    /// The subscription.
    pub subscription_id: String,
    /// The event (`webhook-id`).
    pub event_id: String,
    /// The event's type (an operational notice's, for an operator endpoint).
    pub event_type: DeliveryEventType,
    /// Where it stands.
    pub state: DeliveryState,
    /// When the next attempt is due (pending only).
    pub next_attempt_at: Option<Timestamp>,
    /// When it was created (the event was accepted).
    pub created_at: Timestamp,
    /// When it reached its final state.
    pub finished_at: Option<Timestamp>,
    /// Its attempts, newest first.
    pub attempts: Vec<AttemptRecord>,
    /// The event's JSON body, exactly as every attempt sends it (the Settings screen
    /// shows it; the API's deliveries list leaves it out). Empty once erased.
    pub payload: String,
    /// The event's payload was erased ([`crate::Sender::erase_payloads`]): `payload` is
    /// empty, and the delivery cannot be resent.
    pub payload_erased: bool,
}

/// The type of what a delivery carries: one of the spec's events, or, to an operator
/// endpoint, an operational notice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeliveryEventType {
    /// One of the spec's events.
    Event(EventType),
    /// An operational notice ([`crate::notices`]).
    Notice(OperationalEventType),
}

impl DeliveryEventType {
    /// The wire name, e.g. `post.published` or `endpoint.paused`.
    pub const fn as_str(self) -> &'static str {
        match self {
            DeliveryEventType::Event(t) => t.as_str(),
            DeliveryEventType::Notice(t) => t.as_str(),
        }
    }
}

impl FromStr for DeliveryEventType {
    type Err = SenderError;
    /// ```
    /// use postwire_sender::model::DeliveryEventType;
    /// assert_eq!("endpoint.paused".parse::<DeliveryEventType>().unwrap().as_str(), "endpoint.paused");
    /// assert!("post.unknown".parse::<DeliveryEventType>().is_err());
    /// ```
    fn from_str(s: &str) -> Result<Self, SenderError> {
        if let Ok(t) = s.parse::<EventType>() {
            return Ok(DeliveryEventType::Event(t));
        }
        s.parse::<OperationalEventType>()
            .map(DeliveryEventType::Notice)
            .map_err(|_| SenderError::invalid("not an event type"))
    }
}

impl PartialEq<DeliveryEventType> for EventType {
    fn eq(&self, other: &DeliveryEventType) -> bool {
        *other == DeliveryEventType::Event(*self)
    }
}

impl fmt::Display for DeliveryEventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for DeliveryEventType {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Whose stored payloads an erasure removes: the events of one ordering key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErasureSubject {
    /// The events about one post (`post.*`, ordered by the post).
    Post(String),
    /// The events about one connected account (`integration.*`, ordered by the account).
    Integration(String),
}

/// What one erasure did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Erased {
    /// Events whose payload this call replaced by the tombstone (0 on a repeat).
    pub events: u64,
    /// Unfinished deliveries of those events this call cancelled.
    pub cancelled: u64,
}

/// A page of results, newest first, and the cursor of the next page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Page<T> {
    /// The items.
    pub items: Vec<T>,
    /// Pass this to get the following (older) items; `None` at the end.
    pub next_cursor: Option<DeliveryCursor>,
}

/// A position in a subscription's deliveries list: opaque to clients (`c_<n>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DeliveryCursor(pub(crate) i64);

impl fmt::Display for DeliveryCursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "c_{}", self.0)
    }
}

impl Serialize for DeliveryCursor {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl FromStr for DeliveryCursor {
    type Err = SenderError;
    /// ```
    /// use postwire_sender::DeliveryCursor;
    /// assert!("c_42".parse::<DeliveryCursor>().is_ok());
    /// assert_eq!("42".parse::<DeliveryCursor>().unwrap_err().code().as_str(), "invalid_request");
    /// assert!("c_+42".parse::<DeliveryCursor>().is_err() && "c_042".parse::<DeliveryCursor>().is_err());
    /// ```
    /// The form the API documents: `^c_[1-9][0-9]{0,17}$` (no sign, no leading zero).
    fn from_str(s: &str) -> Result<Self, SenderError> {
        s.strip_prefix("c_")
            .filter(|n| (1..=18).contains(&n.len()) && !n.starts_with('0') && n.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|n| n.parse::<i64>().ok())
            .map(DeliveryCursor)
            .ok_or_else(|| SenderError::invalid("`cursor` is not a cursor returned by this endpoint"))
    }
}

/// Why a subscription was paused by the sender itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PauseCause {
    /// 50 failed deliveries in a row.
    ConsecutiveFailures,
    /// 72 hours without a success while deliveries failed.
    FailingFor72Hours,
}

impl PauseCause {
    /// The `disabledReason` text shown for this cause.
    pub const fn reason(self) -> &'static str {
        match self {
            PauseCause::ConsecutiveFailures => "50 failed deliveries in a row",
            PauseCause::FailingFor72Hours => "72 hours without a successful delivery",
        }
    }

    /// The stable code stored for this cause.
    pub const fn as_str(self) -> &'static str {
        match self {
            PauseCause::ConsecutiveFailures => "consecutive_failures",
            PauseCause::FailingFor72Hours => "failing_for_72_hours",
        }
    }

    /// The cause whose [`as_str`](Self::as_str) is `code`.
    ///
    /// ```
    /// use postwire_sender::PauseCause;
    /// assert_eq!(PauseCause::from_code("failing_for_72_hours"), Some(PauseCause::FailingFor72Hours));
    /// assert_eq!(PauseCause::from_code("other"), None);
    /// ```
    pub fn from_code(code: &str) -> Option<Self> {
        [PauseCause::ConsecutiveFailures, PauseCause::FailingFor72Hours]
            .into_iter()
            .find(|c| c.as_str() == code)
    }
}

/// The `disabledReason` of a subscription paused by request.
pub const PAUSED_BY_REQUEST: &str = "paused by request";

/// A notice for a workspace's operators: an operational event ([`crate::notices`]),
/// stored in the transaction of the change it is about, listed by
/// [`Sender::notifications`](crate::Sender::notifications) and sent, signed, to the
/// workspace's operator endpoints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Notification {
    /// Notification identifier (increasing).
    pub id: i64,
    /// The workspace whose operators are to be told.
    pub workspace_id: String,
    /// What happened.
    #[serde(serialize_with = "serialize_kind")]
    pub kind: OperationalEventType,
    /// The subscription it is about (`None` for the workspace's signing key).
    pub subscription_id: Option<String>,
    /// Why it was paused (`endpoint.paused` only).
    pub cause: Option<PauseCause>,
    /// A sentence for the operators.
    pub message: String,
    /// The `webhook-id` of its deliveries to operator endpoints.
    pub event_id: String,
    /// When.
    pub created_at: Timestamp,
}

fn serialize_kind<S: serde::Serializer>(kind: &OperationalEventType, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(kind.as_str())
}

/// What a subscription is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Purpose {
    /// A subscriber's endpoint: the spec's events it matches.
    #[default]
    Events,
    /// An operator endpoint of the workspace: operational notices about the workspace's
    /// other subscriptions, and nothing else.
    Operator,
}

impl Purpose {
    /// The stable stored form.
    pub const fn as_str(self) -> &'static str {
        match self {
            Purpose::Events => "events",
            Purpose::Operator => "operator",
        }
    }

    /// The purpose of a stored endpoint whose `purpose` column is `stored` and whose
    /// subscriber filters (event types, accounts) are `filtered` (not empty): the stores
    /// read every endpoint through this, so a row that makes no endpoint is refused
    /// rather than read as another kind.
    ///
    /// ```
    /// use postwire_sender::Purpose;
    /// assert_eq!(Purpose::from_stored("events", true), Ok(Purpose::Events));
    /// assert_eq!(Purpose::from_stored("operator", false), Ok(Purpose::Operator));
    /// assert_eq!(Purpose::from_stored("operator", true).unwrap_err().code(), "operator_with_filters");
    /// assert_eq!(Purpose::from_stored("operatr", false).unwrap_err().code(), "unknown_purpose");
    /// ```
    pub fn from_stored(stored: &str, filtered: bool) -> Result<Purpose, InconsistentEndpoint> {
        match stored {
            "events" => Ok(Purpose::Events),
            "operator" if filtered => Err(InconsistentEndpoint::OperatorWithFilters),
            "operator" => Ok(Purpose::Operator),
            other => Err(InconsistentEndpoint::UnknownPurpose(other.chars().take(64).collect())),
        }
    }
}

/// A stored endpoint whose columns make no endpoint: the stores refuse to read it (an
/// [`internal_error`](crate::SenderErrorCode::Internal), the store's, not the caller's).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InconsistentEndpoint {
    /// The `purpose` column holds neither `events` nor `operator`.
    #[error("a stored endpoint has the unknown purpose `{0}`")]
    UnknownPurpose(String),
    /// An operator endpoint has event types or accounts to filter by, which only a
    /// subscriber's subscription has.
    #[error("a stored operator endpoint has subscriber filters (event types or accounts)")]
    OperatorWithFilters,
}

impl InconsistentEndpoint {
    /// The stable code: `unknown_purpose` or `operator_with_filters`.
    pub const fn code(&self) -> &'static str {
        match self {
            InconsistentEndpoint::UnknownPurpose(_) => "unknown_purpose",
            InconsistentEndpoint::OperatorWithFilters => "operator_with_filters",
        }
    }
}

/// What publishing a change did. (Its serde form is what an idempotency key stores.)
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Published {
    /// An event was accepted and stored with a delivery per matching subscription;
    /// nothing of it is lost from here on.
    Event {
        /// The event id (`webhook-id`).
        event_id: String,
        /// How many deliveries were queued (or held, for paused subscriptions).
        deliveries: usize,
    },
    /// The change is not an event.
    NoEvent(crate::events::NoEventReason),
}

impl Published {
    /// The event id, when there is an event.
    pub fn event_id(&self) -> Option<&str> {
        match self {
            Published::Event { event_id, .. } => Some(event_id),
            Published::NoEvent(_) => None,
        }
    }
}

/// What resuming a subscription did with its held deliveries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResumeSummary {
    /// Held deliveries queued again, to go out in order.
    pub released: u64,
    /// Held deliveries older than 7 days, marked expired.
    pub expired: u64,
}

/// What happens to a delivery after an attempt, decided by the dispatcher.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextState {
    /// Delivered.
    Delivered,
    /// Try again at this time.
    RetryAt(Timestamp),
    /// That was the last attempt.
    Failed,
}
