//! Paddle Billing: `Paddle-Signature: ts=<unix seconds>;h1=<hex>`, HMAC-SHA256 over
//! `{ts}:{body}` with the notification destination's secret key (`pdl_ntfset_…`, used as
//! the key text). Id and type from the body's `event_id` and `event_type`.
//!
//! Tolerance: 5 s, as `@paddle/paddle-node-sdk` (`MAX_VALID_TIME_DIFFERENCE`), here both
//! ways (the SDK bounds the past only); raise it with
//! [`with_tolerance_secs`](super::ProviderVerifier::with_tolerance_secs) if clocks drift.
//! Stricter than the SDK: canonical digits for `ts` (its `parseInt` reads trailing text),
//! one `ts` and one `h1` (it keeps the last of each), every entry `key=value`.

use std::borrow::Cow;

use serde::Deserialize;

use super::VerifiedDelivery;
use super::shared::{self, Headers, HmacAlgorithm, HmacKeys};
use crate::headers::HeaderSource;
use crate::{Error, UnixTime};

/// The SDK's `MAX_VALID_TIME_DIFFERENCE`, 5 seconds.
pub(crate) const TOLERANCE_SECS: u64 = 5;
const HEADER: &str = "paddle-signature";

#[derive(Deserialize)]
struct Fields<'a> {
    #[serde(borrow)]
    event_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    event_type: Option<Cow<'a, str>>,
}

pub(crate) fn verify<H: HeaderSource + ?Sized>(
    keys: &HmacKeys,
    h: &Headers<'_, H>,
    body: &[u8],
    now: UnixTime,
    tolerance_secs: u64,
) -> Result<VerifiedDelivery, Error> {
    let value = h.require(HEADER)?;
    let mut ts_raw: Option<&str> = None;
    let mut h1: Option<&str> = None;
    for (n, item) in value.split(';').enumerate() {
        if n >= shared::MAX_SIGNATURES {
            return Err(h.invalid(HEADER, "too many entries"));
        }
        let (key, val) = item
            .split_once('=')
            .ok_or_else(|| h.invalid(HEADER, "an entry is not `key=value`"))?;
        let slot = match key {
            "ts" => &mut ts_raw,
            "h1" => &mut h1,
            _ => continue,
        };
        if slot.replace(val).is_some() {
            return Err(h.invalid(HEADER, "`ts` or `h1` appears more than once"));
        }
    }
    let ts_raw = ts_raw.ok_or_else(|| h.invalid(HEADER, "no `ts=` timestamp"))?;
    let ts = shared::parse_unix_secs(ts_raw).ok_or_else(|| {
        h.invalid(
            HEADER,
            "`ts` must be Unix time in whole seconds: digits only, no leading zero",
        )
    })?;
    let sig = h1
        .and_then(|hex| shared::lower_hex(hex, HmacAlgorithm::Sha256.tag_len()))
        .ok_or_else(|| h.invalid(HEADER, "no `h1=` signature of 64 lower-case hex digits"))?;
    let text = shared::utf8_body(body)?;
    shared::check_tolerance(h.provider, ts, now, tolerance_secs)?;
    keys.check(
        HmacAlgorithm::Sha256,
        &[ts_raw.as_bytes(), b":", text.as_bytes()],
        &[sig],
    )?;
    let fields: Fields<'_> = shared::json_fields(body)?;
    Ok(VerifiedDelivery {
        id: shared::body_name("event_id", fields.event_id)?,
        event_type: Some(shared::body_name("event_type", fields.event_type)?),
        timestamp: Some(ts),
    })
}
