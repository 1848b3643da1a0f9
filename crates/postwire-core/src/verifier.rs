//! Verifying a delivery: the receiver's side of Standard Webhooks.
//!
//! In order, cheapest first: the three headers are present and well-formed; the timestamp
//! is within the tolerance (both ways: too old is a replay, too new a skewed clock);
//! then the HMAC of `<id>.<timestamp>.<raw body>` is computed once per secret and
//! compared in constant time with every `v1` signature in the header.

use crate::headers::{HeaderSource, WebhookHeaders};
use crate::signature::{Signature, SignatureHeader};
use crate::{Error, Event, Secret, SignatureDetail, UnixTime};

/// The timestamp tolerance of the spec: 5 minutes each way.
pub const DEFAULT_TOLERANCE_SECS: u64 = 300;

/// Checks deliveries against one or more secrets (several during a rotation).
///
/// ```
/// use postwire_core::{Secret, Signer, UnixTime, Verifier};
/// let secret = Secret::generate().unwrap();
/// let now = UnixTime::from_secs(1_700_000_000);
/// let body = br#"{"type":"webhook.test"}"#;
/// let sig = Signer::new(secret.clone()).sign("msg_1", now, body).unwrap();
/// let headers = [("webhook-id", "msg_1"), ("webhook-timestamp", "1700000000"), ("webhook-signature", sig.as_str())];
///
/// let verifier = Verifier::new(secret);
/// let ok = verifier.verify(&headers, body, now).unwrap();
/// assert_eq!(ok.id, "msg_1");
/// let err = verifier.verify(&headers, b"{}", now).unwrap_err();
/// assert_eq!(err.code().as_str(), "invalid_signature");
/// ```
#[derive(Debug, Clone)]
pub struct Verifier {
    secrets: Vec<Secret>,
    tolerance_secs: u64,
}

/// What a successful verification tells: which delivery it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verified<'h> {
    /// The `webhook-id`: the event id, for de-duplication.
    pub id: &'h str,
    /// The `webhook-timestamp` of this attempt.
    pub timestamp: UnixTime,
}

impl Verifier {
    /// A verifier with one secret and the default 300 s tolerance.
    pub fn new(secret: Secret) -> Self {
        Verifier {
            secrets: vec![secret],
            tolerance_secs: DEFAULT_TOLERANCE_SECS,
        }
    }

    /// A verifier that accepts a signature made with any of `secrets` (new and old during
    /// a rotation). At least one secret is required.
    pub fn with_secrets(secrets: impl IntoIterator<Item = Secret>) -> Result<Self, Error> {
        let secrets: Vec<Secret> = secrets.into_iter().collect();
        if secrets.is_empty() {
            return Err(Error::InvalidSecret {
                reason: "at least one secret is required",
            });
        }
        Ok(Verifier {
            secrets,
            tolerance_secs: DEFAULT_TOLERANCE_SECS,
        })
    }

    /// Sets the timestamp tolerance in seconds, applied both to the past and the future.
    pub fn with_tolerance_secs(mut self, secs: u64) -> Self {
        self.tolerance_secs = secs;
        self
    }

    /// The tolerance in force, in seconds.
    pub fn tolerance_secs(&self) -> u64 {
        self.tolerance_secs
    }

    /// Verifies a delivery. `body` must be the raw bytes as received; `now` is the current
    /// time (from an injected clock: the core never reads one itself).
    pub fn verify<'h, H: HeaderSource + ?Sized>(
        &self,
        headers: &'h H,
        body: &[u8],
        now: UnixTime,
    ) -> Result<Verified<'h>, Error> {
        self.verify_headers(WebhookHeaders::from_source(headers)?, body, now)
    }

    /// Verifies a delivery whose three header values are already at hand.
    pub fn verify_headers<'h>(
        &self,
        headers: WebhookHeaders<'h>,
        body: &[u8],
        now: UnixTime,
    ) -> Result<Verified<'h>, Error> {
        self.check_timestamp(headers.timestamp(), now)?;
        let header = SignatureHeader::parse(headers.signature())?;
        let mut outcome = Err(Error::InvalidSignature {
            detail: SignatureDetail::NoMatch,
        });
        for secret in &self.secrets {
            let expected = secret.sign_as_sent(&headers, body);
            outcome = header.matches_any(std::slice::from_ref(&expected));
            if outcome.is_ok() {
                break;
            }
        }
        outcome.map(|()| Verified {
            id: headers.id(),
            timestamp: headers.timestamp(),
        })
    }

    /// Verifies a delivery against HMACs computed elsewhere, one per secret, each over
    /// `<id>.<timestamp>.<body>` with the id and timestamp as sent: for runtimes whose
    /// native HMAC is faster than this crate's (node:crypto beside WebAssembly). Every
    /// check but the hashing is the same as [`verify_headers`](Self::verify_headers), in
    /// the same order. Pass only MACs you computed with your own secrets: a value taken
    /// from the request would verify anything.
    pub fn verify_computed<'h>(
        &self,
        headers: WebhookHeaders<'h>,
        macs: &[Signature],
        now: UnixTime,
    ) -> Result<Verified<'h>, Error> {
        Self::check_computed(headers, macs, now, self.tolerance_secs)
    }

    /// [`verify_computed`](Self::verify_computed) for callers that keep no [`Secret`]s,
    /// only what they compute HMACs with (the npm package holds each object's HMAC key
    /// schedule in JavaScript memory, so nothing per object lives in wasm memory): the
    /// same checks in the same order, with `tolerance_secs` each way.
    pub fn check_computed<'h>(
        headers: WebhookHeaders<'h>,
        macs: &[Signature],
        now: UnixTime,
        tolerance_secs: u64,
    ) -> Result<Verified<'h>, Error> {
        check_timestamp(headers.timestamp(), now, tolerance_secs)?;
        SignatureHeader::parse(headers.signature())?.matches_any(macs)?;
        Ok(Verified {
            id: headers.id(),
            timestamp: headers.timestamp(),
        })
    }

    /// Verifies, then parses the body into a typed [`Event`]. Also checks that the
    /// envelope's `id` equals `webhook-id`, as the spec says it does.
    pub fn verify_event<H: HeaderSource + ?Sized>(
        &self,
        headers: &H,
        body: &[u8],
        now: UnixTime,
    ) -> Result<Event, Error> {
        let verified = self.verify(headers, body, now)?;
        let event = Event::from_json(body)?;
        if event.id() != verified.id {
            return Err(Error::payload("the envelope `id` differs from the webhook-id header"));
        }
        Ok(event)
    }

    fn check_timestamp(&self, ts: UnixTime, now: UnixTime) -> Result<(), Error> {
        check_timestamp(ts, now, self.tolerance_secs)
    }
}

/// `ts` is at most `tolerance_secs` away from `now`, either way.
fn check_timestamp(ts: UnixTime, now: UnixTime, tolerance_secs: u64) -> Result<(), Error> {
    let diff = i128::from(now.as_secs()) - i128::from(ts.as_secs());
    let tolerance = i128::from(tolerance_secs);
    let clamp = |d: i128| u64::try_from(d).unwrap_or(u64::MAX);
    if diff > tolerance {
        Err(Error::TimestampTooOld {
            age_secs: clamp(diff),
            tolerance_secs,
        })
    } else if -diff > tolerance {
        Err(Error::TimestampTooNew {
            ahead_secs: clamp(-diff),
            tolerance_secs,
        })
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Signer;

    #[test]
    fn verify_computed_runs_the_same_checks_as_verify() {
        let secret = Secret::generate().unwrap();
        let t = UnixTime::from_secs(1_700_000_000);
        let sig = Signer::new(secret.clone()).sign("msg_1", t, b"body").unwrap();
        let headers = WebhookHeaders::new("msg_1", "1700000000", sig.as_str()).unwrap();
        let v = Verifier::new(secret.clone());
        let mac = secret.sign_as_sent(&headers, b"body");

        assert_eq!(v.verify_computed(headers, &[mac], t).unwrap().id, "msg_1");
        let wrong = secret.sign_as_sent(&headers, b"other");
        assert_eq!(
            v.verify_computed(headers, &[wrong], t).unwrap_err().code().as_str(),
            "invalid_signature"
        );
        let late = UnixTime::from_secs(t.as_secs() + 301);
        assert_eq!(
            v.verify_computed(headers, &[mac], late).unwrap_err().code().as_str(),
            "timestamp_too_old"
        );
        let many = vec![sig.as_str(); 65].join(" ");
        let h = WebhookHeaders::new("msg_1", "1700000000", &many).unwrap();
        assert_eq!(
            v.verify_computed(h, &[mac], t).unwrap_err().code().as_str(),
            "invalid_header"
        );
    }
}
