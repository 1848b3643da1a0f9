//! GitHub: `X-Hub-Signature-256: sha256=<hex>`, HMAC-SHA256 over the body. No timestamp:
//! replay protection is the de-duplication by `X-GitHub-Delivery` (a redelivery keeps it).
//! Type from `X-GitHub-Event`.
//!
//! Stricter than `@octokit/webhooks-methods`' `verify`: `X-GitHub-Delivery` and
//! `X-GitHub-Event` are required (GitHub always sends them; the id is what
//! de-duplicates), and the body must be UTF-8 (the SDK hashes it as a string).

use super::VerifiedDelivery;
use super::shared::{self, Headers, HmacAlgorithm, HmacKeys};
use crate::Error;
use crate::headers::HeaderSource;

const SIGNATURE: &str = "x-hub-signature-256";
const DELIVERY: &str = "x-github-delivery";
const EVENT: &str = "x-github-event";

pub(crate) fn verify<H: HeaderSource + ?Sized>(
    keys: &HmacKeys,
    h: &Headers<'_, H>,
    body: &[u8],
) -> Result<VerifiedDelivery, Error> {
    let value = h.require(SIGNATURE)?;
    let id = h.require_name(DELIVERY)?;
    let event_type = h.require_name(EVENT)?;
    let sig = value
        .strip_prefix("sha256=")
        .and_then(|hex| shared::lower_hex(hex, HmacAlgorithm::Sha256.tag_len()))
        .ok_or_else(|| h.invalid(SIGNATURE, "must be `sha256=` and 64 lower-case hex digits"))?;
    let text = shared::utf8_body(body)?;
    keys.check(HmacAlgorithm::Sha256, &[text.as_bytes()], &[sig])?;
    Ok(VerifiedDelivery {
        id,
        event_type: Some(event_type),
        timestamp: None,
    })
}
