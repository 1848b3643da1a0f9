//! Which signatures a delivery carries, and which public keys a workspace publishes:
//! the pure rules of the `v1a` extension (`signing`: `symmetric`, `asymmetric` or
//! `both`; see `docs/api.md`), called by both store backends when they build a
//! subscription's [`DeliverySigner`] for a claim, and by the sender for the signing-keys listing.
//!
//! * `symmetric` (the spec's behaviour): one `v1` entry per secret in use, the current
//!   one, then the previous one while its 24 h rotation window is open.
//! * `asymmetric`: one `v1a` entry per key in use of the workspace's ed25519 key pair,
//!   the current one, then the previous one while its window is open.
//! * `both`: the `v1` entries, then the `v1a` ones.
//!
//! A window is open while the clock is before its end; at its end the old secret or key
//! stops signing. The returned `reload_at` is the earliest end of a window that was used,
//! so a cache of signers knows when its entry goes stale.

use postwire_core::{Secret, SigningMode, Timestamp};

use crate::error::SenderError;
use crate::model::{SigningKeyInfo, WorkspaceKeys};
use crate::signer::{DeliverySigner, WorkspaceKey};

/// What signs a subscription's deliveries at a time, as stored.
#[derive(Debug, Clone)]
pub struct SigningMaterial {
    /// The subscription's choice.
    pub mode: SigningMode,
    /// Its current `whsec_` secret.
    pub secret: Secret,
    /// Its previous secret and the end of that rotation window.
    pub previous_secret: Option<(Secret, Timestamp)>,
    /// The workspace's current signing key (`None` if it has never had one).
    pub key: Option<WorkspaceKey>,
    /// The workspace's previous signing key and the end of that rotation window.
    pub previous_key: Option<(WorkspaceKey, Timestamp)>,
}

/// A subscription's signer at `now`, and when it must be built again (the end of the
/// earliest open window it used). An `asymmetric` or `both` subscription of a workspace
/// without a key pair is an internal error: the sender makes the key pair before it
/// stores such a subscription.
pub fn signer_at(
    material: SigningMaterial,
    now: Timestamp,
) -> Result<(DeliverySigner, Option<Timestamp>), SenderError> {
    let SigningMaterial {
        mode,
        secret,
        previous_secret,
        key,
        previous_key,
    } = material;
    let mut reload_at: Option<Timestamp> = None;
    let mut note = |until: Timestamp| {
        reload_at = Some(reload_at.map_or(until, |at| at.min(until)));
    };
    let mut secrets = Vec::new();
    if mode.symmetric() {
        secrets.push(secret);
        if let Some((previous, until)) = previous_secret
            && until > now
        {
            secrets.push(previous);
            note(until);
        }
    }
    let mut keys = Vec::new();
    if mode.asymmetric() {
        let key = key.ok_or_else(|| {
            SenderError::storage("a subscription signs with `v1a` but its workspace has no signing key")
        })?;
        keys.push(key);
        if let Some((previous, until)) = previous_key
            && until > now
        {
            keys.push(previous);
            note(until);
        }
    }
    Ok((DeliverySigner::new(secrets, keys)?, reload_at))
}

/// The public keys a workspace publishes at `now`: the current one, then the previous
/// one while its rotation window is open (with the window's end).
pub fn published_keys(keys: &WorkspaceKeys, now: Timestamp) -> Vec<SigningKeyInfo> {
    let mut out = vec![SigningKeyInfo {
        public_key: keys.current.public_key(),
        created_at: keys.created_at,
        expires_at: None,
    }];
    if let Some(previous) = &keys.previous
        && previous.until > now
    {
        out.push(SigningKeyInfo {
            public_key: previous.key.public_key(),
            created_at: previous.created_at,
            expires_at: Some(previous.until),
        });
    }
    out
}

/// The prefix of a key-set id.
pub const KEY_SET_ID_PREFIX: &str = "ks_";
/// Random bytes in a key-set id: 16 (128 bits), written as 32 lowercase hex digits.
const KEY_SET_ID_BYTES: usize = 16;

/// A new key-set id: `ks_` and 32 lowercase hex digits from the operating system's
/// random source. Unguessable, so the key set's public URL reveals no workspace and
/// cannot be found by trying ids.
pub fn new_key_set_id() -> Result<String, SenderError> {
    let mut bytes = [0u8; KEY_SET_ID_BYTES];
    getrandom::fill(&mut bytes).map_err(|_| SenderError::storage("no secure random source is available"))?;
    let mut id = String::with_capacity(KEY_SET_ID_PREFIX.len() + 2 * KEY_SET_ID_BYTES);
    id.push_str(KEY_SET_ID_PREFIX);
    for b in bytes {
        use std::fmt::Write as _;
        let _ = write!(id, "{b:02x}");
    }
    Ok(id)
}

/// Whether `id` has the form of a key-set id (`ks_` and 32 lowercase hex digits), so
/// that any other text is refused before the store is asked.
pub fn is_key_set_id(id: &str) -> bool {
    id.strip_prefix(KEY_SET_ID_PREFIX).is_some_and(|hex| {
        hex.len() == 2 * KEY_SET_ID_BYTES && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

#[cfg(test)]
mod tests {
    use postwire_core::{SigningKey, UnixTime, Verifier};

    use super::*;
    use crate::model::PreviousKey;
    use crate::signer::InProcessKeys;

    fn material(
        mode: SigningMode,
        key: Option<SigningKey>,
        previous_key: Option<(SigningKey, Timestamp)>,
    ) -> SigningMaterial {
        SigningMaterial {
            mode,
            secret: Secret::generate().unwrap(),
            previous_secret: None,
            key: key.map(WorkspaceKey::from),
            previous_key: previous_key.map(|(k, until)| (WorkspaceKey::from(k), until)),
        }
    }

    async fn sign(signer: &DeliverySigner) -> String {
        signer
            .sign(&InProcessKeys, "msg_1", UnixTime::from_secs(1_800_000_000), b"{}")
            .await
            .unwrap()
    }

    async fn entries(signer: &DeliverySigner) -> Vec<String> {
        sign(signer)
            .await
            .split(' ')
            .map(|e| e.split(',').next().unwrap().to_owned())
            .collect()
    }

    #[tokio::test]
    async fn each_choice_signs_with_its_scheme_in_order() {
        let now = Timestamp::from_unix_millis(1_800_000_000_000);
        let key = SigningKey::generate().unwrap();
        let (s, at) = signer_at(material(SigningMode::Symmetric, None, None), now).unwrap();
        assert_eq!((entries(&s).await, at), (vec!["v1".to_owned()], None));
        let (s, _) = signer_at(material(SigningMode::Asymmetric, Some(key.clone()), None), now).unwrap();
        assert_eq!(entries(&s).await, ["v1a"]);
        let (s, _) = signer_at(material(SigningMode::Both, Some(key.clone()), None), now).unwrap();
        assert_eq!(entries(&s).await, ["v1", "v1a"]);
        // No key pair for a v1a subscription: a typed internal error, never a v1 fallback.
        let e = signer_at(material(SigningMode::Both, None, None), now).unwrap_err();
        assert_eq!(e.code().as_str(), "internal_error");
    }

    #[tokio::test]
    async fn the_previous_key_signs_until_its_window_ends() {
        let now = Timestamp::from_unix_millis(1_800_000_000_000);
        let old = SigningKey::generate().unwrap();
        let new = SigningKey::generate().unwrap();
        let until = now.add_millis(1_000);
        let m = material(SigningMode::Asymmetric, Some(new.clone()), Some((old.clone(), until)));
        let (s, at) = signer_at(m.clone(), now).unwrap();
        assert_eq!((entries(&s).await.len(), at), (2, Some(until)));
        let value = sign(&s).await;
        let headers = [
            ("webhook-id", "msg_1"),
            ("webhook-timestamp", "1800000000"),
            ("webhook-signature", value.as_str()),
        ];
        for k in [&old, &new] {
            let v = Verifier::from_public_key(k.public_key());
            assert!(v.verify(&headers, b"{}", UnixTime::from_secs(1_800_000_000)).is_ok());
        }
        let (s, at) = signer_at(m, until).unwrap();
        assert_eq!((entries(&s).await.len(), at), (1, None));
        let keys = WorkspaceKeys {
            key_set_id: new_key_set_id().unwrap(),
            current: new.clone().into(),
            created_at: now,
            previous: Some(PreviousKey {
                key: old.clone().into(),
                created_at: now.add_millis(-5),
                until,
            }),
        };
        let published = published_keys(&keys, now);
        assert_eq!(published.len(), 2);
        assert_eq!(published[0].public_key, new.public_key());
        assert_eq!(published[1].expires_at, Some(until));
        assert_eq!(published_keys(&keys, until).len(), 1);
    }

    #[test]
    fn key_set_ids_are_random_and_checked_by_form() {
        let (a, b) = (new_key_set_id().unwrap(), new_key_set_id().unwrap());
        assert_ne!(a, b);
        assert!(is_key_set_id(&a) && is_key_set_id(&b), "{a} {b}");
        assert_eq!(a.len(), 35);
        for bad in [
            "",
            "ks_",
            "ks_0123",
            &a.to_uppercase(),
            &format!("{a}0"),
            &a.replace("ks_", "kx_"),
            "ks_0123456789abcdef0123456789abcdeg",
        ] {
            assert!(!is_key_set_id(bad), "{bad}");
        }
    }
}
