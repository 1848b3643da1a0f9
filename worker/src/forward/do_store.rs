//! [`DedupStore`] on the storage of one `DedupObject` (one object per `webhook-id`, so one
//! key per object: `webhook-id:<id>` → a [`DedupRecord`]).
//!
//! Durable Object storage has no TTL; an alarm does the expiring. Each write sets the
//! object's one alarm to the new record's expiry (the in-flight TTL after a claim, the
//! de-duplication TTL after a confirm); the alarm handler deletes everything, so an object
//! whose record expired holds no data. A record found past its expiry (an alarm late or
//! failed) is ignored, so correctness never depends on the alarm's timing.
//!
//! Calls come from inside `blockConcurrencyWhile` (see `dedup_object`), so no other event of
//! the object runs between a `claim`'s read and its write.

use std::time::Duration;

use postwire_core::UnixTime;
use worker::Storage;

use crate::forward::dedup::{Claim, DedupRecord, DedupStore, StoreError, key_for};

/// The store of one object.
pub(crate) struct ObjectStore {
    storage: Storage,
    delivered_ttl_secs: u64,
    in_flight_ttl_secs: u64,
}

impl ObjectStore {
    pub(crate) fn new(storage: Storage, delivered_ttl_secs: u64, in_flight_ttl_secs: u64) -> Self {
        ObjectStore {
            storage,
            delivered_ttl_secs,
            in_flight_ttl_secs,
        }
    }

    /// The record of `id`, if there is one that has not expired at `now`.
    pub(crate) async fn peek(&self, id: &str, now: UnixTime) -> Result<Option<DedupRecord>, StoreError> {
        let text: Option<String> = self
            .storage
            .get(&key_for(id))
            .await
            .map_err(|e| store_error("claim", e))?;
        Ok(text
            .map(|t| DedupRecord::decode(&t))
            .filter(|r| r.expires_at(self.delivered_ttl_secs, self.in_flight_ttl_secs) > now))
    }

    async fn write(
        &self,
        operation: &'static str,
        id: &str,
        record: DedupRecord,
        ttl_secs: u64,
    ) -> Result<(), StoreError> {
        self.storage
            .put(&key_for(id), record.encode())
            .await
            .map_err(|e| store_error(operation, e))?;
        self.storage
            .set_alarm(Duration::from_secs(ttl_secs))
            .await
            .map_err(|e| store_error(operation, e))
    }
}

fn store_error(operation: &'static str, e: worker::Error) -> StoreError {
    StoreError {
        operation,
        detail: format!("Durable Object storage: {e}"),
    }
}

impl DedupStore for ObjectStore {
    async fn claim(&self, id: &str, now: UnixTime) -> Result<Claim, StoreError> {
        if let Some(record) = self.peek(id, now).await? {
            return Ok(record.claim());
        }
        self.write(
            "claim",
            id,
            DedupRecord::InFlight { since: now },
            self.in_flight_ttl_secs,
        )
        .await?;
        Ok(Claim::Claimed)
    }

    async fn confirm(&self, id: &str, now: UnixTime) -> Result<(), StoreError> {
        self.write(
            "confirm",
            id,
            DedupRecord::Delivered { at: now },
            self.delivered_ttl_secs,
        )
        .await
    }

    async fn release(&self, _id: &str) -> Result<(), StoreError> {
        self.storage
            .delete_alarm()
            .await
            .map_err(|e| store_error("release", e))?;
        self.storage.delete_all().await.map_err(|e| store_error("release", e))
    }
}
