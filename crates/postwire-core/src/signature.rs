//! One `v1` signature, and the parser for the `webhook-signature` header.
//!
//! The header holds space-separated entries `<version>,<base64>`. Entries of another
//! version, or malformed ones, are skipped rather than fatal, so senders can add new
//! schemes without breaking receivers. An entry may end with one comma: a header that
//! arrives as several lines is joined with `", "` by HTTP stacks (the Fetch API, Node),
//! which would otherwise cost the first line its signature.
//!
//! The parser does bounded work on hostile input: it refuses headers over
//! [`MAX_SIGNATURE_HEADER_LEN`] bytes or with more than [`MAX_SIGNATURES`] entries before
//! decoding anything.

use std::fmt;

use base64::Engine as _;
use subtle::ConstantTimeEq;

use crate::{Error, SignatureDetail};

/// Standard base64 that accepts input with or without `=` padding (some senders strip it).
pub(crate) const BASE64_LENIENT: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    base64::engine::GeneralPurposeConfig::new()
        .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
);

/// The signature scheme version this crate produces and checks.
pub const SIGNATURE_VERSION: &str = "v1";
/// The longest `webhook-signature` header accepted, in bytes.
pub const MAX_SIGNATURE_HEADER_LEN: usize = 8 * 1024;
/// The most entries accepted in one `webhook-signature` header.
pub const MAX_SIGNATURES: usize = 64;
/// Bytes in an HMAC-SHA256 output.
pub const SIGNATURE_LEN: usize = 32;

/// An HMAC-SHA256 signature. `Display` writes it as `v1,<base64>`.
#[derive(Clone, Copy)]
pub struct Signature([u8; SIGNATURE_LEN]);

impl Signature {
    /// From the 32 raw bytes of an HMAC-SHA256 output.
    pub const fn from_bytes(bytes: [u8; SIGNATURE_LEN]) -> Self {
        Signature(bytes)
    }

    /// The 32 raw bytes.
    pub const fn as_bytes(&self) -> &[u8; SIGNATURE_LEN] {
        &self.0
    }

    /// Constant-time comparison.
    pub fn ct_eq(&self, other: &Signature) -> bool {
        bool::from(self.0.ct_eq(&other.0))
    }
}

impl PartialEq for Signature {
    fn eq(&self, other: &Self) -> bool {
        self.ct_eq(other)
    }
}
impl Eq for Signature {}

impl fmt::Display for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut buf = [0u8; 44];
        // 32 bytes always encode to exactly 44 base64 characters.
        let n = base64::engine::general_purpose::STANDARD
            .encode_slice(self.0, &mut buf)
            .map_err(|_| fmt::Error)?;
        f.write_str(SIGNATURE_VERSION)?;
        f.write_str(",")?;
        f.write_str(std::str::from_utf8(buf.get(..n).ok_or(fmt::Error)?).map_err(|_| fmt::Error)?)
    }
}

impl fmt::Debug for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Signature({self})")
    }
}

/// A checked `webhook-signature` header value, whose `v1` signatures are decoded lazily
/// (verification allocates nothing).
///
/// ```
/// use postwire_core::SignatureHeader;
/// let sig = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";
/// let value = format!("v2,xyz {sig} v1,not-base64");
/// let h = SignatureHeader::parse(&value).unwrap();
/// let sigs: Vec<_> = h.signatures().collect();
/// assert_eq!(sigs.len(), 1);
/// assert_eq!(sigs[0].to_string(), sig);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct SignatureHeader<'a> {
    value: &'a str,
}

impl<'a> SignatureHeader<'a> {
    /// Checks a header value against the size and entry limits. Unknown versions and
    /// malformed entries are not errors: [`signatures`](Self::signatures) skips them.
    pub fn parse(value: &'a str) -> Result<Self, Error> {
        const NAME: &str = crate::headers::SIGNATURE_HEADER;
        if value.len() > MAX_SIGNATURE_HEADER_LEN {
            return Err(Error::InvalidHeader {
                name: NAME,
                reason: "longer than 8192 bytes",
            });
        }
        if value.split_ascii_whitespace().nth(MAX_SIGNATURES).is_some() {
            return Err(Error::InvalidHeader {
                name: NAME,
                reason: "more than 64 signatures",
            });
        }
        Ok(SignatureHeader { value })
    }

    /// The well-formed `v1` signatures, in header order.
    pub fn signatures(&self) -> impl Iterator<Item = Signature> + 'a {
        self.value
            .split_ascii_whitespace()
            .map(|entry| entry.strip_suffix(',').unwrap_or(entry))
            .filter_map(parse_v1_entry)
    }

    /// Every entry, in header order, without the one trailing comma an entry may have
    /// (`v1a` parsing, in `asymmetric`, reads them through this).
    #[cfg(feature = "ed25519")]
    pub(crate) fn entries(&self) -> impl Iterator<Item = &'a str> + 'a {
        self.value
            .split_ascii_whitespace()
            .map(|entry| entry.strip_suffix(',').unwrap_or(entry))
    }

    /// Whether any `v1` signature equals one of `expected`. Every entry is compared with
    /// every expected signature, each comparison in constant time.
    pub fn matches_any(&self, expected: &[Signature]) -> Result<(), Error> {
        let mut seen_v1 = false;
        let mut found = false;
        for sig in self.signatures() {
            seen_v1 = true;
            for e in expected {
                found |= sig.ct_eq(e);
            }
        }
        match (found, seen_v1) {
            (true, _) => Ok(()),
            (false, true) => Err(Error::InvalidSignature {
                detail: SignatureDetail::NoMatch,
            }),
            (false, false) => Err(Error::InvalidSignature {
                detail: SignatureDetail::NoV1Signature,
            }),
        }
    }
}

/// `v1,<base64 of exactly 32 bytes>`, or `None`. `v1,<sig>,extra` is malformed (the extra
/// part makes the base64 invalid), as in the Rust and Python reference libraries.
fn parse_v1_entry(entry: &str) -> Option<Signature> {
    let (version, b64) = entry.split_once(',')?;
    if version != SIGNATURE_VERSION || b64.len() > 44 {
        return None;
    }
    let mut buf = [0u8; 33];
    match BASE64_LENIENT.decode_slice(b64, &mut buf) {
        Ok(SIGNATURE_LEN) => {
            let mut out = [0u8; SIGNATURE_LEN];
            out.copy_from_slice(&buf[..SIGNATURE_LEN]);
            Some(Signature(out))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIG: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

    #[test]
    fn skips_other_versions_and_malformed_entries() {
        let value = format!("v1a,{} {SIG},extra v1, v1 ,, v2,{} {SIG}", &SIG[3..], &SIG[3..]);
        let h = SignatureHeader::parse(&value).unwrap();
        assert_eq!(h.signatures().count(), 1);
        let h = SignatureHeader::parse("").unwrap();
        assert_eq!(h.signatures().count(), 0);
    }

    #[test]
    fn reads_a_header_sent_as_several_lines_and_joined_with_a_comma() {
        let other = format!("v1,{}", "A".repeat(43) + "=");
        let joined = format!("{SIG}, {other}");
        let sigs: Vec<_> = SignatureHeader::parse(&joined).unwrap().signatures().collect();
        assert_eq!(sigs.len(), 2);
        assert_eq!(sigs[0].to_string(), SIG);
        // One comma only: two make the entry malformed.
        let two = format!("{SIG},, {other}");
        assert_eq!(SignatureHeader::parse(&two).unwrap().signatures().count(), 1);
    }

    #[test]
    fn accepts_unpadded_signature_and_extra_spaces() {
        let value = format!("  {}   {SIG}  ", SIG.trim_end_matches('='));
        let sigs: Vec<_> = SignatureHeader::parse(&value).unwrap().signatures().collect();
        assert_eq!(sigs.len(), 2);
        assert!(sigs[0] == sigs[1]);
    }

    #[test]
    fn rejects_oversized_headers_before_parsing() {
        let many = vec![SIG; MAX_SIGNATURES + 1].join(" ");
        assert_eq!(
            SignatureHeader::parse(&many).unwrap_err().code(),
            crate::ErrorCode::InvalidHeader
        );
        let ok = vec![SIG; MAX_SIGNATURES].join(" ");
        assert_eq!(
            SignatureHeader::parse(&ok).unwrap().signatures().count(),
            MAX_SIGNATURES
        );
        let long = "x".repeat(MAX_SIGNATURE_HEADER_LEN + 1);
        assert!(SignatureHeader::parse(&long).is_err());
    }

    #[test]
    fn wrong_length_signatures_are_skipped() {
        let short = "v1,AAAA";
        let long = format!("v1,{}", "A".repeat(48));
        let value = format!("{short} {long}");
        let h = SignatureHeader::parse(&value).unwrap();
        assert_eq!(h.signatures().count(), 0);
        assert_eq!(
            h.matches_any(&[]).unwrap_err(),
            Error::InvalidSignature {
                detail: SignatureDetail::NoV1Signature
            }
        );
    }
}
