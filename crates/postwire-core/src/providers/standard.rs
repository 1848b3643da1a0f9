//! Standard Webhooks through the provider interface: [`crate::Verifier`] does every check
//! (`v1` secrets and `v1a` public keys alike); the event type is the body's `type` when
//! the body is a JSON object that has one (Standard Webhooks recommends it, without
//! requiring it).

use std::borrow::Cow;

use serde::Deserialize;

use super::VerifiedDelivery;
use super::shared;
use crate::headers::HeaderSource;
use crate::{Error, UnixTime, Verifier};

#[derive(Deserialize)]
struct Fields<'a> {
    #[serde(borrow, rename = "type")]
    kind: Option<Cow<'a, str>>,
}

pub(crate) fn verify<H: HeaderSource + ?Sized>(
    verifier: &Verifier,
    headers: &H,
    body: &[u8],
    now: UnixTime,
) -> Result<VerifiedDelivery, Error> {
    let verified = verifier.verify(headers, body, now)?;
    let event_type = serde_json::from_slice::<Fields<'_>>(body)
        .ok()
        .and_then(|f| f.kind)
        .filter(|k| shared::is_valid_name(k))
        .map(Cow::into_owned);
    Ok(VerifiedDelivery {
        id: verified.id.to_owned(),
        event_type,
        timestamp: Some(verified.timestamp),
    })
}
