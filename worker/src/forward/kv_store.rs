//! [`DedupStore`] on Workers KV. One key per id (`webhook-id:<id>`) whose value is a
//! [`DedupRecord`]: `in_flight:<t>` with the short in-flight TTL, then `delivered:<t>` with the
//! de-duplication TTL.
//!
//! `claim` is a read followed by a write: two attempts racing within that gap, or at two
//! locations within KV's propagation delay (up to about 60 s), can both claim. KV cannot do
//! better; a Durable Object store can (see the README).

use postwire_core::UnixTime;
use worker::kv::KvStore;

use crate::forward::dedup::{Claim, DedupRecord, DedupStore, StoreError, key_for};

/// The KV-backed store.
pub(crate) struct KvDedupStore {
    kv: KvStore,
    delivered_ttl_secs: u64,
    in_flight_ttl_secs: u64,
}

impl KvDedupStore {
    pub(crate) fn new(kv: KvStore, delivered_ttl_secs: u64, in_flight_ttl_secs: u64) -> Self {
        KvDedupStore {
            kv,
            delivered_ttl_secs,
            in_flight_ttl_secs,
        }
    }

    async fn put(&self, operation: &'static str, id: &str, record: DedupRecord, ttl: u64) -> Result<(), StoreError> {
        self.kv
            .put(&key_for(id), record.encode())
            .map_err(|e| store_error(operation, e))?
            .expiration_ttl(ttl)
            .execute()
            .await
            .map_err(|e| store_error(operation, e))
    }
}

fn store_error(operation: &'static str, e: worker::kv::KvError) -> StoreError {
    StoreError {
        operation,
        detail: e.to_string(),
    }
}

impl DedupStore for KvDedupStore {
    async fn claim(&self, id: &str, now: UnixTime) -> Result<Claim, StoreError> {
        let existing = self
            .kv
            .get(&key_for(id))
            .text()
            .await
            .map_err(|e| store_error("claim", e))?;
        if let Some(text) = existing {
            return Ok(DedupRecord::decode(&text).claim());
        }
        self.put(
            "claim",
            id,
            DedupRecord::InFlight { since: now },
            self.in_flight_ttl_secs,
        )
        .await?;
        Ok(Claim::Claimed)
    }

    async fn confirm(&self, id: &str, now: UnixTime) -> Result<(), StoreError> {
        self.put(
            "confirm",
            id,
            DedupRecord::Delivered { at: now },
            self.delivered_ttl_secs,
        )
        .await
    }

    async fn release(&self, id: &str) -> Result<(), StoreError> {
        self.kv
            .delete(&key_for(id))
            .await
            .map_err(|e| store_error("release", e))
    }
}
