//! The generic HMAC recipe, for a provider without a preset: which header holds the
//! signature, the hash, hex or base64, an optional prefix (`sha256=`), what is signed
//! (the body, or a timestamp header, a separator and the body), and the headers naming
//! the delivery's id and type. `docs/providers.md` shows a provider described this way.
//!
//! The signature header holds one signature. The id is the id header's value, else
//! `generic_` and the SHA-256 hex of what is signed.

use super::VerifiedDelivery;
use super::shared::{self, Headers, HmacAlgorithm, HmacKeys};
use crate::headers::HeaderSource;
use crate::{Error, UnixTime};

/// How the signature is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SignatureEncoding {
    /// Hex digits, either case.
    Hex,
    /// Standard base64 (`+/`), padded or not; no stray bits.
    Base64,
}

/// What the HMAC covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignedContent {
    /// The raw body alone. No timestamp: replay protection is the de-duplication by id.
    Body,
    /// `{timestamp}{separator}{body}`, the timestamp (Unix seconds, canonical digits)
    /// read from its own header and checked against a tolerance both ways.
    TimestampAndBody {
        /// The header holding the timestamp.
        timestamp_header: String,
        /// What goes between the timestamp and the body (e.g. `.`, `:` or nothing).
        separator: String,
        /// The tolerance in seconds, both ways (300 is common).
        tolerance_secs: u64,
    },
}

/// A provider's HMAC scheme, field by field.
///
/// ```
/// use postwire_core::UnixTime;
/// use postwire_core::providers::{GenericHmac, HmacAlgorithm, Provider, ProviderVerifier, SignatureEncoding, SignedContent};
/// let recipe = GenericHmac {
///     signature_header: "X-Acme-Signature".into(),
///     algorithm: HmacAlgorithm::Sha256,
///     encoding: SignatureEncoding::Hex,
///     prefix: "sha256=".into(),
///     signed: SignedContent::TimestampAndBody {
///         timestamp_header: "X-Acme-Timestamp".into(),
///         separator: ".".into(),
///         tolerance_secs: 300,
///     },
///     id_header: Some("X-Acme-Delivery".into()),
///     type_header: Some("X-Acme-Event".into()),
/// };
/// let verifier = ProviderVerifier::new(Provider::Generic(recipe), ["acme-secret"])?;
/// let headers = [
///     ("x-acme-signature", "sha256=0000000000000000000000000000000000000000000000000000000000000000"),
///     ("x-acme-timestamp", "1700000000"),
///     ("x-acme-delivery", "d-1"),
/// ];
/// let err = verifier.verify(&headers, b"{}", UnixTime::from_secs(1_700_000_000)).unwrap_err();
/// assert_eq!(err.code().as_str(), "invalid_signature");
/// # Ok::<(), postwire_core::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenericHmac {
    /// The header holding the signature.
    pub signature_header: String,
    /// The HMAC's hash.
    pub algorithm: HmacAlgorithm,
    /// How the signature is written.
    pub encoding: SignatureEncoding,
    /// Text before the signature in its header (e.g. `sha256=`); may be empty.
    pub prefix: String,
    /// What is signed.
    pub signed: SignedContent,
    /// The header naming the delivery's id, if the provider sends one.
    pub id_header: Option<String>,
    /// The header naming the event type, if the provider sends one.
    pub type_header: Option<String>,
}

fn is_header_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 256
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

impl GenericHmac {
    /// The tolerance, when a timestamp is signed.
    pub fn tolerance_secs(&self) -> Option<u64> {
        match &self.signed {
            SignedContent::Body => None,
            SignedContent::TimestampAndBody { tolerance_secs, .. } => Some(*tolerance_secs),
        }
    }

    /// The recipe with its header names in lower case, or why it cannot work.
    pub(crate) fn checked(mut self) -> Result<Self, Error> {
        let bad = |reason| Error::InvalidProviderSettings {
            provider: "generic",
            reason,
        };
        let mut names: Vec<&mut String> = vec![&mut self.signature_header];
        if let SignedContent::TimestampAndBody { timestamp_header, .. } = &mut self.signed {
            names.push(timestamp_header);
        }
        names.extend(self.id_header.as_mut());
        names.extend(self.type_header.as_mut());
        for name in names {
            if !is_header_name(name) {
                return Err(bad(
                    "a header name is empty, longer than 256 bytes or not an HTTP token",
                ));
            }
            name.make_ascii_lowercase();
        }
        if self.prefix.len() > 64 || !self.prefix.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(bad("the prefix must be at most 64 visible ASCII characters"));
        }
        if let SignedContent::TimestampAndBody { separator, .. } = &self.signed
            && separator.len() > 64
        {
            return Err(bad("the separator must be at most 64 bytes"));
        }
        Ok(self)
    }

    fn decode(&self, text: &str) -> Option<Vec<u8>> {
        let len = self.algorithm.tag_len();
        match self.encoding {
            SignatureEncoding::Hex => shared::any_case_hex(text, len),
            SignatureEncoding::Base64 => {
                use base64::Engine as _;
                let no_pad = base64::engine::general_purpose::STANDARD_NO_PAD;
                shared::canonical_base64(text, Some(len))
                    .or_else(|| no_pad.decode(text).ok().filter(|b| b.len() == len))
            }
        }
    }

    pub(crate) fn verify<H: HeaderSource + ?Sized>(
        &self,
        keys: &HmacKeys,
        h: &Headers<'_, H>,
        body: &[u8],
        now: UnixTime,
        tolerance_secs: u64,
    ) -> Result<VerifiedDelivery, Error> {
        let value = h.require(&self.signature_header)?;
        let sig = value
            .strip_prefix(self.prefix.as_str())
            .and_then(|s| self.decode(s))
            .ok_or_else(|| {
                h.invalid(
                    &self.signature_header,
                    "not the prefix and one signature in the recipe's encoding",
                )
            })?;
        let id = match &self.id_header {
            Some(name) => h.name_value(name)?,
            None => None,
        };
        let event_type = match &self.type_header {
            Some(name) => h.name_value(name)?,
            None => None,
        };
        let (parts, timestamp): (Vec<&[u8]>, _) = match &self.signed {
            SignedContent::Body => (vec![body], None),
            SignedContent::TimestampAndBody {
                timestamp_header,
                separator,
                ..
            } => {
                let (raw, ts) = h.timestamp(timestamp_header)?;
                shared::check_tolerance(h.provider, ts, now, tolerance_secs)?;
                (vec![raw.as_bytes(), separator.as_bytes(), body], Some(ts))
            }
        };
        keys.check(self.algorithm, &parts, &[sig])?;
        Ok(VerifiedDelivery {
            id: id.unwrap_or_else(|| shared::derived_id("generic_", &parts)),
            event_type,
            timestamp,
        })
    }
}
