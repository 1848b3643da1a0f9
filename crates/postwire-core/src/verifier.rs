//! Verifying a delivery: the receiver's side of Standard Webhooks.
//!
//! In order, cheapest first: the three headers are present and well-formed; the timestamp
//! is within the tolerance (both ways: too old is a replay, too new a skewed clock);
//! then the HMAC of `<id>.<timestamp>.<raw body>` is computed once per secret and
//! compared in constant time with every `v1` signature in the header.
//!
//! With the `ed25519` feature the trust list may also hold `whpk_` public keys
//! ([`TrustedKey`](crate::TrustedKey)): when no `v1` entry matched, each well-formed `v1a`
//! entry is checked strictly against each public key, over one copy of
//! `<id>.<timestamp>.<body>`. A header may mix both (`v1,… v1a,…`); other versions are
//! skipped. The work is bounded by the header limits: at most
//! [`MAX_SIGNATURES`](crate::MAX_SIGNATURES) entries, times the number of public keys.

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
    #[cfg(feature = "ed25519")]
    public_keys: Vec<crate::PublicKey>,
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
            #[cfg(feature = "ed25519")]
            public_keys: Vec::new(),
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
            #[cfg(feature = "ed25519")]
            public_keys: Vec::new(),
            tolerance_secs: DEFAULT_TOLERANCE_SECS,
        })
    }

    /// A verifier trusting `v1` secrets and `v1a` public keys alike (feature `ed25519`):
    /// a delivery verifies when any `v1` entry matches a secret or any `v1a` entry is a
    /// valid signature by a public key. At least one key is required.
    ///
    /// ```
    /// use postwire_core::{Secret, SigningKey, TrustedKey, UnixTime, Verifier};
    /// let signing = SigningKey::generate().unwrap();
    /// let now = UnixTime::from_secs(1_700_000_000);
    /// let v1a = signing.sign("msg_1", now, b"{}").unwrap().to_string();
    /// let header = format!("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE= {v1a}");
    /// let headers = [("webhook-id", "msg_1"), ("webhook-timestamp", "1700000000"), ("webhook-signature", header.as_str())];
    /// let verifier = Verifier::with_keys([
    ///     TrustedKey::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap(),
    ///     TrustedKey::PublicKey(signing.public_key()),
    /// ]).unwrap();
    /// assert!(verifier.verify(&headers, b"{}", now).is_ok());
    /// assert_eq!(verifier.verify(&headers, b"{ }", now).unwrap_err().code().as_str(), "invalid_signature");
    /// ```
    #[cfg(feature = "ed25519")]
    pub fn with_keys(keys: impl IntoIterator<Item = impl Into<crate::TrustedKey>>) -> Result<Self, Error> {
        let mut secrets = Vec::new();
        let mut public_keys = Vec::new();
        for key in keys {
            match key.into() {
                crate::TrustedKey::Secret(s) => secrets.push(s),
                crate::TrustedKey::PublicKey(k) => public_keys.push(k),
            }
        }
        if secrets.is_empty() && public_keys.is_empty() {
            return Err(Error::InvalidSecret {
                reason: "at least one secret or public key is required",
            });
        }
        Ok(Verifier {
            secrets,
            public_keys,
            tolerance_secs: DEFAULT_TOLERANCE_SECS,
        })
    }

    /// [`with_keys`](Self::with_keys) from key strings (`whsec_…` or `whpk_…`, see
    /// [`TrustedKey::parse`](crate::TrustedKey::parse)): the first bad key is the error.
    #[cfg(feature = "ed25519")]
    pub fn parse_keys<S: AsRef<str>>(keys: impl IntoIterator<Item = S>) -> Result<Self, Error> {
        let keys = keys
            .into_iter()
            .map(|k| crate::TrustedKey::parse(k.as_ref()))
            .collect::<Result<Vec<_>, _>>()?;
        Self::with_keys(keys)
    }

    /// A verifier with one `v1a` public key only (feature `ed25519`).
    #[cfg(feature = "ed25519")]
    pub fn from_public_key(key: crate::PublicKey) -> Self {
        Verifier {
            secrets: Vec::new(),
            public_keys: vec![key],
            tolerance_secs: DEFAULT_TOLERANCE_SECS,
        }
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
        #[cfg(feature = "ed25519")]
        if outcome.is_err() && !self.public_keys.is_empty() {
            outcome = self.check_asymmetric(
                &header,
                &headers,
                body,
                !self.secrets.is_empty()
                    && outcome
                        == Err(Error::InvalidSignature {
                            detail: SignatureDetail::NoMatch,
                        }),
            );
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

    /// The `v1a` half of [`verify_headers`](Self::verify_headers).
    #[cfg(feature = "ed25519")]
    fn check_asymmetric(
        &self,
        header: &SignatureHeader<'_>,
        headers: &WebhookHeaders<'_>,
        body: &[u8],
        saw_v1: bool,
    ) -> Result<(), Error> {
        check_asymmetric(&self.public_keys, header, headers, body, saw_v1)
    }

    /// [`check_computed`](Self::check_computed) that also trusts `v1a` public keys
    /// (feature `ed25519`), for callers that keep the keys themselves (the npm package holds
    /// them in JavaScript memory): the same checks in the same order as
    /// [`verify_headers`](Self::verify_headers) with secrets and public keys. `macs` are
    /// the HMACs computed with your own secrets (see [`verify_computed`](Self::verify_computed));
    /// `body` is needed for the ed25519 check.
    #[cfg(feature = "ed25519")]
    pub fn check_computed_with_public_keys<'h>(
        headers: WebhookHeaders<'h>,
        macs: &[Signature],
        public_keys: &[crate::PublicKey],
        body: &[u8],
        now: UnixTime,
        tolerance_secs: u64,
    ) -> Result<Verified<'h>, Error> {
        check_timestamp(headers.timestamp(), now, tolerance_secs)?;
        let header = SignatureHeader::parse(headers.signature())?;
        let mut outcome = if macs.is_empty() {
            Err(Error::InvalidSignature {
                detail: SignatureDetail::NoV1Signature,
            })
        } else {
            header.matches_any(macs)
        };
        if outcome.is_err() && !public_keys.is_empty() {
            let saw_v1 = !macs.is_empty()
                && outcome
                    == Err(Error::InvalidSignature {
                        detail: SignatureDetail::NoMatch,
                    });
            outcome = check_asymmetric(public_keys, &header, &headers, body, saw_v1);
        }
        outcome.map(|()| Verified {
            id: headers.id(),
            timestamp: headers.timestamp(),
        })
    }

    fn check_timestamp(&self, ts: UnixTime, now: UnixTime) -> Result<(), Error> {
        check_timestamp(ts, now, self.tolerance_secs)
    }
}

/// Whether a `v1a` entry of `header` is a strict ed25519 signature by one of `public_keys`
/// over `<id>.<timestamp>.<body>`: one copy of that message, made only if the header has a
/// `v1a` entry. `saw_v1`: the `v1` half saw well-formed entries (for the error's detail).
#[cfg(feature = "ed25519")]
fn check_asymmetric(
    public_keys: &[crate::PublicKey],
    header: &SignatureHeader<'_>,
    headers: &WebhookHeaders<'_>,
    body: &[u8],
    saw_v1: bool,
) -> Result<(), Error> {
    let mut message: Option<Vec<u8>> = None;
    let mut saw_v1a = false;
    for sig in header.asymmetric_signatures() {
        saw_v1a = true;
        let m = message.get_or_insert_with(|| {
            crate::asymmetric::signed_message(headers.id().as_bytes(), headers.timestamp_raw().as_bytes(), body)
        });
        if public_keys.iter().any(|k| k.verifies(m, &sig)) {
            return Ok(());
        }
    }
    Err(Error::InvalidSignature {
        detail: if saw_v1a || saw_v1 {
            SignatureDetail::NoMatch
        } else {
            SignatureDetail::NoUsableSignature
        },
    })
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

    #[cfg(feature = "ed25519")]
    #[test]
    fn mixed_trust_lists_and_headers() {
        use crate::{SigningKey, TrustedKey};
        let t = UnixTime::from_secs(1_700_000_000);
        let secret = Secret::generate().unwrap();
        let key = SigningKey::generate().unwrap();
        let other = SigningKey::generate().unwrap();
        let both = Signer::with_keys([secret.clone()], [key.clone()]).unwrap();
        let value = both.sign("msg_1", t, b"body").unwrap();
        let h = WebhookHeaders::new("msg_1", "1700000000", value.as_str()).unwrap();

        let pk_only = Verifier::from_public_key(key.public_key());
        assert!(pk_only.verify_headers(h, b"body", t).is_ok());
        assert!(pk_only.verify_headers(h, b"bodY", t).is_err());
        let other_only = Verifier::from_public_key(other.public_key());
        assert_eq!(
            other_only.verify_headers(h, b"body", t).unwrap_err(),
            Error::InvalidSignature {
                detail: SignatureDetail::NoMatch
            }
        );
        // A wrong secret and the right public key: the v1a entry carries it.
        let mixed = Verifier::with_keys([
            TrustedKey::Secret(Secret::generate().unwrap()),
            TrustedKey::PublicKey(key.public_key()),
        ])
        .unwrap();
        assert!(mixed.verify_headers(h, b"body", t).is_ok());
        // Only a v1 entry, and the verifier has only a public key.
        let v1_only = Signer::new(secret).sign("msg_1", t, b"body").unwrap();
        let h1 = WebhookHeaders::new("msg_1", "1700000000", v1_only.as_str()).unwrap();
        assert_eq!(
            pk_only.verify_headers(h1, b"body", t).unwrap_err(),
            Error::InvalidSignature {
                detail: SignatureDetail::NoUsableSignature
            }
        );
        // The timestamp is still checked first.
        let late = UnixTime::from_secs(t.as_secs() + 301);
        assert_eq!(
            pk_only.verify_headers(h, b"body", late).unwrap_err().code().as_str(),
            "timestamp_too_old"
        );
        assert!(Verifier::with_keys(Vec::<TrustedKey>::new()).is_err());
        assert!(Verifier::parse_keys([key.public_key().to_string()]).is_ok());
        assert!(Verifier::parse_keys([key.expose()]).is_err());
    }

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
