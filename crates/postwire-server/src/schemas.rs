//! The JSON shapes of the public API, as Rust types that also describe themselves to
//! OpenAPI.
//!
//! Subscriptions and events are serialized by postwire-core's own types (which follow
//! the spec field for field); the types here that mirror them ([`WebhookSubscription`],
//! [`CreatedWebhookSubscription`], [`EventEnvelope`]) exist only to describe those shapes,
//! and a test checks that the documented properties are exactly the ones sent. The
//! shapes the spec leaves open (deliveries, lists, rotation, test events, look-ups) are
//! defined here, and serialized from these very types.

use postwire_core::SubscriptionStatus;
use postwire_sender::{AttemptOutcome, DeliveryRecord, SubscriptionRecord};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// An event type.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
pub enum EventTypeName {
    /// An approved post is queued, rescheduled, or edited.
    #[serde(rename = "post.scheduled")]
    PostScheduled,
    /// A queued post went back to draft or to awaiting approval.
    #[serde(rename = "post.unscheduled")]
    PostUnscheduled,
    /// Publishing to the provider starts.
    #[serde(rename = "post.publishing")]
    PostPublishing,
    /// The provider accepted the post.
    #[serde(rename = "post.published")]
    PostPublished,
    /// The post could not be published.
    #[serde(rename = "post.failed")]
    PostFailed,
    /// The post was deleted.
    #[serde(rename = "post.deleted")]
    PostDeleted,
    /// An account must be reconnected, or was disabled or deleted.
    #[serde(rename = "integration.disconnected")]
    IntegrationDisconnected,
    /// An account that needed reconnecting works again.
    #[serde(rename = "integration.reconnected")]
    IntegrationReconnected,
    /// A test event was sent.
    #[serde(rename = "webhook.test")]
    WebhookTest,
}

impl EventTypeName {
    /// Every documented event type, in the spec's order.
    pub const ALL: [EventTypeName; 9] = [
        EventTypeName::PostScheduled,
        EventTypeName::PostUnscheduled,
        EventTypeName::PostPublishing,
        EventTypeName::PostPublished,
        EventTypeName::PostFailed,
        EventTypeName::PostDeleted,
        EventTypeName::IntegrationDisconnected,
        EventTypeName::IntegrationReconnected,
        EventTypeName::WebhookTest,
    ];
}

/// A connected social account.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Integration {
    /// Connected account identifier.
    pub id: String,
    /// Account display name.
    pub name: String,
    /// Identifier of the social provider.
    pub provider_identifier: String,
    /// Picture address.
    pub picture: Option<String>,
}

/// A webhook subscription (every response but creation's; never the secret).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookSubscription {
    /// Subscription identifier.
    #[schema(example = "wh_5f0c6a1e9b2d4c7a8e3f1b0d2c4a6e8f")]
    pub id: String,
    /// Label given at creation.
    pub name: String,
    /// Endpoint that receives events.
    #[schema(example = "https://hooks.example.com/postwire")]
    pub url: String,
    /// Subscribed event types; empty means every type.
    pub events: Vec<EventTypeName>,
    /// Accounts the subscription is limited to; empty means all accounts.
    pub integrations: Vec<Integration>,
    /// True while paused.
    pub disabled: bool,
    /// Why it is paused; null when not paused.
    #[schema(required = true)]
    pub disabled_reason: Option<String>,
    /// How it was created.
    #[schema(value_type = CreatedByKindName)]
    pub created_by_kind: String,
    /// Failed deliveries in a row.
    pub consecutive_failures: u32,
    /// Time of the last successful delivery.
    #[schema(required = true, format = DateTime)]
    pub last_success_at: Option<String>,
    /// Creation time (UTC, milliseconds).
    #[schema(format = DateTime, example = "2026-11-22T10:00:00.000Z")]
    pub created_at: String,
    /// Which signatures its deliveries carry (extension; see `SigningChoice`).
    pub signing: SigningChoice,
}

/// The creation response: the subscription and its signing secret, shown this once.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreatedWebhookSubscription {
    /// Subscription identifier.
    pub id: String,
    /// Label given at creation.
    pub name: String,
    /// Endpoint that receives events.
    pub url: String,
    /// Subscribed event types; empty means every type.
    pub events: Vec<EventTypeName>,
    /// Accounts the subscription is limited to; empty means all accounts.
    pub integrations: Vec<Integration>,
    /// False: a new subscription is enabled.
    pub disabled: bool,
    /// Null: a new subscription is enabled.
    #[schema(required = true)]
    pub disabled_reason: Option<String>,
    /// How it was created (`api_token` through this API).
    #[schema(value_type = CreatedByKindName)]
    pub created_by_kind: String,
    /// 0.
    pub consecutive_failures: u32,
    /// Null.
    #[schema(required = true, format = DateTime)]
    pub last_success_at: Option<String>,
    /// Creation time (UTC, milliseconds).
    #[schema(format = DateTime)]
    pub created_at: String,
    /// Which signatures its deliveries carry (extension; see `SigningChoice`).
    pub signing: SigningChoice,
    /// The signing secret (`whsec_…`). Returned only here; never again.
    #[schema(example = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")]
    pub secret: String,
}

/// Which signatures a subscription's deliveries carry: an extension of the spec
/// (Standard Webhooks' asymmetric `v1a` scheme, ed25519). `symmetric`, the default, is the
/// spec's: `v1` HMAC-SHA256 signatures with the subscription's `whsec_` secret.
/// `asymmetric`: only `v1a` signatures, by the workspace's signing key, which receivers
/// verify with a public key from `GET …/signing-keys` (no secret to hold). `both`: the
/// `v1` signatures, then the `v1a` ones.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SigningChoice {
    /// `v1` (HMAC-SHA256) only, as the spec.
    Symmetric,
    /// `v1a` (ed25519) only.
    Asymmetric,
    /// `v1`, then `v1a`.
    Both,
}

impl SigningChoice {
    /// Every documented choice, in order.
    pub const ALL: [SigningChoice; 3] = [SigningChoice::Symmetric, SigningChoice::Asymmetric, SigningChoice::Both];
}

/// Who created a subscription.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CreatedByKindName {
    /// In the web dashboard.
    Dashboard,
    /// With a user API token.
    ApiToken,
    /// By an OAuth client.
    OauthClient,
}

/// The body of `POST …/webhooks`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateWebhookRequest {
    /// Label of the subscription: 1 to 200 characters, not only white space, no control
    /// character.
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = "^[^\\x00-\\x1f\\x7f-\\x9f]*[^\\s\\x00-\\x1f\\x7f-\\x9f][^\\x00-\\x1f\\x7f-\\x9f]*$",
        example = "production"
    )]
    pub name: String,
    /// Public HTTPS endpoint that receives signed events, at most 2048 bytes, without a
    /// user name or password. Refused: a host that is an address in, or a name that
    /// resolves only into, a private, loopback, link-local or other non-public range. A
    /// name that does not resolve at the moment is accepted (its deliveries fail and
    /// retry until it does).
    #[schema(
        format = "uri",
        max_length = 2048,
        pattern = "^[Hh][Tt][Tt][Pp][Ss]://",
        example = "https://hooks.example.com/postwire"
    )]
    pub url: String,
    /// Event types to receive. Omitted, null or `[]` means every type; duplicates are
    /// removed.
    #[schema(example = json!(["post.published", "post.failed"]))]
    pub events: Option<Vec<EventTypeName>>,
    /// Connected account ids of the workspace to limit to (at most 100; each must be an
    /// account of this workspace). Omitted, null or `[]` means all accounts.
    #[schema(max_items = 100)]
    pub integration_ids: Option<Vec<String>>,
    /// Which signatures deliveries carry (extension). Omitted or null means `symmetric`,
    /// the spec's; `asymmetric` or `both` make the workspace's signing key pair on first
    /// use.
    pub signing: Option<SigningChoice>,
}

/// The body of `PATCH …/webhooks/{id}`: the fields to change; absent fields keep their
/// value and `null` is refused.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateWebhookRequest {
    /// New label (rules of creation).
    #[schema(
        nullable = false,
        min_length = 1,
        max_length = 200,
        pattern = "^[^\\x00-\\x1f\\x7f-\\x9f]*[^\\s\\x00-\\x1f\\x7f-\\x9f][^\\x00-\\x1f\\x7f-\\x9f]*$",
        example = "production"
    )]
    pub name: Option<String>,
    /// New endpoint (checked like at creation).
    #[schema(
        nullable = false,
        format = "uri",
        max_length = 2048,
        pattern = "^[Hh][Tt][Tt][Pp][Ss]://"
    )]
    pub url: Option<String>,
    /// New event types (`[]` for all).
    #[schema(nullable = false, example = json!(["post.published"]))]
    pub events: Option<Vec<EventTypeName>>,
    /// New account restriction (`[]` for all; at most 100).
    #[schema(nullable = false, max_items = 100)]
    pub integration_ids: Option<Vec<String>>,
    /// New signing choice (extension); deliveries attempted from then on carry the new
    /// signatures.
    #[schema(nullable = false)]
    pub signing: Option<SigningChoice>,
}

/// The body of `PUT …/webhooks/{id}/enabled`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SetEnabledRequest {
    /// `false` pauses (events are held); `true` resumes (events held during the last 7
    /// days are delivered in order, older ones expire).
    pub enabled: bool,
}

/// The optional body of `POST …/webhooks/{id}/test`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SendTestRequest {
    /// Text carried in `data.message`, at most 4096 characters (default: a fixed
    /// greeting).
    #[schema(max_length = 4096, example = "Hello from the API")]
    pub message: Option<String>,
}

/// A test event was queued for the subscription.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TestEventQueued {
    /// The event id (`webhook-id` of the delivery).
    #[schema(example = "msg_01MCC5RM00X7Q2W9KD3FTB8N4P")]
    pub event_id: String,
    /// Always `webhook.test`.
    #[serde(rename = "type")]
    pub event_type: EventTypeName,
}

/// A delivery was queued again: a new attempt series of the same event.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResentDelivery {
    /// The new delivery; its attempts appear under it in the deliveries list.
    #[schema(example = "dlv_43")]
    pub delivery_id: String,
    /// The delivery that was resent.
    #[schema(example = "dlv_42")]
    pub resent_from: String,
}

/// The body of `POST …/recover`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RecoverRequest {
    /// Resend deliveries that failed for good at or after this time (RFC 3339; a time
    /// in the future recovers nothing).
    #[schema(example = "2026-11-22T00:00:00Z", format = DateTime)]
    pub since: String,
}

/// What an erasure did.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ErasedPayloads {
    /// Events whose stored payload this call erased (0 when there was nothing left to
    /// erase: a repeat, or a subject without events).
    #[schema(example = 3, minimum = 0)]
    pub erased: u64,
    /// Unfinished deliveries of those events this call cancelled (state `cancelled`).
    #[schema(example = 1, minimum = 0)]
    pub cancelled: u64,
}

/// What a recover queued.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecoverResult {
    /// How many failed deliveries were queued again (at most 1000 per call; call again
    /// until it returns 0 to recover more).
    #[schema(example = 3, minimum = 0, maximum = 1000)]
    pub queued: u64,
}

/// A magic link to a workspace's Settings screen.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PortalLink {
    /// The portal session's id, to revoke it.
    #[schema(example = "ps_0123456789abcdef")]
    pub id: String,
    /// Open once, before `expiresAt`.
    #[schema(example = "https://webhooks.example.com/settings/login?link=pwl_…")]
    pub url: String,
    /// When the link stops working if unused (5 minutes by default).
    #[schema(format = DateTime)]
    pub expires_at: String,
}

/// An operator endpoint (every response but creation's; never the secret): a workspace's
/// own endpoint that receives the workspace's operational notices (`endpoint.failing`,
/// `endpoint.paused`, …; see `docs/events.md`), signed with its own secret.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OperatorEndpoint {
    /// Endpoint identifier (the same form as a subscription's).
    #[schema(example = "wh_5f0c6a1e9b2d4c7a8e3f1b0d2c4a6e8f")]
    pub id: String,
    /// Label given at creation.
    pub name: String,
    /// Endpoint that receives the notices.
    #[schema(example = "https://ops.example.com/postwire-notices")]
    pub url: String,
    /// True while paused (after 50 failed deliveries in a row, or 72 hours of failures
    /// without a success); its notices are held meanwhile.
    pub disabled: bool,
    /// Why it is paused; null when not paused.
    #[schema(required = true)]
    pub disabled_reason: Option<String>,
    /// Failed deliveries in a row.
    pub consecutive_failures: u32,
    /// Start of the current run of failed attempts; null since the last success.
    #[schema(required = true, format = DateTime)]
    pub failing_since: Option<String>,
    /// Time of the last successful delivery.
    #[schema(required = true, format = DateTime)]
    pub last_success_at: Option<String>,
    /// Creation time (UTC, milliseconds).
    #[schema(format = DateTime, example = "2026-11-22T10:00:00.000Z")]
    pub created_at: String,
}

impl From<&SubscriptionRecord> for OperatorEndpoint {
    fn from(r: &SubscriptionRecord) -> Self {
        let s = &r.subscription;
        OperatorEndpoint {
            id: s.id.clone(),
            name: s.name.clone(),
            url: s.url.clone(),
            disabled: s.status.is_paused(),
            disabled_reason: match &s.status {
                SubscriptionStatus::Paused { reason } => Some(reason.clone()),
                SubscriptionStatus::Enabled => None,
            },
            consecutive_failures: s.consecutive_failures,
            failing_since: r.failing_since.map(|t| t.to_string()),
            last_success_at: s.last_success_at.map(|t| t.to_string()),
            created_at: s.created_at.to_string(),
        }
    }
}

/// The creation response of an operator endpoint: the endpoint and its signing secret,
/// shown this once.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreatedOperatorEndpoint {
    /// Endpoint identifier.
    pub id: String,
    /// Label given at creation.
    pub name: String,
    /// Endpoint that receives the notices.
    pub url: String,
    /// False: a new endpoint is enabled.
    pub disabled: bool,
    /// Null: a new endpoint is enabled.
    #[schema(required = true)]
    pub disabled_reason: Option<String>,
    /// 0.
    pub consecutive_failures: u32,
    /// Null.
    #[schema(required = true, format = DateTime)]
    pub failing_since: Option<String>,
    /// Null.
    #[schema(required = true, format = DateTime)]
    pub last_success_at: Option<String>,
    /// Creation time (UTC, milliseconds).
    #[schema(format = DateTime)]
    pub created_at: String,
    /// The endpoint's own signing secret (`whsec_…`), for the `v1` signatures of its
    /// notices. Returned only here; never again.
    #[schema(example = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")]
    pub secret: String,
}

impl CreatedOperatorEndpoint {
    /// The endpoint `e` with its new `secret`.
    pub fn new(e: OperatorEndpoint, secret: String) -> Self {
        CreatedOperatorEndpoint {
            id: e.id,
            name: e.name,
            url: e.url,
            disabled: e.disabled,
            disabled_reason: e.disabled_reason,
            consecutive_failures: e.consecutive_failures,
            failing_since: e.failing_since,
            last_success_at: e.last_success_at,
            created_at: e.created_at,
            secret,
        }
    }
}

/// The operator endpoints of a workspace, oldest first.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct OperatorEndpointList {
    /// The endpoints (never their secrets).
    #[schema(max_items = 10)]
    pub data: Vec<OperatorEndpoint>,
}

/// The body of `POST …/operator-webhooks`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateOperatorEndpointRequest {
    /// Label: 1 to 200 characters, not only white space, no control character.
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = "^[^\\x00-\\x1f\\x7f-\\x9f]*[^\\s\\x00-\\x1f\\x7f-\\x9f][^\\x00-\\x1f\\x7f-\\x9f]*$",
        example = "on-call"
    )]
    pub name: String,
    /// Public HTTPS endpoint that receives the signed notices; the rules of a
    /// subscription's `url` (at most 2048 bytes, no user name or password, not a private,
    /// loopback, link-local or other non-public address).
    #[schema(
        format = "uri",
        max_length = 2048,
        pattern = "^[Hh][Tt][Tt][Pp][Ss]://",
        example = "https://ops.example.com/postwire-notices"
    )]
    pub url: String,
}

/// A new signing secret.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RotatedSecret {
    /// The new secret (`whsec_…`). Returned only here; never again.
    pub secret: String,
    /// Until then each delivery also carries a signature made with the previous secret.
    #[schema(format = DateTime)]
    pub previous_secret_expires_at: String,
}

/// One public key of a workspace (`v1a` extension).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SigningPublicKey {
    /// The ed25519 public key, `whpk_` then the base64 of its 32 bytes: give it to a
    /// receiver (or the edge verifier, or a docs page) to verify `v1a` signatures. It
    /// cannot sign.
    #[schema(
        example = "whpk_u1PaYf2wAkbrTsGFOHc4qMtMgEoqEiVTQ/wukNNUqmE=",
        pattern = "^whpk_[A-Za-z0-9+/]{43}=$"
    )]
    pub public_key: String,
    /// When the key pair was made (UTC, milliseconds).
    #[schema(format = DateTime)]
    pub created_at: String,
    /// For the key a rotation replaced: when deliveries stop carrying its signature (24 h
    /// after the rotation). Null for the current key.
    #[schema(required = true, format = DateTime)]
    pub expires_at: Option<String>,
}

/// The public keys of a workspace's `v1a` signatures: the current one first, then,
/// during a rotation's 24 h window, the previous one.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SigningKeyList {
    /// The keys, current first.
    #[schema(min_items = 1, max_items = 2)]
    pub data: Vec<SigningPublicKey>,
    /// The id of the workspace's published key set (`getKeySet`): unguessable, and the
    /// same across rotations.
    #[schema(pattern = "^ks_[0-9a-f]{32}$", example = "ks_3f1c0a9e5b7d42e8a1c6f0b9d2e4a7c5")]
    pub key_set_id: String,
    /// The URL of the same keys as a JSON Web Key Set, which needs no token: give it to a
    /// receiver (the npm package, the edge verifier, `postwire verify --keys-url`) so that
    /// it fetches the keys, and the next one after a rotation, itself. Absolute when the
    /// server knows its public URL (`--public-url`), else the path below this API's host.
    #[schema(
        example = "https://webhooks.example.com/public/v1/key-sets/ks_3f1c0a9e5b7d42e8a1c6f0b9d2e4a7c5/jwks.json"
    )]
    pub key_set_url: String,
}

/// One public key in a key set: an OKP JSON Web Key (RFC 7517, RFC 8037) for ed25519.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct JsonWebKey {
    /// Always `OKP`.
    #[schema(example = "OKP")]
    pub kty: String,
    /// Always `Ed25519`.
    #[schema(example = "Ed25519")]
    pub crv: String,
    /// The 32-byte public key, base64url without padding.
    #[schema(
        pattern = "^[A-Za-z0-9_-]{43}$",
        example = "u1PaYf2wAkbrTsGFOHc4qMtMgEoqEiVTQ_wukNNUqmE"
    )]
    pub x: String,
    /// The key's RFC 7638 thumbprint: base64url (no padding) of the SHA-256 of
    /// `{"crv","kty","x"}`.
    #[schema(pattern = "^[A-Za-z0-9_-]{43}$")]
    pub kid: String,
    /// Always `sig`.
    #[serde(rename = "use")]
    #[schema(rename = "use", example = "sig")]
    pub use_: String,
    /// Always `EdDSA`.
    #[schema(example = "EdDSA")]
    pub alg: String,
    /// When the key was made (Unix seconds). A postwire member; generic JWK libraries
    /// ignore it.
    pub nbf: i64,
    /// Only on the key a rotation replaced: when it stops signing (Unix seconds). A
    /// postwire member.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exp: Option<i64>,
}

/// A workspace's `v1a` public keys as a JSON Web Key Set (RFC 7517), current first.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct JsonWebKeySet {
    /// The keys: the current one, then during a rotation's 24 h window the previous one.
    #[schema(min_items = 1, max_items = 2)]
    pub keys: Vec<JsonWebKey>,
}

/// A workspace's signing key pair was replaced (`v1a` extension).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RotatedSigningKey {
    /// The new public key (`whpk_…`); `v1a` signatures by its key pair start now.
    #[schema(
        example = "whpk_u1PaYf2wAkbrTsGFOHc4qMtMgEoqEiVTQ/wukNNUqmE=",
        pattern = "^whpk_[A-Za-z0-9+/]{43}=$"
    )]
    pub public_key: String,
    /// The public key it replaces, still listed and still signing until
    /// `previousKeyExpiresAt`.
    #[schema(pattern = "^whpk_[A-Za-z0-9+/]{43}=$")]
    pub previous_public_key: String,
    /// Until then every `v1a` delivery also carries a signature by the previous key.
    #[schema(format = DateTime)]
    pub previous_key_expires_at: String,
}

/// A workspace the token may use.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Workspace {
    /// Workspace identifier.
    pub id: String,
    /// Display name.
    pub name: String,
}

/// The workspaces the token may use.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WorkspaceList {
    /// The workspaces.
    pub data: Vec<Workspace>,
}

/// The subscriptions of a workspace, oldest first.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WebhookList {
    /// The subscriptions.
    pub data: Vec<WebhookSubscription>,
}

/// Where a delivery stands.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryStateName {
    /// Waiting for its first attempt or a retry.
    Pending,
    /// Held while the subscription is paused.
    Held,
    /// A `2xx` arrived within 10 seconds.
    Delivered,
    /// Every attempt failed.
    Failed,
    /// Held for more than 7 days; never sent.
    Expired,
    /// Cancelled before delivery because its event's payload was erased; never sent again.
    Cancelled,
}

/// One attempt of a delivery.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Attempt {
    /// 1 for the first attempt, up to 9.
    pub number: u32,
    /// When it was sent (its `webhook-timestamp`).
    #[schema(format = DateTime)]
    pub started_at: String,
    /// How long until the outcome, in milliseconds.
    pub duration_ms: u64,
    /// True for a `2xx` response.
    pub success: bool,
    /// The receiver's HTTP status, when it answered.
    #[schema(required = true)]
    pub response_status: Option<u16>,
    /// The start of the receiver's response body (at most 4 KiB), when it answered.
    #[schema(required = true)]
    pub response_body: Option<String>,
    /// Why there was no usable answer: `timeout`, `connection`, `dns`,
    /// `blocked_address`, `invalid_url`, `protocol`, or `signing` (the hardware module
    /// keeping the workspace's `v1a` key did not sign; nothing was sent).
    #[schema(required = true)]
    pub error: Option<String>,
}

/// One event sent to one subscription, with its attempts (newest first).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Delivery {
    /// Delivery identifier.
    #[schema(example = "dlv_42")]
    pub id: String,
    /// The subscription.
    pub subscription_id: String,
    /// The event (`webhook-id`).
    pub event_id: String,
    /// The event's type.
    #[schema(value_type = EventTypeName)]
    pub event_type: String,
    /// Where it stands.
    #[schema(value_type = DeliveryStateName)]
    pub state: String,
    /// When the next attempt is due (pending only).
    #[schema(required = true, format = DateTime)]
    pub next_attempt_at: Option<String>,
    /// When the event was accepted.
    #[schema(format = DateTime)]
    pub created_at: String,
    /// When it reached its final state.
    #[schema(required = true, format = DateTime)]
    pub finished_at: Option<String>,
    /// Its attempts, newest first.
    pub attempts: Vec<Attempt>,
    /// True once the event's payload was erased (`DELETE …/payloads`): its body is gone,
    /// and a resend is refused with `payload_erased`.
    pub payload_erased: bool,
}

impl From<&DeliveryRecord> for Delivery {
    fn from(d: &DeliveryRecord) -> Self {
        Delivery {
            id: d.id.to_string(),
            subscription_id: d.subscription_id.clone(),
            event_id: d.event_id.clone(),
            event_type: d.event_type.as_str().to_owned(),
            state: d.state.as_str().to_owned(),
            next_attempt_at: d.next_attempt_at.map(|t| t.to_string()),
            created_at: d.created_at.to_string(),
            finished_at: d.finished_at.map(|t| t.to_string()),
            attempts: d
                .attempts
                .iter()
                .map(|a| {
                    let (response_status, response_body, error) = match &a.outcome {
                        AttemptOutcome::Response { status, body_prefix } => {
                            (Some(*status), Some(body_prefix.clone()), None)
                        }
                        AttemptOutcome::Error { error } => (None, None, Some(error.as_str().to_owned())),
                    };
                    Attempt {
                        number: a.number,
                        started_at: a.started_at.to_string(),
                        duration_ms: a.duration_ms,
                        success: a.outcome.is_success(),
                        response_status,
                        response_body,
                        error,
                    }
                })
                .collect(),
            payload_erased: d.payload_erased,
        }
    }
}

/// A page of deliveries, newest first.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryList {
    /// The deliveries.
    pub data: Vec<Delivery>,
    /// Pass as `cursor` to get the next (older) page; null on the last page.
    #[schema(required = true, example = "c_42")]
    pub next_cursor: Option<String>,
}

/// The type of what an operator endpoint receives: one of the operational notices
/// ([`postwire_core::OperationalEventType::ALL`], see `docs/events.md`), or `webhook.test`
/// (`POST …/operator-webhooks/{endpointId}/test`). Its schema is built from the catalogue,
/// so a new notice type shows here without an edit; the value is serialized as the wire
/// name (a `String` in [`OperatorDelivery`]).
#[derive(Debug, Clone, Copy)]
pub struct OperatorDeliveryTypeName;

impl OperatorDeliveryTypeName {
    /// Every type an operator endpoint's delivery can have: the notices in catalogue
    /// order, then `webhook.test`.
    pub fn names() -> Vec<&'static str> {
        postwire_core::OperationalEventType::ALL
            .iter()
            .map(|t| t.as_str())
            .chain([postwire_core::EventType::WebhookTest.as_str()])
            .collect()
    }
}

impl utoipa::PartialSchema for OperatorDeliveryTypeName {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::schema::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .enum_values(Some(Self::names()))
            .description(Some(
                "An operational notice's type (see `docs/events.md`), or `webhook.test` for a test notice.",
            ))
            .into()
    }
}

impl ToSchema for OperatorDeliveryTypeName {}

/// One notice (or test notice) sent to one operator endpoint, with its attempts (newest
/// first): the fields of a subscription's [`Delivery`], with the operational types.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OperatorDelivery {
    /// Delivery identifier.
    #[schema(example = "dlv_42")]
    pub id: String,
    /// The operator endpoint (`subscriptionId`, as in a subscription's deliveries: the
    /// two kinds share one id space).
    pub subscription_id: String,
    /// The notice (`webhook-id`); the same id as its entry in `GET …/notifications`.
    pub event_id: String,
    /// The notice's type.
    #[schema(value_type = OperatorDeliveryTypeName)]
    pub event_type: String,
    /// Where it stands.
    #[schema(value_type = DeliveryStateName)]
    pub state: String,
    /// When the next attempt is due (pending only).
    #[schema(required = true, format = DateTime)]
    pub next_attempt_at: Option<String>,
    /// When the notice was queued.
    #[schema(format = DateTime)]
    pub created_at: String,
    /// When it reached its final state.
    #[schema(required = true, format = DateTime)]
    pub finished_at: Option<String>,
    /// Its attempts, newest first.
    pub attempts: Vec<Attempt>,
    /// True once the payload was erased (as in a subscription's deliveries).
    pub payload_erased: bool,
}

impl From<Delivery> for OperatorDelivery {
    fn from(d: Delivery) -> Self {
        OperatorDelivery {
            id: d.id,
            subscription_id: d.subscription_id,
            event_id: d.event_id,
            event_type: d.event_type,
            state: d.state,
            next_attempt_at: d.next_attempt_at,
            created_at: d.created_at,
            finished_at: d.finished_at,
            attempts: d.attempts,
            payload_erased: d.payload_erased,
        }
    }
}

/// A page of an operator endpoint's deliveries, newest first.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OperatorDeliveryList {
    /// The deliveries.
    pub data: Vec<OperatorDelivery>,
    /// Pass as `cursor` to get the next (older) page; null on the last page.
    #[schema(required = true, example = "c_42")]
    pub next_cursor: Option<String>,
}

/// The body of every delivery: the event envelope.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventEnvelope {
    /// Event identifier; equals `webhook-id`.
    pub id: String,
    /// The event type.
    #[serde(rename = "type")]
    pub event_type: EventTypeName,
    /// Event creation time.
    #[schema(format = DateTime)]
    pub created_at: String,
    /// Workspace the event belongs to.
    pub workspace_id: String,
    /// Depends on the type: `post` (+ `error` on `post.failed`, + `deletedBy` on
    /// `post.deleted`), `integration` (+ `reason`), or `message`.
    #[schema(value_type = Object)]
    pub data: serde_json::Value,
}

/// The query of `GET …/posts/lookup`: a post by its `postId`, or by the client's
/// `externalId`, never both, and optionally `since` and `limit`. Documented as one
/// `form`-style, exploded query parameter, so the either-or rule is in the schema; on
/// the wire these are plain `?postId=…&since=…` parameters. An empty value is refused
/// (400), not taken as absent. This type only describes the query; the handler reads
/// it with [`crate::validation::QueryParams`].
// The text above is also the schema's description in docs/openapi.json: it stays as it
// is, and rustdoc may not resolve the (private) link.
#[allow(rustdoc::private_intra_doc_links)]
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum PostLookupQuery {
    /// By post id.
    ByPostId(LookupByPostId),
    /// By the client's external id.
    ByExternalId(LookupByExternalId),
}

/// Look a post up by its id.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LookupByPostId {
    /// The post id: 1 to 200 characters, no control character.
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = "^[^\\x00-\\x1f\\x7f-\\x9f]+$",
        example = "post_1"
    )]
    pub post_id: String,
    /// RFC 3339 time; only events created at or after it.
    #[serde(default)]
    #[schema(format = DateTime, example = "2026-11-22T10:00:00Z")]
    pub since: String,
    /// Most events returned, 1 to 100 (default 100).
    #[serde(default)]
    #[schema(minimum = 1, maximum = 100, example = 20)]
    pub limit: u32,
}

/// Look posts up by the client-supplied reference they were published with.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LookupByExternalId {
    /// The client's own reference of the post (non-empty).
    #[schema(min_length = 1, example = "launch")]
    pub external_id: String,
    /// RFC 3339 time; only events created at or after it.
    #[serde(default)]
    #[schema(format = DateTime, example = "2026-11-22T10:00:00Z")]
    pub since: String,
    /// Most events returned, 1 to 100 (default 100).
    #[serde(default)]
    #[schema(minimum = 1, maximum = 100, example = 20)]
    pub limit: u32,
}

/// The events about a post, newest first, to reconcile events a receiver missed.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PostLookup {
    /// The post ids looked at (one for `postId`; those carrying `externalId` otherwise).
    pub post_ids: Vec<String>,
    /// The events, newest first, each exactly as delivered.
    #[schema(value_type = Vec<EventEnvelope>)]
    pub data: Vec<serde_json::Value>,
    /// True when older events exist beyond `limit`.
    pub has_more: bool,
}
