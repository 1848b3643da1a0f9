//! De-duplication by `webhook-id`: the small interface the flow needs, and the record each
//! id leaves in the store.
//!
//! Three operations, in the order the flow uses them:
//! 1. [`DedupStore::claim`] before forwarding: `Delivered` (a repeat: do not forward),
//!    `InFlight` (another attempt of the same id is being forwarded now), or `Claimed` (this
//!    attempt now holds a short-lived in-flight marker and may forward);
//! 2. [`DedupStore::confirm`] once the origin answered `2xx`: the id becomes `Delivered` for
//!    the long de-duplication TTL;
//! 3. [`DedupStore::release`] when the origin did not accept it: the marker goes, so the
//!    sender's retry is forwarded again.
//!
//! Two implementations live in the Worker's `edge` module. Workers KV does `claim` as a read
//! then a write, which is not atomic and, KV being eventually consistent, not global either
//! (the README's "KV mode" section); in KV mode it sits behind the isolate's in-flight set
//! ([`super::in_flight`]). A Durable Object's storage, one object per id, runs the whole flow
//! one attempt at a time (Durable Object mode); records there carry no TTL, so
//! [`DedupRecord::expires_at`] says when they stop counting.

use std::fmt;

use postwire_core::UnixTime;

/// What [`DedupStore::claim`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// Nothing was recorded for the id: this attempt now holds the in-flight marker.
    Claimed,
    /// Another attempt of the id is being forwarded; its outcome is not known yet.
    InFlight,
    /// The id was delivered (the origin answered `2xx`) within the TTL.
    Delivered,
}

/// A store operation failed (a KV error, a Durable Object unreachable...). The detail is for
/// the log; the sender only learns that the Worker could not de-duplicate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreError {
    /// Which operation: `claim`, `confirm` or `release`.
    pub operation: &'static str,
    /// What the backend said (never secret material: ids and backend messages only).
    pub detail: String,
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "de-duplication store {} failed: {}", self.operation, self.detail)
    }
}

impl std::error::Error for StoreError {}

/// A de-duplication store. Not `Send`: Worker futures never are.
#[allow(async_fn_in_trait)]
pub trait DedupStore {
    /// Looks the id up; when nothing is recorded, marks it in flight (short TTL).
    async fn claim(&self, id: &str, now: UnixTime) -> Result<Claim, StoreError>;
    /// Records the id as delivered (long TTL), replacing the in-flight marker.
    async fn confirm(&self, id: &str, now: UnixTime) -> Result<(), StoreError>;
    /// Removes the in-flight marker, so that a retry is forwarded.
    async fn release(&self, id: &str) -> Result<(), StoreError>;
}

/// What a store keeps per id. Stored as text: `in_flight:<unix secs>` or
/// `delivered:<unix secs>` (the time the state was entered, for people inspecting KV).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DedupRecord {
    /// Being forwarded since this time.
    InFlight {
        /// When the attempt claimed the id.
        since: UnixTime,
    },
    /// Accepted by the origin at this time.
    Delivered {
        /// When the origin's `2xx` was recorded.
        at: UnixTime,
    },
}

const IN_FLIGHT_PREFIX: &str = "in_flight:";
const DELIVERED_PREFIX: &str = "delivered:";
/// Prefix of the store keys: `webhook-id:<id>`.
pub const KEY_PREFIX: &str = "webhook-id:";

impl DedupRecord {
    /// The stored text.
    pub fn encode(&self) -> String {
        match self {
            DedupRecord::InFlight { since } => format!("{IN_FLIGHT_PREFIX}{}", since.as_secs()),
            DedupRecord::Delivered { at } => format!("{DELIVERED_PREFIX}{}", at.as_secs()),
        }
    }

    /// Reads a stored text. A value this version does not understand is read as
    /// `InFlight`: never acknowledge on a guess, and never forward twice on a guess. It
    /// expires with its TTL like any other record.
    pub fn decode(text: &str) -> DedupRecord {
        let secs = |rest: &str| UnixTime::from_secs(rest.parse::<i64>().unwrap_or(0));
        if let Some(rest) = text.strip_prefix(DELIVERED_PREFIX) {
            DedupRecord::Delivered { at: secs(rest) }
        } else if let Some(rest) = text.strip_prefix(IN_FLIGHT_PREFIX) {
            DedupRecord::InFlight { since: secs(rest) }
        } else {
            DedupRecord::InFlight {
                since: UnixTime::from_secs(0),
            }
        }
    }

    /// When this record stops counting: `since` + the in-flight TTL for a marker, `at` + the
    /// de-duplication TTL for a delivery. Stores without their own expiry (a Durable
    /// Object's storage) ignore records past this time, whether or not their alarm ran.
    pub fn expires_at(&self, delivered_ttl_secs: u64, in_flight_ttl_secs: u64) -> UnixTime {
        let (start, ttl) = match self {
            DedupRecord::InFlight { since } => (since, in_flight_ttl_secs),
            DedupRecord::Delivered { at } => (at, delivered_ttl_secs),
        };
        UnixTime::from_secs(start.as_secs().saturating_add(i64::try_from(ttl).unwrap_or(i64::MAX)))
    }

    /// What finding this record means to a new attempt.
    pub fn claim(&self) -> Claim {
        match self {
            DedupRecord::InFlight { .. } => Claim::InFlight,
            DedupRecord::Delivered { .. } => Claim::Delivered,
        }
    }
}

/// The store key of an id. Ids are 1 to 256 visible ASCII characters (checked by
/// postwire-core), so the key is at most 267 bytes, within KV's 512.
pub fn key_for(id: &str) -> String {
    format!("{KEY_PREFIX}{id}")
}

#[cfg(test)]
pub(crate) mod memory {
    //! An in-memory [`DedupStore`] for the native tests of the flow, with switches to make
    //! each operation fail.
    use super::*;
    use std::cell::{Cell, RefCell};
    use std::collections::HashMap;

    #[derive(Default)]
    pub struct MemoryDedupStore {
        pub records: RefCell<HashMap<String, DedupRecord>>,
        pub fail_claim: Cell<bool>,
        pub fail_confirm: Cell<bool>,
        pub fail_release: Cell<bool>,
    }

    fn fail(operation: &'static str) -> StoreError {
        StoreError {
            operation,
            detail: "switched off by the test".into(),
        }
    }

    impl DedupStore for MemoryDedupStore {
        async fn claim(&self, id: &str, now: UnixTime) -> Result<Claim, StoreError> {
            if self.fail_claim.get() {
                return Err(fail("claim"));
            }
            let mut records = self.records.borrow_mut();
            match records.get(&key_for(id)) {
                Some(rec) => Ok(rec.claim()),
                None => {
                    records.insert(key_for(id), DedupRecord::InFlight { since: now });
                    Ok(Claim::Claimed)
                }
            }
        }
        async fn confirm(&self, id: &str, now: UnixTime) -> Result<(), StoreError> {
            if self.fail_confirm.get() {
                return Err(fail("confirm"));
            }
            self.records
                .borrow_mut()
                .insert(key_for(id), DedupRecord::Delivered { at: now });
            Ok(())
        }
        async fn release(&self, id: &str) -> Result<(), StoreError> {
            if self.fail_release.get() {
                return Err(fail("release"));
            }
            self.records.borrow_mut().remove(&key_for(id));
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip() {
        for rec in [
            DedupRecord::InFlight {
                since: UnixTime::from_secs(1_700_000_000),
            },
            DedupRecord::Delivered {
                at: UnixTime::from_secs(1_700_000_123),
            },
        ] {
            assert_eq!(DedupRecord::decode(&rec.encode()), rec);
        }
        assert_eq!(
            DedupRecord::Delivered {
                at: UnixTime::from_secs(5)
            }
            .encode(),
            "delivered:5"
        );
    }

    #[test]
    fn unknown_records_block_instead_of_guessing() {
        for junk in ["", "1", "yes", "DELIVERED:1"] {
            assert_eq!(DedupRecord::decode(junk).claim(), Claim::InFlight, "{junk:?}");
        }
        assert_eq!(DedupRecord::decode("delivered:").claim(), Claim::Delivered);
    }

    #[test]
    fn records_expire_after_their_own_ttl() {
        let t = UnixTime::from_secs(1_700_000_000);
        let delivered = DedupRecord::Delivered { at: t };
        let in_flight = DedupRecord::InFlight { since: t };
        assert_eq!(delivered.expires_at(90_000, 60), UnixTime::from_secs(1_700_090_000));
        assert_eq!(in_flight.expires_at(90_000, 60), UnixTime::from_secs(1_700_000_060));
        assert_eq!(
            DedupRecord::decode("junk").expires_at(90_000, 60),
            UnixTime::from_secs(60),
            "an unreadable record is long expired"
        );
        assert_eq!(delivered.expires_at(u64::MAX, 60), UnixTime::from_secs(i64::MAX));
    }

    #[test]
    fn keys_fit_kv() {
        let id = "x".repeat(postwire_core::MAX_ID_LEN);
        assert!(key_for(&id).len() <= 512);
        assert_eq!(key_for("msg_1"), "webhook-id:msg_1");
    }
}
