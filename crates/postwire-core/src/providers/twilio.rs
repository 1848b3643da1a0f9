//! Twilio: `X-Twilio-Signature`, the base64 HMAC of the public URL Twilio called followed
//! by every form parameter (names sorted, each name then its value), with the account's
//! auth token. HMAC-SHA1, or HMAC-SHA256 when `X-Twilio-Webhooks-Signature-Settings`
//! names `algorithm=HMAC_SHA256`. The URL is part of what is signed, and a proxy cannot
//! see it (TLS ends before it, hosts and paths are rewritten): it is a setting,
//! [`TwilioConfig::url`], exactly as configured in Twilio's console. A request signed for
//! another URL fails as `invalid_signature`: the two cannot be told apart.
//!
//! No timestamp: replay protection is the de-duplication by id, the
//! `I-Twilio-Idempotency-Token` header when present, else `twilio_` and the SHA-256 hex
//! of the signed text (URL and sorted parameters). No event type.
//!
//! Stricter than `twilio`'s `validateRequest`: only the URL as configured (the SDK also
//! tries it with and without the default port and re-encoded), form bodies decoded
//! strictly (a `%` not followed by two hex digits, or bytes that are not UTF-8 once
//! decoded, are refused where Node's `querystring` keeps them as they are), and JSON
//! bodies signed through a `bodySHA256` query parameter are not supported.

use super::VerifiedDelivery;
use super::shared::{self, Headers, HmacAlgorithm, HmacKeys};
use crate::Error;
use crate::headers::HeaderSource;

const SIGNATURE: &str = "x-twilio-signature";
const SETTINGS: &str = "x-twilio-webhooks-signature-settings";
const IDEMPOTENCY: &str = "i-twilio-idempotency-token";
/// The longest public URL accepted.
const MAX_URL_LEN: usize = 2048;

/// Twilio's settings: the public URL it calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TwilioConfig {
    /// The full URL Twilio was configured to call (scheme, host, path and query string),
    /// exactly as in its console: this text is signed.
    pub url: String,
}

impl TwilioConfig {
    /// Settings with `url`, checked when a [`ProviderVerifier`](super::ProviderVerifier)
    /// is made.
    pub fn new(url: impl Into<String>) -> Self {
        TwilioConfig { url: url.into() }
    }

    pub(crate) fn check(&self) -> Result<(), Error> {
        let bad = |reason| Error::InvalidProviderSettings {
            provider: "twilio",
            reason,
        };
        let rest = self
            .url
            .strip_prefix("https://")
            .or_else(|| self.url.strip_prefix("http://"))
            .ok_or(bad("the public URL must start with https:// or http://"))?;
        if rest.is_empty() || self.url.len() > MAX_URL_LEN {
            return Err(bad("the public URL must have a host and at most 2048 characters"));
        }
        if self
            .url
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || c == '#')
        {
            return Err(bad(
                "the public URL must not hold spaces, control characters or a fragment",
            ));
        }
        Ok(())
    }
}

/// JavaScript's default sort order: UTF-16 code units.
fn utf16_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

/// The text Twilio signs: the URL, then for each name in sorted order, each of its
/// distinct values in sorted order as name and value.
fn signed_text(url: &str, params: Vec<(String, String)>) -> String {
    let mut grouped: Vec<(String, Vec<String>)> = Vec::new();
    for (k, v) in params {
        match grouped.iter_mut().find(|(name, _)| *name == k) {
            Some((_, values)) => values.push(v),
            None => grouped.push((k, vec![v])),
        }
    }
    grouped.sort_by(|a, b| utf16_cmp(&a.0, &b.0));
    let mut out = String::from(url);
    for (name, mut values) in grouped {
        values.sort_by(|a, b| utf16_cmp(a, b));
        values.dedup();
        for v in values {
            out.push_str(&name);
            out.push_str(&v);
        }
    }
    out
}

pub(crate) fn verify<H: HeaderSource + ?Sized>(
    config: &TwilioConfig,
    keys: &HmacKeys,
    h: &Headers<'_, H>,
    body: &[u8],
) -> Result<VerifiedDelivery, Error> {
    let value = h.require(SIGNATURE)?;
    let alg = match h.get(SETTINGS)? {
        None => HmacAlgorithm::Sha1,
        Some(settings) => {
            let named = settings
                .split(',')
                .filter_map(|part| part.split_once('='))
                .find(|(k, v)| k.trim() == "algorithm" && !v.trim().is_empty())
                .map(|(_, v)| v.trim());
            match named {
                None => HmacAlgorithm::Sha1,
                Some(a) if a.eq_ignore_ascii_case("HMAC_SHA1") => HmacAlgorithm::Sha1,
                Some(a) if a.eq_ignore_ascii_case("HMAC_SHA256") => HmacAlgorithm::Sha256,
                Some(_) => return Err(h.invalid(SETTINGS, "names an algorithm other than HMAC_SHA1 or HMAC_SHA256")),
            }
        }
    };
    let sig = shared::canonical_base64(value, Some(alg.tag_len()))
        .ok_or_else(|| h.invalid(SIGNATURE, "must be the padded base64 of one HMAC"))?;
    let id = h.name_value(IDEMPOTENCY)?;
    let text = shared::utf8_body(body)?;
    let signed = signed_text(&config.url, shared::form_params(text)?);
    keys.check(alg, &[signed.as_bytes()], &[sig])?;
    Ok(VerifiedDelivery {
        id: id.unwrap_or_else(|| shared::derived_id("twilio_", &[signed.as_bytes()])),
        event_type: None,
        timestamp: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_sort_by_utf16_and_repeat_distinct_values() {
        let p = |k: &str, v: &str| (k.to_string(), v.to_string());
        let text = signed_text(
            "https://x/",
            vec![
                p("b", "2"),
                p("a", "z"),
                p("a", "y"),
                p("a", "z"),
                p("\u{1F600}", "e"),
                p("\u{FF21}", "f"),
            ],
        );
        // U+1F600 is a surrogate pair (0xD83D…) and sorts before U+FF21 in UTF-16.
        assert_eq!(text, "https://x/ayazb2\u{1F600}e\u{FF21}f");
    }

    #[test]
    fn urls_are_checked() {
        assert!(TwilioConfig::new("https://example.com/sms").check().is_ok());
        for bad in ["example.com", "https://", "https://a b", "https://a#f", "ftp://a"] {
            assert_eq!(
                TwilioConfig::new(bad).check().unwrap_err().code().as_str(),
                "invalid_provider_settings",
                "{bad}"
            );
        }
    }
}
