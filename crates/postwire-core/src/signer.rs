//! Signing a delivery: the sender's side of Standard Webhooks, including secret rotation.
//!
//! A [`Signer`] holds one secret, or several during a rotation, and produces the whole
//! `webhook-signature` value: one space-separated `v1,<base64>` entry per secret, so a
//! receiver holding either the old or the new secret accepts the delivery.
//!
//! With the `ed25519` feature it may also hold `whsk_` signing keys: their `v1a,<base64>`
//! entries follow the `v1` ones, all computed over one copy of the message.

use crate::{Error, Secret, UnixTime};

/// Signs deliveries with one or more secrets.
///
/// ```
/// use postwire_core::{Secret, Signer, UnixTime};
/// let old = Secret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
/// let new = Secret::generate().unwrap();
/// let signer = Signer::with_secrets([new, old]).unwrap();
/// let header = signer.sign("msg_p5jXN8AQM9LWM0D4loKWxJek", UnixTime::from_secs(1614265330), br#"{"test": 2432232314}"#).unwrap();
/// let entries: Vec<&str> = header.as_str().split(' ').collect();
/// assert_eq!(entries.len(), 2);
/// assert_eq!(entries[1], "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
/// ```
#[derive(Debug, Clone)]
pub struct Signer {
    secrets: Vec<Secret>,
    #[cfg(feature = "ed25519")]
    signing_keys: Vec<crate::SigningKey>,
}

/// A `webhook-signature` header value, e.g. `v1,abc= v1,def=`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignatureValue(String);

impl SignatureValue {
    /// The header value.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The header value, owned.
    pub fn into_string(self) -> String {
        self.0
    }
}

impl std::fmt::Display for SignatureValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Signer {
    /// A signer with one secret.
    pub fn new(secret: Secret) -> Self {
        Signer {
            secrets: vec![secret],
            #[cfg(feature = "ed25519")]
            signing_keys: Vec::new(),
        }
    }

    /// A signer with several secrets, one signature each, in this order. At least one.
    pub fn with_secrets(secrets: impl IntoIterator<Item = Secret>) -> Result<Self, Error> {
        let secrets: Vec<Secret> = secrets.into_iter().collect();
        if secrets.is_empty() {
            return Err(Error::InvalidSecret {
                reason: "at least one secret is required",
            });
        }
        Ok(Signer {
            secrets,
            #[cfg(feature = "ed25519")]
            signing_keys: Vec::new(),
        })
    }

    /// A signer with `v1` secrets and `v1a` signing keys (feature `ed25519`): one entry
    /// per secret, then one per signing key, in this order. At least one of either; pass
    /// no secrets for a `v1a`-only header.
    ///
    /// ```
    /// use postwire_core::{Secret, Signer, SigningKey, UnixTime, Verifier};
    /// let secret = Secret::generate().unwrap();
    /// let key = SigningKey::generate().unwrap();
    /// let signer = Signer::with_keys([secret.clone()], [key.clone()]).unwrap();
    /// let now = UnixTime::from_secs(1_700_000_000);
    /// let value = signer.sign("msg_1", now, b"{}").unwrap();
    /// let entries: Vec<&str> = value.as_str().split(' ').collect();
    /// assert!(entries[0].starts_with("v1,") && entries[1].starts_with("v1a,"));
    /// let headers = [("webhook-id", "msg_1"), ("webhook-timestamp", "1700000000"), ("webhook-signature", value.as_str())];
    /// assert!(Verifier::from_public_key(key.public_key()).verify(&headers, b"{}", now).is_ok());
    /// assert!(Verifier::new(secret).verify(&headers, b"{}", now).is_ok());
    /// ```
    #[cfg(feature = "ed25519")]
    pub fn with_keys(
        secrets: impl IntoIterator<Item = Secret>,
        signing_keys: impl IntoIterator<Item = crate::SigningKey>,
    ) -> Result<Self, Error> {
        let secrets: Vec<Secret> = secrets.into_iter().collect();
        let signing_keys: Vec<crate::SigningKey> = signing_keys.into_iter().collect();
        if secrets.is_empty() && signing_keys.is_empty() {
            return Err(Error::InvalidSecret {
                reason: "at least one secret or signing key is required",
            });
        }
        Ok(Signer { secrets, signing_keys })
    }

    /// The `webhook-signature` value for one attempt.
    pub fn sign(&self, id: &str, timestamp: UnixTime, body: &[u8]) -> Result<SignatureValue, Error> {
        use std::fmt::Write as _;
        let mut out = String::with_capacity(self.secrets.len() * 48);
        for (i, secret) in self.secrets.iter().enumerate() {
            if i > 0 {
                out.push(' ');
            }
            let _ = write!(out, "{}", secret.sign(id, timestamp, body)?);
        }
        #[cfg(feature = "ed25519")]
        if !self.signing_keys.is_empty() {
            crate::headers::validate_id(id)?;
            let mut ts = itoa::Buffer::new();
            let message =
                crate::asymmetric::signed_message(id.as_bytes(), ts.format(timestamp.as_secs()).as_bytes(), body);
            for key in &self.signing_keys {
                if !out.is_empty() {
                    out.push(' ');
                }
                let _ = write!(out, "{}", key.sign_message(&message));
            }
        }
        Ok(SignatureValue(out))
    }
}
