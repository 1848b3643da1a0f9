//! Where a workspace's `v1a` private keys live, and how a delivery is signed with them.
//!
//! A workspace's key ([`WorkspaceKey`]) is either held in this process (a `whsk_` key,
//! sealed at rest like the secrets) or kept in a hardware module, where it was made and
//! which it never leaves ([`TokenKey`]: the database stores only its id in the module and
//! its public half). A [`KeyCustody`] makes new keys (a workspace's first, and each
//! rotation's) and signs with the keys it keeps:
//!
//! * [`InProcessKeys`], the default: keys are made here with the operating system's
//!   random source and sign in the calling thread.
//! * [`Pkcs11Keys`](crate::pkcs11::Pkcs11Keys): keys are made inside a PKCS #11 token
//!   (an HSM, a cloud HSM, SoftHSM2), non-extractable, and every `v1a` signature by them
//!   is made there, on threads of its own, off the async workers.
//!
//! Keys already stored keep signing where they are: a process given a module still signs
//! with its in-process keys until the next rotation makes the next key in the module.
//!
//! A [`DeliverySigner`] is what a claim carries: a subscription's `v1` secrets and `v1a`
//! keys in use at the claim's time ([`crate::signing::signer_at`]). When every key is in
//! process it is core's [`Signer`] (one message for all `v1a` entries); with a key in a
//! module, that key's entry comes from the module. A module that cannot sign (token
//! removed, wrong PIN, a network HSM unreachable) fails the attempt with
//! [`AttemptErrorKind::Signing`](crate::model::AttemptErrorKind::Signing), retried on the
//! normal schedule: no delivery is ever sent signed with anything else, or without the
//! signature its subscription asks for.

use std::fmt;
use std::sync::Arc;

use postwire_core::{AsymmetricSignature, PublicKey, Secret, Signer, SigningKey, UnixTime};

use crate::BoxFuture;
use crate::error::SenderError;

/// The prefix of a stored reference to a key kept in a PKCS #11 module:
/// `pkcs11:<the key's CKA_ID in hex>:<its whpk_ public key>`.
pub const TOKEN_KEY_PREFIX: &str = "pkcs11:";
/// Most bytes in a token key's id (`CKA_ID`) read back from storage: 64.
const MAX_TOKEN_KEY_ID: usize = 64;

/// A key made in a hardware module and kept there: what the database stores of it.
#[derive(Clone, PartialEq, Eq)]
pub struct TokenKey {
    /// Its `CKA_ID` in the module (the private and the public object share it).
    pub id: Vec<u8>,
    /// Its public half, read from the module when it was made.
    pub public_key: PublicKey,
}

impl fmt::Debug for TokenKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TokenKey({}, {})", hex(&self.id), self.public_key)
    }
}

/// One of a workspace's `v1a` signing keys, wherever it is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkspaceKey {
    /// A `whsk_` key held by this process (sealed at rest).
    InProcess(SigningKey),
    /// A key kept in a hardware module; only its id and public half are here.
    Token(TokenKey),
}

impl WorkspaceKey {
    /// The public key that verifies its signatures.
    pub fn public_key(&self) -> PublicKey {
        match self {
            WorkspaceKey::InProcess(k) => k.public_key(),
            WorkspaceKey::Token(k) => k.public_key,
        }
    }

    /// The text stored for it (then sealed when a cipher is configured): the `whsk_` key,
    /// or `pkcs11:<id hex>:<whpk_…>`.
    pub fn to_stored_text(&self) -> zeroize::Zeroizing<String> {
        zeroize::Zeroizing::new(match self {
            WorkspaceKey::InProcess(k) => k.expose(),
            WorkspaceKey::Token(k) => format!("{TOKEN_KEY_PREFIX}{}:{}", hex(&k.id), k.public_key),
        })
    }

    /// Reads [`to_stored_text`](Self::to_stored_text)'s form back; `None` for anything else.
    pub fn from_stored_text(text: &str) -> Option<WorkspaceKey> {
        match text.strip_prefix(TOKEN_KEY_PREFIX) {
            None => SigningKey::parse(text).ok().map(WorkspaceKey::InProcess),
            Some(rest) => {
                let (id, public) = rest.split_once(':')?;
                let id = unhex(id).filter(|id| !id.is_empty() && id.len() <= MAX_TOKEN_KEY_ID)?;
                let public_key = PublicKey::parse(public).ok()?;
                Some(WorkspaceKey::Token(TokenKey { id, public_key }))
            }
        }
    }
}

impl From<SigningKey> for WorkspaceKey {
    fn from(key: SigningKey) -> Self {
        WorkspaceKey::InProcess(key)
    }
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    text.as_bytes()
        .chunks_exact(2)
        .map(|pair| {
            std::str::from_utf8(pair)
                .ok()
                .and_then(|p| u8::from_str_radix(p, 16).ok())
        })
        .collect()
}

/// Why a module did not sign. Never carries key material or the PIN.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignError {
    /// The key is in a module this process was not given (`postwire serve` without
    /// `--pkcs11-module`, or another module's key).
    #[error("the signing key is kept in a PKCS #11 module this process was not configured with")]
    NoModule,
    /// The module could not be reached or refused (token absent, PIN refused, key not
    /// found, a failed call); the text names the step and the module's return value.
    #[error("the PKCS #11 module did not sign: {0}")]
    Module(String),
    /// The module did not answer within the attempt's time.
    #[error("the PKCS #11 module did not answer in time")]
    Timeout,
}

/// Makes a workspace's new `v1a` keys and signs with the keys it keeps. See the module
/// documentation.
pub trait KeyCustody: Send + Sync + fmt::Debug + 'static {
    /// Makes a new key pair, kept where this custody keeps keys; returns what is stored.
    fn generate(&self) -> BoxFuture<'_, Result<WorkspaceKey, SenderError>>;
    /// Removes a key [`generate`](Self::generate) made that was never stored (another
    /// process stored its own first). Best effort: a failure is logged.
    fn discard(&self, key: WorkspaceKey) -> BoxFuture<'_, ()>;
    /// Signs `message` (`<id>.<timestamp>.<body>`) with a key kept in a module.
    fn sign_in_module(&self, key: &TokenKey, message: Vec<u8>)
    -> BoxFuture<'_, Result<AsymmetricSignature, SignError>>;
}

/// Keys made and held in this process (the default).
#[derive(Debug, Default, Clone, Copy)]
pub struct InProcessKeys;

impl KeyCustody for InProcessKeys {
    fn generate(&self) -> BoxFuture<'_, Result<WorkspaceKey, SenderError>> {
        Box::pin(async {
            SigningKey::generate()
                .map(WorkspaceKey::InProcess)
                .map_err(|_| SenderError::storage("no secure random source is available"))
        })
    }

    fn discard(&self, _key: WorkspaceKey) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }

    fn sign_in_module(
        &self,
        _key: &TokenKey,
        _message: Vec<u8>,
    ) -> BoxFuture<'_, Result<AsymmetricSignature, SignError>> {
        Box::pin(async { Err(SignError::NoModule) })
    }
}

/// The bytes a `v1a` signature covers, as Standard Webhooks defines them:
/// `<webhook-id>.<webhook-timestamp>.<body>`. Built here only for keys kept in a module
/// (the in-process keys sign through core's [`Signer`]); the tests verify the module's
/// signatures with core's verifier, so the two cannot differ unseen.
fn v1a_message(id: &str, timestamp: UnixTime, body: &[u8]) -> Vec<u8> {
    let ts = timestamp.as_secs().to_string();
    let mut m = Vec::with_capacity(id.len() + ts.len() + body.len() + 2);
    m.extend_from_slice(id.as_bytes());
    m.push(b'.');
    m.extend_from_slice(ts.as_bytes());
    m.push(b'.');
    m.extend_from_slice(body);
    m
}

/// Signs a subscription's deliveries: its `v1` secrets, then its `v1a` keys, in the
/// order [`crate::signing::signer_at`] gives them.
#[derive(Debug, Clone)]
pub struct DeliverySigner(Inner);

#[derive(Debug, Clone)]
enum Inner {
    /// Every key in process: core's signer, one message for every `v1a` entry.
    InProcess(Signer),
    /// At least one key in a module: the `v1` entries (if any) from core, then one
    /// `v1a` entry per key, each where its key is.
    WithModule {
        secrets: Option<Signer>,
        keys: Vec<WorkspaceKey>,
    },
}

impl DeliverySigner {
    /// A signer of `secrets` (`v1`) and `keys` (`v1a`), in this order; at least one of
    /// either.
    pub fn new(secrets: Vec<Secret>, keys: Vec<WorkspaceKey>) -> Result<DeliverySigner, SenderError> {
        let no_material = |_| SenderError::storage("no signing material");
        if keys.iter().all(|k| matches!(k, WorkspaceKey::InProcess(_))) {
            let keys = keys.into_iter().filter_map(|k| match k {
                WorkspaceKey::InProcess(k) => Some(k),
                WorkspaceKey::Token(_) => None,
            });
            return Signer::with_keys(secrets, keys)
                .map(|s| DeliverySigner(Inner::InProcess(s)))
                .map_err(no_material);
        }
        let secrets = if secrets.is_empty() {
            None
        } else {
            Some(Signer::with_secrets(secrets).map_err(no_material)?)
        };
        Ok(DeliverySigner(Inner::WithModule { secrets, keys }))
    }

    /// Whether some signature needs a module (so signing waits on it).
    pub fn uses_a_module(&self) -> bool {
        matches!(self.0, Inner::WithModule { .. })
    }

    /// The `webhook-signature` value for one attempt. Keys in a module sign through
    /// `custody`; any failure there fails the whole value (never a partial header).
    pub async fn sign(
        &self,
        custody: &dyn KeyCustody,
        id: &str,
        timestamp: UnixTime,
        body: &[u8],
    ) -> Result<String, SignError> {
        let invalid = |_| SignError::Module("the delivery could not be signed (an invalid webhook-id)".into());
        match &self.0 {
            Inner::InProcess(signer) => signer
                .sign(id, timestamp, body)
                .map(|v| v.into_string())
                .map_err(invalid),
            Inner::WithModule { secrets, keys } => {
                use std::fmt::Write as _;
                let mut out = match secrets {
                    Some(s) => s.sign(id, timestamp, body).map_err(invalid)?.into_string(),
                    None => String::new(),
                };
                for key in keys {
                    let signature = match key {
                        WorkspaceKey::InProcess(k) => k.sign(id, timestamp, body).map_err(invalid)?,
                        WorkspaceKey::Token(k) => custody.sign_in_module(k, v1a_message(id, timestamp, body)).await?,
                    };
                    if !out.is_empty() {
                        out.push(' ');
                    }
                    let _ = write!(out, "{signature}");
                }
                Ok(out)
            }
        }
    }
}

/// The custody a sender uses by default.
pub fn default_custody() -> Arc<dyn KeyCustody> {
    Arc::new(InProcessKeys)
}

#[cfg(test)]
mod tests {
    use postwire_core::Verifier;

    use super::*;

    #[test]
    fn stored_text_round_trips_and_refuses_other_text() {
        let local = WorkspaceKey::InProcess(SigningKey::generate().unwrap());
        let token = WorkspaceKey::Token(TokenKey {
            id: vec![0xab, 0x01, 0xff],
            public_key: SigningKey::generate().unwrap().public_key(),
        });
        for key in [&local, &token] {
            assert_eq!(
                WorkspaceKey::from_stored_text(&key.to_stored_text()).as_ref(),
                Some(key)
            );
        }
        assert!(token.to_stored_text().starts_with("pkcs11:ab01ff:whpk_"));
        let public = token.public_key().to_string();
        for bad in [
            String::new(),
            "pkcs11:".into(),
            format!("pkcs11::{public}"),
            format!("pkcs11:abc:{public}"),
            format!("pkcs11:zz:{public}"),
            format!("pkcs11:{}:{public}", "00".repeat(65)),
            "pkcs11:ab:whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".into(),
            public.clone(),
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".into(),
        ] {
            assert_eq!(WorkspaceKey::from_stored_text(&bad), None, "{bad}");
        }
        assert!(!format!("{token:?}").contains("whsk_"));
    }

    #[tokio::test]
    async fn a_token_key_without_its_module_fails_and_signs_nothing_else() {
        let local = SigningKey::generate().unwrap();
        let token = TokenKey {
            id: vec![1],
            public_key: SigningKey::generate().unwrap().public_key(),
        };
        let signer = DeliverySigner::new(
            vec![Secret::generate().unwrap()],
            vec![WorkspaceKey::Token(token), WorkspaceKey::InProcess(local.clone())],
        )
        .unwrap();
        assert!(signer.uses_a_module());
        let e = signer
            .sign(&InProcessKeys, "msg_1", UnixTime::from_secs(1), b"{}")
            .await;
        assert_eq!(e, Err(SignError::NoModule));
        // In process only: core's signer, verified by core.
        let signer = DeliverySigner::new(vec![], vec![WorkspaceKey::InProcess(local.clone())]).unwrap();
        assert!(!signer.uses_a_module());
        let now = UnixTime::from_secs(1_700_000_000);
        let value = signer.sign(&InProcessKeys, "msg_1", now, b"{}").await.unwrap();
        let headers = [
            ("webhook-id", "msg_1"),
            ("webhook-timestamp", "1700000000"),
            ("webhook-signature", value.as_str()),
        ];
        assert!(
            Verifier::from_public_key(local.public_key())
                .verify(&headers, b"{}", now)
                .is_ok()
        );
        assert_eq!(v1a_message("msg_1", now, b"{}"), b"msg_1.1700000000.{}");
    }
}
