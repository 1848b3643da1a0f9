//! Verify and sign with key schedules that JavaScript holds: no object in wasm memory.
//!
//! A `Webhook` of the npm package turns each secret into a 64-byte key schedule once
//! ([`key_schedule`]) and keeps the schedules in a JavaScript `Uint8Array`. Each call then
//! writes them at the start of the scratch buffer, before the header values and the body,
//! so every instance shares the one module instance and owns nothing in it: garbage
//! collection frees an instance wholly, with or without `FinalizationRegistry`.
//!
//! The HMACs are computed here from the schedules (or, on Node, by node:crypto for large
//! bodies: [`verify_macs`]), and every decision is postwire-core's: the secret syntax
//! (`Secret::parse`), the header checks (`WebhookHeaders`), the timestamp window and the
//! constant-time comparison (`Verifier::check_computed`).

use postwire_core::{
    Error, ID_HEADER, SIGNATURE_HEADER, Secret, Signature, TIMESTAMP_HEADER, UnixTime, Verifier, WebhookHeaders,
};
use wasm_bindgen::prelude::*;
use zeroize::Zeroizing;

use crate::codes::{fail, status};
use crate::schedule::{KeySchedule, SCHEDULE_LEN};
use crate::scratch;

/// Bytes in an HMAC-SHA256 output.
const SIGNATURE_LEN: usize = 32;

/// Bit of `present` in [`verify`]: a `webhook-id` header was found.
pub const HAS_ID: u32 = 1;
/// Bit of `present`: a `webhook-timestamp` header was found.
pub const HAS_TIMESTAMP: u32 = 2;
/// Bit of `present`: a `webhook-signature` header was found.
pub const HAS_SIGNATURE: u32 = 4;

/// A seconds value from JavaScript as `i64`: `as` saturates, and NaN becomes 0.
fn secs(value: f64) -> i64 {
    value as i64
}

/// A tolerance from JavaScript: negative or NaN counts as 0 (the wrapper checks it first).
fn tolerance(value: f64) -> u64 {
    value as u64
}

/// Parses the secret held in the first `len` scratch bytes (`whsec_<base64>` text, or
/// when `raw` the key bytes themselves, as postwire-core's `Secret::parse` and
/// `Secret::from_bytes` do) and writes at the start of the scratch buffer its 64-byte key
/// schedule, then its key bytes (for a native HMAC). Returns the key's length in bytes,
/// or 0 when the secret is invalid (then see `lastErrorStatus`, `lastErrorMessage`).
/// The caller reserves room for 64 bytes plus the key (at most 1024) beforehand.
#[wasm_bindgen(js_name = keySchedule)]
pub fn key_schedule(len: u32, raw: bool) -> u32 {
    let result = scratch::with(|buf| {
        let [bytes] = scratch::split(buf, [len]).ok_or_else(scratch::overflow)?;
        // Core's rules decide the key; the schedule below is this module's own HMAC state
        // (building core's `Secret` would hash the pads a second time, with more code).
        let key = if raw {
            Secret::check_key(bytes)?;
            Zeroizing::new(bytes.to_vec())
        } else {
            let text = std::str::from_utf8(bytes).map_err(|_| Error::InvalidSecret {
                reason: "not valid base64 after the `whsec_` prefix",
            })?;
            Secret::parse_key(text)?
        };
        let key = key.as_slice();
        let out = buf.get_mut(..SCHEDULE_LEN + key.len()).ok_or_else(scratch::overflow)?;
        let (schedule, rest) = out.split_at_mut_checked(SCHEDULE_LEN).ok_or_else(scratch::overflow)?;
        schedule.copy_from_slice(&KeySchedule::new(key).to_bytes());
        rest.copy_from_slice(key);
        Ok(key.len() as u32)
    });
    result.unwrap_or_else(|e| {
        fail(e);
        0
    })
}

/// The schedules of the first `count * 64` scratch bytes; `None` for a count of 0.
pub(crate) fn schedules(bytes: &[u8]) -> impl Iterator<Item = KeySchedule> + '_ {
    bytes.chunks_exact(SCHEDULE_LEN).filter_map(KeySchedule::from_bytes)
}

fn no_secret() -> Error {
    Error::InvalidSecret {
        reason: "at least one secret is required",
    }
}

/// Verifies one delivery. The scratch buffer holds, in order, `secrets` key schedules of
/// 64 bytes, the `webhook-id`, `webhook-timestamp` and `webhook-signature` values and the
/// raw body, of the given byte lengths; bit `HAS_*` of `present` says which headers were
/// there at all. `now_secs` is the current Unix time, `tolerance_secs` the window each
/// way. Returns a status.
#[wasm_bindgen]
#[allow(clippy::too_many_arguments)]
pub fn verify(
    secrets: u32,
    id_len: u32,
    timestamp_len: u32,
    signature_len: u32,
    body_len: u32,
    present: u32,
    now_secs: f64,
    tolerance_secs: f64,
) -> u32 {
    let Some(schedules_len) = secrets.checked_mul(SCHEDULE_LEN as u32) else {
        return fail(scratch::overflow());
    };
    scratch::with(|buf| {
        let Some([keys, id, timestamp, signature, body]) =
            scratch::split(buf, [schedules_len, id_len, timestamp_len, signature_len, body_len])
        else {
            return fail(scratch::overflow());
        };
        if keys.is_empty() {
            return fail(no_secret());
        }
        let pairs = match present_headers([id, timestamp, signature], present) {
            Ok(pairs) => pairs,
            Err(e) => return fail(e),
        };
        status(WebhookHeaders::from_source(&pairs).and_then(|headers| {
            let now = UnixTime::from_secs(secs(now_secs));
            let tolerance = tolerance(tolerance_secs);
            // The cheap checks first, so a stale or malformed request costs no hashing.
            Verifier::check_computed(headers, &[], now, tolerance)
                .map(drop)
                .or_else(|e| match e {
                    Error::InvalidSignature { .. } => Ok(()),
                    e => Err(e),
                })?;
            let macs: Vec<Signature> = schedules(keys)
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
            Verifier::check_computed(headers, &macs, now, tolerance).map(drop)
        }))
    })
}

/// Verifies one delivery whose HMACs the caller computed: the runtime's native
/// HMAC-SHA256 (node:crypto) is several times faster than wasm on large bodies. The
/// scratch buffer holds the three header values, as for [`verify`], then one 32-byte HMAC
/// per secret, each over `<id>.<timestamp>.<body>` with the id and timestamp trimmed of
/// spaces and tabs. Every decision stays here: the headers, the timestamp window and the
/// constant-time comparison with each well-formed `v1` signature. A caller that hashes
/// the wrong bytes can only cause a rejection, never an acceptance. Returns a status.
#[wasm_bindgen(js_name = verifyMacs)]
pub fn verify_macs(
    id_len: u32,
    timestamp_len: u32,
    signature_len: u32,
    macs_len: u32,
    present: u32,
    now_secs: f64,
    tolerance_secs: f64,
) -> u32 {
    scratch::with(|buf| {
        let Some([id, timestamp, signature, macs]) =
            scratch::split(buf, [id_len, timestamp_len, signature_len, macs_len])
        else {
            return fail(scratch::overflow());
        };
        if macs.is_empty() || macs.len() % SIGNATURE_LEN != 0 {
            return fail(scratch::overflow());
        }
        let pairs = match present_headers([id, timestamp, signature], present) {
            Ok(pairs) => pairs,
            Err(e) => return fail(e),
        };
        let expected: Vec<Signature> = macs
            .chunks_exact(SIGNATURE_LEN)
            .filter_map(|c| <[u8; SIGNATURE_LEN]>::try_from(c).ok())
            .map(Signature::from_bytes)
            .collect();
        status(WebhookHeaders::from_source(&pairs).and_then(|headers| {
            Verifier::check_computed(
                headers,
                &expected,
                UnixTime::from_secs(secs(now_secs)),
                tolerance(tolerance_secs),
            )
            .map(drop)
        }))
    })
}

/// The `webhook-signature` value for a delivery: the scratch buffer holds `secrets` key
/// schedules, then the `webhook-id` (`id_len` bytes) and the body (`body_len`); it was
/// sent at `timestamp_secs`. One `v1,<base64>` entry per secret, space-separated.
/// `None` on failure (then see `lastErrorMessage`).
pub fn sign(secrets: u32, id_len: u32, body_len: u32, timestamp_secs: f64) -> Option<String> {
    scratch::with(|buf| sign_in(buf, secrets, id_len, body_len, timestamp_secs))
        .map_err(fail)
        .ok()
}

/// [`sign`] for JavaScript: the value replaces the inputs at the start of the scratch
/// buffer (it is shorter: 48 bytes per secret against a 64-byte schedule); returns its
/// length in bytes, or `u32::MAX` on failure (then see `lastErrorMessage`).
#[wasm_bindgen(js_name = sign)]
pub fn sign_to_scratch(secrets: u32, id_len: u32, body_len: u32, timestamp_secs: f64) -> u32 {
    let result = scratch::with(|buf| {
        let value = sign_in(buf, secrets, id_len, body_len, timestamp_secs)?;
        scratch::put_str(buf, &value).ok_or_else(scratch::overflow)
    });
    result.unwrap_or_else(|e| {
        fail(e);
        u32::MAX
    })
}

fn sign_in(buf: &[u8], secrets: u32, id_len: u32, body_len: u32, timestamp_secs: f64) -> Result<String, Error> {
    let schedules_len = secrets.checked_mul(SCHEDULE_LEN as u32).ok_or_else(scratch::overflow)?;
    let [keys, id, body] = scratch::split(buf, [schedules_len, id_len, body_len]).ok_or_else(scratch::overflow)?;
    if keys.is_empty() {
        return Err(no_secret());
    }
    let id = std::str::from_utf8(id).map_err(|_| Error::InvalidHeader {
        name: ID_HEADER,
        reason: "not ASCII",
    })?;
    postwire_core::validate_id(id)?;
    let ts = UnixTime::from_secs(secs(timestamp_secs)).as_secs().to_string();
    let mut out = String::with_capacity(48 * secrets as usize);
    for (i, k) in schedules(keys).enumerate() {
        if i > 0 {
            out.push(' ');
        }
        let mac = Signature::from_bytes(k.mac(&[id.as_bytes(), b".", ts.as_bytes(), b".", body]));
        out.push_str(&mac.to_string());
    }
    Ok(out)
}

/// The three header values as name/value pairs for postwire-core, which then itself
/// reports a missing header (an absent one gets an empty name, so no look-up finds it)
/// and checks the values.
pub(crate) fn present_headers(values: [&[u8]; 3], present: u32) -> Result<[(&'static str, &str); 3], Error> {
    const NAMES: [(&str, u32); 3] = [
        (ID_HEADER, HAS_ID),
        (TIMESTAMP_HEADER, HAS_TIMESTAMP),
        (SIGNATURE_HEADER, HAS_SIGNATURE),
    ];
    let mut pairs = [("", ""); 3];
    for ((pair, (name, bit)), value) in pairs.iter_mut().zip(NAMES).zip(values) {
        if present & bit != 0 {
            // The wrapper encodes JavaScript strings, so this is UTF-8; check anyway.
            let text = std::str::from_utf8(value).map_err(|_| Error::InvalidHeader {
                name,
                reason: "not ASCII",
            })?;
            *pair = (name, text);
        }
    }
    Ok(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codes::{code_name, last_error_message};

    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
    const TS: &str = "1614265330";
    const SIG: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";
    const BODY: &str = r#"{"test": 2432232314}"#;
    const ALL: u32 = HAS_ID | HAS_TIMESTAMP | HAS_SIGNATURE;

    /// Writes `parts` into the scratch buffer as the wrapper does, returning their lengths.
    fn put<const N: usize>(parts: [&[u8]; N]) -> [u32; N] {
        let all: Vec<u8> = parts.concat();
        assert!(scratch::write_for_tests(&all));
        parts.map(|p| p.len() as u32)
    }

    /// The key schedules of `secrets`, as the wrapper keeps them.
    fn schedules_of(secrets: &[&str]) -> Vec<u8> {
        let mut out = Vec::new();
        for s in secrets {
            let [len] = put([s.as_bytes()]);
            let key_len = key_schedule(len, false);
            assert_ne!(key_len, 0, "{s}");
            out.extend(scratch::read_for_tests(SCHEDULE_LEN));
        }
        out
    }

    fn check(keys: &[u8], id: &str, ts: &str, sig: &str, body: &[u8], present: u32, now: f64) -> String {
        let n = (keys.len() / SCHEDULE_LEN) as u32;
        let [_, a, b, c, d] = put([keys, id.as_bytes(), ts.as_bytes(), sig.as_bytes(), body]);
        code_name(verify(n, a, b, c, d, present, now, 300.0))
    }

    #[test]
    fn verifies_the_reference_vector_and_reports_each_failure() {
        let k = schedules_of(&[SECRET]);
        let now = 1614265330.0;
        assert_eq!(check(&k, ID, TS, SIG, BODY.as_bytes(), ALL, now), "ok");
        assert_eq!(check(&k, ID, TS, SIG, b"{}", ALL, now), "invalid_signature");
        assert!(last_error_message().contains("raw body"));
        assert_eq!(
            check(&k, ID, TS, SIG, BODY.as_bytes(), ALL, now + 301.0),
            "timestamp_too_old"
        );
        assert_eq!(
            check(&k, ID, TS, SIG, BODY.as_bytes(), ALL, now - 301.0),
            "timestamp_too_new"
        );
        assert_eq!(
            check(&k, ID, "1614265330abc", SIG, BODY.as_bytes(), ALL, now),
            "invalid_header"
        );
        assert_eq!(
            check(&k, ID, TS, SIG, BODY.as_bytes(), HAS_ID | HAS_SIGNATURE, now),
            "missing_header"
        );
        assert!(last_error_message().contains("webhook-timestamp"));
        assert_eq!(
            check(&k, ID, TS, &format!("{SIG},extra"), BODY.as_bytes(), ALL, now),
            "invalid_signature"
        );
        assert_eq!(
            check(&k, ID, TS, SIG.trim_end_matches('='), BODY.as_bytes(), ALL, now),
            "ok"
        );
        assert_eq!(check(&k, &format!(" {ID}\t"), TS, SIG, BODY.as_bytes(), ALL, now), "ok");
        assert_eq!(
            check(&k, ID, TS, SIG, BODY.as_bytes(), ALL, f64::NAN),
            "timestamp_too_new"
        );
        assert_eq!(
            check(&k, ID, TS, &vec![SIG; 65].join(" "), BODY.as_bytes(), ALL, now),
            "invalid_header"
        );
        assert_eq!(check(&[], ID, TS, SIG, BODY.as_bytes(), ALL, now), "invalid_secret");
    }

    #[test]
    fn the_schedule_holds_the_key_and_the_key_bytes_follow_it() {
        let [len] = put([SECRET.as_bytes()]);
        assert_eq!(key_schedule(len, false), 24);
        let out = scratch::read_for_tests(SCHEDULE_LEN + 24);
        let secret = Secret::parse(SECRET).unwrap();
        assert_eq!(&out[SCHEDULE_LEN..], secret.expose_bytes());
        let [len] = put([b"raw key"]);
        assert_eq!(key_schedule(len, true), 7);
        assert_eq!(&scratch::read_for_tests(SCHEDULE_LEN + 7)[SCHEDULE_LEN..], b"raw key");
    }

    #[test]
    fn caller_computed_macs_get_the_same_decisions() {
        let secret = Secret::parse(SECRET).unwrap();
        let h = WebhookHeaders::new(ID, TS, "").unwrap();
        let good = *secret.sign_as_sent(&h, BODY.as_bytes()).as_bytes();
        let bad = *secret.sign_as_sent(&h, b"{}").as_bytes();
        let now = 1614265330.0;
        let run = |id: &str, ts: &str, sig: &str, macs: &[u8], present: u32, now: f64| {
            let [a, b, c, d] = put([id.as_bytes(), ts.as_bytes(), sig.as_bytes(), macs]);
            code_name(verify_macs(a, b, c, d, present, now, 300.0))
        };
        assert_eq!(run(ID, TS, SIG, &good, ALL, now), "ok");
        assert_eq!(run(&format!(" {ID}\t"), TS, SIG, &good, ALL, now), "ok");
        assert_eq!(run(ID, TS, SIG, &bad, ALL, now), "invalid_signature");
        assert_eq!(run(ID, TS, SIG, &[bad, good].concat(), ALL, now), "ok", "any secret");
        assert_eq!(run(ID, TS, SIG, &good, ALL, now + 301.0), "timestamp_too_old");
        assert_eq!(run(ID, "12x", SIG, &good, ALL, now), "invalid_header");
        assert_eq!(run(ID, TS, SIG, &good, HAS_ID | HAS_TIMESTAMP, now), "missing_header");
        assert_eq!(run(ID, TS, SIG, &good[..31], ALL, now), "invalid_payload");
        assert_eq!(run(ID, TS, SIG, &[], ALL, now), "invalid_payload");
    }

    #[test]
    fn rotation_accepts_either_secret_and_signs_with_both() {
        let other = "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
        let k = schedules_of(&[other, SECRET]);
        assert_eq!(check(&k, ID, TS, SIG, BODY.as_bytes(), ALL, 1614265330.0), "ok");
        let [_, a, b] = put([&k, ID.as_bytes(), BODY.as_bytes()]);
        let header = sign(2, a, b, 1614265330.0).unwrap();
        assert_eq!(header.split(' ').nth(1), Some(SIG));
        let core = postwire_core::Signer::with_secrets([Secret::parse(other).unwrap(), Secret::parse(SECRET).unwrap()])
            .unwrap()
            .sign(ID, UnixTime::from_secs(1614265330), BODY.as_bytes())
            .unwrap();
        assert_eq!(header, core.as_str());
        // The same value for JavaScript, at the start of the scratch buffer.
        let [_, a, b] = put([&k, ID.as_bytes(), BODY.as_bytes()]);
        let len = sign_to_scratch(2, a, b, 1614265330.0);
        assert_eq!(scratch::read_for_tests(len as usize), header.as_bytes());
        assert_eq!(sign_to_scratch(0, a, b, 0.0), u32::MAX);
    }

    #[test]
    fn bad_secrets_and_lengths_are_statuses_not_panics() {
        let [len] = put([b"whsec_!!!!"]);
        assert_eq!(key_schedule(len, false), 0);
        assert_eq!(code_name(crate::codes::last_error_status()), "invalid_secret");
        assert!(!last_error_message().contains("!!!!"));
        let [len] = put([b"\xff\xfe"]);
        assert_eq!(key_schedule(len, false), 0);
        assert_eq!(key_schedule(len, true), 2, "raw keys are any bytes");
        assert_eq!(key_schedule(0, true), 0);
        assert_eq!(key_schedule(u32::MAX, true), 0);
        assert_eq!(
            code_name(verify(1, u32::MAX, u32::MAX, 1, 1, ALL, 0.0, 300.0)),
            "invalid_payload"
        );
        assert_eq!(
            code_name(verify(u32::MAX, 0, 0, 0, 0, ALL, 0.0, 300.0)),
            "invalid_payload"
        );
        assert_eq!(sign(1, u32::MAX, 0, 0.0), None);
        assert_eq!(sign(u32::MAX, 0, 0, 0.0), None);
        let k = schedules_of(&[SECRET]);
        let [_, a, b] = put([&k, b"bad id", b""]);
        assert_eq!(sign(1, a, b, 0.0), None);
        assert!(last_error_message().contains("webhook-id"));
        let [_, a, b] = put([&k, b"", b""]);
        assert_eq!(sign(0, a, b, 0.0), None);
        assert_eq!(code_name(crate::codes::last_error_status()), "invalid_secret");
    }
}
