//! `v1a` (ed25519, the opt-in extension) for the npm package's `postwire/v1a` entry point,
//! compiled only with this crate's `ed25519` feature: the default module, `v1` only, stays
//! without curve code and keeps its size.
//!
//! As for secrets, nothing lives in wasm memory: a `Webhook` parses each `whpk_` key once
//! ([`public_key`]) into its 32 bytes, which JavaScript keeps and writes into the scratch
//! buffer, after the secrets' key schedules, on every call ([`verify_with_public_keys`]).
//! Every decision (key syntax, small-order keys, headers, timestamp window, strict ed25519,
//! the HMAC comparison) is postwire-core's.

use postwire_core::{Error, PublicKey, Signature, TrustedKey, UnixTime, Verifier, WebhookHeaders};
use wasm_bindgen::prelude::*;

use crate::codes::{fail, status};
use crate::schedule::SCHEDULE_LEN;
use crate::scratch;

/// Bytes of one public key in the scratch buffer.
const PUBLIC_KEY_LEN: usize = postwire_core::ED25519_KEY_LEN;

/// Parses the `whpk_` key whose text is the first `len` scratch bytes (with postwire-core's
/// leniency; a `whsk_` signing key is refused) and writes its 32 bytes at the start of the
/// scratch buffer. Returns 32, or 0 when the key is invalid (then see `lastErrorStatus`).
#[wasm_bindgen(js_name = publicKey)]
pub fn public_key(len: u32) -> u32 {
    let result = scratch::with(|buf| {
        let [bytes] = scratch::split(buf, [len]).ok_or_else(scratch::overflow)?;
        let text = std::str::from_utf8(bytes).map_err(|_| Error::InvalidPublicKey {
            reason: "not valid base64 after the `whpk_` prefix",
        })?;
        let key = match TrustedKey::parse(text)? {
            TrustedKey::PublicKey(k) => k,
            TrustedKey::Secret(_) => {
                return Err(Error::InvalidPublicKey {
                    reason: "expected a `whpk_` public key",
                });
            }
        };
        let out = buf.get_mut(..PUBLIC_KEY_LEN).ok_or_else(scratch::overflow)?;
        out.copy_from_slice(key.as_bytes());
        Ok(PUBLIC_KEY_LEN as u32)
    });
    result.unwrap_or_else(|e| {
        fail(e);
        0
    })
}

/// Parses the published key set (a JSON Web Key Set, postwire-core's `key_set`) whose
/// text is the first `len` scratch bytes, and writes its keys' 32 bytes each, in the
/// published order, at the start of the scratch buffer. Returns how many keys (at least
/// one), or 0 when the set is refused (then see `lastErrorStatus`: `invalid_key_set`).
#[wasm_bindgen(js_name = keySet)]
pub fn key_set(len: u32) -> u32 {
    let result = scratch::with(|buf| {
        let [text] = scratch::split(buf, [len]).ok_or_else(scratch::overflow)?;
        let set = postwire_core::key_set::KeySet::parse(text)?;
        let keys: Vec<[u8; PUBLIC_KEY_LEN]> = set.public_keys().map(|k| *k.as_bytes()).collect();
        for (i, key) in keys.iter().enumerate() {
            let at = i * PUBLIC_KEY_LEN;
            buf.get_mut(at..at + PUBLIC_KEY_LEN)
                .ok_or_else(scratch::overflow)?
                .copy_from_slice(key);
        }
        u32::try_from(keys.len()).map_err(|_| scratch::overflow())
    });
    result.unwrap_or_else(|e| {
        fail(e);
        0
    })
}

/// Verifies one delivery against secrets and public keys. The scratch buffer holds, in
/// order, `secrets` key schedules of 64 bytes, `public_keys` keys of 32 bytes, the three
/// header values and the raw body, of the given byte lengths (as [`crate::verify`]).
/// Returns a status.
#[wasm_bindgen(js_name = verifyWithPublicKeys)]
#[allow(clippy::too_many_arguments)]
pub fn verify_with_public_keys(
    secrets: u32,
    public_keys: u32,
    id_len: u32,
    timestamp_len: u32,
    signature_len: u32,
    body_len: u32,
    present: u32,
    now_secs: f64,
    tolerance_secs: f64,
) -> u32 {
    let (Some(schedules_len), Some(keys_len)) = (
        secrets.checked_mul(SCHEDULE_LEN as u32),
        public_keys.checked_mul(PUBLIC_KEY_LEN as u32),
    ) else {
        return fail(scratch::overflow());
    };
    scratch::with(|buf| {
        let Some([schedules, keys, id, timestamp, signature, body]) = scratch::split(
            buf,
            [schedules_len, keys_len, id_len, timestamp_len, signature_len, body_len],
        ) else {
            return fail(scratch::overflow());
        };
        let keys: Vec<PublicKey> = match keys
            .chunks_exact(PUBLIC_KEY_LEN)
            .map(|c| {
                <[u8; PUBLIC_KEY_LEN]>::try_from(c)
                    .map_err(|_| scratch::overflow())
                    .and_then(|b| PublicKey::from_bytes(&b))
            })
            .collect()
        {
            Ok(k) => k,
            Err(e) => return fail(e),
        };
        if schedules.is_empty() && keys.is_empty() {
            return fail(Error::InvalidSecret {
                reason: "at least one secret or public key is required",
            });
        }
        let pairs = match crate::verifier::present_headers([id, timestamp, signature], present) {
            Ok(pairs) => pairs,
            Err(e) => return fail(e),
        };
        status(WebhookHeaders::from_source(&pairs).and_then(|headers| {
            let now = UnixTime::from_secs(now_secs as i64);
            let tolerance = tolerance_secs as u64;
            // The cheap checks first, so a stale or malformed request costs no hashing.
            Verifier::check_computed(headers, &[], now, tolerance)
                .map(drop)
                .or_else(|e| match e {
                    Error::InvalidSignature { .. } => Ok(()),
                    e => Err(e),
                })?;
            let macs: Vec<Signature> = crate::verifier::schedules(schedules)
                .map(|k| {
                    Signature::from_bytes(k.mac(&[
                        headers.id().as_bytes(),
                        b".",
                        headers.timestamp_raw().as_bytes(),
                        b".",
                        body,
                    ]))
                })
                .collect();
            Verifier::check_computed_with_public_keys(headers, &macs, &keys, body, now, tolerance).map(drop)
        }))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codes::code_name;
    use crate::verifier::{HAS_ID, HAS_SIGNATURE, HAS_TIMESTAMP};

    const ALL: u32 = HAS_ID | HAS_TIMESTAMP | HAS_SIGNATURE;

    fn put<const N: usize>(parts: [&[u8]; N]) -> [u32; N] {
        let all: Vec<u8> = parts.concat();
        assert!(scratch::write_for_tests(&all));
        parts.map(|p| p.len() as u32)
    }

    #[test]
    fn parses_public_keys_and_verifies_v1a() {
        let signing = postwire_core::SigningKey::from_seed(&[3; 32]);
        let text = signing.public_key().to_string();
        let [len] = put([text.as_bytes()]);
        assert_eq!(public_key(len), 32);
        let key = scratch::read_for_tests(32);
        assert_eq!(key.as_slice(), signing.public_key().as_bytes());

        let t = UnixTime::from_secs(1_700_000_000);
        let sig = signing.sign("msg_1", t, b"{}").unwrap().to_string();
        let run = |body: &[u8]| {
            let [_, a, b, c, d] = put([&key, b"msg_1", b"1700000000", sig.as_bytes(), body]);
            code_name(verify_with_public_keys(0, 1, a, b, c, d, ALL, 1_700_000_000.0, 300.0))
        };
        assert_eq!(run(b"{}"), "ok");
        assert_eq!(run(b"{ }"), "invalid_signature");

        let sk = signing.expose();
        let [len] = put([sk.as_bytes()]);
        assert_eq!(public_key(len), 0);
        assert_eq!(code_name(crate::codes::last_error_status()), "invalid_public_key");
        let [a, b, c, d] = put([b"msg_1", b"1700000000", sig.as_bytes(), b"{}"]);
        assert_eq!(
            code_name(verify_with_public_keys(0, 0, a, b, c, d, ALL, 1_700_000_000.0, 300.0)),
            "invalid_secret"
        );
    }

    #[test]
    fn parses_key_sets_into_key_bytes_in_order() {
        let a = postwire_core::SigningKey::from_seed(&[4; 32]).public_key();
        let b = postwire_core::SigningKey::from_seed(&[5; 32]).public_key();
        let published = [a, b].map(|public_key| postwire_core::key_set::PublishedKey {
            public_key,
            not_before: None,
            expires_at: None,
        });
        let json = postwire_core::key_set::to_jwks_json(&published);
        let [len] = put([json.as_bytes()]);
        assert_eq!(key_set(len), 2);
        assert_eq!(scratch::read_for_tests(64), [*a.as_bytes(), *b.as_bytes()].concat());

        for bad in [
            &b"not json"[..],
            br#"{"keys":[{"kty":"OKP","crv":"X25519","x":"AA","kid":"a"}]}"#,
        ] {
            let [len] = put([bad]);
            assert_eq!(key_set(len), 0);
            assert_eq!(code_name(crate::codes::last_error_status()), "invalid_key_set");
        }
    }
}
