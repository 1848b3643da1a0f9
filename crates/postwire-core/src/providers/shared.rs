//! What several providers' checks share: reading a header as text, strict timestamps and
//! their tolerance, HMAC tags compared in constant time, strict hex and base64, the JSON
//! fields a body names its id and type with, strict form decoding, and derived ids.
//!
//! Everything here is strict where the providers' SDKs are lenient (see
//! `docs/providers.md`): a value that is not exactly what the provider sends is an error,
//! never "close enough".

use std::borrow::Cow;

use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256, Sha512};
use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

use crate::headers::HeaderSource;
use crate::{Error, SignatureDetail, UnixTime};

/// The longest header value read, in bytes: every provider's fits in far less.
pub(crate) const MAX_HEADER_LEN: usize = 4096;
/// The most signatures read from one header (rotation sends two or three).
pub(crate) const MAX_SIGNATURES: usize = 16;
/// The most form parameters read from a body (Node's `querystring` reads 1000).
pub(crate) const MAX_FORM_PARAMS: usize = 1000;
/// The longest id or event type accepted, in bytes (as `webhook-id`).
pub(crate) const MAX_NAME_LEN: usize = crate::MAX_ID_LEN;

/// The hash function of an HMAC signature.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HmacAlgorithm {
    /// HMAC-SHA1 (Twilio's legacy signatures; 20-byte tags).
    Sha1,
    /// HMAC-SHA256 (most providers; 32-byte tags).
    Sha256,
    /// HMAC-SHA512 (64-byte tags).
    Sha512,
}

impl HmacAlgorithm {
    /// The tag length in bytes.
    pub const fn tag_len(self) -> usize {
        match self {
            HmacAlgorithm::Sha1 => 20,
            HmacAlgorithm::Sha256 => 32,
            HmacAlgorithm::Sha512 => 64,
        }
    }
}

/// The HMAC keys of a provider: each secret's bytes exactly as given (providers use the
/// secret text itself as the key), zeroed on drop.
#[derive(Clone)]
pub(crate) struct HmacKeys(Vec<Zeroizing<Vec<u8>>>);

impl HmacKeys {
    pub(crate) fn parse<S: AsRef<str>>(keys: impl IntoIterator<Item = S>) -> Result<Self, Error> {
        let mut out = Vec::new();
        for k in keys {
            let k = k.as_ref();
            if k.is_empty() {
                return Err(Error::InvalidSecret { reason: "empty" });
            }
            if k.len() > crate::MAX_SECRET_STRING_LEN {
                return Err(Error::InvalidSecret {
                    reason: "longer than 2048 bytes",
                });
            }
            out.push(Zeroizing::new(k.as_bytes().to_vec()));
        }
        if out.is_empty() {
            return Err(Error::InvalidSecret {
                reason: "at least one secret is required",
            });
        }
        Ok(HmacKeys(out))
    }

    /// Whether the HMAC of the concatenated `parts` under any key equals any of
    /// `candidates`, each comparison in constant time.
    pub(crate) fn any_matches(&self, alg: HmacAlgorithm, parts: &[&[u8]], candidates: &[Vec<u8>]) -> bool {
        let mut found = false;
        for key in &self.0 {
            let tag = hmac_tag(alg, key, parts);
            for c in candidates {
                found |= bool::from(tag.as_slice().ct_eq(c.as_slice()));
            }
        }
        found
    }

    /// [`any_matches`](Self::any_matches) as a result.
    pub(crate) fn check(&self, alg: HmacAlgorithm, parts: &[&[u8]], candidates: &[Vec<u8>]) -> Result<(), Error> {
        if self.any_matches(alg, parts, candidates) {
            Ok(())
        } else {
            Err(no_match())
        }
    }
}

pub(crate) fn no_match() -> Error {
    Error::InvalidSignature {
        detail: SignatureDetail::NoMatch,
    }
}

fn mac_over<M: Mac + hmac::digest::KeyInit>(key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
    // HMAC takes keys of any length: `new_from_slice` cannot fail for it.
    match <M as hmac::digest::KeyInit>::new_from_slice(key) {
        Ok(mut mac) => {
            for p in parts {
                mac.update(p);
            }
            mac.finalize().into_bytes().to_vec()
        }
        Err(_) => Vec::new(),
    }
}

/// The HMAC tag of the concatenation of `parts`.
pub(crate) fn hmac_tag(alg: HmacAlgorithm, key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
    match alg {
        HmacAlgorithm::Sha1 => mac_over::<Hmac<sha1::Sha1>>(key, parts),
        HmacAlgorithm::Sha256 => mac_over::<Hmac<Sha256>>(key, parts),
        HmacAlgorithm::Sha512 => mac_over::<Hmac<Sha512>>(key, parts),
    }
}

/// A derived id: `<prefix>` and the lower-case hex SHA-256 of the concatenated `parts`.
pub(crate) fn derived_id(prefix: &str, parts: &[&[u8]]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p);
    }
    let digest = h.finalize();
    let mut out = String::with_capacity(prefix.len() + 64);
    out.push_str(prefix);
    out.push_str(&base16ct::lower::encode_string(&digest));
    out
}

/// Reads one provider's headers; every error names the provider and the header.
pub(crate) struct Headers<'a, H: ?Sized> {
    pub(crate) provider: &'static str,
    pub(crate) source: &'a H,
}

impl<'a, H: HeaderSource + ?Sized> Headers<'a, H> {
    pub(crate) fn invalid(&self, name: &str, reason: &'static str) -> Error {
        Error::ProviderInvalidHeader {
            provider: self.provider,
            name: Cow::Owned(name.to_owned()),
            reason,
        }
    }

    /// The value of `name` (lower case), trimmed of spaces and tabs as HTTP does; `None`
    /// when absent. Not UTF-8, empty or longer than [`MAX_HEADER_LEN`]: an error.
    pub(crate) fn get(&self, name: &str) -> Result<Option<&'a str>, Error> {
        let Some(raw) = self.source.header(name) else {
            return Ok(None);
        };
        if raw.len() > MAX_HEADER_LEN {
            return Err(self.invalid(name, "longer than 4096 bytes"));
        }
        let text = std::str::from_utf8(raw).map_err(|_| self.invalid(name, "not UTF-8"))?;
        let text = text.trim_matches([' ', '\t']);
        if text.is_empty() {
            return Err(self.invalid(name, "empty"));
        }
        Ok(Some(text))
    }

    /// [`get`](Self::get), the header being required.
    pub(crate) fn require(&self, name: &str) -> Result<&'a str, Error> {
        self.get(name)?.ok_or_else(|| Error::ProviderMissingHeader {
            provider: self.provider,
            name: Cow::Owned(name.to_owned()),
        })
    }

    /// A header naming the delivery (an id or an event type): 1 to 256 visible ASCII
    /// characters.
    pub(crate) fn name_value(&self, name: &str) -> Result<Option<String>, Error> {
        match self.get(name)? {
            None => Ok(None),
            Some(v) if is_valid_name(v) => Ok(Some(v.to_owned())),
            Some(_) => Err(self.invalid(name, "must be 1 to 256 visible ASCII characters")),
        }
    }

    /// A required [`name_value`](Self::name_value).
    pub(crate) fn require_name(&self, name: &str) -> Result<String, Error> {
        self.require(name)?;
        self.name_value(name)?.ok_or_else(|| self.invalid(name, "empty"))
    }

    /// A Unix-seconds timestamp header, strictly: see [`parse_unix_secs`].
    pub(crate) fn timestamp(&self, name: &str) -> Result<(&'a str, UnixTime), Error> {
        let raw = self.require(name)?;
        let t = parse_unix_secs(raw).ok_or_else(|| {
            self.invalid(
                name,
                "must be Unix time in whole seconds: digits only, no sign, no leading zero",
            )
        })?;
        Ok((raw, t))
    }
}

/// 1 to 256 visible ASCII characters: safe as a `webhook-id`, a header value, a storage key.
pub(crate) fn is_valid_name(v: &str) -> bool {
    !v.is_empty() && v.len() <= MAX_NAME_LEN && v.bytes().all(|b| b.is_ascii_graphic())
}

/// Canonical decimal Unix seconds: `0` or a non-zero digit then digits, at most 19 in
/// all. The SDKs that parse with `parseInt`/`Number` sign the number they read back, so a
/// leading zero, a sign or trailing text would change what is signed: refused.
pub(crate) fn parse_unix_secs(s: &str) -> Option<UnixTime> {
    let b = s.as_bytes();
    let canonical = match b {
        [] => false,
        [b'0'] => true,
        [first, rest @ ..] => (b'1'..=b'9').contains(first) && rest.len() < 19 && rest.iter().all(u8::is_ascii_digit),
    };
    if !canonical {
        return None;
    }
    s.parse::<i64>().ok().map(UnixTime::from_secs)
}

/// `ts` within `tolerance_secs` of `now` either way (both in seconds).
pub(crate) fn check_tolerance(
    provider: &'static str,
    ts: UnixTime,
    now: UnixTime,
    tolerance_secs: u64,
) -> Result<(), Error> {
    check_tolerance_millis(
        provider,
        i128::from(ts.as_secs()) * 1000,
        i128::from(now.as_secs()) * 1000,
        u128::from(tolerance_secs) * 1000,
    )
}

/// The same check in milliseconds (Linear signs a millisecond timestamp, and its SDK
/// compares in milliseconds).
pub(crate) fn check_tolerance_millis(
    provider: &'static str,
    ts_ms: i128,
    now_ms: i128,
    tolerance_ms: u128,
) -> Result<(), Error> {
    let diff = now_ms - ts_ms;
    let tolerance_secs = u64::try_from(tolerance_ms / 1000).unwrap_or(u64::MAX);
    let secs = |d: i128| u64::try_from(d.unsigned_abs().div_ceil(1000)).unwrap_or(u64::MAX);
    if diff.unsigned_abs() <= tolerance_ms {
        Ok(())
    } else if diff > 0 {
        Err(Error::ProviderTimestampTooOld {
            provider,
            age_secs: secs(diff),
            tolerance_secs,
        })
    } else {
        Err(Error::ProviderTimestampTooNew {
            provider,
            ahead_secs: secs(diff),
            tolerance_secs,
        })
    }
}

/// Exactly `len` bytes as lower-case hex (what the SDKs that compare hex text produce).
pub(crate) fn lower_hex(s: &str, len: usize) -> Option<Vec<u8>> {
    if s.len() != len * 2 {
        return None;
    }
    base16ct::lower::decode_vec(s).ok()
}

/// Exactly `len` bytes as hex of either case.
pub(crate) fn any_case_hex(s: &str, len: usize) -> Option<Vec<u8>> {
    if s.len() != len * 2 {
        return None;
    }
    base16ct::mixed::decode_vec(s).ok()
}

/// Standard base64 with its padding and no stray bits: the one text the SDKs that compare
/// base64 text produce. `len`: the decoded length required, if any.
pub(crate) fn canonical_base64(s: &str, len: Option<usize>) -> Option<Vec<u8>> {
    let bytes = base64::engine::general_purpose::STANDARD.decode(s).ok()?;
    match len {
        Some(n) if bytes.len() != n => None,
        _ => Some(bytes),
    }
}

/// The body as UTF-8: the SDKs decode it as text before hashing, so bytes that are not
/// UTF-8 would be hashed as something else there.
pub(crate) fn utf8_body(body: &[u8]) -> Result<&str, Error> {
    std::str::from_utf8(body).map_err(|_| Error::payload("the body is not UTF-8"))
}

/// A string field of a JSON body (id, type): 1 to 256 visible ASCII characters.
pub(crate) fn body_name(field: &str, value: Option<Cow<'_, str>>) -> Result<String, Error> {
    match value {
        Some(v) if is_valid_name(&v) => Ok(v.into_owned()),
        Some(_) => Err(Error::payload(format_args!(
            "the `{field}` field must be 1 to 256 visible ASCII characters"
        ))),
        None => Err(Error::payload(format_args!("the body has no string `{field}` field"))),
    }
}

/// Parses a JSON object body into `T` (a struct of the few borrowed fields wanted; every
/// other field is skipped, never built).
pub(crate) fn json_fields<'a, T: serde::Deserialize<'a>>(body: &'a [u8]) -> Result<T, Error> {
    serde_json::from_slice(body).map_err(|_| Error::payload("the body is not the JSON object expected"))
}

/// `application/x-www-form-urlencoded`, strictly: `+` is a space, every `%` is followed by
/// two hex digits, and the decoded names and values are UTF-8. At most
/// [`MAX_FORM_PARAMS`] pairs; empty pairs (`a=1&&b=2`) are skipped, as browsers and Node do.
pub(crate) fn form_params(body: &str) -> Result<Vec<(String, String)>, Error> {
    let mut out = Vec::new();
    for pair in body.split('&').filter(|p| !p.is_empty()) {
        if out.len() == MAX_FORM_PARAMS {
            return Err(Error::payload("more than 1000 form parameters"));
        }
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        out.push((form_decode(k)?, form_decode(v)?));
    }
    Ok(out)
}

fn form_decode(s: &str) -> Result<String, Error> {
    let b = s.as_bytes();
    let mut i = 0;
    while let Some(pos) = b.get(i..).and_then(|rest| rest.iter().position(|&c| c == b'%')) {
        let at = i + pos;
        let ok = matches!(b.get(at + 1..at + 3), Some([h, l]) if h.is_ascii_hexdigit() && l.is_ascii_hexdigit());
        if !ok {
            return Err(Error::payload(
                "a `%` in the form body is not followed by two hex digits",
            ));
        }
        i = at + 3;
    }
    let plus_as_space = s.replace('+', " ");
    percent_encoding::percent_decode_str(&plus_as_space)
        .decode_utf8()
        .map(Cow::into_owned)
        .map_err(|_| Error::payload("a form parameter is not UTF-8 once decoded"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_canonical_decimals() {
        assert_eq!(parse_unix_secs("0"), Some(UnixTime::from_secs(0)));
        assert_eq!(parse_unix_secs("1700000000"), Some(UnixTime::from_secs(1_700_000_000)));
        for bad in [
            "",
            "01",
            "+1",
            "-1",
            "1.0",
            "1e9",
            " 1",
            "1 ",
            "0x1",
            "99999999999999999999",
            "１",
        ] {
            assert_eq!(parse_unix_secs(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn tolerance_both_ways_in_millis() {
        assert!(check_tolerance_millis("p", 0, 60_000, 60_000).is_ok());
        assert!(check_tolerance_millis("p", 0, -60_000, 60_000).is_ok());
        let old = check_tolerance_millis("p", 0, 60_001, 60_000).unwrap_err();
        assert_eq!(old.code().as_str(), "timestamp_too_old");
        let new = check_tolerance_millis("p", 60_001, 0, 60_000).unwrap_err();
        assert_eq!(new.code().as_str(), "timestamp_too_new");
    }

    #[test]
    fn form_decoding_is_strict() {
        let p = form_params("a=1&&b=x+y%21&c").unwrap();
        assert_eq!(
            p,
            vec![
                ("a".into(), "1".into()),
                ("b".into(), "x y!".into()),
                ("c".into(), String::new())
            ]
        );
        assert!(form_params("a=%2").is_err());
        assert!(form_params("a=%zz").is_err());
        assert!(form_params("a=%ff").is_err());
        assert!(form_params(&"a=1&".repeat(1001)).is_err());
    }

    #[test]
    fn encodings_are_exact() {
        assert_eq!(lower_hex("00ff", 2), Some(vec![0, 255]));
        assert_eq!(lower_hex("00FF", 2), None);
        assert_eq!(any_case_hex("00FF", 2), Some(vec![0, 255]));
        assert_eq!(lower_hex("00f", 2), None);
        assert_eq!(canonical_base64("AAE=", Some(2)), Some(vec![0, 1]));
        assert_eq!(canonical_base64("AAE", Some(2)), None);
        assert_eq!(canonical_base64("AAF=", Some(2)), None);
    }
}
