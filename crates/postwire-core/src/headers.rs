//! Reading the three `webhook-*` headers from whatever header collection the caller has.
//!
//! [`HeaderSource`] is sealed: it is implemented here for the collections people have
//! (`http::HeaderMap` with the `http` feature, slices and vectors of name/value pairs,
//! `HashMap` and `BTreeMap` of strings) and for [`WebhookHeaders`], the three values
//! already picked out. Look-ups ignore ASCII case, as HTTP requires.

use std::collections::{BTreeMap, HashMap};

use crate::{Error, UnixTime};

/// `webhook-id`: the event id, unchanged across retries.
pub const ID_HEADER: &str = "webhook-id";
/// `webhook-timestamp`: Unix seconds at which this attempt was sent.
pub const TIMESTAMP_HEADER: &str = "webhook-timestamp";
/// `webhook-signature`: space-separated `v1,<base64>` signatures.
pub const SIGNATURE_HEADER: &str = "webhook-signature";
/// The longest `webhook-id` accepted, in bytes.
pub const MAX_ID_LEN: usize = 256;

mod sealed {
    pub trait Sealed {}
}

/// A collection of HTTP headers that the verifier can read. Sealed: see the module docs
/// for the implementations.
pub trait HeaderSource: sealed::Sealed {
    /// The first value of header `name` (given in lower case), matched case-insensitively.
    fn header(&self, name: &str) -> Option<&[u8]>;
}

fn find<'a, K: AsRef<str> + 'a, V: AsRef<str> + 'a>(
    mut pairs: impl Iterator<Item = (&'a K, &'a V)>,
    name: &str,
) -> Option<&'a [u8]> {
    pairs
        .find(|(k, _)| k.as_ref().eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_ref().as_bytes())
}

impl<K: AsRef<str>, V: AsRef<str>> sealed::Sealed for [(K, V)] {}
impl<K: AsRef<str>, V: AsRef<str>> HeaderSource for [(K, V)] {
    fn header(&self, name: &str) -> Option<&[u8]> {
        find(self.iter().map(|(k, v)| (k, v)), name)
    }
}

impl<K: AsRef<str>, V: AsRef<str>, const N: usize> sealed::Sealed for [(K, V); N] {}
impl<K: AsRef<str>, V: AsRef<str>, const N: usize> HeaderSource for [(K, V); N] {
    fn header(&self, name: &str) -> Option<&[u8]> {
        self.as_slice().header(name)
    }
}

impl<K: AsRef<str>, V: AsRef<str>> sealed::Sealed for Vec<(K, V)> {}
impl<K: AsRef<str>, V: AsRef<str>> HeaderSource for Vec<(K, V)> {
    fn header(&self, name: &str) -> Option<&[u8]> {
        self.as_slice().header(name)
    }
}

impl<K: AsRef<str>, V: AsRef<str>, S> sealed::Sealed for HashMap<K, V, S> {}
impl<K: AsRef<str>, V: AsRef<str>, S> HeaderSource for HashMap<K, V, S> {
    fn header(&self, name: &str) -> Option<&[u8]> {
        find(self.iter(), name)
    }
}

impl<K: AsRef<str>, V: AsRef<str>> sealed::Sealed for BTreeMap<K, V> {}
impl<K: AsRef<str>, V: AsRef<str>> HeaderSource for BTreeMap<K, V> {
    fn header(&self, name: &str) -> Option<&[u8]> {
        find(self.iter(), name)
    }
}

#[cfg(feature = "http")]
impl sealed::Sealed for http::HeaderMap {}
#[cfg(feature = "http")]
impl HeaderSource for http::HeaderMap {
    fn header(&self, name: &str) -> Option<&[u8]> {
        // HeaderMap keys are lower case already; `get` with a lower-case &str matches.
        self.get(name).map(http::HeaderValue::as_bytes)
    }
}

/// The three `webhook-*` header values, picked out and checked.
///
/// ```
/// use postwire_core::WebhookHeaders;
/// let h = WebhookHeaders::new("msg_1", "1614265330", "v1,abc").unwrap();
/// assert_eq!(h.timestamp().as_secs(), 1614265330);
/// let from_pairs = WebhookHeaders::from_source(&[
///     ("Webhook-Id", "msg_1"), ("WEBHOOK-TIMESTAMP", "1614265330"), ("webhook-signature", "v1,abc"),
/// ]).unwrap();
/// assert_eq!(from_pairs, h);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WebhookHeaders<'a> {
    id: &'a str,
    timestamp_raw: &'a str,
    timestamp: UnixTime,
    signature: &'a str,
}

impl<'a> WebhookHeaders<'a> {
    /// Checks the three values: the id is 1 to 256 visible ASCII characters; the timestamp
    /// is decimal digits only (no sign, no fraction, no trailing text); the signature is
    /// ASCII. Surrounding whitespace is trimmed, as HTTP does.
    pub fn new(id: &'a str, timestamp: &'a str, signature: &'a str) -> Result<Self, Error> {
        let id = id.trim_matches(is_ows);
        validate_id(id)?;
        let timestamp_raw = timestamp.trim_matches(is_ows);
        let timestamp = parse_timestamp(timestamp_raw)?;
        let signature = signature.trim_matches(is_ows);
        if !signature.is_ascii() {
            return Err(Error::InvalidHeader {
                name: SIGNATURE_HEADER,
                reason: "not ASCII",
            });
        }
        Ok(WebhookHeaders {
            id,
            timestamp_raw,
            timestamp,
            signature,
        })
    }

    /// Reads and checks the three headers from any [`HeaderSource`].
    pub fn from_source<H: HeaderSource + ?Sized>(headers: &'a H) -> Result<Self, Error> {
        let get = |name: &'static str| header_text(name, headers.header(name));
        Self::new(get(ID_HEADER)?, get(TIMESTAMP_HEADER)?, get(SIGNATURE_HEADER)?)
    }

    /// The `webhook-id`.
    pub fn id(&self) -> &'a str {
        self.id
    }

    /// The `webhook-timestamp`.
    pub fn timestamp(&self) -> UnixTime {
        self.timestamp
    }

    /// The timestamp exactly as it was sent: this, not a re-formatted number, is signed.
    pub fn timestamp_raw(&self) -> &'a str {
        self.timestamp_raw
    }

    /// The `webhook-signature` value.
    pub fn signature(&self) -> &'a str {
        self.signature
    }
}

impl sealed::Sealed for WebhookHeaders<'_> {}
impl HeaderSource for WebhookHeaders<'_> {
    fn header(&self, name: &str) -> Option<&[u8]> {
        let v = if name.eq_ignore_ascii_case(ID_HEADER) {
            self.id
        } else if name.eq_ignore_ascii_case(TIMESTAMP_HEADER) {
            self.timestamp_raw
        } else if name.eq_ignore_ascii_case(SIGNATURE_HEADER) {
            self.signature
        } else {
            return None;
        };
        Some(v.as_bytes())
    }
}

/// A header's value as text, or the error naming it. Not inlined: three copies of UTF-8
/// validation in [`WebhookHeaders::from_source`] made the npm package's wasm compile
/// about 3 KB more code at a cold start.
#[inline(never)]
fn header_text<'a>(name: &'static str, raw: Option<&'a [u8]>) -> Result<&'a str, Error> {
    let raw = raw.ok_or(Error::MissingHeader { name })?;
    std::str::from_utf8(raw).map_err(|_| Error::InvalidHeader {
        name,
        reason: "not ASCII",
    })
}

fn is_ows(c: char) -> bool {
    c == ' ' || c == '\t'
}

/// A `webhook-id` is 1 to [`MAX_ID_LEN`] visible ASCII characters (no spaces, no
/// control characters), so it is safe in a header and as a storage key.
pub fn validate_id(id: &str) -> Result<(), Error> {
    const NAME: &str = ID_HEADER;
    if id.is_empty() {
        return Err(Error::InvalidHeader {
            name: NAME,
            reason: "empty",
        });
    }
    if id.len() > MAX_ID_LEN {
        return Err(Error::InvalidHeader {
            name: NAME,
            reason: "longer than 256 bytes",
        });
    }
    if !id.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(Error::InvalidHeader {
            name: NAME,
            reason: "must be visible ASCII characters without spaces",
        });
    }
    Ok(())
}

/// Decimal digits only, at most 19 of them, fitting an `i64`. Trailing text such as
/// `1614265330abc` is rejected (JavaScript's `parseInt` would accept it; we do not).
fn parse_timestamp(s: &str) -> Result<UnixTime, Error> {
    const NAME: &str = TIMESTAMP_HEADER;
    if s.is_empty() {
        return Err(Error::InvalidHeader {
            name: NAME,
            reason: "empty",
        });
    }
    if s.len() > 19 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Error::InvalidHeader {
            name: NAME,
            reason: "must be Unix time in whole seconds, digits only",
        });
    }
    s.parse::<i64>()
        .map(UnixTime::from_secs)
        .map_err(|_| Error::InvalidHeader {
            name: NAME,
            reason: "out of range",
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorCode;

    #[test]
    fn missing_headers_are_named() {
        let err = WebhookHeaders::from_source(&[("webhook-id", "a"), ("webhook-signature", "v1,x")]).unwrap_err();
        assert_eq!(err, Error::MissingHeader { name: TIMESTAMP_HEADER });
    }

    #[test]
    fn timestamps_must_be_plain_digits() {
        for bad in [
            "",
            "-1",
            "+1",
            "1.5",
            "1614265330abc",
            "0x10",
            "99999999999999999999",
            "１２",
        ] {
            let e = WebhookHeaders::new("id", bad, "").unwrap_err();
            assert_eq!(e.code(), ErrorCode::InvalidHeader, "{bad:?}");
        }
        assert_eq!(WebhookHeaders::new("id", " 42\t", "").unwrap().timestamp_raw(), "42");
    }

    #[test]
    fn ids_must_be_visible_ascii() {
        for bad in ["", "a b", "a\nb", "é", &"x".repeat(257)] {
            assert_eq!(
                validate_id(bad).unwrap_err().code(),
                ErrorCode::InvalidHeader,
                "{bad:?}"
            );
        }
        assert!(validate_id(&"x".repeat(256)).is_ok());
    }

    #[test]
    fn lookups_ignore_case_in_maps() {
        let mut m = HashMap::new();
        m.insert("WeBhOoK-Id".to_string(), "abc".to_string());
        assert_eq!(m.header("webhook-id"), Some(&b"abc"[..]));
        let b: BTreeMap<&str, &str> = [("webhook-id", "x")].into_iter().collect();
        assert_eq!(b.header("WEBHOOK-ID"), Some(&b"x"[..]));
    }
}
