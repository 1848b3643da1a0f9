//! Asymmetric `v1a` signatures of Standard Webhooks: ed25519 over `<id>.<timestamp>.<body>`,
//! with `whsk_` signing keys and `whpk_` public keys. An opt-in extension (feature
//! `ed25519`): the spec of this API signs with `v1`, and `v1a` never replaces the `v1`
//! signature a subscription expects.
//!
//! Why it exists: whoever holds a `whpk_` key can verify but never forge, so an edge
//! Worker's configuration or a docs page can carry the real key.
//!
//! Key text is read with exactly the leniency and caps of `whsec_` secrets
//! ([`Secret::parse`](crate::Secret::parse)): surrounding whitespace, up to two `=`, a lone
//! 4k + 1th character and spare bits are ignored; the text is at most
//! [`MAX_KEY_STRING_LEN`] bytes. A `whsk_` key is the 32-byte ed25519 seed, or the 64-byte
//! libsodium form (seed then public key, which must agree); a `whpk_` key is the 32-byte
//! compressed point, and must not be of small order.
//!
//! Verification is strict (`verify_strict` of ed25519-dalek): a non-canonical `S` (≥ L),
//! a small-order `R` or a small-order public key are refused, so one message has one valid
//! signature per key and no key verifies everything.
//!
//! ## Why the message is copied once
//! HMAC streams `<id>.<timestamp>.` and then the body, with no copy. ed25519 cannot: its
//! signing hashes the message twice (once for the nonce, once for the challenge), and its
//! verification hashes `R ‖ A ‖ message`, with ed25519-dalek taking the message as one
//! slice. ed25519-dalek's `verify_prehashed` is Ed25519ph, a different scheme that Standard
//! Webhooks does not use. So [`signed_message`] builds `<id>.<timestamp>.<body>` once per
//! delivery, and every key and every `v1a` entry is checked against that one buffer.

use std::fmt;
use std::str::FromStr;

use base64::Engine as _;
use ed25519_dalek::Signer as _;
use zeroize::Zeroizing;

use crate::secret::{BASE64_SECRET, drop_lone_last_char};
use crate::{Error, UnixTime};

/// The prefix of a `v1a` signing (secret) key.
pub const SIGNING_KEY_PREFIX: &str = "whsk_";
/// The prefix of a `v1a` public (verifying) key.
pub const PUBLIC_KEY_PREFIX: &str = "whpk_";
/// The asymmetric signature scheme's version in `webhook-signature`.
pub const ASYMMETRIC_SIGNATURE_VERSION: &str = "v1a";
/// Bytes in an ed25519 seed (the signing key) and in a compressed public key.
pub const ED25519_KEY_LEN: usize = 32;
/// Bytes in a signing key of the libsodium form: the seed, then the public key.
pub const ED25519_KEYPAIR_LEN: usize = 64;
/// Bytes in an ed25519 signature.
pub const ED25519_SIGNATURE_LEN: usize = 64;
/// The longest `whsk_`/`whpk_` string accepted, as for `whsec_` secrets
/// ([`MAX_SECRET_STRING_LEN`](crate::MAX_SECRET_STRING_LEN)).
pub const MAX_KEY_STRING_LEN: usize = crate::MAX_SECRET_STRING_LEN;
/// Base64 characters of an ed25519 signature, padded.
const SIGNATURE_B64_LEN: usize = 88;

/// A `whsk_` signing key where a verifying key belongs: refused, never used to derive one,
/// so a verifier's configuration never holds the power to sign.
const SIGNING_KEY_GIVEN: Error = Error::InvalidPublicKey {
    reason: "a whsk_ signing key was given to verify with; give its whpk_ public key instead",
};

/// Why a key's text did not decode. Turned into the error of the key's kind.
enum KeyTextError {
    TooLong,
    TooMuchPadding,
    Empty,
    NotBase64,
}

/// Decodes key text by the rule of [`Secret::parse`](crate::Secret::parse), with `prefix`
/// optional. The bytes are zeroed when dropped.
fn decode_key_text(s: &str, prefix: &str) -> Result<Zeroizing<Vec<u8>>, KeyTextError> {
    if s.len() > MAX_KEY_STRING_LEN {
        return Err(KeyTextError::TooLong);
    }
    let s = s.trim_ascii();
    let b64 = s.strip_prefix(prefix).unwrap_or(s);
    let unpadded = b64.trim_end_matches('=');
    if b64.len() - unpadded.len() > 2 {
        return Err(KeyTextError::TooMuchPadding);
    }
    let digits = drop_lone_last_char(unpadded);
    if digits.is_empty() {
        return Err(KeyTextError::Empty);
    }
    BASE64_SECRET
        .decode(digits)
        .map(Zeroizing::new)
        .map_err(|_| KeyTextError::NotBase64)
}

/// The bytes a `v1a` signature covers: `<id>.<timestamp>.<body>`, built once (see the
/// module docs for why it cannot be streamed).
pub(crate) fn signed_message(id: &[u8], timestamp: &[u8], body: &[u8]) -> Vec<u8> {
    let mut m = Vec::with_capacity(id.len() + timestamp.len() + body.len() + 2);
    m.extend_from_slice(id);
    m.push(b'.');
    m.extend_from_slice(timestamp);
    m.push(b'.');
    m.extend_from_slice(body);
    m
}

/// A `v1a` signing key (ed25519), written `whsk_<base64>`. Zeroed on drop; `Debug` and
/// `Display` never show it.
///
/// ```
/// use postwire_core::{SigningKey, UnixTime};
/// let key = SigningKey::generate().unwrap();
/// let sig = key.sign("msg_1", UnixTime::from_secs(1_700_000_000), b"{}").unwrap();
/// assert!(sig.to_string().starts_with("v1a,"));
/// assert_eq!(format!("{key:?}"), "SigningKey(whsk_…)");
/// assert!(key.public_key().to_string().starts_with("whpk_"));
/// assert_eq!(SigningKey::parse(&key.expose()).unwrap().public_key(), key.public_key());
/// ```
#[derive(Clone)]
pub struct SigningKey(ed25519_dalek::SigningKey);

impl SigningKey {
    /// Parses `whsk_<base64>` (or the base64 alone) with the leniency of `whsec_` secrets.
    /// The key is the 32-byte seed, or 64 bytes of seed then public key (libsodium's form),
    /// whose public half must be the seed's.
    ///
    /// ```
    /// use postwire_core::SigningKey;
    /// let text = format!("whsk_{}", "A".repeat(43) + "=");
    /// let key = SigningKey::parse(&text).unwrap();
    /// assert_eq!(SigningKey::parse(&format!("{}\n", text.trim_end_matches('='))).unwrap().expose(), key.expose());
    /// assert_eq!(SigningKey::parse("whsk_AAAA").unwrap_err().code().as_str(), "invalid_secret");
    /// ```
    pub fn parse(s: &str) -> Result<Self, Error> {
        let bytes = decode_key_text(s, SIGNING_KEY_PREFIX).map_err(|e| Error::InvalidSecret {
            reason: match e {
                KeyTextError::TooLong => "longer than 2048 characters",
                KeyTextError::TooMuchPadding => {
                    "more than two `=` of padding; copy the whole signing key as shown once at creation"
                }
                KeyTextError::Empty => "empty; expected `whsk_` followed by base64",
                KeyTextError::NotBase64 => {
                    "not valid base64 after the `whsk_` prefix; copy the whole signing key as shown once at creation"
                }
            },
        })?;
        match bytes.len() {
            ED25519_KEY_LEN => {
                let mut seed = Zeroizing::new([0u8; ED25519_KEY_LEN]);
                seed.copy_from_slice(&bytes);
                Ok(Self::from_seed(&seed))
            }
            ED25519_KEYPAIR_LEN => {
                let mut pair = Zeroizing::new([0u8; ED25519_KEYPAIR_LEN]);
                pair.copy_from_slice(&bytes);
                ed25519_dalek::SigningKey::from_keypair_bytes(&pair)
                    .map(SigningKey)
                    .map_err(|_| Error::InvalidSecret {
                        reason: "a 64-byte whsk_ key must be the seed then its own public key; they do not agree",
                    })
            }
            _ => Err(Error::InvalidSecret {
                reason: "a whsk_ key must hold 32 bytes (the ed25519 seed) or 64 (seed and public key)",
            }),
        }
    }

    /// The signing key of a 32-byte ed25519 seed.
    pub fn from_seed(seed: &[u8; ED25519_KEY_LEN]) -> Self {
        SigningKey(ed25519_dalek::SigningKey::from_bytes(seed))
    }

    /// A fresh key from the operating system's (or, on wasm, the JavaScript runtime's)
    /// secure random source.
    pub fn generate() -> Result<Self, Error> {
        let mut seed = Zeroizing::new([0u8; ED25519_KEY_LEN]);
        getrandom::fill(&mut seed[..]).map_err(|_| Error::InvalidSecret {
            reason: "no secure random source is available",
        })?;
        Ok(Self::from_seed(&seed))
    }

    /// The key as `whsk_<base64 of the 32-byte seed>`: for showing it once to its owner,
    /// and for storage. Never log this.
    pub fn expose(&self) -> String {
        let seed = Zeroizing::new(self.0.to_bytes());
        let mut s = String::with_capacity(SIGNING_KEY_PREFIX.len() + 44);
        s.push_str(SIGNING_KEY_PREFIX);
        base64::engine::general_purpose::STANDARD.encode_string(&seed[..], &mut s);
        s
    }

    /// The public key that verifies this key's signatures: safe to publish.
    pub fn public_key(&self) -> PublicKey {
        PublicKey(self.0.verifying_key())
    }

    /// Signs one delivery: ed25519 over `<id>.<timestamp>.<body>`. `id` must be a valid
    /// `webhook-id`. The message is copied once (see the module docs).
    pub fn sign(&self, id: &str, timestamp: UnixTime, body: &[u8]) -> Result<AsymmetricSignature, Error> {
        crate::headers::validate_id(id)?;
        let mut ts = itoa::Buffer::new();
        Ok(self.sign_parts(id.as_bytes(), ts.format(timestamp.as_secs()).as_bytes(), body))
    }

    /// Signs with the `webhook-id` and `webhook-timestamp` values exactly as sent, like
    /// [`Secret::sign_as_sent`](crate::Secret::sign_as_sent).
    pub fn sign_as_sent(&self, headers: &crate::WebhookHeaders<'_>, body: &[u8]) -> AsymmetricSignature {
        self.sign_parts(headers.id().as_bytes(), headers.timestamp_raw().as_bytes(), body)
    }

    fn sign_parts(&self, id: &[u8], timestamp: &[u8], body: &[u8]) -> AsymmetricSignature {
        self.sign_message(&signed_message(id, timestamp, body))
    }

    /// Signs a message already built by [`signed_message`] (one copy for several keys).
    pub(crate) fn sign_message(&self, message: &[u8]) -> AsymmetricSignature {
        AsymmetricSignature(self.0.sign(message).to_bytes())
    }
}

impl FromStr for SigningKey {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        SigningKey::parse(s)
    }
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SigningKey(whsk_…)")
    }
}

impl fmt::Display for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("whsk_…")
    }
}

impl PartialEq for SigningKey {
    /// Compares the public halves: equal seeds give equal public keys, and the public key
    /// is not secret, so the comparison needs no constant time.
    fn eq(&self, other: &Self) -> bool {
        self.0.verifying_key() == other.0.verifying_key()
    }
}
impl Eq for SigningKey {}

/// A `v1a` public key (ed25519), written `whpk_<base64>`. Public: `Debug` and `Display`
/// show it.
///
/// ```
/// use postwire_core::PublicKey;
/// // The identity point has small order: it would verify forged signatures, so it is refused.
/// let identity = format!("whpk_AQ{}", "A".repeat(41) + "=");
/// assert_eq!(PublicKey::parse(&identity).unwrap_err().code().as_str(), "invalid_public_key");
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct PublicKey(ed25519_dalek::VerifyingKey);

impl PublicKey {
    /// Parses `whpk_<base64>` (or the base64 alone) with the leniency of `whsec_` secrets.
    /// The key must be 32 bytes, a valid compressed point, and not of small order.
    pub fn parse(s: &str) -> Result<Self, Error> {
        if s.trim_ascii_start().starts_with(SIGNING_KEY_PREFIX) {
            return Err(SIGNING_KEY_GIVEN);
        }
        let bytes = decode_key_text(s, PUBLIC_KEY_PREFIX).map_err(|e| Error::InvalidPublicKey {
            reason: match e {
                KeyTextError::TooLong => "longer than 2048 characters",
                KeyTextError::TooMuchPadding => "more than two `=` of padding",
                KeyTextError::Empty => "empty; expected `whpk_` followed by base64",
                KeyTextError::NotBase64 => "not valid base64 after the `whpk_` prefix",
            },
        })?;
        let bytes: [u8; ED25519_KEY_LEN] = bytes.as_slice().try_into().map_err(|_| Error::InvalidPublicKey {
            reason: "a whpk_ key must hold 32 bytes",
        })?;
        Self::from_bytes(&bytes)
    }

    /// From the 32 bytes of a compressed ed25519 point; refuses invalid and small-order
    /// points.
    pub fn from_bytes(bytes: &[u8; ED25519_KEY_LEN]) -> Result<Self, Error> {
        let key = ed25519_dalek::VerifyingKey::from_bytes(bytes).map_err(|_| Error::InvalidPublicKey {
            reason: "the 32 bytes are not an ed25519 point",
        })?;
        if key.is_weak() {
            return Err(Error::InvalidPublicKey {
                reason: "a small-order point, which would accept forged signatures",
            });
        }
        Ok(PublicKey(key))
    }

    /// The 32 bytes of the compressed point.
    pub fn as_bytes(&self) -> &[u8; ED25519_KEY_LEN] {
        self.0.as_bytes()
    }

    /// Whether `signature` is this key's strict ed25519 signature of `message`.
    pub(crate) fn verifies(&self, message: &[u8], signature: &AsymmetricSignature) -> bool {
        let sig = ed25519_dalek::Signature::from_bytes(&signature.0);
        self.0.verify_strict(message, &sig).is_ok()
    }

    /// Verifies a `v1a` signature of one delivery, the id and timestamp as sent. For a
    /// whole `webhook-signature` header, use a [`Verifier`](crate::Verifier).
    ///
    /// ```
    /// use postwire_core::{SigningKey, UnixTime, WebhookHeaders};
    /// let key = SigningKey::generate().unwrap();
    /// let sig = key.sign("msg_1", UnixTime::from_secs(1_700_000_000), b"body").unwrap();
    /// let h = WebhookHeaders::new("msg_1", "1700000000", "").unwrap();
    /// assert!(key.public_key().verify_as_sent(&h, b"body", &sig));
    /// assert!(!key.public_key().verify_as_sent(&h, b"bodY", &sig));
    /// ```
    pub fn verify_as_sent(
        &self,
        headers: &crate::WebhookHeaders<'_>,
        body: &[u8],
        signature: &AsymmetricSignature,
    ) -> bool {
        let message = signed_message(headers.id().as_bytes(), headers.timestamp_raw().as_bytes(), body);
        self.verifies(&message, signature)
    }
}

impl FromStr for PublicKey {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        PublicKey::parse(s)
    }
}

impl fmt::Display for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut buf = [0u8; 44];
        let n = base64::engine::general_purpose::STANDARD
            .encode_slice(self.0.as_bytes(), &mut buf)
            .map_err(|_| fmt::Error)?;
        f.write_str(PUBLIC_KEY_PREFIX)?;
        f.write_str(std::str::from_utf8(buf.get(..n).ok_or(fmt::Error)?).map_err(|_| fmt::Error)?)
    }
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PublicKey({self})")
    }
}

/// An ed25519 signature. `Display` writes it as `v1a,<base64>`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct AsymmetricSignature([u8; ED25519_SIGNATURE_LEN]);

impl AsymmetricSignature {
    /// From the 64 raw bytes (`R ‖ S`).
    pub const fn from_bytes(bytes: [u8; ED25519_SIGNATURE_LEN]) -> Self {
        AsymmetricSignature(bytes)
    }

    /// The 64 raw bytes.
    pub const fn as_bytes(&self) -> &[u8; ED25519_SIGNATURE_LEN] {
        &self.0
    }
}

impl fmt::Display for AsymmetricSignature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut buf = [0u8; SIGNATURE_B64_LEN];
        let n = base64::engine::general_purpose::STANDARD
            .encode_slice(self.0, &mut buf)
            .map_err(|_| fmt::Error)?;
        f.write_str(ASYMMETRIC_SIGNATURE_VERSION)?;
        f.write_str(",")?;
        f.write_str(std::str::from_utf8(buf.get(..n).ok_or(fmt::Error)?).map_err(|_| fmt::Error)?)
    }
}

impl fmt::Debug for AsymmetricSignature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AsymmetricSignature({self})")
    }
}

impl<'a> crate::SignatureHeader<'a> {
    /// The well-formed `v1a` (ed25519) signatures, in header order.
    pub fn asymmetric_signatures(&self) -> impl Iterator<Item = AsymmetricSignature> + 'a {
        self.entries().filter_map(parse_v1a_entry)
    }
}

/// `v1a,<base64 of exactly 64 bytes>`, or `None` (another version, or malformed).
pub(crate) fn parse_v1a_entry(entry: &str) -> Option<AsymmetricSignature> {
    let (version, b64) = entry.split_once(',')?;
    if version != ASYMMETRIC_SIGNATURE_VERSION || b64.len() > SIGNATURE_B64_LEN {
        return None;
    }
    let mut buf = [0u8; ED25519_SIGNATURE_LEN + 1];
    match crate::signature::BASE64_LENIENT.decode_slice(b64, &mut buf) {
        Ok(ED25519_SIGNATURE_LEN) => {
            let mut out = [0u8; ED25519_SIGNATURE_LEN];
            out.copy_from_slice(buf.get(..ED25519_SIGNATURE_LEN)?);
            Some(AsymmetricSignature(out))
        }
        _ => None,
    }
}

/// One key a [`Verifier`](crate::Verifier) trusts: a `v1` secret or a `v1a` public key.
///
/// ```
/// use postwire_core::{TrustedKey, SigningKey};
/// let pk = SigningKey::generate().unwrap().public_key().to_string();
/// assert!(matches!(TrustedKey::parse(&pk).unwrap(), TrustedKey::PublicKey(_)));
/// assert!(matches!(TrustedKey::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap(), TrustedKey::Secret(_)));
/// // A signing key does not belong on the verifying side: give its whpk_ public key.
/// assert_eq!(TrustedKey::parse(&format!("whsk_{}", "A".repeat(44))).unwrap_err().code().as_str(), "invalid_public_key");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrustedKey {
    /// A `whsec_` secret: checks `v1` entries.
    Secret(crate::Secret),
    /// A `whpk_` public key: checks `v1a` entries.
    PublicKey(PublicKey),
}

impl TrustedKey {
    /// Reads a key by its prefix (after surrounding whitespace): `whpk_` is a public key,
    /// `whsk_` is refused (a verifier never needs the power to sign), anything else is
    /// parsed as a `whsec_` secret, prefixed or not.
    pub fn parse(s: &str) -> Result<Self, Error> {
        let t = s.trim_ascii_start();
        if t.starts_with(PUBLIC_KEY_PREFIX) {
            PublicKey::parse(s).map(TrustedKey::PublicKey)
        } else if t.starts_with(SIGNING_KEY_PREFIX) {
            Err(SIGNING_KEY_GIVEN)
        } else {
            crate::Secret::parse(s).map(TrustedKey::Secret)
        }
    }
}

impl FromStr for TrustedKey {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        TrustedKey::parse(s)
    }
}

impl From<crate::Secret> for TrustedKey {
    fn from(s: crate::Secret) -> Self {
        TrustedKey::Secret(s)
    }
}

impl From<PublicKey> for TrustedKey {
    fn from(k: PublicKey) -> Self {
        TrustedKey::PublicKey(k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_hide_the_secret() {
        let k = SigningKey::generate().unwrap();
        let text = k.expose();
        assert!(text.starts_with("whsk_") && text.len() == 5 + 44);
        assert_eq!(SigningKey::parse(&text).unwrap(), k);
        assert!(!format!("{k} {k:?}").contains(&text[5..]));
        let pk = k.public_key();
        assert_eq!(PublicKey::parse(&pk.to_string()).unwrap(), pk);
        assert_ne!(SigningKey::generate().unwrap(), k);
    }

    #[test]
    fn the_64_byte_form_must_agree_with_its_seed() {
        let k = SigningKey::from_seed(&[7; 32]);
        let mut pair = [7u8; 64];
        pair[32..].copy_from_slice(k.public_key().as_bytes());
        let text = format!("whsk_{}", base64::engine::general_purpose::STANDARD.encode(pair));
        assert_eq!(SigningKey::parse(&text).unwrap(), k);
        pair[63] ^= 1;
        let bad = format!("whsk_{}", base64::engine::general_purpose::STANDARD.encode(pair));
        assert_eq!(
            SigningKey::parse(&bad).unwrap_err().code(),
            crate::ErrorCode::InvalidSecret
        );
    }

    #[test]
    fn bad_keys_are_typed_errors() {
        for bad in ["", "whsk_", "whsk_!!!!", "whsk_AAAA===", "whsk_AAAA", &"A".repeat(3000)] {
            assert_eq!(
                SigningKey::parse(bad).unwrap_err().code(),
                crate::ErrorCode::InvalidSecret,
                "{bad:?}"
            );
        }
        for bad in ["", "whpk_", "whpk_!!!!", "whpk_AAAA===", "whpk_AAAA", &"A".repeat(3000)] {
            assert_eq!(
                PublicKey::parse(bad).unwrap_err().code(),
                crate::ErrorCode::InvalidPublicKey,
                "{bad:?}"
            );
        }
        // Small order: the identity (1, 0...) and the point of order 2 (-1 = p - 1 in y).
        let mut identity = [0u8; 32];
        identity[0] = 1;
        assert!(PublicKey::from_bytes(&identity).is_err());
        let mut order2 = [0xffu8; 32];
        order2[0] = 0xec;
        order2[31] = 0x7f;
        assert!(PublicKey::from_bytes(&order2).is_err());
    }

    #[test]
    fn strict_verification_refuses_a_non_canonical_s() {
        let k = SigningKey::from_seed(&[1; 32]);
        let m = signed_message(b"msg_1", b"1", b"body");
        let sig = k.sign_message(&m);
        assert!(k.public_key().verifies(&m, &sig));
        // S + L is the same scalar mod L: lax verifiers accept it; strict ones must not.
        const L: [u8; 32] = [
            0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14, 0, 0, 0, 0,
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10,
        ];
        let mut bytes = *sig.as_bytes();
        let mut carry = 0u16;
        for i in 0..32 {
            let v = u16::from(bytes[32 + i]) + u16::from(L[i]) + carry;
            bytes[32 + i] = v as u8;
            carry = v >> 8;
        }
        // S < L < 2^253, so S + L < 2^254 fits in the 32 bytes with no carry out.
        assert_eq!(carry, 0);
        assert_ne!(&bytes[..], &sig.as_bytes()[..]);
        assert!(!k.public_key().verifies(&m, &AsymmetricSignature::from_bytes(bytes)));
    }

    #[test]
    fn entries_parse_only_as_v1a_of_64_bytes() {
        let k = SigningKey::from_seed(&[2; 32]);
        let sig = k.sign("msg_1", UnixTime::from_secs(1), b"").unwrap().to_string();
        assert_eq!(sig.len(), 4 + 88);
        assert!(parse_v1a_entry(&sig).is_some());
        assert!(parse_v1a_entry(sig.trim_end_matches('=')).is_some());
        assert!(parse_v1a_entry(&sig.replacen("v1a", "v1", 1)).is_none());
        assert!(parse_v1a_entry(&format!("{sig}A")).is_none());
        assert!(parse_v1a_entry(&sig[..sig.len() - 4]).is_none());
    }
}
