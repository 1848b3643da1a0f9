//! Published key sets: a workspace's `v1a` public keys as a JSON Web Key Set (RFC 7517),
//! each ed25519 key an `OKP` JWK (RFC 8037) named by its RFC 7638 thumbprint. The one
//! source of this wire format: the sender renders it with [`to_jwks_json`], and every
//! receiver (the npm package through postwire-wasm, the edge Worker, the CLI) reads it
//! with [`KeySet::parse`].
//!
//! Why it exists: a receiver given the set's URL follows the sender's key rotations with
//! no `whpk_` key copied by hand. A `v1a` signature names no key, so a receiver tries every
//! key of the set, as it tries every `whpk_` key it is configured with.
//!
//! ## The document
//! ```json
//! {"keys":[{"kty":"OKP","crv":"Ed25519","x":"<base64url of the 32-byte key>",
//!           "kid":"<RFC 7638 thumbprint>","use":"sig","alg":"EdDSA",
//!           "nbf":1765000000,"exp":1765086400}]}
//! ```
//! `nbf` (seconds: when the key was made) and `exp` (seconds: on a key a rotation replaced,
//! when it stops signing) are postwire's members; generic JWK libraries ignore them. The
//! current key comes first.
//!
//! ## What [`KeySet::parse`] accepts
//! - At most [`MAX_KEY_SET_BYTES`] bytes of JSON, an object with a `keys` array of at most
//!   [`MAX_KEY_SET_KEYS`] entries. Unknown members, of the set and of its keys, are ignored.
//! - A key of another type (`kty` other than `OKP`, or `crv` other than `Ed25519`, e.g. an
//!   RSA or X25519 key published beside the webhook keys), or one marked for another use
//!   (`use` other than `sig`, `alg` other than `EdDSA`/`Ed25519`) is **skipped**, so one
//!   set can serve several purposes. A set in which no key is left is refused.
//! - An `OKP`/`Ed25519` key must be well formed, or the whole set is refused: `x` the
//!   unpadded base64url of 32 bytes, a valid point not of small order; a non-empty `kid`
//!   string (kept as given: a `v1a` signature does not name it, so it is a label for
//!   people and caches, not a check); `nbf`/`exp`, when present, integers; no `d` (a
//!   private key published by mistake is a leak to report, never a key to use).
//! - The same key twice is kept once.
//!
//! Every refusal is [`Error::InvalidKeySet`] (code `invalid_key_set`), whose reason never
//! contains the document's bytes.
//!
//! `nbf` and `exp` are carried, not enforced: a delivery signed just before its key's `exp`
//! may arrive (or be retried with the same signature) after it, and the sender stops
//! publishing a key once it must no longer be accepted.

use base64::Engine as _;
use serde::Serialize;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::{ED25519_KEY_LEN, Error, PublicKey};

/// The most bytes [`KeySet::parse`] reads: 64 KiB, hundreds of keys' worth. A larger
/// response is refused before it is parsed; fetchers stop reading at this size.
pub const MAX_KEY_SET_BYTES: usize = 64 * 1024;
/// The most entries a key set's `keys` array may hold, of any type: 32.
pub const MAX_KEY_SET_KEYS: usize = 32;
/// The media type a key set is served with (RFC 7517, section 8.5.1).
pub const KEY_SET_CONTENT_TYPE: &str = "application/jwk-set+json";
/// The longest `kid` accepted, in bytes: 256 (a thumbprint is 43).
pub const MAX_KID_LEN: usize = 256;

/// One key to publish: a `v1a` public key with its validity, in Unix seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PublishedKey {
    /// The key.
    pub public_key: PublicKey,
    /// When the key was made (`nbf`), if known.
    pub not_before: Option<i64>,
    /// When the key stops signing (`exp`): set only on a key a rotation replaced.
    pub expires_at: Option<i64>,
}

/// The RFC 7638 JWK thumbprint of `public_key`: the unpadded base64url of the SHA-256 of
/// `{"crv":"Ed25519","kty":"OKP","x":"<base64url of the key>"}` (the required members in
/// lexicographic order, no whitespace). The `kid` of the key in a published set.
///
/// ```
/// use postwire_core::{PublicKey, key_set};
/// // RFC 8037, appendix A.2 and A.3.
/// let x = [0xd7, 0x5a, 0x98, 0x01, 0x82, 0xb1, 0x0a, 0xb7, 0xd5, 0x4b, 0xfe, 0xd3, 0xc9, 0x64, 0x07, 0x3a,
///          0x0e, 0xe1, 0x72, 0xf3, 0xda, 0xa6, 0x23, 0x25, 0xaf, 0x02, 0x1a, 0x68, 0xf7, 0x07, 0x51, 0x1a];
/// let key = PublicKey::from_bytes(&x).unwrap();
/// assert_eq!(key_set::kid(&key), "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k");
/// ```
pub fn kid(public_key: &PublicKey) -> String {
    let x = base64url(public_key.as_bytes());
    let mut hash = Sha256::new();
    hash.update(br#"{"crv":"Ed25519","kty":"OKP","x":""#);
    hash.update(x.as_bytes());
    hash.update(br#""}"#);
    base64url(&hash.finalize())
}

fn base64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// One JWK as written by [`to_jwks_json`]; members in the order of the documented format.
#[derive(Serialize)]
struct JwkOut {
    kty: &'static str,
    crv: &'static str,
    x: String,
    kid: String,
    #[serde(rename = "use")]
    use_: &'static str,
    alg: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    nbf: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    exp: Option<i64>,
}

#[derive(Serialize)]
struct JwkSetOut {
    keys: Vec<JwkOut>,
}

/// The JSON Web Key Set of `keys`, in the given order (the current key first), compact.
/// Serve it with `content-type: application/jwk-set+json` ([`KEY_SET_CONTENT_TYPE`]).
///
/// ```
/// use postwire_core::{SigningKey, key_set::{self, KeySet, PublishedKey}};
/// let key = SigningKey::generate().unwrap().public_key();
/// let json = key_set::to_jwks_json(&[PublishedKey { public_key: key, not_before: Some(1_765_000_000), expires_at: None }]);
/// assert!(json.starts_with(r#"{"keys":[{"kty":"OKP","crv":"Ed25519","x":""#));
/// let set = KeySet::parse(json.as_bytes()).unwrap();
/// assert_eq!(set.public_keys().collect::<Vec<_>>(), vec![&key]);
/// ```
pub fn to_jwks_json(keys: &[PublishedKey]) -> String {
    let set = JwkSetOut {
        keys: keys
            .iter()
            .map(|k| JwkOut {
                kty: "OKP",
                crv: "Ed25519",
                x: base64url(k.public_key.as_bytes()),
                kid: kid(&k.public_key),
                use_: "sig",
                alg: "EdDSA",
                nbf: k.not_before,
                exp: k.expires_at,
            })
            .collect(),
    };
    // Serializing strings and integers into a Vec cannot fail; an empty set is the
    // fallback that keeps this function infallible.
    serde_json::to_string(&set).unwrap_or_else(|_| String::from(r#"{"keys":[]}"#))
}

/// One usable key of a [`KeySet`]: its `kid`, the key, and its published validity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeySetKey {
    kid: String,
    public_key: PublicKey,
    not_before: Option<i64>,
    expires_at: Option<i64>,
}

impl KeySetKey {
    /// The `kid` as published.
    pub fn kid(&self) -> &str {
        &self.kid
    }
    /// The key.
    pub fn public_key(&self) -> &PublicKey {
        &self.public_key
    }
    /// `nbf`: when the key was made, in Unix seconds, if published.
    pub fn not_before(&self) -> Option<i64> {
        self.not_before
    }
    /// `exp`: when the key stops signing, in Unix seconds, if published.
    pub fn expires_at(&self) -> Option<i64> {
        self.expires_at
    }
}

/// A parsed key set: its usable `v1a` keys, in the published order, at least one. See the
/// [module docs](self) for what is accepted, skipped and refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeySet {
    keys: Vec<KeySetKey>,
}

fn refused(reason: &'static str) -> Error {
    Error::InvalidKeySet { reason }
}

impl KeySet {
    /// Parses a JSON Web Key Set, keeping its `OKP`/`Ed25519` signing keys.
    ///
    /// ```
    /// use postwire_core::key_set::KeySet;
    /// let err = KeySet::parse(br#"{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB"}]}"#).unwrap_err();
    /// assert_eq!(err.code().as_str(), "invalid_key_set");
    /// ```
    pub fn parse(json: &[u8]) -> Result<KeySet, Error> {
        if json.len() > MAX_KEY_SET_BYTES {
            return Err(refused("larger than 65536 bytes"));
        }
        let doc: Value = serde_json::from_slice(json).map_err(|_| refused("not JSON"))?;
        let entries = doc
            .as_object()
            .and_then(|set| set.get("keys"))
            .and_then(Value::as_array)
            .ok_or(refused("not a JWK Set: expected an object with a `keys` array"))?;
        if entries.len() > MAX_KEY_SET_KEYS {
            return Err(refused("more than 32 keys"));
        }
        let mut keys: Vec<KeySetKey> = Vec::with_capacity(entries.len());
        for entry in entries {
            let jwk = entry.as_object().ok_or(refused("a `keys` entry is not an object"))?;
            if let Some(key) = parse_jwk(jwk)?
                && !keys.iter().any(|k| k.public_key == key.public_key)
            {
                keys.push(key);
            }
        }
        if keys.is_empty() {
            return Err(refused("no OKP Ed25519 signing key (kty \"OKP\", crv \"Ed25519\")"));
        }
        Ok(KeySet { keys })
    }

    /// Every key, in the published order (the current key first).
    pub fn public_keys(&self) -> impl Iterator<Item = &PublicKey> {
        self.keys.iter().map(|k| &k.public_key)
    }

    /// Every key with its `kid` and validity, in the published order.
    pub fn keys(&self) -> &[KeySetKey] {
        &self.keys
    }
}

/// A member that must be a string when present; `Ok(None)` when absent.
fn str_member<'a>(jwk: &'a Map<String, Value>, name: &str, reason: &'static str) -> Result<Option<&'a str>, Error> {
    match jwk.get(name) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(refused(reason)),
    }
}

/// A member that must be an integer when present.
fn int_member(jwk: &Map<String, Value>, name: &str, reason: &'static str) -> Result<Option<i64>, Error> {
    match jwk.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v.as_i64().map(Some).ok_or(refused(reason)),
    }
}

/// One JWK: `Ok(None)` for a key of another type or use (skipped), an error for a
/// malformed ed25519 key.
fn parse_jwk(jwk: &Map<String, Value>) -> Result<Option<KeySetKey>, Error> {
    let kty = str_member(jwk, "kty", "a key's `kty` is not a string")?;
    let crv = jwk.get("crv").and_then(Value::as_str);
    let use_ = jwk.get("use").and_then(Value::as_str);
    let alg = jwk.get("alg").and_then(Value::as_str);
    let other_type = kty != Some("OKP") || crv != Some("Ed25519");
    let other_use = use_.is_some_and(|u| u != "sig") || alg.is_some_and(|a| a != "EdDSA" && a != "Ed25519");
    if kty.is_none() {
        return Err(refused("a key has no `kty`"));
    }
    if other_type || other_use {
        return Ok(None);
    }
    if jwk.contains_key("d") {
        return Err(refused(
            "a key holds its private part (`d`): the set must publish public keys only",
        ));
    }
    let x = str_member(jwk, "x", "a key's `x` is not a string")?.ok_or(refused("an Ed25519 key has no `x`"))?;
    let mut bytes = [0u8; ED25519_KEY_LEN];
    let n = if x.len() == 43 {
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode_slice(x, &mut bytes)
            .map_err(|_| refused("a key's `x` is not unpadded base64url"))?
    } else {
        0
    };
    if n != ED25519_KEY_LEN {
        return Err(refused("a key's `x` is not the unpadded base64url of 32 bytes"));
    }
    let public_key = PublicKey::from_bytes(&bytes).map_err(|_| refused("a key's `x` is not a usable ed25519 key"))?;
    let kid = str_member(jwk, "kid", "a key's `kid` is not a string")?.ok_or(refused("a key has no `kid`"))?;
    if kid.is_empty() || kid.len() > MAX_KID_LEN {
        return Err(refused("a key's `kid` is empty or longer than 256 bytes"));
    }
    Ok(Some(KeySetKey {
        kid: kid.to_owned(),
        public_key,
        not_before: int_member(jwk, "nbf", "a key's `nbf` is not an integer")?,
        expires_at: int_member(jwk, "exp", "a key's `exp` is not an integer")?,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ErrorCode, SigningKey};

    /// RFC 8037, appendix A.2: the example Ed25519 public key.
    const RFC8037_X: &str = "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo";
    /// RFC 8037, appendix A.3: its RFC 7638 thumbprint.
    const RFC8037_THUMBPRINT: &str = "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k";
    /// RFC 8037, appendix A.1: the private key (`d`) of the example.
    const RFC8037_D: &str = "nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A";

    fn code(json: &str) -> ErrorCode {
        KeySet::parse(json.as_bytes()).unwrap_err().code()
    }

    fn jwk(x: &str) -> String {
        format!(r#"{{"kty":"OKP","crv":"Ed25519","x":"{x}","kid":"k1"}}"#)
    }

    #[test]
    fn rfc8037_public_key_parses_and_its_thumbprint_is_the_rfcs() {
        let json =
            format!(r#"{{"keys":[{{"kty":"OKP","crv":"Ed25519","x":"{RFC8037_X}","kid":"{RFC8037_THUMBPRINT}"}}]}}"#);
        let set = KeySet::parse(json.as_bytes()).unwrap();
        let key = set.keys().first().unwrap();
        assert_eq!(key.kid(), RFC8037_THUMBPRINT);
        assert_eq!(kid(key.public_key()), RFC8037_THUMBPRINT);
        assert_eq!(base64url(key.public_key().as_bytes()), RFC8037_X);
    }

    #[test]
    fn rfc8037_private_key_is_refused() {
        let json =
            format!(r#"{{"keys":[{{"kty":"OKP","crv":"Ed25519","d":"{RFC8037_D}","x":"{RFC8037_X}","kid":"a"}}]}}"#);
        let err = KeySet::parse(json.as_bytes()).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidKeySet);
        assert!(!err.to_string().contains(RFC8037_D));
    }

    /// RFC 7638's rule, computed independently: SHA-256 of the canonical members in
    /// lexicographic order, built here with serde_json's sorted map rather than by hand.
    #[test]
    fn kid_is_the_rfc7638_thumbprint_of_generated_keys() {
        for _ in 0..8 {
            let key = SigningKey::generate().unwrap().public_key();
            let mut members = std::collections::BTreeMap::new();
            members.insert("x", base64url(key.as_bytes()));
            members.insert("kty", "OKP".to_owned());
            members.insert("crv", "Ed25519".to_owned());
            let canonical = serde_json::to_string(&members).unwrap();
            assert!(canonical.starts_with(r#"{"crv":"Ed25519","kty":"OKP","x":"#));
            let want = base64url(&Sha256::digest(canonical.as_bytes()));
            assert_eq!(kid(&key), want);
            assert_eq!(kid(&key).len(), 43);
        }
    }

    #[test]
    fn round_trip_keeps_order_validity_and_kids() {
        let a = SigningKey::generate().unwrap().public_key();
        let b = SigningKey::generate().unwrap().public_key();
        let published = [
            PublishedKey {
                public_key: a,
                not_before: Some(1_765_000_000),
                expires_at: None,
            },
            PublishedKey {
                public_key: b,
                not_before: Some(1_764_000_000),
                expires_at: Some(1_765_086_400),
            },
        ];
        let json = to_jwks_json(&published);
        let doc: Value = serde_json::from_str(&json).unwrap();
        let first = &doc["keys"][0];
        assert_eq!(first["kty"], "OKP");
        assert_eq!(first["crv"], "Ed25519");
        assert_eq!(first["use"], "sig");
        assert_eq!(first["alg"], "EdDSA");
        assert_eq!(first["nbf"], 1_765_000_000);
        assert!(first.get("exp").is_none());
        assert_eq!(doc["keys"][1]["exp"], 1_765_086_400);
        let set = KeySet::parse(json.as_bytes()).unwrap();
        assert_eq!(set.public_keys().copied().collect::<Vec<_>>(), vec![a, b]);
        let second = set.keys().get(1).unwrap();
        assert_eq!(second.kid(), kid(&b));
        assert_eq!(second.not_before(), Some(1_764_000_000));
        assert_eq!(second.expires_at(), Some(1_765_086_400));
        assert!(to_jwks_json(&[]).contains(r#""keys":[]"#));
    }

    #[test]
    fn keys_of_other_types_and_uses_are_skipped_unknown_members_ignored() {
        let good = SigningKey::generate().unwrap().public_key();
        let x = base64url(good.as_bytes());
        let json = format!(
            r#"{{"extra":{{"a":[1,2]}},"keys":[
              {{"kty":"RSA","n":"0vx7","e":"AQAB","kid":5}},
              {{"kty":"OKP","crv":"X25519","x":"{x}","kid":"x"}},
              {{"kty":"OKP","crv":"Ed25519","x":"{x}","kid":"enc","use":"enc"}},
              {{"kty":"OKP","crv":"Ed25519","x":"{x}","kid":"es","alg":"ES256"}},
              {{"kty":"OKP","crv":"Ed25519","x":"{x}","kid":"ok","x5c":["zz"],"custom":null}},
              {{"kty":"OKP","crv":"Ed25519","x":"{x}","kid":"dup","alg":"Ed25519"}}
            ]}}"#
        );
        let set = KeySet::parse(json.as_bytes()).unwrap();
        assert_eq!(set.keys().len(), 1);
        assert_eq!(set.keys().first().unwrap().kid(), "ok");
    }

    #[test]
    fn bad_documents_get_invalid_key_set() {
        let x = base64url(SigningKey::generate().unwrap().public_key().as_bytes());
        let padded = format!("{x}=");
        let std_b64 = base64::engine::general_purpose::STANDARD.encode([0xfbu8; 32]);
        let cases: Vec<String> = vec![
            "".into(),
            "not json".into(),
            "[]".into(),
            r#"{"keys":{}}"#.into(),
            r#"{"keys":[]}"#.into(),
            r#"{"keys":[1]}"#.into(),
            r#"{"keys":[{"crv":"Ed25519"}]}"#.into(),
            r#"{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB"}]}"#.into(),
            format!(r#"{{"keys":[{{"kty":"OKP","crv":"X25519","x":"{x}","kid":"a"}}]}}"#),
            format!(r#"{{"keys":[{{"kty":"OKP","crv":"Ed25519","x":"{x}"}}]}}"#),
            format!(r#"{{"keys":[{{"kty":"OKP","crv":"Ed25519","x":"{x}","kid":""}}]}}"#),
            format!(r#"{{"keys":[{{"kty":"OKP","crv":"Ed25519","x":"{x}","kid":7}}]}}"#),
            format!(
                r#"{{"keys":[{{"kty":"OKP","crv":"Ed25519","x":"{x}","kid":"{}"}}]}}"#,
                "k".repeat(257)
            ),
            format!(r#"{{"keys":[{{"kty":"OKP","crv":"Ed25519","x":"{x}","kid":"a","nbf":"soon"}}]}}"#),
            format!(r#"{{"keys":[{{"kty":"OKP","crv":"Ed25519","x":"{x}","kid":"a","exp":1.5}}]}}"#),
            format!(r#"{{"keys":[{{"kty":"OKP","crv":"Ed25519","x":"{padded}","kid":"a"}}]}}"#),
            format!(r#"{{"keys":[{{"kty":"OKP","crv":"Ed25519","x":"{std_b64}","kid":"a"}}]}}"#),
            r#"{"keys":[{"kty":"OKP","crv":"Ed25519","x":"AAAA","kid":"a"}]}"#.into(),
            r#"{"keys":[{"kty":"OKP","crv":"Ed25519","x":7,"kid":"a"}]}"#.into(),
            // The identity point: small order, would accept forged signatures.
            format!(
                r#"{{"keys":[{{"kty":"OKP","crv":"Ed25519","x":"{}","kid":"a"}}]}}"#,
                base64url(&{
                    let mut b = [0u8; 32];
                    b[0] = 1;
                    b
                })
            ),
            "[".repeat(10_000),
        ];
        for case in &cases {
            assert_eq!(code(case), ErrorCode::InvalidKeySet, "{case:.120}");
        }
    }

    #[test]
    fn size_and_count_caps() {
        let x = base64url(SigningKey::generate().unwrap().public_key().as_bytes());
        let many = vec![jwk(&x); MAX_KEY_SET_KEYS + 1].join(",");
        assert_eq!(code(&format!(r#"{{"keys":[{many}]}}"#)), ErrorCode::InvalidKeySet);
        let at_cap = vec![jwk(&x); MAX_KEY_SET_KEYS].join(",");
        assert_eq!(
            KeySet::parse(format!(r#"{{"keys":[{at_cap}]}}"#).as_bytes())
                .unwrap()
                .keys()
                .len(),
            1
        );
        let pad = " ".repeat(MAX_KEY_SET_BYTES);
        let big = format!(r#"{{"keys":[{}]}}{pad}"#, jwk(&x));
        let err = KeySet::parse(big.as_bytes()).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidKeySet);
        assert!(err.to_string().contains("65536"));
    }
}
