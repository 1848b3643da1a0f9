//! Discord interactions: ed25519 over `{timestamp}{body}`, the signature in hex in
//! `X-Signature-Ed25519`, the timestamp in `X-Signature-Timestamp`; the key is the
//! application's public key in hex. Id from the body's `id`; type from its `type`,
//! named as `discord-interactions`' `InteractionType` (`PING`, `APPLICATION_COMMAND`,
//! `MESSAGE_COMPONENT`, `APPLICATION_COMMAND_AUTOCOMPLETE`, `MODAL_SUBMIT`; another
//! number as its digits).
//!
//! Stricter than `discord-interactions`' `verifyKey`: strict ed25519 (canonical `S`, no
//! small-order key or `R`), exact hex (the SDK's `parseInt` per pair reads `0g` as 0), a
//! timestamp of canonical digits within 300 s either way (the SDK checks none).

use std::borrow::Cow;

use ed25519_dalek::{Signature, VerifyingKey};
use serde::Deserialize;

use super::VerifiedDelivery;
use super::shared::{self, Headers};
use crate::headers::HeaderSource;
use crate::{Error, UnixTime};

/// No tolerance in the SDK: postwire's default, 5 minutes.
pub(crate) const TOLERANCE_SECS: u64 = 300;
const SIGNATURE: &str = "x-signature-ed25519";
const TIMESTAMP: &str = "x-signature-timestamp";

#[derive(Deserialize)]
struct Fields<'a> {
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(rename = "type")]
    kind: Option<u64>,
}

pub(crate) fn parse_keys<S: AsRef<str>>(keys: impl IntoIterator<Item = S>) -> Result<Vec<VerifyingKey>, Error> {
    let mut out = Vec::new();
    for k in keys {
        let bytes: [u8; 32] = shared::any_case_hex(k.as_ref().trim(), 32)
            .and_then(|b| b.try_into().ok())
            .ok_or(Error::InvalidPublicKey {
                reason: "a Discord public key is 64 hex digits",
            })?;
        let key = crate::PublicKey::from_bytes(&bytes)?;
        let key = VerifyingKey::from_bytes(key.as_bytes()).map_err(|_| Error::InvalidPublicKey {
            reason: "the 32 bytes are not an ed25519 point",
        })?;
        out.push(key);
    }
    if out.is_empty() {
        return Err(Error::InvalidPublicKey {
            reason: "at least one public key is required",
        });
    }
    Ok(out)
}

fn type_name(kind: u64) -> String {
    match kind {
        1 => "PING".into(),
        2 => "APPLICATION_COMMAND".into(),
        3 => "MESSAGE_COMPONENT".into(),
        4 => "APPLICATION_COMMAND_AUTOCOMPLETE".into(),
        5 => "MODAL_SUBMIT".into(),
        n => n.to_string(),
    }
}

pub(crate) fn verify<H: HeaderSource + ?Sized>(
    keys: &[VerifyingKey],
    h: &Headers<'_, H>,
    body: &[u8],
    now: UnixTime,
    tolerance_secs: u64,
) -> Result<VerifiedDelivery, Error> {
    let value = h.require(SIGNATURE)?;
    let (raw_ts, ts) = h.timestamp(TIMESTAMP)?;
    let sig: [u8; 64] = shared::any_case_hex(value, 64)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| h.invalid(SIGNATURE, "must be 128 hex digits"))?;
    let sig = Signature::from_bytes(&sig);
    shared::check_tolerance(h.provider, ts, now, tolerance_secs)?;
    let mut message = Vec::with_capacity(raw_ts.len() + body.len());
    message.extend_from_slice(raw_ts.as_bytes());
    message.extend_from_slice(body);
    if !keys.iter().any(|k| k.verify_strict(&message, &sig).is_ok()) {
        return Err(shared::no_match());
    }
    let fields: Fields<'_> = shared::json_fields(body)?;
    let kind = fields
        .kind
        .ok_or_else(|| Error::payload("the body has no numeric `type` field"))?;
    Ok(VerifiedDelivery {
        id: shared::body_name("id", fields.id)?,
        event_type: Some(type_name(kind)),
        timestamp: Some(ts),
    })
}
