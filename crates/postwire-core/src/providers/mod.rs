//! Other providers' webhooks, verified the way each provider signs them (feature
//! `providers`).
//!
//! Most senders do not speak Standard Webhooks: Stripe, GitHub, Shopify, Slack, Twilio,
//! Paddle, Linear, SendGrid and Discord each sign in their own way. This module checks
//! each one's signature in constant time, applies its timestamp tolerance where the scheme
//! has a timestamp (both ways), and names the delivery's id (for de-duplication) and event
//! type (for routing), with the crate's [`Error`] and its stable codes: the same code as a
//! Standard Webhooks delivery wherever the meaning is the same. A [`GenericHmac`] recipe
//! covers the long tail.
//!
//! One call per delivery: [`ProviderVerifier::verify`] takes the request's headers (any
//! [`HeaderSource`], names matched case-insensitively), the raw body bytes and the current
//! time, and answers a [`VerifiedDelivery`]. In order, cheapest first: headers present and
//! well-formed, timestamp within tolerance, signature, then the few body fields the id and
//! type come from (read without building the whole document). Limiting the body size is
//! the caller's job.
//!
//! Each check is at least as strict as the provider's own SDK (the known-answer vectors
//! in `tests/vectors/providers` hold the SDKs' verdicts next to these), and stricter where
//! an SDK accepts what a careful verifier should not: `docs/providers.md` lists each case.
//!
//! ```
//! use postwire_core::UnixTime;
//! use postwire_core::providers::{Provider, ProviderVerifier};
//! # use hmac::{Hmac, Mac};
//! let body = br#"{"id":"evt_1","type":"invoice.paid"}"#;
//! # let mut mac = Hmac::<sha2::Sha256>::new_from_slice(b"whsec_test").unwrap();
//! # mac.update(b"1700000000."); mac.update(body);
//! # let hex: String = mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect();
//! let header = format!("t=1700000000,v1={hex}");
//! let verifier = ProviderVerifier::new(Provider::Stripe, ["whsec_test"])?;
//! let delivery = verifier.verify(&[("Stripe-Signature", header.as_str())], body, UnixTime::from_secs(1_700_000_030))?;
//! assert_eq!(delivery.id, "evt_1");
//! assert_eq!(delivery.event_type.as_deref(), Some("invoice.paid"));
//! let late = verifier.verify(&[("stripe-signature", header.as_str())], body, UnixTime::from_secs(1_700_000_301));
//! assert_eq!(late.unwrap_err().code().as_str(), "timestamp_too_old");
//! # Ok::<(), postwire_core::Error>(())
//! ```

mod discord;
mod generic;
mod github;
mod linear;
mod paddle;
mod sendgrid;
mod shared;
mod shopify;
mod slack;
mod standard;
mod stripe;
mod twilio;

pub use generic::{GenericHmac, SignatureEncoding, SignedContent};
pub use shared::HmacAlgorithm;
pub use twilio::TwilioConfig;

use crate::headers::HeaderSource;
use crate::{Error, UnixTime};
use shared::{Headers, HmacKeys};

/// A provider and how it signs: the presets, Twilio with the public URL it calls, or a
/// generic HMAC recipe.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Provider {
    /// Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature`; `v1`
    /// secrets `whsec_…` and `v1a` public keys `whpk_…`), checked by [`crate::Verifier`].
    StandardWebhooks,
    /// Stripe: `Stripe-Signature: t=…,v1=…` (one `v1` per secret during a rotation),
    /// HMAC-SHA256 hex over `{t}.{body}`; the secret is the `whsec_…` text itself.
    Stripe,
    /// GitHub: `X-Hub-Signature-256: sha256=…`, HMAC-SHA256 hex over the body.
    GitHub,
    /// Shopify: `X-Shopify-Hmac-Sha256` (or `shopify-hmac-sha256` for event
    /// subscriptions), HMAC-SHA256 base64 over the body, with the app's client secret.
    Shopify,
    /// Slack: `X-Slack-Signature: v0=…`, HMAC-SHA256 hex over `v0:{timestamp}:{body}`.
    Slack,
    /// Twilio: `X-Twilio-Signature`, HMAC-SHA1 (or SHA-256) base64 over the public URL
    /// and the sorted form parameters, with the auth token.
    Twilio(TwilioConfig),
    /// Paddle Billing: `Paddle-Signature: ts=…;h1=…`, HMAC-SHA256 hex over `{ts}:{body}`.
    Paddle,
    /// Linear: `Linear-Signature`, HMAC-SHA256 hex over the body, whose
    /// `webhookTimestamp` (milliseconds) is the timestamp.
    Linear,
    /// SendGrid's Event Webhook: ECDSA P-256 (SHA-256, DER, base64) over
    /// `{timestamp}{body}`; the key is the base64 DER public key SendGrid shows.
    SendGrid,
    /// Discord interactions: ed25519 (hex) over `{timestamp}{body}`; the key is the
    /// application's hex public key.
    Discord,
    /// A provider that signs with an HMAC, described field by field.
    Generic(GenericHmac),
}

impl Provider {
    /// The presets that need no settings, by their [`name`](Self::name).
    pub const PRESETS: [Provider; 9] = [
        Provider::StandardWebhooks,
        Provider::Stripe,
        Provider::GitHub,
        Provider::Shopify,
        Provider::Slack,
        Provider::Paddle,
        Provider::Linear,
        Provider::SendGrid,
        Provider::Discord,
    ];

    /// The provider's stable name: `standard-webhooks`, `stripe`, `github`, `shopify`,
    /// `slack`, `twilio`, `paddle`, `linear`, `sendgrid`, `discord` or `generic`.
    pub fn name(&self) -> &'static str {
        match self {
            Provider::StandardWebhooks => "standard-webhooks",
            Provider::Stripe => "stripe",
            Provider::GitHub => "github",
            Provider::Shopify => "shopify",
            Provider::Slack => "slack",
            Provider::Twilio(_) => "twilio",
            Provider::Paddle => "paddle",
            Provider::Linear => "linear",
            Provider::SendGrid => "sendgrid",
            Provider::Discord => "discord",
            Provider::Generic(_) => "generic",
        }
    }

    /// A preset by its [`name`](Self::name); `None` for an unknown name and for `twilio`
    /// and `generic`, which need settings.
    ///
    /// ```
    /// use postwire_core::providers::Provider;
    /// assert_eq!(Provider::preset("stripe"), Some(Provider::Stripe));
    /// assert_eq!(Provider::preset("twilio"), None);
    /// ```
    pub fn preset(name: &str) -> Option<Provider> {
        Self::PRESETS.into_iter().find(|p| p.name() == name)
    }

    /// The tolerance applied to the provider's signed timestamp, both ways, unless
    /// [`ProviderVerifier::with_tolerance_secs`] sets another; `None` for schemes that sign
    /// no timestamp (GitHub, Shopify, Twilio, a recipe signing the body alone), whose
    /// replay protection is the de-duplication by id.
    pub fn default_tolerance_secs(&self) -> Option<u64> {
        match self {
            Provider::StandardWebhooks => Some(crate::DEFAULT_TOLERANCE_SECS),
            Provider::Stripe => Some(stripe::TOLERANCE_SECS),
            Provider::Slack => Some(slack::TOLERANCE_SECS),
            Provider::Paddle => Some(paddle::TOLERANCE_SECS),
            Provider::Linear => Some(linear::TOLERANCE_SECS),
            Provider::SendGrid => Some(sendgrid::TOLERANCE_SECS),
            Provider::Discord => Some(discord::TOLERANCE_SECS),
            Provider::Generic(g) => g.tolerance_secs(),
            Provider::GitHub | Provider::Shopify | Provider::Twilio(_) => None,
        }
    }
}

/// What a verified delivery is: its id for de-duplication, its event type for routing,
/// and its signed timestamp where the scheme has one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedDelivery {
    /// The delivery's id, 1 to 256 visible ASCII characters (usable as a `webhook-id`):
    /// the provider's own where it sends one, else derived from what is signed (see
    /// `docs/providers.md`, per provider).
    pub id: String,
    /// The event type, where the provider names one (1 to 256 visible ASCII characters).
    pub event_type: Option<String>,
    /// The signed timestamp, where the scheme has one.
    pub timestamp: Option<UnixTime>,
}

/// The keys of one provider, parsed once.
#[derive(Clone)]
enum Keys {
    Hmac(HmacKeys),
    Standard(crate::Verifier),
    Ed25519(Vec<ed25519_dalek::VerifyingKey>),
    P256(Vec<p256::ecdsa::VerifyingKey>),
}

/// Verifies one provider's deliveries with one or more keys (several during a rotation).
///
/// Keys are given as text, as each provider shows them: the signing secret (used as the
/// HMAC key byte for byte: Stripe's `whsec_…`, GitHub's, Shopify's client secret, Slack's
/// signing secret, Twilio's auth token, Paddle's `pdl_ntfset_…`, Linear's); for
/// Standard Webhooks `whsec_…` secrets and `whpk_…` public keys; for SendGrid the base64
/// DER public key; for Discord the hex public key.
#[derive(Clone)]
pub struct ProviderVerifier {
    provider: Provider,
    keys: Keys,
    tolerance_secs: u64,
}

impl std::fmt::Debug for ProviderVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderVerifier")
            .field("provider", &self.provider.name())
            .field("tolerance_secs", &self.tolerance_secs)
            .finish_non_exhaustive()
    }
}

impl ProviderVerifier {
    /// A verifier for `provider` with `keys` (at least one), at the provider's default
    /// tolerance. A key that does not parse is an `invalid_secret` error (for a public
    /// key, `invalid_public_key`); a recipe or Twilio URL that cannot work is
    /// `invalid_provider_settings`.
    pub fn new<S: AsRef<str>>(provider: Provider, keys: impl IntoIterator<Item = S>) -> Result<Self, Error> {
        let keys = match &provider {
            Provider::StandardWebhooks => Keys::Standard(crate::Verifier::parse_keys(keys)?),
            Provider::SendGrid => Keys::P256(sendgrid::parse_keys(keys)?),
            Provider::Discord => Keys::Ed25519(discord::parse_keys(keys)?),
            Provider::Twilio(config) => {
                config.check()?;
                Keys::Hmac(HmacKeys::parse(keys)?)
            }
            Provider::Generic(_) => Keys::Hmac(HmacKeys::parse(keys)?),
            _ => Keys::Hmac(HmacKeys::parse(keys)?),
        };
        let provider = match provider {
            Provider::Generic(recipe) => Provider::Generic(recipe.checked()?),
            other => other,
        };
        let tolerance_secs = provider.default_tolerance_secs().unwrap_or(0);
        Ok(ProviderVerifier {
            provider,
            keys,
            tolerance_secs,
        })
    }

    /// Sets the timestamp tolerance in seconds, both ways (ignored by schemes without a
    /// timestamp).
    pub fn with_tolerance_secs(mut self, secs: u64) -> Self {
        self.tolerance_secs = secs;
        if let Keys::Standard(v) = self.keys {
            self.keys = Keys::Standard(v.with_tolerance_secs(secs));
        }
        self
    }

    /// The provider.
    pub fn provider(&self) -> &Provider {
        &self.provider
    }

    /// The tolerance in force, `None` for a scheme without a timestamp.
    pub fn tolerance_secs(&self) -> Option<u64> {
        self.provider.default_tolerance_secs().map(|_| self.tolerance_secs)
    }

    /// Verifies one delivery: `headers` as received, `body` the raw bytes as received,
    /// `now` from the caller's clock.
    pub fn verify<H: HeaderSource + ?Sized>(
        &self,
        headers: &H,
        body: &[u8],
        now: UnixTime,
    ) -> Result<VerifiedDelivery, Error> {
        let h = Headers {
            provider: self.provider.name(),
            source: headers,
        };
        let tol = self.tolerance_secs;
        match (&self.provider, &self.keys) {
            (Provider::StandardWebhooks, Keys::Standard(v)) => standard::verify(v, headers, body, now),
            (Provider::Stripe, Keys::Hmac(k)) => stripe::verify(k, &h, body, now, tol),
            (Provider::GitHub, Keys::Hmac(k)) => github::verify(k, &h, body),
            (Provider::Shopify, Keys::Hmac(k)) => shopify::verify(k, &h, body),
            (Provider::Slack, Keys::Hmac(k)) => slack::verify(k, &h, body, now, tol),
            (Provider::Twilio(c), Keys::Hmac(k)) => twilio::verify(c, k, &h, body),
            (Provider::Paddle, Keys::Hmac(k)) => paddle::verify(k, &h, body, now, tol),
            (Provider::Linear, Keys::Hmac(k)) => linear::verify(k, &h, body, now, tol),
            (Provider::SendGrid, Keys::P256(k)) => sendgrid::verify(k, &h, body, now, tol),
            (Provider::Discord, Keys::Ed25519(k)) => discord::verify(k, &h, body, now, tol),
            (Provider::Generic(g), Keys::Hmac(k)) => g.verify(k, &h, body, now, tol),
            // `new` pairs every provider with its kind of keys.
            _ => Err(Error::InvalidSecret {
                reason: "these keys are not of this provider's kind",
            }),
        }
    }
}
