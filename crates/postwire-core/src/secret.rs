//! Signing secrets: parsing `whsec_<base64>`, generating new ones, and the keyed HMAC.
//!
//! A [`Secret`] keeps its HMAC-SHA256 key already expanded (the inner and outer pads
//! hashed once, at parse time), so each signature costs only the hashing of the message
//! itself. The raw key bytes are zeroed on drop, and neither `Debug` nor `Display` ever
//! shows them: the only way to see the key is [`Secret::expose`], named so that it stands
//! out in review.

use std::fmt;
use std::str::FromStr;

use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use zeroize::Zeroizing;

use crate::signature::Signature;
use crate::{Error, UnixTime};

pub(crate) type HmacSha256 = Hmac<Sha256>;

/// The prefix of a Standard Webhooks secret string.
pub const SECRET_PREFIX: &str = "whsec_";
/// Bytes in a secret made by [`Secret::generate`].
pub const DEFAULT_SECRET_LEN: usize = 32;
/// The smallest key [`Secret::generate_with_len`] makes (Standard Webhooks: 24..=64 bytes).
pub const MIN_GENERATED_SECRET_LEN: usize = 24;
/// The largest key [`Secret::generate_with_len`] makes.
pub const MAX_GENERATED_SECRET_LEN: usize = 64;
/// The longest key accepted, in bytes; real ones are 24 to 64.
pub const MAX_SECRET_KEY_LEN: usize = 1024;
/// The longest secret string accepted by [`Secret::parse`]: room for the `whsec_` form of
/// the longest key, so every secret [`Secret::expose`] writes parses back.
pub const MAX_SECRET_STRING_LEN: usize = 2048;

/// Standard base64 for secrets, whose padding [`Secret::parse`] has already removed:
/// the bits beyond the last whole byte are ignored, as `standardwebhooks` ignores them.
pub(crate) const BASE64_SECRET: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    base64::engine::GeneralPurposeConfig::new()
        .with_decode_padding_mode(base64::engine::DecodePaddingMode::RequireNone)
        .with_decode_allow_trailing_bits(true),
);

/// `s` without its last character when it has 4k + 1 characters (a lone character after
/// groups of four cannot make a byte; `standardwebhooks` never reads it).
pub(crate) fn drop_lone_last_char(s: &str) -> &str {
    // Every real secret is ASCII, where characters are bytes: counting them as such keeps
    // core's general character count (a large function in wasm) off the npm package's
    // cold start.
    let chars = if s.is_ascii() { s.len() } else { s.chars().count() };
    match s.char_indices().next_back() {
        Some((last, _)) if chars % 4 == 1 => &s[..last],
        _ => s,
    }
}

/// An HMAC-SHA256 signing secret.
///
/// ```
/// use postwire_core::{Secret, UnixTime};
/// let secret: Secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".parse().unwrap();
/// let sig = secret.sign("msg_p5jXN8AQM9LWM0D4loKWxJek", UnixTime::from_secs(1614265330), br#"{"test": 2432232314}"#).unwrap();
/// assert_eq!(sig.to_string(), "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
/// assert_eq!(format!("{secret:?}"), "Secret(whsec_…)"); // never the key
/// ```
#[derive(Clone)]
pub struct Secret {
    key: Zeroizing<Vec<u8>>,
    mac: HmacSha256,
}

impl Secret {
    /// Parses `whsec_<base64>`, or the base64 alone, as leniently as the
    /// `standardwebhooks` npm package: every secret it accepts is accepted here and gives
    /// the same key bytes, so a switch never breaks a deployed secret. The rule, in order:
    ///
    /// 1. ASCII whitespace around the secret is ignored (a secret read from a file or an
    ///    `.env` line often ends with a newline or a space).
    /// 2. A leading `whsec_` is removed.
    /// 3. Up to two trailing `=` are removed, whether or not they were the right padding;
    ///    three or more are an error.
    /// 4. If what is left has 4k + 1 characters, the last one is ignored: it cannot carry a
    ///    whole byte, and `standardwebhooks` skips it (whatever it is).
    /// 5. The rest must be standard base64 (`A-Z a-z 0-9 + /`); in a final group of two or
    ///    three characters, the bits beyond the last whole byte are ignored, even if not zero.
    ///
    /// Beyond `standardwebhooks`, unpadded secrets shorter than four characters are accepted
    /// (it throws "incorrect padding" for them). The key may be any non-empty length up to
    /// [`MAX_SECRET_KEY_LEN`] (other senders' secrets vary; only generation enforces
    /// 24..=64 bytes), and the text at most [`MAX_SECRET_STRING_LEN`] bytes.
    ///
    /// ```
    /// use postwire_core::Secret;
    /// let key = Secret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
    /// assert_eq!(Secret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n").unwrap(), key);
    /// assert_eq!(Secret::parse("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw==").unwrap(), key);
    /// assert_eq!(Secret::parse("whsec_AAE").unwrap().expose_bytes(), &[0, 1]);
    /// assert_eq!(Secret::parse("whsec_AAF").unwrap().expose_bytes(), &[0, 1]); // spare bits
    /// assert_eq!(Secret::parse("whsec_AAAAB").unwrap().expose_bytes(), &[0, 0, 0]); // 4k + 1
    /// assert!(Secret::parse("whsec_AAAA===").is_err());
    /// ```
    pub fn parse(s: &str) -> Result<Self, Error> {
        Self::from_key(Self::parse_key(s)?)
    }

    /// The key bytes of a secret string, by [`Secret::parse`]'s rules and with its errors,
    /// without expanding the HMAC key: for a caller that keeps its own HMAC state (the npm
    /// package's wasm module computes its key schedule itself, and compiles less code at a
    /// cold start by not hashing the pads twice).
    ///
    /// ```
    /// use postwire_core::Secret;
    /// let key = Secret::parse_key("whsec_AAE\n").unwrap();
    /// assert_eq!(&key[..], Secret::parse("whsec_AAE").unwrap().expose_bytes());
    /// assert!(Secret::parse_key("whsec_").is_err());
    /// ```
    pub fn parse_key(s: &str) -> Result<Zeroizing<Vec<u8>>, Error> {
        if s.len() > MAX_SECRET_STRING_LEN {
            return Err(Error::InvalidSecret {
                reason: "longer than 2048 characters",
            });
        }
        let s = s.trim_ascii();
        let b64 = s.strip_prefix(SECRET_PREFIX).unwrap_or(s);
        let unpadded = b64.trim_end_matches('=');
        if b64.len() - unpadded.len() > 2 {
            return Err(Error::InvalidSecret {
                reason: "more than two `=` of padding; copy the whole secret as shown once at creation",
            });
        }
        let digits = drop_lone_last_char(unpadded);
        if digits.is_empty() {
            return Err(Error::InvalidSecret {
                reason: "empty; expected `whsec_` followed by base64",
            });
        }
        let key = Zeroizing::new(BASE64_SECRET.decode(digits).map_err(|_| Error::InvalidSecret {
            reason: "not valid base64 after the `whsec_` prefix; copy the whole secret as shown once at creation",
        })?);
        Self::check_key(&key)?;
        Ok(key)
    }

    /// Uses `bytes` as the key directly (the `format: "raw"` of the reference libraries).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        Self::from_key(Zeroizing::new(bytes.to_vec()))
    }

    /// Whether `key` may be a secret's key, by the rules of [`Secret::from_bytes`]: not
    /// empty, at most [`MAX_SECRET_KEY_LEN`] bytes.
    ///
    /// ```
    /// use postwire_core::Secret;
    /// assert!(Secret::check_key(&[7; 32]).is_ok());
    /// assert!(Secret::check_key(&[]).is_err());
    /// ```
    pub fn check_key(key: &[u8]) -> Result<(), Error> {
        if key.is_empty() {
            return Err(Error::InvalidSecret {
                reason: "the key is empty",
            });
        }
        if key.len() > MAX_SECRET_KEY_LEN {
            return Err(Error::InvalidSecret {
                reason: "the key is longer than 1024 bytes",
            });
        }
        Ok(())
    }

    fn from_key(key: Zeroizing<Vec<u8>>) -> Result<Self, Error> {
        Self::check_key(&key)?;
        // HMAC accepts keys of any length, so this cannot fail; map it anyway, never panic.
        let mac = HmacSha256::new_from_slice(&key).map_err(|_| Error::InvalidSecret {
            reason: "HMAC rejected the key",
        })?;
        Ok(Secret { key, mac })
    }

    /// A fresh random secret of [`DEFAULT_SECRET_LEN`] bytes from the operating system's
    /// (or, on wasm, the JavaScript runtime's) secure random source.
    pub fn generate() -> Result<Self, Error> {
        Self::generate_with_len(DEFAULT_SECRET_LEN)
    }

    /// A fresh random secret of `len` bytes; `len` must be within 24..=64.
    pub fn generate_with_len(len: usize) -> Result<Self, Error> {
        if !(MIN_GENERATED_SECRET_LEN..=MAX_GENERATED_SECRET_LEN).contains(&len) {
            return Err(Error::InvalidSecret {
                reason: "a generated key must be 24 to 64 bytes long",
            });
        }
        let mut key = Zeroizing::new(vec![0u8; len]);
        getrandom::fill(&mut key).map_err(|_| Error::InvalidSecret {
            reason: "no secure random source is available",
        })?;
        Self::from_key(key)
    }

    /// The secret as `whsec_<base64>`: for showing it once to its owner, and for storage.
    /// Never log this.
    pub fn expose(&self) -> String {
        let mut s = String::with_capacity(SECRET_PREFIX.len() + self.key.len().div_ceil(3) * 4);
        s.push_str(SECRET_PREFIX);
        base64::engine::general_purpose::STANDARD.encode_string(&self.key[..], &mut s);
        s
    }

    /// The raw key bytes. Never log these.
    pub fn expose_bytes(&self) -> &[u8] {
        &self.key
    }

    /// Signs one delivery: HMAC-SHA256 over `<id>.<timestamp>.<body>`.
    ///
    /// The three parts are streamed into the HMAC; the body is never copied. `id` must be
    /// a valid `webhook-id` (1 to 256 visible ASCII characters), since it goes into a header.
    pub fn sign(&self, id: &str, timestamp: UnixTime, body: &[u8]) -> Result<Signature, Error> {
        crate::headers::validate_id(id)?;
        let mut stream = self.stream(id, timestamp);
        stream.update(body);
        Ok(stream.finish())
    }

    /// Signs with the `webhook-id` and `webhook-timestamp` values exactly as they were sent,
    /// for whoever re-signs a received delivery (an edge proxy): a timestamp sent with
    /// leading zeros stays as sent, where [`Secret::sign`] would write it canonically.
    ///
    /// ```
    /// use postwire_core::{Secret, WebhookHeaders};
    /// let secret = Secret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
    /// let sent = WebhookHeaders::new("msg_p5jXN8AQM9LWM0D4loKWxJek", "1614265330", "").unwrap();
    /// let sig = secret.sign_as_sent(&sent, br#"{"test": 2432232314}"#);
    /// assert_eq!(sig.to_string(), "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    /// ```
    pub fn sign_as_sent(&self, headers: &crate::WebhookHeaders<'_>, body: &[u8]) -> Signature {
        let mut stream = SignatureStream(self.mac_over(headers.id().as_bytes(), headers.timestamp_raw().as_bytes()));
        stream.update(body);
        stream.finish()
    }

    /// Starts a signature whose body arrives in pieces (a streamed request body).
    /// `id` is not validated here; [`Secret::sign`] does that.
    pub fn stream(&self, id: &str, timestamp: UnixTime) -> SignatureStream {
        let mut ts = itoa::Buffer::new();
        SignatureStream(self.mac_over(id.as_bytes(), ts.format(timestamp.as_secs()).as_bytes()))
    }

    /// The keyed HMAC with `<id>.<timestamp>.` already fed in.
    fn mac_over(&self, id: &[u8], timestamp: &[u8]) -> HmacSha256 {
        let mut mac = self.mac.clone();
        mac.update(id);
        mac.update(b".");
        mac.update(timestamp);
        mac.update(b".");
        mac
    }
}

/// A signature being computed over a body that arrives in pieces. From [`Secret::stream`].
///
/// ```
/// use postwire_core::{Secret, UnixTime};
/// let secret = Secret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
/// let mut s = secret.stream("msg_p5jXN8AQM9LWM0D4loKWxJek", UnixTime::from_secs(1614265330));
/// s.update(br#"{"test": "#);
/// s.update(b"2432232314}");
/// assert_eq!(s.finish().to_string(), "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
/// ```
pub struct SignatureStream(HmacSha256);

impl SignatureStream {
    /// Feeds the next piece of the body.
    pub fn update(&mut self, chunk: &[u8]) {
        self.0.update(chunk);
    }

    /// The finished signature.
    pub fn finish(self) -> Signature {
        Signature::from_bytes(self.0.finalize().into_bytes().into())
    }
}

impl FromStr for Secret {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        Secret::parse(s)
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(whsec_…)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("whsec_…")
    }
}

impl PartialEq for Secret {
    /// Constant-time comparison of the keys.
    fn eq(&self, other: &Self) -> bool {
        use subtle::ConstantTimeEq;
        self.key.len() == other.key.len() && bool::from(self.key.ct_eq(&other.key))
    }
}
impl Eq for Secret {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_with_and_without_prefix_and_padding() {
        let a = Secret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        let b = Secret::parse("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        assert_eq!(a, b);
        let padded = Secret::parse("whsec_AAEC").unwrap();
        assert_eq!(padded.expose_bytes(), &[0, 1, 2]);
        let unpadded = Secret::parse("whsec_AAE").unwrap();
        assert_eq!(unpadded.expose_bytes(), &[0, 1]);
        assert_eq!(Secret::parse("whsec_AAE=").unwrap(), unpadded);
    }

    /// The inputs `standardwebhooks` (npm) accepts that a strict decoder rejects, each with
    /// the key it decodes them to there (checked against the package itself by
    /// npm/test/secrets.test.mjs).
    #[test]
    fn accepts_what_standardwebhooks_accepts_with_the_same_key() {
        let key = Secret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        for text in [
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n",   // a file's final newline
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw ",    // a space left in .env
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\r\n", // CRLF (standardwebhooks throws; trimmed here)
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw==",   // excess padding
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwx",    // 4k + 1 characters: the last is ignored
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw!=",   // even when it is not base64
        ] {
            assert_eq!(Secret::parse(text).unwrap(), key, "{text:?}");
        }
        // Non-zero spare bits in the last character: ignored, with or without padding.
        assert_eq!(Secret::parse("whsec_AAF").unwrap().expose_bytes(), &[0, 1]);
        assert_eq!(Secret::parse("whsec_AAH=").unwrap().expose_bytes(), &[0, 1]);
        assert_eq!(Secret::parse("whsec_AB==").unwrap().expose_bytes(), &[0]);
        assert_eq!(Secret::parse("whsec_AB").unwrap().expose_bytes(), &[0]);
        // A 32-byte key padded with one `=`, then excess padding and a trailing newline.
        let long = Secret::from_bytes(&[9; 32]).unwrap();
        let text = long.expose();
        assert!(text.ends_with('='));
        assert_eq!(Secret::parse(&format!("{text}=")).unwrap(), long);
        assert_eq!(Secret::parse(&format!("{text}\n")).unwrap(), long);
        assert_eq!(Secret::parse(text.trim_end_matches('=')).unwrap(), long);
    }

    #[test]
    fn rejects_empty_and_bad_base64_with_invalid_secret() {
        for bad in [
            "",
            "whsec_",
            "whsec_!!!!",
            "whsec_A",
            "whsec_ AAAA",
            "whsec_AAAA===",
            "whsec_AA=A",
            "whsec_=",
            "whsec_==",
            " \n",
            "WHSEC_AAAA",
        ] {
            let err = Secret::parse(bad).unwrap_err();
            assert_eq!(err.code(), crate::ErrorCode::InvalidSecret, "{bad:?}");
            assert!(!err.to_string().contains(bad.trim_start_matches("whsec_")) || bad.len() <= 6);
        }
        assert!(Secret::from_bytes(&[]).is_err());
    }

    #[test]
    fn generation_enforces_24_to_64_bytes() {
        assert_eq!(Secret::generate().unwrap().expose_bytes().len(), 32);
        assert!(Secret::generate_with_len(23).is_err());
        assert!(Secret::generate_with_len(65).is_err());
        assert_eq!(Secret::generate_with_len(64).unwrap().expose_bytes().len(), 64);
        assert_ne!(Secret::generate().unwrap(), Secret::generate().unwrap());
    }

    #[test]
    fn every_accepted_secret_round_trips_through_expose() {
        // Found by the secret_parse fuzz target: a long unpadded, unprefixed string parsed,
        // but its `whsec_` form was over the string limit and did not parse back.
        // 1020 characters was the failing case (its whsec_ form has 1026); 1364 is a
        // 1023-byte key, just under the key limit.
        for len in [1020, 1022, 1364] {
            let secret = Secret::parse(&"A".repeat(len)).unwrap();
            assert_eq!(Secret::parse(&secret.expose()).unwrap(), secret);
        }
        assert!(Secret::from_bytes(&[7; MAX_SECRET_KEY_LEN]).is_ok());
        assert!(Secret::from_bytes(&[7; MAX_SECRET_KEY_LEN + 1]).is_err());
        let max = Secret::from_bytes(&[7; MAX_SECRET_KEY_LEN]).unwrap();
        assert!(max.expose().len() <= MAX_SECRET_STRING_LEN);
    }

    #[test]
    fn expose_round_trips() {
        let s = Secret::generate().unwrap();
        let text = s.expose();
        assert!(text.starts_with("whsec_"));
        assert_eq!(Secret::parse(&text).unwrap(), s);
        assert!(!format!("{s} {s:?}").contains(&text[6..]));
    }
}
