//! The sender's settings, with the spec's values as defaults.

use std::sync::Arc;
use std::time::Duration;

use crate::notify::{LogNotifier, Notifier};
use crate::observe::DeliveryObserver;
use crate::schedule::Jitter;
use crate::secret_box::SecretCipher;
use crate::ssrf::AddressPolicy;

/// How long a receiver has to answer with a `2xx` (the spec's 10 seconds).
pub const DEFAULT_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);
/// How much of a response body is read and kept.
pub const DEFAULT_MAX_RESPONSE_BODY: usize = 4 * 1024;
/// How long held events stay deliverable (the spec's 7 days).
pub const HOLD_LIMIT_MS: i64 = 7 * 24 * 3_600_000;
/// How long both the old and the new secret sign after a rotation (the spec's 24 hours).
pub const DUAL_SIGNATURE_WINDOW_MS: i64 = 24 * 3_600_000;

/// Settings. `SenderConfig::default()` follows the spec; tests shorten the timeout and
/// switch off jitter.
#[derive(Clone)]
pub struct SenderConfig {
    /// Time for a `2xx` to arrive; later is a timeout (default 10 s).
    pub attempt_timeout: Duration,
    /// Time to connect, within the attempt timeout (default 5 s).
    pub connect_timeout: Duration,
    /// Requests in flight at once, over all subscriptions (default 256). The dispatcher
    /// claims up to twice as many deliveries, so the next request starts as soon as one
    /// ends.
    pub max_in_flight: usize,
    /// Requests in flight at once to one subscription (default 32), across every process
    /// sharing a PostgreSQL store; claimed ahead the same way (twice as many claimed,
    /// while one process alone holds the subscription's leases).
    pub max_in_flight_per_subscription: usize,
    /// Most subscriptions per workspace: a creation past it fails with
    /// [`SenderError::PlanLimit`](crate::SenderError), counted in the creation's own
    /// transaction, so concurrent creations (in any process) never overshoot (default:
    /// none; `postwire serve` sets 100).
    pub max_subscriptions_per_workspace: Option<u64>,
    /// Jitter on retry delays (default ±10 %).
    pub jitter: Jitter,
    /// Seed of the jitter's random source; `None` seeds from the OS.
    pub jitter_seed: Option<u64>,
    /// Which addresses deliveries may go to. See [`AddressPolicy::allow_insecure_local`]
    /// (dangerous, off by default).
    pub address_policy: AddressPolicy,
    /// The `user-agent` header.
    pub user_agent: String,
    /// Bytes of the response body kept in the delivery record (default 4 KiB).
    pub max_response_body: usize,
    /// How long a claimed delivery stays leased; after a crash it is claimed again once
    /// the lease ends (default 2 min, longer than any attempt).
    pub lease: Duration,
    /// Longest real-time sleep of an idle dispatcher before it looks at the store again.
    pub idle_poll: Duration,
    /// Who is told when a subscription is paused by failures (always also recorded in
    /// the store). Default: [`LogNotifier`].
    pub notifier: Arc<dyn Notifier>,
    /// Seals signing secrets at rest, and the stored responses that carry one (see
    /// [`crate::secret_box`]); `None` (the default) stores them plain. Handed to the
    /// store by [`crate::Sender::open_sqlite`].
    pub secret_cipher: Option<Arc<SecretCipher>>,
    /// Told about every attempt and claim, for metrics (see [`crate::observe`]).
    /// Default: none.
    pub observer: Option<Arc<dyn DeliveryObserver>>,
    /// Where new `v1a` signing keys are made, and what signs with the keys kept outside
    /// this process ([`crate::signer`]). Default: [`InProcessKeys`](crate::signer::InProcessKeys);
    /// [`Pkcs11Keys`](crate::pkcs11::Pkcs11Keys) for a hardware module.
    pub key_custody: Arc<dyn crate::signer::KeyCustody>,
}

impl Default for SenderConfig {
    fn default() -> Self {
        SenderConfig {
            attempt_timeout: DEFAULT_ATTEMPT_TIMEOUT,
            connect_timeout: Duration::from_secs(5),
            max_in_flight: 256,
            max_in_flight_per_subscription: 32,
            max_subscriptions_per_workspace: None,
            jitter: Jitter::default(),
            jitter_seed: None,
            address_policy: AddressPolicy::default(),
            user_agent: concat!("postwire-sender/", env!("CARGO_PKG_VERSION")).to_owned(),
            max_response_body: DEFAULT_MAX_RESPONSE_BODY,
            lease: Duration::from_secs(120),
            idle_poll: Duration::from_secs(1),
            notifier: Arc::new(LogNotifier),
            secret_cipher: None,
            observer: None,
            key_custody: crate::signer::default_custody(),
        }
    }
}

impl SenderConfig {
    /// DANGEROUS: allow `http` URLs and loopback receivers, for local development and
    /// tests only.
    pub fn dangerously_allow_insecure_local_urls(mut self) -> Self {
        self.address_policy.allow_insecure_local = true;
        self
    }
}

impl std::fmt::Debug for SenderConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SenderConfig")
            .field("attempt_timeout", &self.attempt_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("max_in_flight", &self.max_in_flight)
            .field("max_in_flight_per_subscription", &self.max_in_flight_per_subscription)
            .field("max_subscriptions_per_workspace", &self.max_subscriptions_per_workspace)
            .field("jitter", &self.jitter)
            .field("address_policy", &self.address_policy)
            .field("user_agent", &self.user_agent)
            .field("max_response_body", &self.max_response_body)
            .field("lease", &self.lease)
            .field("idle_poll", &self.idle_poll)
            .field("secret_cipher", &self.secret_cipher)
            .field("key_custody", &self.key_custody)
            .finish_non_exhaustive()
    }
}
