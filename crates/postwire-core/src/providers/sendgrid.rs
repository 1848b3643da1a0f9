//! SendGrid's signed Event Webhook: ECDSA P-256 with SHA-256 over `{timestamp}{body}`,
//! the DER signature in base64 in `X-Twilio-Email-Event-Webhook-Signature`, the timestamp
//! in `X-Twilio-Email-Event-Webhook-Timestamp`; the key is the base64 DER
//! (SubjectPublicKeyInfo) public key SendGrid shows for the webhook.
//!
//! The body is a JSON array of events, each with its own `sg_event_id`, and no id for the
//! batch: the id is `sendgrid_` and the SHA-256 hex of the body (a retried batch has the
//! same body). No event type (a batch mixes them).
//!
//! Stricter than `@sendgrid/eventwebhook`'s `verifySignature`: the timestamp is checked
//! (300 s either way; the SDK checks none) and must be canonical digits, the signature
//! must be canonical base64 of strict DER, and the body must be UTF-8 (the SDK hashes it
//! as a string).

use base64::Engine as _;
use p256::ecdsa::signature::Verifier as _;
use p256::ecdsa::{DerSignature, VerifyingKey};
use p256::pkcs8::DecodePublicKey as _;

use super::VerifiedDelivery;
use super::shared::{self, Headers};
use crate::headers::HeaderSource;
use crate::{Error, UnixTime};

/// No tolerance in the SDK or SendGrid's docs: postwire's default, 5 minutes.
pub(crate) const TOLERANCE_SECS: u64 = 300;
const SIGNATURE: &str = "x-twilio-email-event-webhook-signature";
const TIMESTAMP: &str = "x-twilio-email-event-webhook-timestamp";
/// A DER ECDSA P-256 signature is at most 72 bytes (96 base64 characters).
const MAX_SIGNATURE_LEN: usize = 72;

pub(crate) fn parse_keys<S: AsRef<str>>(keys: impl IntoIterator<Item = S>) -> Result<Vec<VerifyingKey>, Error> {
    let mut out = Vec::new();
    for k in keys {
        let der = base64::engine::general_purpose::STANDARD
            .decode(k.as_ref().trim())
            .map_err(|_| Error::InvalidPublicKey {
                reason: "a SendGrid key is the base64 of a DER public key",
            })?;
        let key = VerifyingKey::from_public_key_der(&der).map_err(|_| Error::InvalidPublicKey {
            reason: "not a DER P-256 public key",
        })?;
        out.push(key);
    }
    if out.is_empty() {
        return Err(Error::InvalidPublicKey {
            reason: "at least one public key is required",
        });
    }
    Ok(out)
}

pub(crate) fn verify<H: HeaderSource + ?Sized>(
    keys: &[VerifyingKey],
    h: &Headers<'_, H>,
    body: &[u8],
    now: UnixTime,
    tolerance_secs: u64,
) -> Result<VerifiedDelivery, Error> {
    let value = h.require(SIGNATURE)?;
    let (raw_ts, ts) = h.timestamp(TIMESTAMP)?;
    let sig = shared::canonical_base64(value, None)
        .filter(|b| b.len() <= MAX_SIGNATURE_LEN)
        .and_then(|der| DerSignature::from_bytes(&der).ok())
        .ok_or_else(|| h.invalid(SIGNATURE, "must be the base64 of a DER ECDSA P-256 signature"))?;
    let text = shared::utf8_body(body)?;
    shared::check_tolerance(h.provider, ts, now, tolerance_secs)?;
    let mut message = Vec::with_capacity(raw_ts.len() + text.len());
    message.extend_from_slice(raw_ts.as_bytes());
    message.extend_from_slice(text.as_bytes());
    if !keys.iter().any(|k| k.verify(&message, &sig).is_ok()) {
        return Err(shared::no_match());
    }
    Ok(VerifiedDelivery {
        id: shared::derived_id("sendgrid_", &[body]),
        event_type: None,
        timestamp: Some(ts),
    })
}
