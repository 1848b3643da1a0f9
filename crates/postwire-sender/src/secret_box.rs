//! Signing secrets encrypted at rest.
//!
//! Anyone with a copy of the database (a backup, a disk snapshot) could otherwise sign
//! deliveries as the platform. A [`SecretCipher`] holds one or more 256-bit keys, each
//! with an id; the first is the *current* key. Secrets are stored as
//! `pwenc1.<key id>.<base64url(nonce ‖ ciphertext ‖ tag)>`, sealed with XChaCha20-Poly1305
//! (an AEAD: a changed byte fails to open instead of giving a wrong secret) under a fresh
//! random 192-bit nonce. The key id beside each ciphertext lets keys rotate: new keys
//! are added in front, old ones still open what they sealed until everything has been
//! re-sealed (`postwire keys rotate`), then they can be dropped. A running server reads
//! its key file again every 30 s ([`SecretCipher::reload`]); when the file names a new
//! current key, new secrets are sealed under it at once and the stored ones are sealed
//! again in the background, a batch per short transaction (`Store::reseal_secrets`).
//!
//! ## What a storage backend does with it
//! A backend receives an `Option<Arc<SecretCipher>>` when it is opened and, through the
//! [`StoredSecret`] helpers:
//! 1. writes [`StoredSecret::seal`]`(cipher, &secret)` wherever it would write a secret
//!    (a new subscription's secret, a rotation's new secret);
//! 2. reads with [`StoredSecret::open`]`(cipher, &text)`: it opens sealed text, and still
//!    accepts a plain `whsec_…` written before encryption was on;
//! 3. at open, refuses to start when a sealed row's key id is not among the cipher's keys,
//!    or when there are sealed rows and no cipher ([`StoredSecret::check_opens`] says
//!    why, naming key ids only), and seals the plain rows left from before
//!    (each backend's `registry::reseal_all`), every secret (current and previous)
//!    sealed again under the current key, in one transaction.
//!
//! A workspace's `v1a` signing keys (current and previous: `whsk_…`, or the `pkcs11:…`
//! reference of a key kept in a hardware module, see [`crate::signer`]) are stored the same
//! way ([`StoredSecret::seal_signing_key`], [`StoredSecret::open_signing_key`]), checked
//! and sealed again at open and by the background re-encryption with the secrets.
//!
//! The sender itself seals what it stores besides: an idempotent creation's stored
//! response, which carries the new secret for 24 h ([`SecretCipher::seal_text`]).
//!
//! ## Key files
//! One key per line, `<id>:<base64 of 32 bytes>`; blank lines and `#` comments are
//! ignored; the first key is the current one. [`SecretCipher::generate_key_line`]
//! makes a line.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use postwire_core::Secret;
use zeroize::Zeroizing;

use crate::signer::WorkspaceKey;

/// The prefix of sealed text.
pub const SEALED_PREFIX: &str = "pwenc1.";
/// Bound to every ciphertext, so text sealed for something else does not open here.
const AAD: &[u8] = b"postwire secret at rest v1";
const NONCE_LEN: usize = 24;
/// Values sealed again per transaction by the background re-encryption: 200.
pub const RESEAL_BATCH: usize = 200;
/// How often a running server reads its key file again: 30 s.
pub const KEY_FILE_CHECK_INTERVAL: std::time::Duration = std::time::Duration::from_secs(30);

/// Why a key or sealed text was refused. Never carries key material or plaintext.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CipherError {
    /// A key line is not `<id>:<base64 of 32 bytes>`.
    #[error("key line {line}: {why}")]
    BadKey {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        why: &'static str,
    },
    /// No key at all.
    #[error("no key: the key file or variable holds no `<id>:<base64>` line")]
    NoKeys,
    /// The key file could not be read.
    #[error("cannot read the key file {path}: {why}")]
    Unreadable {
        /// The file.
        path: String,
        /// The cause.
        why: String,
    },
    /// The text was sealed under a key this cipher does not have.
    #[error(
        "a secret is encrypted under key `{0}`, which is not among the configured keys: give the key file that holds it (POSTWIRE_SECRET_KEY_FILE / --secret-key-file, or POSTWIRE_SECRET_KEY)"
    )]
    UnknownKey(String),
    /// The text is sealed and no key was configured.
    #[error(
        "the database holds encrypted secrets (key `{0}`) but no key was given: set POSTWIRE_SECRET_KEY_FILE (or --secret-key-file) to the key file made when the database was created"
    )]
    NoCipher(String),
    /// Malformed sealed text, or it failed authentication (tampered, or another key with
    /// the same id).
    #[error("a stored secret could not be decrypted (damaged, or a different key under id `{0}`)")]
    Damaged(String),
    /// The plaintext is not a secret.
    #[error("a stored secret is not a valid signing secret")]
    NotASecret,
    /// No secure random source.
    #[error("no secure random source is available")]
    NoRandom,
}

struct Key {
    id: String,
    aead: XChaCha20Poly1305,
}

/// Keys to seal and open secrets at rest. See the module documentation.
pub struct SecretCipher {
    /// The keys, current first. Grows when the key file is read again.
    keys: RwLock<Vec<Arc<Key>>>,
    /// Where the keys came from, to read again when text names an unknown key id (a
    /// `postwire keys rotate` run while the server is up).
    source: Option<PathBuf>,
}

impl std::fmt::Debug for SecretCipher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretCipher")
            .field("current_key_id", &self.current_key_id())
            .finish_non_exhaustive()
    }
}

fn parse_keys(text: &str) -> Result<Vec<Arc<Key>>, CipherError> {
    let mut keys = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = |why| CipherError::BadKey { line: i + 1, why };
        let (id, b64) = line.split_once(':').ok_or(bad("expected `<id>:<base64 key>`"))?;
        if id.is_empty() || id.len() > 32 || !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
            return Err(bad("the id must be 1 to 32 letters, digits, `_` or `-`"));
        }
        let bytes = Zeroizing::new(STANDARD.decode(b64.trim()).map_err(|_| bad("the key is not base64"))?);
        if bytes.len() != 32 {
            return Err(bad("the key must be 32 bytes"));
        }
        let aead = XChaCha20Poly1305::new_from_slice(&bytes).map_err(|_| bad("the key must be 32 bytes"))?;
        keys.push(Arc::new(Key {
            id: id.to_owned(),
            aead,
        }));
    }
    if keys.is_empty() {
        return Err(CipherError::NoKeys);
    }
    Ok(keys)
}

impl SecretCipher {
    /// Keys from key-file text (see the module documentation); the first is current.
    pub fn from_key_text(text: &str) -> Result<SecretCipher, CipherError> {
        Ok(SecretCipher {
            keys: RwLock::new(parse_keys(text)?),
            source: None,
        })
    }

    /// Keys from a key file, read again if sealed text names a key it lacks.
    pub fn from_file(path: &Path) -> Result<SecretCipher, CipherError> {
        let text = Zeroizing::new(std::fs::read_to_string(path).map_err(|e| CipherError::Unreadable {
            path: path.display().to_string(),
            why: e.to_string(),
        })?);
        Ok(SecretCipher {
            keys: RwLock::new(parse_keys(&text)?),
            source: Some(path.to_path_buf()),
        })
    }

    /// A new key-file line `<id>:<base64>` with a random id and key.
    pub fn generate_key_line() -> Result<Zeroizing<String>, CipherError> {
        let mut key = Zeroizing::new([0u8; 32]);
        let mut id = [0u8; 4];
        getrandom::fill(key.as_mut()).map_err(|_| CipherError::NoRandom)?;
        getrandom::fill(&mut id).map_err(|_| CipherError::NoRandom)?;
        let id: String = id.iter().map(|b| format!("{b:02x}")).collect();
        Ok(Zeroizing::new(format!("k{id}:{}", STANDARD.encode(key.as_ref()))))
    }

    /// The key file the keys came from, if any (keys given as text have none).
    pub fn source_file(&self) -> Option<&Path> {
        self.source.as_deref()
    }

    /// Reads the key file again, for a `postwire keys rotate` run while this process is
    /// up: the file's first key becomes the current one, and every key this process knew
    /// stays known, so what it sealed still opens. Returns the new current key id when
    /// it changed; `None` when it did not, or when the keys did not come from a file.
    pub fn reload(&self) -> Result<Option<String>, CipherError> {
        let Some(path) = &self.source else {
            return Ok(None);
        };
        let text = Zeroizing::new(std::fs::read_to_string(path).map_err(|e| CipherError::Unreadable {
            path: path.display().to_string(),
            why: e.to_string(),
        })?);
        let mut fresh = parse_keys(&text)?;
        let mut keys = self.keys.write().unwrap_or_else(|p| p.into_inner());
        let before = keys.first().map(|k| k.id.clone());
        for k in keys.iter() {
            if !fresh.iter().any(|f| f.id == k.id) {
                fresh.push(k.clone());
            }
        }
        let after = fresh.first().map(|k| k.id.clone());
        *keys = fresh;
        Ok(if after != before { after } else { None })
    }

    fn keys(&self) -> std::sync::RwLockReadGuard<'_, Vec<Arc<Key>>> {
        self.keys.read().unwrap_or_else(|p| p.into_inner())
    }

    /// The id of the key new text is sealed under.
    pub fn current_key_id(&self) -> String {
        self.keys().first().map(|k| k.id.clone()).unwrap_or_default()
    }

    /// The ids of every key, current first.
    pub fn key_ids(&self) -> Vec<String> {
        self.keys().iter().map(|k| k.id.clone()).collect()
    }

    fn key(&self, id: &str) -> Option<Arc<Key>> {
        if let Some(k) = self.keys().iter().find(|k| k.id == id) {
            return Some(k.clone());
        }
        // A rotation may have added a key since this process read the file: read it
        // again, keeping the current key (the current key changes only in `reload`,
        // which re-encrypts what is stored; see `Sender::reload_secret_key`).
        let path = self.source.as_ref()?;
        let text = Zeroizing::new(std::fs::read_to_string(path).ok()?);
        let fresh = parse_keys(&text).ok()?;
        let found = fresh.iter().find(|k| k.id == id).cloned()?;
        let mut keys = self.keys.write().unwrap_or_else(|p| p.into_inner());
        for k in fresh {
            if !keys.iter().any(|have| have.id == k.id) {
                keys.push(k);
            }
        }
        Some(found)
    }

    /// Seals `plaintext` under the current key.
    pub fn seal_bytes(&self, plaintext: &[u8]) -> Result<String, CipherError> {
        let key = self.keys().first().cloned().ok_or(CipherError::NoKeys)?;
        let mut nonce = [0u8; NONCE_LEN];
        getrandom::fill(&mut nonce).map_err(|_| CipherError::NoRandom)?;
        let sealed = key
            .aead
            .encrypt(
                XNonce::from_slice(&nonce),
                Payload {
                    msg: plaintext,
                    aad: AAD,
                },
            )
            .map_err(|_| CipherError::Damaged(key.id.clone()))?;
        let mut blob = Vec::with_capacity(NONCE_LEN + sealed.len());
        blob.extend_from_slice(&nonce);
        blob.extend_from_slice(&sealed);
        Ok(format!("{SEALED_PREFIX}{}.{}", key.id, URL_SAFE_NO_PAD.encode(blob)))
    }

    /// Opens text sealed by [`seal_bytes`](Self::seal_bytes) under any of the keys.
    pub fn open_bytes(&self, sealed: &str) -> Result<Zeroizing<Vec<u8>>, CipherError> {
        let id = key_id_of(sealed).ok_or_else(|| CipherError::Damaged(String::new()))?;
        let key = self.key(id).ok_or_else(|| CipherError::UnknownKey(id.to_owned()))?;
        let b64 = &sealed[SEALED_PREFIX.len() + id.len() + 1..];
        let blob = URL_SAFE_NO_PAD
            .decode(b64)
            .map_err(|_| CipherError::Damaged(id.to_owned()))?;
        if blob.len() < NONCE_LEN + 16 {
            return Err(CipherError::Damaged(id.to_owned()));
        }
        let (nonce, ct) = blob.split_at(NONCE_LEN);
        key.aead
            .decrypt(XNonce::from_slice(nonce), Payload { msg: ct, aad: AAD })
            .map(Zeroizing::new)
            .map_err(|_| CipherError::Damaged(id.to_owned()))
    }

    /// Seals a text (e.g. a stored response that carries a secret).
    pub fn seal_text(&self, text: &str) -> Result<String, CipherError> {
        self.seal_bytes(text.as_bytes())
    }

    /// Opens [`seal_text`](Self::seal_text)'s output; text that is not sealed is returned
    /// as it is.
    pub fn open_text(&self, text: &str) -> Result<String, CipherError> {
        if !is_sealed(text) {
            return Ok(text.to_owned());
        }
        let bytes = self.open_bytes(text)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| CipherError::NotASecret)
    }
}

/// Whether `text` is sealed (rather than a plain `whsec_…` or JSON).
pub fn is_sealed(text: &str) -> bool {
    text.starts_with(SEALED_PREFIX)
}

/// The key id of sealed text.
pub fn key_id_of(sealed: &str) -> Option<&str> {
    let rest = sealed.strip_prefix(SEALED_PREFIX)?;
    rest.split_once('.').map(|(id, _)| id)
}

/// How a backend writes and reads secrets, with or without a cipher. See the module
/// documentation.
#[derive(Debug)]
pub struct StoredSecret;

impl StoredSecret {
    /// The text to store for `secret`: sealed under the current key, or the plain
    /// `whsec_…` form without a cipher.
    pub fn seal(cipher: Option<&SecretCipher>, secret: &Secret) -> Result<String, CipherError> {
        match cipher {
            Some(c) => c.seal_bytes(secret.expose().as_bytes()),
            None => Ok(secret.expose()),
        }
    }

    /// The secret a stored text holds: opened with the cipher, or parsed when plain.
    pub fn open(cipher: Option<&SecretCipher>, stored: &str) -> Result<Secret, CipherError> {
        if !is_sealed(stored) {
            return Secret::parse(stored).map_err(|_| CipherError::NotASecret);
        }
        let cipher = cipher.ok_or_else(|| CipherError::NoCipher(key_id_of(stored).unwrap_or("?").to_owned()))?;
        let bytes = cipher.open_bytes(stored)?;
        let text = std::str::from_utf8(&bytes).map_err(|_| CipherError::NotASecret)?;
        Secret::parse(text).map_err(|_| CipherError::NotASecret)
    }

    /// The text to store for a workspace's `v1a` signing key: sealed under the current
    /// key like the HMAC secrets, or the plain form without a cipher (the `whsk_…` key,
    /// or the `pkcs11:…` reference of a key kept in a module; see
    /// [`WorkspaceKey::to_stored_text`]).
    pub fn seal_signing_key(cipher: Option<&SecretCipher>, key: &WorkspaceKey) -> Result<String, CipherError> {
        let text = key.to_stored_text();
        match cipher {
            Some(c) => c.seal_bytes(text.as_bytes()),
            None => Ok(text.to_string()),
        }
    }

    /// The signing key a stored text holds: opened with the cipher, or parsed when plain.
    pub fn open_signing_key(cipher: Option<&SecretCipher>, stored: &str) -> Result<WorkspaceKey, CipherError> {
        if !is_sealed(stored) {
            return WorkspaceKey::from_stored_text(stored).ok_or(CipherError::NotASecret);
        }
        let cipher = cipher.ok_or_else(|| CipherError::NoCipher(key_id_of(stored).unwrap_or("?").to_owned()))?;
        let bytes = cipher.open_bytes(stored)?;
        let text = std::str::from_utf8(&bytes).map_err(|_| CipherError::NotASecret)?;
        WorkspaceKey::from_stored_text(text).ok_or(CipherError::NotASecret)
    }

    /// A stored text of either kind (`whsec_` secret or `whsk_` signing key) sealed again
    /// under the cipher's current key, checked to open as its kind first.
    pub fn reseal_any(cipher: &SecretCipher, stored: &str) -> Result<String, CipherError> {
        let plain = if is_sealed(stored) {
            cipher.open_bytes(stored)?
        } else {
            Zeroizing::new(stored.as_bytes().to_vec())
        };
        let text = std::str::from_utf8(&plain).map_err(|_| CipherError::NotASecret)?;
        if Secret::parse(text).is_err() && WorkspaceKey::from_stored_text(text).is_none() {
            return Err(CipherError::NotASecret);
        }
        cipher.seal_bytes(text.as_bytes())
    }

    /// Checks at open that a stored text can be read: `Err` names the missing key.
    pub fn check_opens(cipher: Option<&SecretCipher>, stored: &str) -> Result<(), CipherError> {
        Self::open(cipher, stored).map(|_| ())
    }

    /// Whether a stored text should be sealed again: plain while a cipher is given, or
    /// sealed under a key other than the current one.
    pub fn needs_reseal(cipher: Option<&SecretCipher>, stored: &str) -> bool {
        match cipher {
            None => false,
            Some(c) => key_id_of(stored) != Some(c.current_key_id().as_str()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_module_key_reference_is_sealed_opened_and_resealed_like_a_key() {
        let cipher = SecretCipher::from_key_text(&SecretCipher::generate_key_line().unwrap()).unwrap();
        let key = WorkspaceKey::Token(crate::signer::TokenKey {
            id: vec![1, 2, 3],
            public_key: postwire_core::SigningKey::generate().unwrap().public_key(),
        });
        let sealed = StoredSecret::seal_signing_key(Some(&cipher), &key).unwrap();
        assert!(!sealed.contains("pkcs11:"));
        assert_eq!(StoredSecret::open_signing_key(Some(&cipher), &sealed).unwrap(), key);
        let plain = StoredSecret::seal_signing_key(None, &key).unwrap();
        assert_eq!(StoredSecret::open_signing_key(None, &plain).unwrap(), key);
        let resealed = StoredSecret::reseal_any(&cipher, &plain).unwrap();
        assert_eq!(StoredSecret::open_signing_key(Some(&cipher), &resealed).unwrap(), key);
        assert!(StoredSecret::reseal_any(&cipher, "pkcs11:zz:nope").is_err());
    }

    #[test]
    fn seals_opens_and_rotates() {
        let old_line = SecretCipher::generate_key_line().unwrap();
        let old = SecretCipher::from_key_text(&old_line).unwrap();
        let secret = Secret::generate().unwrap();
        let sealed = StoredSecret::seal(Some(&old), &secret).unwrap();
        assert!(sealed.starts_with(&format!("pwenc1.{}.", old.current_key_id())));
        assert!(!sealed.contains("whsec_"));
        assert_eq!(
            StoredSecret::open(Some(&old), &sealed).unwrap().expose(),
            secret.expose()
        );
        // Two seals of the same secret differ (fresh nonce).
        assert_ne!(sealed, StoredSecret::seal(Some(&old), &secret).unwrap());
        // A plain secret from before encryption still reads, and needs sealing.
        assert!(StoredSecret::open(Some(&old), &secret.expose()).is_ok());
        assert!(StoredSecret::needs_reseal(Some(&old), &secret.expose()));
        assert!(!StoredSecret::needs_reseal(Some(&old), &sealed));
        // Without a cipher: a clear refusal naming the key id, never the secret.
        let e = StoredSecret::open(None, &sealed).unwrap_err();
        assert!(matches!(&e, CipherError::NoCipher(id) if *id == old.current_key_id()));
        // A new key in front: old text still opens and needs re-sealing.
        let new_line = SecretCipher::generate_key_line().unwrap();
        let both = SecretCipher::from_key_text(&format!("{}\n{}\n", *new_line, *old_line)).unwrap();
        assert_eq!(
            StoredSecret::open(Some(&both), &sealed).unwrap().expose(),
            secret.expose()
        );
        assert!(StoredSecret::needs_reseal(Some(&both), &sealed));
        // Only the new key: the old text names a key it lacks.
        let new = SecretCipher::from_key_text(&new_line).unwrap();
        assert!(matches!(
            StoredSecret::open(Some(&new), &sealed),
            Err(CipherError::UnknownKey(_))
        ));
        // A flipped byte fails authentication.
        let mut tampered = sealed.clone().into_bytes();
        let last = tampered.len() - 2;
        tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
        let tampered = String::from_utf8(tampered).unwrap();
        assert!(matches!(
            StoredSecret::open(Some(&old), &tampered),
            Err(CipherError::Damaged(_))
        ));
    }

    #[test]
    fn key_text_is_checked() {
        assert_eq!(
            SecretCipher::from_key_text("# nothing\n").unwrap_err(),
            CipherError::NoKeys
        );
        assert!(matches!(
            SecretCipher::from_key_text("k1:c2hvcnQ=").unwrap_err(),
            CipherError::BadKey { line: 1, .. }
        ));
        assert!(matches!(
            SecretCipher::from_key_text("bad id:AAAA").unwrap_err(),
            CipherError::BadKey { .. }
        ));
    }
}
