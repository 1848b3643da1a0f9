//! Signing a delivery: the sender's side of Standard Webhooks, including secret rotation.
//!
//! A [`Signer`] holds one secret, or several during a rotation, and produces the whole
//! `webhook-signature` value: one space-separated `v1,<base64>` entry per secret, so a
//! receiver holding either the old or the new secret accepts the delivery.

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
        Signer { secrets: vec![secret] }
    }

    /// A signer with several secrets, one signature each, in this order. At least one.
    pub fn with_secrets(secrets: impl IntoIterator<Item = Secret>) -> Result<Self, Error> {
        let secrets: Vec<Secret> = secrets.into_iter().collect();
        if secrets.is_empty() {
            return Err(Error::InvalidSecret {
                reason: "at least one secret is required",
            });
        }
        Ok(Signer { secrets })
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
        Ok(SignatureValue(out))
    }
}
