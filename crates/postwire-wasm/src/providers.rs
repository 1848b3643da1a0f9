//! Other providers' webhooks (postwire-core's `providers`) for a third module of the npm
//! package, compiled only with this crate's `providers` feature: the default `v1` module and
//! the `v1a` module carry none of SHA-1, SHA-512, P-256 or the providers' parsing.
//!
//! One call per delivery ([`verify_provider`]), numbers only across the boundary, as the rest
//! of the module. The scratch buffer holds, in order:
//!
//! - the provider: a preset's name (`stripe`, `github`, …, `standard-webhooks`),
//!   `twilio <public URL>`, or `generic` and the recipe's nine fields separated by tabs
//!   (signature header, `sha1`/`sha256`/`sha512`, `hex`/`base64`, prefix, timestamp header
//!   or empty for the body alone, separator, tolerance in seconds, id header or empty, type
//!   header or empty);
//! - the keys, one per line (secrets, or public keys as each provider shows them);
//! - the headers, name and value on alternate lines (HTTP header values hold no line feed);
//! - the raw body.
//!
//! Keys are parsed on every call: nothing per object lives in wasm memory. Every decision is
//! postwire-core's.

use postwire_core::providers::{
    GenericHmac, HmacAlgorithm, Provider, ProviderVerifier, SignatureEncoding, SignedContent, TwilioConfig,
};
use postwire_core::{Error, UnixTime};
use wasm_bindgen::prelude::*;

use crate::codes::fail;
use crate::scratch;

fn settings(reason: &'static str) -> Error {
    Error::InvalidProviderSettings {
        provider: "generic",
        reason,
    }
}

/// The provider named by `spec` (see the module docs).
pub(crate) fn parse_provider(spec: &str) -> Result<Provider, Error> {
    if let Some(url) = spec.strip_prefix("twilio ") {
        return Ok(Provider::Twilio(TwilioConfig::new(url)));
    }
    if let Some(fields) = spec.strip_prefix("generic\t") {
        let f: Vec<&str> = fields.split('\t').collect();
        let [
            signature_header,
            algorithm,
            encoding,
            prefix,
            timestamp_header,
            separator,
            tolerance,
            id_header,
            type_header,
        ] = f.as_slice()
        else {
            return Err(settings("a recipe has nine tab-separated fields"));
        };
        let algorithm = match *algorithm {
            "sha1" => HmacAlgorithm::Sha1,
            "sha256" => HmacAlgorithm::Sha256,
            "sha512" => HmacAlgorithm::Sha512,
            _ => return Err(settings("the algorithm is sha1, sha256 or sha512")),
        };
        let encoding = match *encoding {
            "hex" => SignatureEncoding::Hex,
            "base64" => SignatureEncoding::Base64,
            _ => return Err(settings("the encoding is hex or base64")),
        };
        let signed = if timestamp_header.is_empty() {
            SignedContent::Body
        } else {
            SignedContent::TimestampAndBody {
                timestamp_header: (*timestamp_header).into(),
                separator: (*separator).into(),
                tolerance_secs: tolerance
                    .parse()
                    .map_err(|_| settings("the tolerance is whole seconds"))?,
            }
        };
        let optional = |s: &str| (!s.is_empty()).then(|| s.to_string());
        return Ok(Provider::Generic(GenericHmac {
            signature_header: (*signature_header).into(),
            algorithm,
            encoding,
            prefix: (*prefix).into(),
            signed,
            id_header: optional(id_header),
            type_header: optional(type_header),
        }));
    }
    Provider::preset(spec).ok_or(Error::InvalidProviderSettings {
        provider: "unknown",
        reason: "not a provider's name: standard-webhooks, stripe, github, shopify, slack, twilio <url>, paddle, linear, sendgrid, discord or a generic recipe",
    })
}

/// The headers' lines as name/value pairs.
fn header_pairs(text: &str) -> Result<Vec<(&str, &str)>, Error> {
    let mut lines = text.split('\n');
    let mut pairs = Vec::new();
    while let Some(name) = lines.next() {
        if name.is_empty() && pairs.is_empty() && text.is_empty() {
            break;
        }
        let value = lines.next().ok_or_else(|| Error::InvalidPayload {
            reason: "the header lines are not name/value pairs".into(),
        })?;
        pairs.push((name, value));
    }
    Ok(pairs)
}

fn text(bytes: &[u8]) -> Result<&str, Error> {
    std::str::from_utf8(bytes).map_err(|_| Error::InvalidPayload {
        reason: "the provider, keys and headers must be UTF-8".into(),
    })
}

/// Verifies one delivery of another provider (layout in the module docs). `now_secs` is
/// the current Unix time; `tolerance_secs` a tolerance in seconds, or a negative number for
/// the provider's default. On success writes `{id}\n{event type}\n{timestamp}` (the last
/// two empty when absent) at the start of the scratch buffer and returns its length in
/// bytes (at least 1: an id is never empty); on failure returns 0 (then see
/// `lastErrorStatus`, `lastErrorMessage`).
#[wasm_bindgen(js_name = verifyProvider)]
pub fn verify_provider(
    provider_len: u32,
    keys_len: u32,
    headers_len: u32,
    body_len: u32,
    now_secs: f64,
    tolerance_secs: f64,
) -> u32 {
    let result = scratch::with(|buf| {
        let [provider, keys, headers, body] =
            scratch::split(buf, [provider_len, keys_len, headers_len, body_len]).ok_or_else(scratch::overflow)?;
        let provider = parse_provider(text(provider)?)?;
        let keys = text(keys)?.split('\n').filter(|k| !k.is_empty());
        let mut verifier = ProviderVerifier::new(provider, keys)?;
        if tolerance_secs >= 0.0 {
            verifier = verifier.with_tolerance_secs(tolerance_secs as u64);
        }
        let pairs = header_pairs(text(headers)?)?;
        let delivery = verifier.verify(pairs.as_slice(), body, UnixTime::from_secs(now_secs as i64))?;
        let mut out = delivery.id;
        out.push('\n');
        out.push_str(delivery.event_type.as_deref().unwrap_or(""));
        out.push('\n');
        if let Some(t) = delivery.timestamp {
            out.push_str(&t.as_secs().to_string());
        }
        scratch::put_str(buf, &out).ok_or_else(scratch::overflow)
    });
    result.unwrap_or_else(|e| {
        fail(e);
        0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn providers_are_named_or_described() {
        assert_eq!(parse_provider("stripe").unwrap(), Provider::Stripe);
        assert_eq!(
            parse_provider("twilio https://x.example/sms").unwrap(),
            Provider::Twilio(TwilioConfig::new("https://x.example/sms"))
        );
        let g = parse_provider("generic\tX-Sig\tsha256\thex\tsha256=\tX-Ts\t.\t300\tX-Id\t").unwrap();
        assert_eq!(g.default_tolerance_secs(), Some(300));
        for bad in [
            "",
            "twilio",
            "stripe ",
            "generic\tX\tmd5\thex\t\t\t\t0\t\t",
            "generic\tX",
        ] {
            assert_eq!(
                parse_provider(bad).unwrap_err().code().as_str(),
                "invalid_provider_settings",
                "{bad:?}"
            );
        }
        assert_eq!(header_pairs("").unwrap(), vec![]);
        assert_eq!(header_pairs("a\n1\nb\n").unwrap(), vec![("a", "1"), ("b", "")]);
        assert!(header_pairs("a").is_err());
    }
}
