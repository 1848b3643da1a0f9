//! [`WasmVerifier`]: the secrets of one `Webhook` object, and its verify and sign calls.
//!
//! The secrets are parsed once, at construction, into postwire-core's [`Verifier`] and
//! [`Signer`] (which keep the HMAC key schedule precomputed), so a verify costs only the
//! hashing of the message. Inputs come through the scratch buffer (see `scratch`).
//!
//! On Node the wrapper may hash large bodies with node:crypto, which has SHA instructions
//! that wasm lacks, and pass only the HMACs ([`WasmVerifier::verify_macs`]); every
//! decision (headers, timestamp window, signature parsing and comparison) is still made
//! here, by postwire-core.

use postwire_core::{
    Error, ID_HEADER, SIGNATURE_HEADER, Secret, Signature, Signer, TIMESTAMP_HEADER, UnixTime, Verifier, WebhookHeaders,
};
use wasm_bindgen::prelude::*;

use crate::codes::{OK, fail, status};
use crate::scratch;

/// Bytes in an HMAC-SHA256 output.
const SIGNATURE_LEN: usize = 32;

/// Bit of `present` in [`WasmVerifier::verify`]: a `webhook-id` header was found.
pub const HAS_ID: u32 = 1;
/// Bit of `present`: a `webhook-timestamp` header was found.
pub const HAS_TIMESTAMP: u32 = 2;
/// Bit of `present`: a `webhook-signature` header was found.
pub const HAS_SIGNATURE: u32 = 4;

/// The secrets of one `Webhook` (several during a rotation) and its timestamp tolerance.
#[wasm_bindgen]
pub struct WasmVerifier {
    secrets: Vec<Secret>,
    tolerance_secs: u64,
    verifier: Option<Verifier>,
    signer: Option<Signer>,
}

/// A seconds value from JavaScript as `i64`: `as` saturates, and NaN becomes 0.
fn secs(value: f64) -> i64 {
    value as i64
}

#[wasm_bindgen]
impl WasmVerifier {
    /// A verifier without secrets yet, with a tolerance of `tolerance_secs` each way
    /// (negative or NaN counts as 0; the wrapper checks the option before this).
    #[wasm_bindgen(constructor)]
    pub fn new(tolerance_secs: f64) -> WasmVerifier {
        WasmVerifier {
            secrets: Vec::new(),
            tolerance_secs: tolerance_secs as u64,
            verifier: None,
            signer: None,
        }
    }

    /// Adds the secret held in the first `len` scratch bytes: `whsec_<base64>` text, or,
    /// when `raw`, the key bytes themselves. Returns a status (`invalid_secret` on failure).
    #[wasm_bindgen(js_name = addSecret)]
    pub fn add_secret(&mut self, len: u32, raw: bool) -> u32 {
        let parsed = scratch::with(|buf| {
            let [bytes] = scratch::split(buf, [len]).ok_or_else(scratch::overflow)?;
            if raw {
                Secret::from_bytes(bytes)
            } else {
                let text = std::str::from_utf8(bytes).map_err(|_| Error::InvalidSecret {
                    reason: "not valid base64 after the `whsec_` prefix",
                })?;
                Secret::parse(text)
            }
        });
        match parsed {
            Ok(secret) => {
                self.secrets.push(secret);
                self.rebuild()
            }
            Err(e) => fail(e),
        }
    }

    fn rebuild(&mut self) -> u32 {
        let tolerance = self.tolerance_secs;
        let verifier = Verifier::with_secrets(self.secrets.iter().cloned()).map(|v| v.with_tolerance_secs(tolerance));
        let signer = Signer::with_secrets(self.secrets.iter().cloned());
        match (verifier, signer) {
            (Ok(v), Ok(s)) => {
                self.verifier = Some(v);
                self.signer = Some(s);
                OK
            }
            (Err(e), _) | (_, Err(e)) => fail(e),
        }
    }

    /// How many secrets are held.
    #[wasm_bindgen(js_name = secretCount)]
    pub fn secret_count(&self) -> usize {
        self.secrets.len()
    }

    /// Verifies one delivery. The scratch buffer holds, in order, the `webhook-id`,
    /// `webhook-timestamp` and `webhook-signature` values and the raw body, of the given
    /// byte lengths; bit `HAS_*` of `present` says which headers were there at all.
    /// `now_secs` is the current Unix time. Returns a status.
    pub fn verify(
        &self,
        id_len: u32,
        timestamp_len: u32,
        signature_len: u32,
        body_len: u32,
        present: u32,
        now_secs: f64,
    ) -> u32 {
        let lens = [id_len, timestamp_len, signature_len, body_len];
        self.verify_scratch(
            lens,
            present,
            now_secs,
            |_| Ok(()),
            |verifier, headers, body, now| verifier.verify_headers(headers, body, now).map(drop),
        )
    }

    /// Verifies one delivery whose HMACs the caller computed: the runtime's native
    /// HMAC-SHA256 (node:crypto) is several times faster than wasm on large bodies. The
    /// scratch buffer holds the three header values, as for [`verify`](Self::verify),
    /// then one 32-byte HMAC per secret, in the order of the secrets, each over
    /// `<id>.<timestamp>.<body>` with the id and timestamp trimmed of spaces and tabs.
    /// Every decision stays here: the headers, the timestamp window and the constant-time
    /// comparison with each well-formed `v1` signature (postwire-core's
    /// `Verifier::verify_computed`). A caller that hashes the wrong bytes can only cause a
    /// rejection, never an acceptance. Returns a status.
    #[wasm_bindgen(js_name = verifyMacs)]
    pub fn verify_macs(
        &self,
        id_len: u32,
        timestamp_len: u32,
        signature_len: u32,
        macs_len: u32,
        present: u32,
        now_secs: f64,
    ) -> u32 {
        let lens = [id_len, timestamp_len, signature_len, macs_len];
        let one_mac_per_secret = |macs: &[u8]| {
            if macs.len() == SIGNATURE_LEN * self.secrets.len() {
                Ok(())
            } else {
                Err(scratch::overflow())
            }
        };
        self.verify_scratch(
            lens,
            present,
            now_secs,
            one_mac_per_secret,
            |verifier, headers, macs, now| {
                let expected: Vec<Signature> = macs
                    .chunks_exact(SIGNATURE_LEN)
                    .filter_map(|c| <[u8; SIGNATURE_LEN]>::try_from(c).ok())
                    .map(Signature::from_bytes)
                    .collect();
                verifier.verify_computed(headers, &expected, now).map(drop)
            },
        )
    }

    /// The key bytes of secret `index`, for the native HMAC of
    /// [`verify_macs`](Self::verify_macs); `undefined` past the end. The wrapper turns
    /// them into a node:crypto `KeyObject` at once and zeroes its copy.
    #[wasm_bindgen(js_name = keyBytes)]
    pub fn key_bytes(&self, index: usize) -> Option<Vec<u8>> {
        self.secrets.get(index).map(|s| s.expose_bytes().to_vec())
    }

    /// The `webhook-signature` value for a delivery whose `webhook-id` and body are the
    /// first `id_len` and next `body_len` scratch bytes, sent at `timestamp_secs`: one
    /// `v1,<base64>` entry per secret. `undefined` on failure (then see `lastErrorMessage`).
    pub fn sign(&self, id_len: u32, body_len: u32, timestamp_secs: f64) -> Option<String> {
        let Some(signer) = &self.signer else {
            fail(Error::InvalidSecret {
                reason: "at least one secret is required",
            });
            return None;
        };
        let result = scratch::with(|buf| {
            let [id, body] = scratch::split(buf, [id_len, body_len]).ok_or_else(scratch::overflow)?;
            let id = std::str::from_utf8(id).map_err(|_| Error::InvalidHeader {
                name: ID_HEADER,
                reason: "not ASCII",
            })?;
            signer.sign(id, UnixTime::from_secs(secs(timestamp_secs)), body)
        });
        match result {
            Ok(value) => Some(value.into_string()),
            Err(e) => {
                fail(e);
                None
            }
        }
    }
}

impl WasmVerifier {
    /// What both verify calls share, in this order: a secret is configured; the scratch
    /// buffer holds the three header values and a last part (the body, or the MACs) of
    /// the given lengths; `check_last` accepts that last part; the headers that were
    /// present are picked out and checked; then `decide` gives the outcome. Returns a status.
    fn verify_scratch(
        &self,
        lens: [u32; 4],
        present: u32,
        now_secs: f64,
        check_last: impl FnOnce(&[u8]) -> Result<(), Error>,
        decide: impl FnOnce(&Verifier, WebhookHeaders<'_>, &[u8], UnixTime) -> Result<(), Error>,
    ) -> u32 {
        let Some(verifier) = &self.verifier else {
            return fail(Error::InvalidSecret {
                reason: "at least one secret is required",
            });
        };
        let now = UnixTime::from_secs(secs(now_secs));
        scratch::with(|buf| {
            let Some([id, timestamp, signature, last]) = scratch::split(buf, lens) else {
                return fail(scratch::overflow());
            };
            if let Err(e) = check_last(last) {
                return fail(e);
            }
            let pairs = match present_headers([id, timestamp, signature], present) {
                Ok(pairs) => pairs,
                Err(e) => return fail(e),
            };
            status(WebhookHeaders::from_source(&pairs).and_then(|h| decide(verifier, h, last, now)))
        })
    }
}

/// The three header values as name/value pairs for postwire-core, which then itself
/// reports a missing header (an absent one gets an empty name, so no look-up finds it)
/// and checks the values.
fn present_headers(values: [&[u8]; 3], present: u32) -> Result<[(&'static str, &str); 3], Error> {
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
    use postwire_core::Secret;

    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
    const TS: &str = "1614265330";
    const SIG: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";
    const BODY: &str = r#"{"test": 2432232314}"#;
    const ALL: u32 = HAS_ID | HAS_TIMESTAMP | HAS_SIGNATURE;

    /// Writes `parts` into the scratch buffer as the wrapper does, returning their lengths.
    fn put<const N: usize>(parts: [&[u8]; N]) -> [u32; N] {
        let total: usize = parts.iter().map(|p| p.len()).sum();
        assert_ne!(scratch::scratch_reserve(total as f64), 0);
        scratch::with(|buf| {
            let mut at = 0;
            for p in parts {
                buf[at..at + p.len()].copy_from_slice(p);
                at += p.len();
            }
        });
        parts.map(|p| p.len() as u32)
    }

    fn verifier(secrets: &[&str]) -> WasmVerifier {
        let mut v = WasmVerifier::new(300.0);
        for s in secrets {
            let [len] = put([s.as_bytes()]);
            assert_eq!(v.add_secret(len, false), OK);
        }
        v
    }

    fn verify(v: &WasmVerifier, id: &str, ts: &str, sig: &str, body: &[u8], present: u32, now: f64) -> String {
        let [a, b, c, d] = put([id.as_bytes(), ts.as_bytes(), sig.as_bytes(), body]);
        code_name(v.verify(a, b, c, d, present, now))
    }

    #[test]
    fn verifies_the_reference_vector_and_reports_each_failure() {
        let v = verifier(&[SECRET]);
        let now = 1614265330.0;
        assert_eq!(verify(&v, ID, TS, SIG, BODY.as_bytes(), ALL, now), "ok");
        assert_eq!(verify(&v, ID, TS, SIG, b"{}", ALL, now), "invalid_signature");
        assert!(last_error_message().contains("raw body"));
        assert_eq!(
            verify(&v, ID, TS, SIG, BODY.as_bytes(), ALL, now + 301.0),
            "timestamp_too_old"
        );
        assert_eq!(
            verify(&v, ID, TS, SIG, BODY.as_bytes(), ALL, now - 301.0),
            "timestamp_too_new"
        );
        assert_eq!(
            verify(&v, ID, "1614265330abc", SIG, BODY.as_bytes(), ALL, now),
            "invalid_header"
        );
        assert_eq!(
            verify(&v, ID, TS, SIG, BODY.as_bytes(), HAS_ID | HAS_SIGNATURE, now),
            "missing_header"
        );
        assert!(last_error_message().contains("webhook-timestamp"));
        assert_eq!(
            verify(&v, ID, TS, &format!("{SIG},extra"), BODY.as_bytes(), ALL, now),
            "invalid_signature"
        );
        assert_eq!(
            verify(&v, ID, TS, SIG.trim_end_matches('='), BODY.as_bytes(), ALL, now),
            "ok"
        );
        assert_eq!(
            verify(&v, ID, TS, SIG, BODY.as_bytes(), ALL, f64::NAN),
            "timestamp_too_new"
        );
    }

    /// HMAC-SHA256 computed by the test, as node:crypto would in the wrapper.
    fn mac(key: &[u8], msg: &[u8]) -> [u8; 32] {
        // Through postwire-core's signer, with the raw key: the same primitive, and an
        // independent path from `verify_headers`.
        let secret = Secret::from_bytes(key).unwrap();
        let id = std::str::from_utf8(msg.split(|b| *b == b'.').next().unwrap()).unwrap();
        let rest = &msg[id.len() + 1..];
        let ts_len = rest.iter().position(|b| *b == b'.').unwrap();
        let ts: i64 = std::str::from_utf8(&rest[..ts_len]).unwrap().parse().unwrap();
        *secret
            .sign(id, UnixTime::from_secs(ts), &rest[ts_len + 1..])
            .unwrap()
            .as_bytes()
    }

    fn verify_macs(v: &WasmVerifier, id: &str, ts: &str, sig: &str, macs: &[u8], present: u32, now: f64) -> String {
        let [a, b, c, d] = put([id.as_bytes(), ts.as_bytes(), sig.as_bytes(), macs]);
        code_name(v.verify_macs(a, b, c, d, present, now))
    }

    #[test]
    fn caller_computed_macs_get_the_same_decisions() {
        let v = verifier(&[SECRET]);
        let key = v.key_bytes(0).unwrap();
        assert_eq!(v.key_bytes(1), None);
        let good = mac(&key, format!("{ID}.{TS}.{BODY}").as_bytes());
        let now = 1614265330.0;
        assert_eq!(verify_macs(&v, ID, TS, SIG, &good, ALL, now), "ok");
        assert_eq!(verify_macs(&v, &format!(" {ID}\t"), TS, SIG, &good, ALL, now), "ok");
        let bad = mac(&key, format!("{ID}.{TS}.{{}}").as_bytes());
        assert_eq!(verify_macs(&v, ID, TS, SIG, &bad, ALL, now), "invalid_signature");
        assert_eq!(
            verify_macs(&v, ID, TS, SIG, &good, ALL, now + 301.0),
            "timestamp_too_old"
        );
        assert_eq!(verify_macs(&v, ID, "12x", SIG, &good, ALL, now), "invalid_header");
        assert_eq!(
            verify_macs(&v, ID, TS, SIG, &good, HAS_ID | HAS_TIMESTAMP, now),
            "missing_header"
        );
        assert_eq!(
            verify_macs(&v, ID, TS, &vec![SIG; 65].join(" "), &good, ALL, now),
            "invalid_header"
        );
        assert_eq!(verify_macs(&v, ID, TS, SIG, &good[..31], ALL, now), "invalid_payload");
    }

    #[test]
    fn rotation_accepts_either_secret_and_signs_with_both() {
        let other = "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
        let v = verifier(&[other, SECRET]);
        assert_eq!(v.secret_count(), 2);
        assert_eq!(verify(&v, ID, TS, SIG, BODY.as_bytes(), ALL, 1614265330.0), "ok");
        let [a, b] = put([ID.as_bytes(), BODY.as_bytes()]);
        let header = v.sign(a, b, 1614265330.0).unwrap();
        assert_eq!(header.split(' ').nth(1), Some(SIG));
    }

    #[test]
    fn bad_secrets_and_lengths_are_statuses_not_panics() {
        let mut v = WasmVerifier::new(300.0);
        assert_eq!(verify(&v, ID, TS, SIG, b"", ALL, 0.0), "invalid_secret");
        let [len] = put([b"whsec_!!!!"]);
        assert_eq!(code_name(v.add_secret(len, false)), "invalid_secret");
        assert!(!last_error_message().contains("!!!!"));
        let [len] = put([b"\xff\xfe"]);
        assert_eq!(code_name(v.add_secret(len, false)), "invalid_secret");
        assert_eq!(v.add_secret(len, true), OK, "raw keys are any bytes");
        assert_eq!(code_name(v.add_secret(0, true)), "invalid_secret");
        assert_eq!(
            code_name(v.verify(u32::MAX, u32::MAX, 1, 1, ALL, 0.0)),
            "invalid_payload"
        );
        assert_eq!(v.sign(u32::MAX, 0, 0.0), None);
        let [a, b] = put([b"bad id", b""]);
        assert_eq!(v.sign(a, b, 0.0), None);
        assert!(last_error_message().contains("webhook-id"));
    }
}
