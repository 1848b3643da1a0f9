//! Signing keys kept in a PKCS #11 module: an HSM, a cloud HSM that offers PKCS #11, or
//! SoftHSM2. A [`KeyCustody`] whose keys are made inside the
//! token and never leave it.
//!
//! * **What the token needs.** A token (found by its label, or by slot number) whose user
//!   PIN this process is given, offering `CKM_EC_EDWARDS_KEY_PAIR_GEN` and `CKM_EDDSA`
//!   (ed25519; SoftHSM2 2.6 does). [`Pkcs11Keys::open`] checks all of it at start-up and
//!   refuses to start otherwise, naming what is missing.
//! * **Keys.** Each new workspace key (a first key, each rotation's) is an ed25519 key
//!   pair generated in the token: `CKA_TOKEN` (persistent), the private half `CKA_PRIVATE`,
//!   `CKA_SENSITIVE`, not `CKA_EXTRACTABLE`, `CKA_SIGN` only; both halves carry a random
//!   16-byte `CKA_ID` and the label `postwire-v1a-<id hex>`. The database stores
//!   `pkcs11:<id hex>:<whpk_ public key>` (sealed like the other keys when a cipher is
//!   configured) and nothing else of it.
//! * **Signing.** Every `v1a` signature by such a key is a `C_Sign` with `CKM_EDDSA` over
//!   `<id>.<timestamp>.<body>`, made on one of [`SESSIONS`] threads of its own, each with
//!   its own logged-in session, so the blocking call never holds an async worker. Requests
//!   queue for the next free thread.
//! * **Failures.** A call that fails (token removed, PIN refused, device error) drops that
//!   thread's session; the next request opens a new one and logs in again (reading the
//!   PIN file again), so a token put back is used again without a restart. The attempt
//!   that failed is a retryable failure ([`AttemptErrorKind::Signing`](
//!   crate::model::AttemptErrorKind::Signing)); it is never signed with anything else.
//! * **The PIN** comes from the environment (`POSTWIRE_PKCS11_PIN`) or a file (`postwire
//!   serve --pkcs11-pin-file`), never from the command line; it is not logged, and errors
//!   name the step and the module's return value only.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::{Arc, Mutex, RwLock};

use cryptoki::context::{CInitializeArgs, CInitializeFlags, Pkcs11};
use cryptoki::mechanism::eddsa::{EddsaParams, EddsaSignatureScheme};
use cryptoki::mechanism::{Mechanism, MechanismType};
use cryptoki::object::{Attribute, AttributeType, KeyType, ObjectClass, ObjectHandle};
use cryptoki::session::{Session, UserType};
use cryptoki::slot::Slot;
use cryptoki::types::AuthPin;
use postwire_core::{AsymmetricSignature, ED25519_KEY_LEN, ED25519_SIGNATURE_LEN, PublicKey};
use tokio::sync::oneshot;
use zeroize::Zeroizing;

use crate::error::SenderError;
use crate::signer::{KeyCustody, SignError, TokenKey, WorkspaceKey};
use crate::store::BoxFuture;

/// Threads (each with its own session) that call the module: 2.
pub const SESSIONS: usize = 2;
/// The DER encoding of the ed25519 curve's object identifier (1.3.101.112), the
/// `CKA_EC_PARAMS` of a key pair generated in the token.
const ED25519_EC_PARAMS: [u8; 5] = [0x06, 0x03, 0x2b, 0x65, 0x70];
/// Bytes of random `CKA_ID` per key: 16.
const KEY_ID_LEN: usize = 16;

/// Which token to use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenSelector {
    /// The token with this label (`softhsm2-util --init-token --label …`).
    Label(String),
    /// The token in this slot.
    Slot(u64),
}

/// Where the user PIN comes from. Never the command line.
#[derive(Clone)]
pub enum PinSource {
    /// The PIN itself (read from `POSTWIRE_PKCS11_PIN` by `postwire serve`).
    Value(Arc<Zeroizing<String>>),
    /// A file holding it (surrounding whitespace ignored), read at each log-in.
    File(PathBuf),
}

impl std::fmt::Debug for PinSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PinSource::Value(_) => f.write_str("PinSource::Value(…)"),
            PinSource::File(p) => write!(f, "PinSource::File({})", p.display()),
        }
    }
}

impl PinSource {
    fn read(&self) -> Result<AuthPin, String> {
        match self {
            PinSource::Value(pin) => Ok(AuthPin::from(pin.as_str().to_owned())),
            PinSource::File(path) => {
                let text = Zeroizing::new(
                    std::fs::read_to_string(path)
                        .map_err(|e| format!("the PIN file {} could not be read: {}", path.display(), e.kind()))?,
                );
                Ok(AuthPin::from(text.trim().to_owned()))
            }
        }
    }
}

/// What [`Pkcs11Keys::open`] needs.
#[derive(Debug, Clone)]
pub struct Pkcs11Config {
    /// The module: the path of its shared library (SoftHSM2's is
    /// `/usr/lib/softhsm/libsofthsm2.so` on Debian).
    pub module: PathBuf,
    /// The token.
    pub token: TokenSelector,
    /// The user PIN.
    pub pin: PinSource,
}

/// One request to a module thread.
enum Job {
    Generate(oneshot::Sender<Result<TokenKey, String>>),
    Sign {
        id: Vec<u8>,
        message: Vec<u8>,
        reply: oneshot::Sender<Result<AsymmetricSignature, String>>,
    },
    Destroy {
        id: Vec<u8>,
        reply: oneshot::Sender<Result<(), String>>,
    },
}

/// Keys made and used in a PKCS #11 token. See the module documentation.
#[derive(Clone)]
pub struct Pkcs11Keys {
    jobs: mpsc::Sender<Job>,
    describe: Arc<str>,
}

impl std::fmt::Debug for Pkcs11Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Pkcs11Keys({})", self.describe)
    }
}

/// A failed PKCS #11 call, named by its step: no PIN, no key material.
fn step(what: &str) -> impl Fn(cryptoki::error::Error) -> String + '_ {
    move |e| format!("{what}: {e}")
}

/// The slot of the configured token, looked up at each session opening (a token put
/// back may be in another slot).
fn find_slot(pkcs11: &Pkcs11, token: &TokenSelector) -> Result<Slot, String> {
    let slots = pkcs11.get_slots_with_token().map_err(step("listing the slots"))?;
    for slot in slots {
        match token {
            TokenSelector::Slot(n) if slot.id() == *n => return Ok(slot),
            TokenSelector::Label(label) => {
                let info = pkcs11
                    .get_token_info(slot)
                    .map_err(step("reading a token's information"))?;
                if info.label().trim_end() == label {
                    return Ok(slot);
                }
            }
            TokenSelector::Slot(_) => {}
        }
    }
    Err(match token {
        TokenSelector::Label(label) => format!("no token labelled {label:?} is present"),
        TokenSelector::Slot(n) => format!("slot {n} has no token"),
    })
}

/// Why no session could be opened.
enum OpenFailure {
    /// The token or the module: absent, removed, failing. Loading the module again may
    /// help (SoftHSM2, for one, keeps a token that vanished unusable until then).
    Token(String),
    /// The log-in (a wrong PIN, an unreadable PIN file): loading again would not help.
    Login(String),
}

/// A logged-in session on the configured token. Opened without closing on drop: a
/// session of a module loaded before is forgotten, never closed (its handle may name
/// another thread's session in the module loaded since); [`Worker::close_session`]
/// closes a current one.
fn open_session(pkcs11: &Pkcs11, config: &Pkcs11Config) -> Result<Session, OpenFailure> {
    let slot = find_slot(pkcs11, &config.token).map_err(OpenFailure::Token)?;
    let session = pkcs11
        .open_rw_session_no_drop(slot)
        .map_err(|e| OpenFailure::Token(step("opening a session")(e)))?;
    let logged_in = config
        .pin
        .read()
        .and_then(|pin| match session.login(UserType::User, Some(&pin)) {
            // Another session of this process logged the token in already.
            Ok(()) | Err(cryptoki::error::Error::Pkcs11(cryptoki::error::RvError::UserAlreadyLoggedIn, _)) => Ok(()),
            Err(e) => Err(step("logging in")(e)),
        });
    match logged_in {
        Ok(()) => Ok(session),
        Err(e) => {
            let _ = session.close();
            Err(OpenFailure::Login(e))
        }
    }
}

/// The 32 bytes of an ed25519 `CKA_EC_POINT`: DER `OCTET STRING` (as PKCS #11 3.0 and
/// SoftHSM2 give it) or raw.
fn ec_point_bytes(point: &[u8]) -> Option<[u8; ED25519_KEY_LEN]> {
    let raw = match point {
        [0x04, len, rest @ ..] if usize::from(*len) == ED25519_KEY_LEN && rest.len() == ED25519_KEY_LEN => rest,
        raw if raw.len() == ED25519_KEY_LEN => raw,
        _ => return None,
    };
    raw.try_into().ok()
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// The loaded module, and how many times it was loaded (each session remembers under
/// which load it was opened).
struct Module {
    pkcs11: Pkcs11,
    generation: u64,
}

/// What the module threads share. Calls hold the lock for reading; loading the module
/// again holds it for writing, so no call is under way meanwhile.
struct Shared {
    config: Pkcs11Config,
    module: RwLock<Module>,
}

impl Shared {
    /// Loads the module again (`C_Finalize`, then `C_Initialize`) unless another thread
    /// did since load `seen`.
    fn reload(&self, seen: u64) {
        let Ok(mut module) = self.module.write() else { return };
        if module.generation != seen {
            return;
        }
        let _ = module.pkcs11.clone().finalize();
        match Pkcs11::new(&self.config.module) {
            Ok(pkcs11) => {
                let _ = pkcs11.initialize(CInitializeArgs::new(CInitializeFlags::OS_LOCKING_OK));
                module.pkcs11 = pkcs11;
            }
            Err(e) => tracing::warn!(error = %e, "the PKCS #11 module could not be loaded again"),
        }
        module.generation += 1;
    }
}

/// One module thread: its session (opened on demand, dropped after a failure) and the
/// private keys' handles it found in it.
struct Worker {
    shared: Arc<Shared>,
    session: Option<(u64, Session)>,
    handles: HashMap<Vec<u8>, ObjectHandle>,
}

/// A job's work on the session and its table of key handles.
type SessionWork<'a, T> = Box<dyn FnOnce(&Session, &mut HashMap<Vec<u8>, ObjectHandle>) -> Result<T, String> + 'a>;

impl Worker {
    /// Closes the session (opened under the current load), so the next job opens one.
    fn close_session(&mut self) {
        if let Some((_, session)) = self.session.take() {
            let _ = session.close();
        }
        self.handles.clear();
    }

    /// Runs `work` on a session, opened first if needed. A failure drops the session, so
    /// the next job opens one anew (the token may have been removed and put back, or the
    /// PIN file changed); a token that cannot be opened has the module loaded again.
    fn with_session<T>(&mut self, work: SessionWork<'_, T>) -> Result<T, String> {
        let shared = self.shared.clone();
        let module = shared
            .module
            .read()
            .map_err(|_| "a module thread panicked".to_owned())?;
        let generation = module.generation;
        if self.session.as_ref().is_some_and(|(g, _)| *g != generation) {
            // Opened under a load since finalized: forgotten, not closed.
            self.session = None;
            self.handles.clear();
        }
        if self.session.is_none() {
            match open_session(&module.pkcs11, &shared.config) {
                Ok(session) => self.session = Some((generation, session)),
                Err(OpenFailure::Login(e)) => return Err(e),
                Err(OpenFailure::Token(e)) => {
                    drop(module);
                    shared.reload(generation);
                    return Err(e);
                }
            }
        }
        let result = match &self.session {
            Some((_, session)) => work(session, &mut self.handles),
            None => Err("no session".to_owned()),
        };
        if result.is_err() {
            self.close_session();
        }
        result
    }

    fn run(mut self, jobs: Arc<Mutex<mpsc::Receiver<Job>>>) {
        loop {
            let job = match jobs.lock() {
                Ok(rx) => rx.recv(),
                Err(_) => return,
            };
            let Ok(job) = job else { return };
            match job {
                Job::Generate(reply) => {
                    let _ = reply.send(self.with_session(Box::new(|s, _| generate(s))));
                }
                Job::Sign { id, message, reply } => {
                    let _ = reply.send(self.with_session(Box::new(|s, handles| sign(s, handles, &id, &message))));
                }
                Job::Destroy { id, reply } => {
                    let _ = reply.send(self.with_session(Box::new(|s, handles| {
                        handles.remove(&id);
                        for object in s
                            .find_objects(&[Attribute::Id(id.clone())])
                            .map_err(step("finding the key"))?
                        {
                            s.destroy_object(object).map_err(step("destroying the key"))?;
                        }
                        Ok(())
                    })));
                }
            }
        }
        // The channel closed (the custody was dropped): the session goes with the thread.
    }
}

fn generate(session: &Session) -> Result<TokenKey, String> {
    let mut id = vec![0u8; KEY_ID_LEN];
    getrandom::fill(&mut id).map_err(|_| "no secure random source is available".to_owned())?;
    let label = format!("postwire-v1a-{}", hex(&id)).into_bytes();
    let public_template = [
        Attribute::Token(true),
        Attribute::Private(false),
        Attribute::Verify(true),
        Attribute::EcParams(ED25519_EC_PARAMS.to_vec()),
        Attribute::Id(id.clone()),
        Attribute::Label(label.clone()),
    ];
    let private_template = [
        Attribute::Token(true),
        Attribute::Private(true),
        Attribute::Sensitive(true),
        Attribute::Extractable(false),
        Attribute::Sign(true),
        Attribute::Id(id.clone()),
        Attribute::Label(label),
    ];
    let (public, _private) = session
        .generate_key_pair(&Mechanism::EccEdwardsKeyPairGen, &public_template, &private_template)
        .map_err(step("generating an ed25519 key pair"))?;
    let attributes = session
        .get_attributes(public, &[AttributeType::EcPoint])
        .map_err(step("reading the public key"))?;
    let point = attributes
        .into_iter()
        .find_map(|a| match a {
            Attribute::EcPoint(p) => Some(p),
            _ => None,
        })
        .ok_or_else(|| "the token gave no public key".to_owned())?;
    let bytes = ec_point_bytes(&point).ok_or_else(|| "the token's public key is not an ed25519 point".to_owned())?;
    let public_key = PublicKey::from_bytes(&bytes).map_err(|_| "the token's public key was refused".to_owned())?;
    Ok(TokenKey { id, public_key })
}

fn sign(
    session: &Session,
    handles: &mut HashMap<Vec<u8>, ObjectHandle>,
    id: &[u8],
    message: &[u8],
) -> Result<AsymmetricSignature, String> {
    let handle = match handles.get(id) {
        Some(h) => *h,
        None => {
            let found = session
                .find_objects(&[
                    Attribute::Class(ObjectClass::PRIVATE_KEY),
                    Attribute::KeyType(KeyType::EC_EDWARDS),
                    Attribute::Id(id.to_vec()),
                ])
                .map_err(step("finding the key"))?;
            let handle = *found
                .first()
                .ok_or_else(|| format!("the token has no private key with id {}", hex(id)))?;
            handles.insert(id.to_vec(), handle);
            handle
        }
    };
    let signature = session
        .sign(
            &Mechanism::Eddsa(EddsaParams::new(EddsaSignatureScheme::Pure)),
            handle,
            message,
        )
        .map_err(step("signing"))?;
    let bytes: [u8; ED25519_SIGNATURE_LEN] = signature
        .try_into()
        .map_err(|_| "the token's signature is not 64 bytes".to_owned())?;
    Ok(AsymmetricSignature::from_bytes(bytes))
}

impl Pkcs11Keys {
    /// Loads the module, finds the token, logs in and checks that it offers ed25519
    /// (`CKM_EC_EDWARDS_KEY_PAIR_GEN`, `CKM_EDDSA`), then starts [`SESSIONS`] threads.
    /// Every failure here is an error naming the step (never the PIN).
    pub fn open(config: Pkcs11Config) -> Result<Pkcs11Keys, SenderError> {
        let module_path = config.module.display().to_string();
        let fail = |e: String| SenderError::storage(format!("PKCS #11 module {module_path}: {e}"));
        let pkcs11 = Pkcs11::new(&config.module).map_err(|e| fail(step("loading the module")(e)))?;
        match pkcs11.initialize(CInitializeArgs::new(CInitializeFlags::OS_LOCKING_OK)) {
            Ok(()) | Err(cryptoki::error::Error::Pkcs11(cryptoki::error::RvError::CryptokiAlreadyInitialized, _)) => {}
            Err(e) => return Err(fail(step("initializing the module")(e))),
        }
        let slot = find_slot(&pkcs11, &config.token).map_err(fail)?;
        let mechanisms = pkcs11
            .get_mechanism_list(slot)
            .map_err(|e| fail(step("listing the mechanisms")(e)))?;
        for (wanted, name) in [
            (MechanismType::ECC_EDWARDS_KEY_PAIR_GEN, "CKM_EC_EDWARDS_KEY_PAIR_GEN"),
            (MechanismType::EDDSA, "CKM_EDDSA"),
        ] {
            if !mechanisms.contains(&wanted) {
                return Err(fail(format!("the token does not offer {name} (ed25519)")));
            }
        }
        // Logs in once now, so a wrong PIN stops the start-up rather than every delivery.
        let first = open_session(&pkcs11, &config).map_err(|e| match e {
            OpenFailure::Token(e) | OpenFailure::Login(e) => fail(e),
        })?;
        let token = pkcs11
            .get_token_info(slot)
            .map(|i| i.label().trim_end().to_owned())
            .unwrap_or_default();
        let describe: Arc<str> = format!("{} token {token:?}", config.module.display()).into();
        let (tx, rx) = mpsc::channel();
        let rx = Arc::new(Mutex::new(rx));
        let shared = Arc::new(Shared {
            config,
            module: RwLock::new(Module { pkcs11, generation: 0 }),
        });
        let mut first = Some((0, first));
        for n in 0..SESSIONS {
            let worker = Worker {
                shared: shared.clone(),
                session: first.take(),
                handles: HashMap::new(),
            };
            let rx = rx.clone();
            std::thread::Builder::new()
                .name(format!("postwire-pkcs11-{n}"))
                .spawn(move || worker.run(rx))
                .map_err(|e| fail(format!("starting a module thread: {e}")))?;
        }
        tracing::info!(module = %describe, sessions = SESSIONS, "v1a keys: new keys are made and used in the PKCS #11 token");
        Ok(Pkcs11Keys { jobs: tx, describe })
    }

    async fn call<T>(&self, job: impl FnOnce(oneshot::Sender<Result<T, String>>) -> Job) -> Result<T, String> {
        let (reply, answer) = oneshot::channel();
        self.jobs
            .send(job(reply))
            .map_err(|_| "the module's threads have stopped".to_owned())?;
        answer.await.map_err(|_| "the module's thread stopped".to_owned())?
    }
}

impl KeyCustody for Pkcs11Keys {
    fn generate(&self) -> BoxFuture<'_, Result<WorkspaceKey, SenderError>> {
        Box::pin(async move {
            let key = self.call(Job::Generate).await.map_err(|e| {
                tracing::warn!(module = %self.describe, error = %e, "no key could be made in the PKCS #11 token");
                SenderError::storage(format!("the PKCS #11 module did not make a key: {e}"))
            })?;
            tracing::info!(module = %self.describe, key_id = %hex(&key.id), public_key = %key.public_key, "a v1a key pair was made in the PKCS #11 token");
            Ok(WorkspaceKey::Token(key))
        })
    }

    fn discard(&self, key: WorkspaceKey) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let WorkspaceKey::Token(key) = key else { return };
            let id = key.id.clone();
            if let Err(e) = self.call(|reply| Job::Destroy { id, reply }).await {
                tracing::warn!(module = %self.describe, key_id = %hex(&key.id), error = %e, "an unused key could not be removed from the PKCS #11 token");
            }
        })
    }

    fn sign_in_module(
        &self,
        key: &TokenKey,
        message: Vec<u8>,
    ) -> BoxFuture<'_, Result<AsymmetricSignature, SignError>> {
        let id = key.id.clone();
        Box::pin(async move {
            self.call(|reply| Job::Sign { id, message, reply }).await.map_err(|e| {
                tracing::warn!(module = %self.describe, error = %e, "the PKCS #11 module did not sign; the attempt is retried");
                SignError::Module(e)
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ec_points_are_read_in_both_encodings_and_nothing_else() {
        let raw = [7u8; 32];
        let mut der = vec![0x04, 32];
        der.extend_from_slice(&raw);
        assert_eq!(ec_point_bytes(&der), Some(raw));
        assert_eq!(ec_point_bytes(&raw), Some(raw));
        assert_eq!(ec_point_bytes(&der[..33]), None);
        assert_eq!(ec_point_bytes(&[0x04, 33, 0]), None);
        assert_eq!(ec_point_bytes(&[]), None);
    }

    #[test]
    fn a_missing_module_is_a_clear_error_without_the_pin() {
        let e = Pkcs11Keys::open(Pkcs11Config {
            module: "/nonexistent/libnothing.so".into(),
            token: TokenSelector::Label("t".into()),
            pin: PinSource::Value(Arc::new(Zeroizing::new("secret-pin-1234".into()))),
        })
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("/nonexistent/libnothing.so") && e.contains("loading the module"),
            "{e}"
        );
        assert!(!e.contains("secret-pin-1234"));
    }
}
