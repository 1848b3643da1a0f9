//! # postwire-core
//!
//! Standard Webhooks signing and verification, and the typed events of the postwire
//! webhooks API. No I/O, no clock of its own, no panics on any input; builds for
//! `wasm32-unknown-unknown` as well as native targets. The npm package, the edge Worker
//! and the sender are thin layers over this crate.
//!
//! ## Receiving
//! ```
//! use postwire_core::{Secret, Signer, UnixTime, Verifier, MemoryReplayGuard, ReplayGuard, Seen};
//! # let secret = Secret::generate().unwrap();
//! # let now = UnixTime::from_secs(1_700_000_000);
//! # let body = br#"{"id":"msg_1","type":"webhook.test","createdAt":"2026-01-01T00:00:00.000Z","workspaceId":"ws","data":{"message":"hi"}}"#;
//! # let sig = Signer::new(secret.clone()).sign("msg_1", now, body).unwrap();
//! # let headers = vec![("webhook-id", "msg_1".to_string()), ("webhook-timestamp", "1700000000".into()), ("webhook-signature", sig.into_string())];
//! let verifier = Verifier::new(secret);
//! let guard = MemoryReplayGuard::default();
//! let event = verifier.verify_event(&headers, body, now)?;
//! if guard.check_and_record(event.id(), now) == Seen::Fresh {
//!     // handle `event.data()` ...
//! }
//! # Ok::<(), postwire_core::Error>(())
//! ```
//!
//! ## Sending
//! [`Signer`] produces the `webhook-signature` value (one entry per secret during a
//! rotation); [`Event`] is the body; [`matches()`] and [`OrderingKey`] decide where and in
//! which order it goes.

#![forbid(unsafe_code)]
// Peer input never panics this crate: no unwrap, expect, panic! or unchecked indexing
// outside tests (the workspace forbids `unsafe` everywhere).
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)
)]
#![deny(missing_docs)]

#[cfg(feature = "ed25519")]
mod asymmetric;
mod error;
mod event;
mod headers;
#[cfg(feature = "ed25519")]
pub mod key_set;
mod matching;
mod operational;
#[cfg(feature = "providers")]
pub mod providers;
mod replay;
mod secret;
mod signature;
mod signer;
mod subscription;
mod time;
mod verifier;

#[cfg(feature = "ed25519")]
pub use asymmetric::{
    ASYMMETRIC_SIGNATURE_VERSION, AsymmetricSignature, ED25519_KEY_LEN, ED25519_KEYPAIR_LEN, ED25519_SIGNATURE_LEN,
    MAX_KEY_STRING_LEN, PUBLIC_KEY_PREFIX, PublicKey, SIGNING_KEY_PREFIX, SigningKey, TrustedKey,
};
pub use error::{Error, ErrorCode, SignatureDetail};
pub use event::{
    Actor, ActorKind, DisconnectReason, Event, EventData, EventError, EventType, FailureCode, Integration,
    IntegrationData, IntegrationDisconnectedData, PostData, PostDeletedData, PostFailedData, PostState, PostSummary,
    TestData,
};
pub use headers::{
    HeaderSource, ID_HEADER, MAX_ID_LEN, SIGNATURE_HEADER, TIMESTAMP_HEADER, WebhookHeaders, validate_id,
};
pub use matching::{OrderingKey, matches};
pub use operational::{
    AutomaticPauseCause, OperationalData, OperationalEvent, OperationalEventType, PauseWarningReason, SubscriptionRef,
    UnknownOperationalEventType, operational_json_schema,
};
pub use replay::{DEFAULT_REPLAY_CAPACITY, DEFAULT_REPLAY_TTL_SECS, MemoryReplayGuard, ReplayGuard, Seen};
pub use secret::{
    DEFAULT_SECRET_LEN, MAX_GENERATED_SECRET_LEN, MAX_SECRET_KEY_LEN, MAX_SECRET_STRING_LEN, MIN_GENERATED_SECRET_LEN,
    SECRET_PREFIX, Secret, SignatureStream,
};
pub use signature::{MAX_SIGNATURE_HEADER_LEN, MAX_SIGNATURES, SIGNATURE_VERSION, Signature, SignatureHeader};
pub use signer::{SignatureValue, Signer};
pub use subscription::{CreatedByKind, CreatedSubscription, SigningMode, Subscription, SubscriptionStatus};
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
pub use time::SystemClock;
pub use time::{Clock, ManualClock, Timestamp, UnixTime};
pub use verifier::{DEFAULT_TOLERANCE_SECS, Verified, Verifier};
