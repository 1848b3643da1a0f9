//! Idempotency keys in the file: beginning a key (the rule is
//! `crate::idempotency::decide`), freeing it after a failed request, and completing it
//! inside the transaction of the work it guards.

use rusqlite::{Connection, OptionalExtension, params};

use super::*;
use crate::idempotency::{Completion, Decision, IDEMPOTENCY_WINDOW_MS, IdempotencyKey, Response, StoredKey, decide};
use crate::store::{BoxFuture, StoreResult};

/// Keys older than the window removed by one `begin`, so the table stays bounded
/// without a sweeper of its own.
const EXPIRED_PER_BEGIN: i64 = 64;

pub(super) fn begin(store: &SqliteStore, key: IdempotencyKey, now: Timestamp) -> BoxFuture<'_, StoreResult<Decision>> {
    store.write(move |tx| {
        let now_ms = now.unix_millis();
        tx.prepare_cached(
            "DELETE FROM idempotency_keys WHERE (scope, key) IN (
                 SELECT scope, key FROM idempotency_keys WHERE created_at <= ?1 LIMIT ?2)",
        )?
        .execute(params![now_ms - IDEMPOTENCY_WINDOW_MS, EXPIRED_PER_BEGIN])?;
        let stored = tx
            .prepare_cached(
                "SELECT request_hash, created_at, response, lease_until FROM idempotency_keys
                 WHERE scope = ?1 AND key = ?2",
            )?
            .query_row(params![key.scope(), key.key()], |r| {
                Ok(StoredKey {
                    request_hash: r.get(0)?,
                    created_at_ms: r.get(1)?,
                    response: r.get(2)?,
                    lease_until_ms: r.get(3)?,
                })
            })
            .optional()?;
        let decision = decide(stored.as_ref(), &key, now_ms);
        if let Decision::Start { lease_until_ms } = decision {
            tx.prepare_cached(
                "INSERT OR REPLACE INTO idempotency_keys (scope, key, request_hash, created_at, lease_until, response)
                 VALUES (?1, ?2, ?3, ?4, ?5, NULL)",
            )?
            .execute(params![
                key.scope(),
                key.key(),
                &key.request_hash()[..],
                now_ms,
                lease_until_ms
            ])?;
        }
        Ok(decision)
    })
}

pub(super) fn abandon(store: &SqliteStore, key: IdempotencyKey, lease_until_ms: i64) -> BoxFuture<'_, StoreResult<()>> {
    store.write(move |tx| {
        tx.execute(
            "DELETE FROM idempotency_keys WHERE scope = ?1 AND key = ?2 AND lease_until = ?3 AND response IS NULL",
            params![key.scope(), key.key(), lease_until_ms],
        )?;
        Ok(())
    })
}

/// Stores `completion`'s response under its key, in the caller's transaction; fails (so
/// the work rolls back with it) if the key is no longer this request's.
pub(super) fn complete(tx: &Connection, completion: Completion, counts: &[usize]) -> rusqlite::Result<()> {
    let Completion {
        key,
        lease_until_ms,
        response,
        created,
    } = completion;
    let response = match response {
        Response::Ready(r) => r,
        Response::FromCounts(render) => render(counts),
    };
    let n = tx
        .prepare_cached(
            "UPDATE idempotency_keys SET response = ?4, resource = ?5
             WHERE scope = ?1 AND key = ?2 AND lease_until = ?3 AND response IS NULL",
        )?
        .execute(params![key.scope(), key.key(), lease_until_ms, response, created])?;
    if n == 0 {
        return Err(conversion(
            "the Idempotency-Key was taken over by a newer request after its lease ended",
        ));
    }
    Ok(())
}
