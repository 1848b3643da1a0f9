//! Linear: `Linear-Signature: <hex>`, HMAC-SHA256 over the raw body; the timestamp is
//! the body's `webhookTimestamp` (Unix milliseconds, covered by the signature), within
//! 60 s either way as `@linear/sdk` checks it. Type from the body's `type` (`Issue`,
//! `Comment`, …); id from the `Linear-Delivery` header, else `linear_` and the SHA-256
//! hex of the body.
//!
//! Stricter than `LinearWebhookClient.verify`: `webhookTimestamp` must be a whole number
//! (the SDK takes any finite number), and the body must be UTF-8 JSON without duplicate
//! fields (the SDK decodes it leniently and keeps the last duplicate).

use std::borrow::Cow;

use serde::Deserialize;

use super::VerifiedDelivery;
use super::shared::{self, Headers, HmacAlgorithm, HmacKeys};
use crate::headers::HeaderSource;
use crate::{Error, UnixTime};

/// The SDK's window, one minute each way.
pub(crate) const TOLERANCE_SECS: u64 = 60;
const SIGNATURE: &str = "linear-signature";
const DELIVERY: &str = "linear-delivery";

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Fields<'a> {
    webhook_timestamp: Option<u64>,
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
    let value = h.require(SIGNATURE)?;
    let sig = shared::lower_hex(value, HmacAlgorithm::Sha256.tag_len())
        .ok_or_else(|| h.invalid(SIGNATURE, "must be 64 lower-case hex digits"))?;
    let id = h.name_value(DELIVERY)?;
    keys.check(HmacAlgorithm::Sha256, &[body], &[sig])?;
    let fields: Fields<'_> = shared::json_fields(body)?;
    let ts_ms = fields
        .webhook_timestamp
        .ok_or_else(|| Error::payload("the body has no whole-number `webhookTimestamp`"))?;
    shared::check_tolerance_millis(
        h.provider,
        i128::from(ts_ms),
        i128::from(now.as_secs()) * 1000,
        u128::from(tolerance_secs) * 1000,
    )?;
    let secs = i64::try_from(ts_ms / 1000).map_err(|_| Error::payload("`webhookTimestamp` out of range"))?;
    Ok(VerifiedDelivery {
        id: id.unwrap_or_else(|| shared::derived_id("linear_", &[body])),
        event_type: Some(shared::body_name("type", fields.kind)?),
        timestamp: Some(UnixTime::from_secs(secs)),
    })
}
