//! The one error type of postwire-core, and its stable string codes.
//!
//! Every fallible entry point returns [`Error`]. Each variant maps to an [`ErrorCode`]
//! whose string form (`missing_header`, `invalid_signature`, ...) is part of the public
//! contract: the npm package, the Worker and the HTTP API report the same codes. The
//! messages are written for the person fixing the integration, and never contain key
//! material, signatures or body bytes.

use std::fmt;

/// A stable, machine-readable error code. Its [`as_str`](ErrorCode::as_str) form never
/// changes between releases; new codes may be added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// A required `webhook-*` header is absent.
    MissingHeader,
    /// A `webhook-*` header is present but malformed (not ASCII, too long, not a number...).
    InvalidHeader,
    /// `webhook-timestamp` is further in the past than the tolerance allows.
    TimestampTooOld,
    /// `webhook-timestamp` is further in the future than the tolerance allows.
    TimestampTooNew,
    /// No signature in `webhook-signature` matches any of the secrets.
    InvalidSignature,
    /// A signing secret could not be parsed or generated.
    InvalidSecret,
    /// The body is not a valid event envelope (bad JSON, wrong shape, rule broken).
    InvalidPayload,
    /// A `whpk_` public key (or a key of the wrong kind where one was expected) could not
    /// be parsed: `v1a`, the opt-in asymmetric extension.
    InvalidPublicKey,
    /// A published key set (a JSON Web Key Set of `v1a` public keys) could not be used:
    /// not JSON, too large, no usable Ed25519 key, a malformed one.
    InvalidKeySet,
    /// A published key set could not be fetched: a network error, a timeout, an HTTP error
    /// status, a redirect to another host. A receiver keeps the keys it had.
    KeySetUnavailable,
    /// A provider's settings cannot work (feature `providers`): a generic HMAC recipe
    /// without a signature header, a Twilio public URL that is not an absolute URL.
    InvalidProviderSettings,
}

impl ErrorCode {
    /// Every code, for documentation and exhaustive tests.
    pub const ALL: [ErrorCode; 11] = [
        ErrorCode::MissingHeader,
        ErrorCode::InvalidHeader,
        ErrorCode::TimestampTooOld,
        ErrorCode::TimestampTooNew,
        ErrorCode::InvalidSignature,
        ErrorCode::InvalidSecret,
        ErrorCode::InvalidPayload,
        ErrorCode::InvalidPublicKey,
        ErrorCode::InvalidKeySet,
        ErrorCode::KeySetUnavailable,
        ErrorCode::InvalidProviderSettings,
    ];

    /// The stable string form, e.g. `"invalid_signature"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorCode::MissingHeader => "missing_header",
            ErrorCode::InvalidHeader => "invalid_header",
            ErrorCode::TimestampTooOld => "timestamp_too_old",
            ErrorCode::TimestampTooNew => "timestamp_too_new",
            ErrorCode::InvalidSignature => "invalid_signature",
            ErrorCode::InvalidSecret => "invalid_secret",
            ErrorCode::InvalidPayload => "invalid_payload",
            ErrorCode::InvalidPublicKey => "invalid_public_key",
            ErrorCode::InvalidKeySet => "invalid_key_set",
            ErrorCode::KeySetUnavailable => "key_set_unavailable",
            ErrorCode::InvalidProviderSettings => "invalid_provider_settings",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Everything that can go wrong when parsing secrets, signing, verifying or parsing events.
///
/// ```
/// use postwire_core::{Error, ErrorCode};
/// let err = Error::MissingHeader { name: "webhook-id" };
/// assert_eq!(err.code(), ErrorCode::MissingHeader);
/// assert_eq!(err.code().as_str(), "missing_header");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A required header is absent.
    #[error(
        "missing `{name}` header: a Standard Webhooks delivery carries webhook-id, \
         webhook-timestamp and webhook-signature; pass the request's headers unchanged"
    )]
    MissingHeader {
        /// The lower-case header name.
        name: &'static str,
    },
    /// A header is present but malformed.
    #[error("invalid `{name}` header: {reason}")]
    InvalidHeader {
        /// The lower-case header name.
        name: &'static str,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The timestamp is older than the tolerance.
    #[error(
        "webhook-timestamp is {age_secs} s old, beyond the {tolerance_secs} s tolerance: \
         the delivery may be a replay, or this machine's clock is ahead"
    )]
    TimestampTooOld {
        /// How far in the past the timestamp is, in seconds.
        age_secs: u64,
        /// The tolerance in force, in seconds.
        tolerance_secs: u64,
    },
    /// The timestamp is further in the future than the tolerance.
    #[error(
        "webhook-timestamp is {ahead_secs} s in the future, beyond the {tolerance_secs} s \
         tolerance: this machine's clock may be behind"
    )]
    TimestampTooNew {
        /// How far in the future the timestamp is, in seconds.
        ahead_secs: u64,
        /// The tolerance in force, in seconds.
        tolerance_secs: u64,
    },
    /// No signature matched.
    #[error(
        "no signature matches{detail}: check that the secret is this endpoint's, and sign or \
         verify the raw body bytes exactly as received, not JSON that was parsed and \
         re-serialized"
    )]
    InvalidSignature {
        /// Extra context, e.g. that the header held no `v1` signature at all.
        detail: SignatureDetail,
    },
    /// A secret could not be parsed or generated.
    #[error("invalid signing secret: {reason}")]
    InvalidSecret {
        /// What is wrong with it (never the secret itself).
        reason: &'static str,
    },
    /// A `whpk_` public key could not be parsed, or a `whsk_` signing key was given where
    /// only a verifying key belongs.
    #[error("invalid public key: {reason}")]
    InvalidPublicKey {
        /// What is wrong with it (never the key itself).
        reason: &'static str,
    },
    /// The body is not a valid event envelope.
    #[error("invalid event payload: {reason}")]
    InvalidPayload {
        /// What is wrong with it.
        reason: String,
    },
    /// A published key set could not be used (see `key_set`, feature `ed25519`).
    #[error("invalid key set: {reason}")]
    InvalidKeySet {
        /// What is wrong with it (never the document's bytes).
        reason: &'static str,
    },
    /// A published key set could not be fetched (by a receiver that fetches one).
    #[error("key set unavailable: {reason}")]
    KeySetUnavailable {
        /// What failed: the HTTP status, a timeout, a refused redirect (never a body).
        reason: String,
    },
    /// A header another provider's scheme requires is absent (feature `providers`; code
    /// `missing_header`).
    #[cfg(feature = "providers")]
    #[error("missing `{name}` header: a {provider} delivery carries it; pass the request's headers unchanged")]
    ProviderMissingHeader {
        /// The provider, e.g. `stripe`.
        provider: &'static str,
        /// The lower-case header name.
        name: std::borrow::Cow<'static, str>,
    },
    /// A provider's header is present but malformed (feature `providers`; code
    /// `invalid_header`).
    #[cfg(feature = "providers")]
    #[error("invalid `{name}` header of a {provider} delivery: {reason}")]
    ProviderInvalidHeader {
        /// The provider, e.g. `stripe`.
        provider: &'static str,
        /// The lower-case header name.
        name: std::borrow::Cow<'static, str>,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A provider's signed timestamp is older than the tolerance (feature `providers`;
    /// code `timestamp_too_old`).
    #[cfg(feature = "providers")]
    #[error(
        "the {provider} delivery's timestamp is {age_secs} s old, beyond the {tolerance_secs} s \
         tolerance: the delivery may be a replay, or this machine's clock is ahead"
    )]
    ProviderTimestampTooOld {
        /// The provider, e.g. `stripe`.
        provider: &'static str,
        /// How far in the past the timestamp is, in seconds.
        age_secs: u64,
        /// The tolerance in force, in seconds.
        tolerance_secs: u64,
    },
    /// A provider's signed timestamp is further in the future than the tolerance (feature
    /// `providers`; code `timestamp_too_new`).
    #[cfg(feature = "providers")]
    #[error(
        "the {provider} delivery's timestamp is {ahead_secs} s in the future, beyond the \
         {tolerance_secs} s tolerance: this machine's clock may be behind"
    )]
    ProviderTimestampTooNew {
        /// The provider, e.g. `stripe`.
        provider: &'static str,
        /// How far in the future the timestamp is, in seconds.
        ahead_secs: u64,
        /// The tolerance in force, in seconds.
        tolerance_secs: u64,
    },
    /// A provider's settings cannot work (feature `providers`; code
    /// `invalid_provider_settings`).
    #[cfg(feature = "providers")]
    #[error("invalid {provider} settings: {reason}")]
    InvalidProviderSettings {
        /// The provider, e.g. `twilio`.
        provider: &'static str,
        /// What is wrong with them.
        reason: &'static str,
    },
}

/// Why a signature check failed, beyond "no match". Part of [`Error::InvalidSignature`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SignatureDetail {
    /// There were well-formed `v1` signatures, and none matched.
    NoMatch,
    /// The header held no well-formed `v1,<base64 of 32 bytes>` entry at all.
    NoV1Signature,
    /// The verifier holds `whpk_` public keys, and the header held no well-formed entry of
    /// a scheme it has keys for (`v1a,<base64 of 64 bytes>` for public keys, `v1,…` for
    /// secrets).
    NoUsableSignature,
}

impl fmt::Display for SignatureDetail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SignatureDetail::NoMatch => Ok(()),
            SignatureDetail::NoV1Signature => {
                f.write_str(" (webhook-signature holds no well-formed `v1,<base64>` entry)")
            }
            SignatureDetail::NoUsableSignature => f.write_str(
                " (webhook-signature holds no well-formed entry this verifier has keys for: \
                 `v1a,<base64>` for whpk_ public keys, `v1,<base64>` for whsec_ secrets)",
            ),
        }
    }
}

impl Error {
    /// The stable code of this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::MissingHeader { .. } => ErrorCode::MissingHeader,
            Error::InvalidHeader { .. } => ErrorCode::InvalidHeader,
            Error::TimestampTooOld { .. } => ErrorCode::TimestampTooOld,
            Error::TimestampTooNew { .. } => ErrorCode::TimestampTooNew,
            Error::InvalidSignature { .. } => ErrorCode::InvalidSignature,
            Error::InvalidSecret { .. } => ErrorCode::InvalidSecret,
            Error::InvalidPayload { .. } => ErrorCode::InvalidPayload,
            Error::InvalidPublicKey { .. } => ErrorCode::InvalidPublicKey,
            Error::InvalidKeySet { .. } => ErrorCode::InvalidKeySet,
            Error::KeySetUnavailable { .. } => ErrorCode::KeySetUnavailable,
            #[cfg(feature = "providers")]
            Error::ProviderMissingHeader { .. } => ErrorCode::MissingHeader,
            #[cfg(feature = "providers")]
            Error::ProviderInvalidHeader { .. } => ErrorCode::InvalidHeader,
            #[cfg(feature = "providers")]
            Error::ProviderTimestampTooOld { .. } => ErrorCode::TimestampTooOld,
            #[cfg(feature = "providers")]
            Error::ProviderTimestampTooNew { .. } => ErrorCode::TimestampTooNew,
            #[cfg(feature = "providers")]
            Error::InvalidProviderSettings { .. } => ErrorCode::InvalidProviderSettings,
        }
    }

    pub(crate) fn payload(reason: impl fmt::Display) -> Self {
        Error::InvalidPayload {
            reason: reason.to_string(),
        }
    }
}
