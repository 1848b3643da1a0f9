//! Slack: `X-Slack-Signature: v0=<hex>`, HMAC-SHA256 over `v0:{timestamp}:{body}` with
//! the app's signing secret, `X-Slack-Request-Timestamp` in Unix seconds, 5 minutes.
//!
//! Id and type: a JSON body (Events API) gives `event_id` and the inner `event.type`, or
//! the envelope `type` when there is no inner event (`url_verification`,
//! `app_rate_limited`); a form body (slash commands, interactivity) gives `trigger_id` and
//! `command` (no type for interactivity's `payload=`). Where the body carries no id, the
//! id is `slack_` and the SHA-256 hex of `{timestamp}:{body}`.
//!
//! Stricter than `@slack/bolt`'s `verifySlackRequest`: the timestamp must be canonical
//! digits (the SDK reads it with `Number()`, so `1.7e9` or ` 0x10` pass there), a future
//! timestamp beyond the tolerance is refused (the SDK bounds the past only), and the
//! signature must be exactly `v0=` and 64 lower-case hex digits.

use std::borrow::Cow;

use serde::Deserialize;

use super::VerifiedDelivery;
use super::shared::{self, Headers, HmacAlgorithm, HmacKeys};
use crate::headers::HeaderSource;
use crate::{Error, UnixTime};

/// Slack's documented tolerance, 5 minutes (the SDK's `requestTimestampMaxDeltaMin`).
pub(crate) const TOLERANCE_SECS: u64 = 300;
const SIGNATURE: &str = "x-slack-signature";
const TIMESTAMP: &str = "x-slack-request-timestamp";

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow)]
    event_id: Option<Cow<'a, str>>,
    #[serde(borrow, rename = "type")]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    event: Option<Inner<'a>>,
}

#[derive(Deserialize)]
struct Inner<'a> {
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
    let (raw_ts, ts) = h.timestamp(TIMESTAMP)?;
    let sig = value
        .strip_prefix("v0=")
        .and_then(|hex| shared::lower_hex(hex, HmacAlgorithm::Sha256.tag_len()))
        .ok_or_else(|| h.invalid(SIGNATURE, "must be `v0=` and 64 lower-case hex digits"))?;
    let text = shared::utf8_body(body)?;
    shared::check_tolerance(h.provider, ts, now, tolerance_secs)?;
    keys.check(
        HmacAlgorithm::Sha256,
        &[b"v0:", raw_ts.as_bytes(), b":", text.as_bytes()],
        &[sig],
    )?;
    let derived = || shared::derived_id("slack_", &[raw_ts.as_bytes(), b":", body]);
    let (id, event_type) = if text.trim_start().starts_with('{') {
        let env: Envelope<'_> = shared::json_fields(body)?;
        let id = match env.event_id {
            Some(v) => shared::body_name("event_id", Some(v))?,
            None => derived(),
        };
        let kind = env.event.and_then(|e| e.kind).or(env.kind);
        (id, kind.map(|k| shared::body_name("type", Some(k))).transpose()?)
    } else {
        let params = shared::form_params(text)?;
        let find = |name: &str| params.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
        let id = match find("trigger_id") {
            Some(v) => shared::body_name("trigger_id", Some(Cow::Borrowed(v)))?,
            None => derived(),
        };
        let kind = find("command")
            .map(|c| shared::body_name("command", Some(Cow::Borrowed(c))))
            .transpose()?;
        (id, kind)
    };
    Ok(VerifiedDelivery {
        id,
        event_type,
        timestamp: Some(ts),
    })
}
