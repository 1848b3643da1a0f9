//! Shopify: HMAC-SHA256 over the body with the app's client secret, base64 in
//! `X-Shopify-Hmac-Sha256`; id `X-Shopify-Webhook-Id`, type `X-Shopify-Topic`. Event
//! subscriptions name the same headers without the `X-` (`shopify-hmac-sha256`, …): when
//! that HMAC header is present, those are read, as `@shopify/shopify-api` does. No
//! timestamp is signed: replay protection is the de-duplication by the webhook id.
//!
//! Like `@shopify/shopify-api`'s `webhooks.validate`, the topic, shop domain, API
//! version and webhook id headers are required and the body must not be empty. Stricter:
//! the body must be UTF-8 (the SDK hashes it as a string).

use super::VerifiedDelivery;
use super::shared::{self, Headers, HmacAlgorithm, HmacKeys};
use crate::Error;
use crate::headers::HeaderSource;

struct Names {
    hmac: &'static str,
    topic: &'static str,
    domain: &'static str,
    api_version: &'static str,
    webhook_id: &'static str,
}

const WEBHOOKS: Names = Names {
    hmac: "x-shopify-hmac-sha256",
    topic: "x-shopify-topic",
    domain: "x-shopify-shop-domain",
    api_version: "x-shopify-api-version",
    webhook_id: "x-shopify-webhook-id",
};

const EVENTS: Names = Names {
    hmac: "shopify-hmac-sha256",
    topic: "shopify-topic",
    domain: "shopify-shop-domain",
    api_version: "shopify-api-version",
    webhook_id: "shopify-webhook-id",
};

pub(crate) fn verify<H: HeaderSource + ?Sized>(
    keys: &HmacKeys,
    h: &Headers<'_, H>,
    body: &[u8],
) -> Result<VerifiedDelivery, Error> {
    let names = if h.source.header(EVENTS.hmac).is_some() {
        &EVENTS
    } else {
        &WEBHOOKS
    };
    let value = h.require(names.hmac)?;
    let event_type = h.require_name(names.topic)?;
    h.require(names.domain)?;
    h.require(names.api_version)?;
    let id = h.require_name(names.webhook_id)?;
    let sig = shared::canonical_base64(value, Some(HmacAlgorithm::Sha256.tag_len()))
        .ok_or_else(|| h.invalid(names.hmac, "must be the padded base64 of 32 bytes"))?;
    if body.is_empty() {
        return Err(Error::payload("the body is empty"));
    }
    let text = shared::utf8_body(body)?;
    keys.check(HmacAlgorithm::Sha256, &[text.as_bytes()], &[sig])?;
    Ok(VerifiedDelivery {
        id,
        event_type: Some(event_type),
        timestamp: None,
    })
}
