//! Stripe: `Stripe-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>…]`, HMAC-SHA256 over
//! `{t}.{body}` with the endpoint's `whsec_…` secret used as the key text itself; one
//! `v1` entry per secret while a secret is rolled. Id and type from the body's `id` and
//! `type`.
//!
//! Stricter than `stripe`'s `constructEvent`: the timestamp must be canonical digits (the
//! SDK's `parseInt` reads `1700000000abc`), a future timestamp beyond the tolerance is
//! refused (the SDK bounds the past only), `t` appears once (the SDK takes the last), and
//! every entry is `key=value` with no spaces.

use std::borrow::Cow;

use serde::Deserialize;

use super::VerifiedDelivery;
use super::shared::{self, Headers, HmacAlgorithm, HmacKeys};
use crate::headers::HeaderSource;
use crate::{Error, UnixTime};

/// Stripe's default tolerance (`stripe.webhooks.DEFAULT_TOLERANCE`), here both ways.
pub(crate) const TOLERANCE_SECS: u64 = 300;
const HEADER: &str = "stripe-signature";

#[derive(Deserialize)]
struct Fields<'a> {
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, rename = "type")]
    kind: Option<Cow<'a, str>>,
}

pub(crate) fn verify<H: HeaderSource + ?Sized>(
    keys: &HmacKeys,
    h: &Headers<'_, H>,
    body: &[u8],
    now: UnixTime,
    tolerance_secs: u64,
) -> Result<VerifiedDelivery, Error> {
    let value = h.require(HEADER)?;
    let mut timestamp: Option<&str> = None;
    let mut signatures = Vec::new();
    let mut entries = 0usize;
    for item in value.split(',') {
        entries += 1;
        if entries > 4 * shared::MAX_SIGNATURES {
            return Err(h.invalid(HEADER, "too many entries"));
        }
        let (key, val) = item
            .split_once('=')
            .ok_or_else(|| h.invalid(HEADER, "an entry is not `key=value`"))?;
        match key {
            "t" if timestamp.is_some() => return Err(h.invalid(HEADER, "more than one `t=`")),
            "t" => timestamp = Some(val),
            "v1" => {
                if signatures.len() == shared::MAX_SIGNATURES {
                    return Err(h.invalid(HEADER, "more than 16 `v1` signatures"));
                }
                // A `v1` that is not 64 lower-case hex digits cannot match: skipped.
                if let Some(sig) = shared::lower_hex(val, HmacAlgorithm::Sha256.tag_len()) {
                    signatures.push(sig);
                }
            }
            _ => {} // other schemes (`v0`) and fields Stripe may add
        }
    }
    let raw_ts = timestamp.ok_or_else(|| h.invalid(HEADER, "no `t=` timestamp"))?;
    let ts = shared::parse_unix_secs(raw_ts).ok_or_else(|| {
        h.invalid(
            HEADER,
            "`t` must be Unix time in whole seconds: digits only, no leading zero",
        )
    })?;
    if signatures.is_empty() {
        return Err(h.invalid(HEADER, "no `v1=` signature of 64 lower-case hex digits"));
    }
    let text = shared::utf8_body(body)?;
    shared::check_tolerance(h.provider, ts, now, tolerance_secs)?;
    keys.check(
        HmacAlgorithm::Sha256,
        &[raw_ts.as_bytes(), b".", text.as_bytes()],
        &signatures,
    )?;
    let fields: Fields<'_> = shared::json_fields(body)?;
    Ok(VerifiedDelivery {
        id: shared::body_name("id", fields.id)?,
        event_type: Some(shared::body_name("type", fields.kind)?),
        timestamp: Some(ts),
    })
}
