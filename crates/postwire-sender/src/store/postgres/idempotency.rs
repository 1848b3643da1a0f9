//! Idempotency keys in the database: beginning a key (the rule is
//! `crate::idempotency::decide`), freeing it after a failed request, and completing it
//! inside the transaction of the work it guards. Concurrent requests with one key, from
//! any process, are serialised by a transaction advisory lock of the key.

use std::sync::{Arc, Mutex};

use deadpool_postgres::Transaction;

use super::*;
use crate::idempotency::{IDEMPOTENCY_WINDOW_MS, Response, StoredKey, decide};

/// Keys older than the window removed by one `begin`, so the table stays bounded.
const EXPIRED_PER_BEGIN: i64 = 64;

/// The advisory lock of a key (a 64-bit hash of scope and key; a collision only makes
/// two keys wait for each other).
fn key_lock(key: &IdempotencyKey) -> i64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in key.scope().bytes().chain([0]).chain(key.key().bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h as i64
}

pub(super) async fn begin(store: &PostgresStore, key: IdempotencyKey, now: Timestamp) -> StoreResult<Decision> {
    store
        .run("begin idempotency key", move |mut c: Client| {
            let key = key.clone();
            Box::pin(async move {
                let now_ms = now.unix_millis();
                let tx = c.transaction().await?;
                tx.execute("SELECT pg_advisory_xact_lock($1)", &[&key_lock(&key)])
                    .await?;
                let expire = tx
                    .prepare_cached(
                        "DELETE FROM idempotency_keys WHERE (scope, key) IN (
                             SELECT scope, key FROM idempotency_keys WHERE created_at <= $1 LIMIT $2
                             FOR UPDATE SKIP LOCKED)",
                    )
                    .await?;
                tx.execute(&expire, &[&(now_ms - IDEMPOTENCY_WINDOW_MS), &EXPIRED_PER_BEGIN])
                    .await?;
                let read = tx
                    .prepare_cached(
                        "SELECT request_hash, created_at, response, lease_until FROM idempotency_keys
                         WHERE scope = $1 AND key = $2",
                    )
                    .await?;
                let stored = tx
                    .query_opt(&read, &[&key.scope(), &key.key()])
                    .await?
                    .map(|r| -> Result<StoredKey, PgErr> {
                        Ok(StoredKey {
                            request_hash: r.try_get(0)?,
                            created_at_ms: r.try_get(1)?,
                            response: r.try_get(2)?,
                            lease_until_ms: r.try_get(3)?,
                        })
                    })
                    .transpose()?;
                let decision = decide(stored.as_ref(), &key, now_ms);
                if let Decision::Start { lease_until_ms } = decision {
                    let start = tx
                        .prepare_cached(
                            "INSERT INTO idempotency_keys (scope, key, request_hash, created_at, lease_until, response)
                             VALUES ($1, $2, $3, $4, $5, NULL)
                             ON CONFLICT (scope, key) DO UPDATE SET request_hash = excluded.request_hash,
                               created_at = excluded.created_at, lease_until = excluded.lease_until,
                               response = NULL, resource = NULL",
                        )
                        .await?;
                    tx.execute(
                        &start,
                        &[
                            &key.scope(),
                            &key.key(),
                            &&key.request_hash()[..],
                            &now_ms,
                            &lease_until_ms,
                        ],
                    )
                    .await?;
                }
                tx.commit().await.map_err(PgErr::Commit)?;
                Ok(decision)
            })
        })
        .await
}

pub(super) async fn abandon(store: &PostgresStore, key: IdempotencyKey, lease_until_ms: i64) -> StoreResult<()> {
    store
        .run("abandon idempotency key", move |c: Client| {
            let key = key.clone();
            Box::pin(async move {
                c.execute(
                    "DELETE FROM idempotency_keys
                     WHERE scope = $1 AND key = $2 AND lease_until = $3 AND response IS NULL",
                    &[&key.scope(), &key.key(), &lease_until_ms],
                )
                .await?;
                Ok(())
            })
        })
        .await
}

/// A completion shared by the runs of one transaction: its response is rendered on the
/// first run and reused if the transaction is run again after a lost connection.
#[derive(Clone)]
pub(super) struct Once(Arc<Mutex<State>>);

enum State {
    None,
    Fresh(Completion),
    /// Rendered from these counts (`None`: ready-made, valid for any).
    Rendered {
        key: IdempotencyKey,
        lease_until_ms: i64,
        created: Option<String>,
        response: String,
        counts: Option<Vec<usize>>,
    },
}

impl Once {
    pub(super) fn new(completion: Option<Completion>) -> Once {
        Once(Arc::new(Mutex::new(match completion {
            Some(c) => State::Fresh(c),
            None => State::None,
        })))
    }
}

/// Stores the completion's response under its key, in `tx`; fails (so the work rolls
/// back with it) if the key is no longer this request's.
pub(super) async fn complete(tx: &Transaction<'_>, once: &Once, counts: &[usize]) -> Result<(), PgErr> {
    let (key, lease_until_ms, created, response) = {
        let mut state = once.0.lock().unwrap_or_else(|p| p.into_inner());
        if let State::Fresh(_) = &*state {
            let State::Fresh(c) = std::mem::replace(&mut *state, State::None) else {
                unreachable!("matched just above")
            };
            let (response, rendered_from) = match c.response {
                Response::Ready(r) => (r, None),
                Response::FromCounts(render) => (render(counts), Some(counts.to_vec())),
            };
            *state = State::Rendered {
                key: c.key,
                lease_until_ms: c.lease_until_ms,
                created: c.created,
                response,
                counts: rendered_from,
            };
        }
        match &*state {
            State::None => return Ok(()),
            State::Fresh(_) => unreachable!("rendered just above"),
            State::Rendered {
                key,
                lease_until_ms,
                created,
                response,
                counts: rendered_from,
            } => {
                if rendered_from.as_deref().is_some_and(|r| r != counts) {
                    return Err(PgErr::Data(
                        "the subscriptions changed while the request was retried; send it again".into(),
                    ));
                }
                (key.clone(), *lease_until_ms, created.clone(), response.clone())
            }
        }
    };
    let st = tx
        .prepare_cached(
            "UPDATE idempotency_keys SET response = $4, resource = $5
             WHERE scope = $1 AND key = $2 AND lease_until = $3 AND response IS NULL",
        )
        .await?;
    let n = tx
        .execute(&st, &[&key.scope(), &key.key(), &lease_until_ms, &response, &created])
        .await?;
    if n == 0 {
        return Err(PgErr::Data(
            "the Idempotency-Key was taken over by a newer request after its lease ended".into(),
        ));
    }
    Ok(())
}
