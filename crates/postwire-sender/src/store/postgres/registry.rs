//! The registry: workspaces, their connected accounts, and subscriptions (create, read,
//! update, delete, rotate). Same statements as the SQLite store's `registry.rs`.

use postwire_core::{
    CreatedByKind, EventType, Integration, Secret, SigningMode, Subscription, SubscriptionStatus, Timestamp,
};
use tokio_postgres::Row;

use super::*;
use crate::idempotency::Completion;
use crate::model::{PreviousKey, Purpose, StoredSubscription, SubscriptionChanges, Workspace, WorkspaceKeys};
use crate::notices::NewNotice;
use crate::secret_box::{CipherError, SecretCipher, StoredSecret};

pub(super) const SUBSCRIPTION_COLUMNS: &str = "id, workspace_id, name, url, events, integrations, paused_reason, created_by_kind, \
     consecutive_failures, last_success_at, failing_since, created_at, secret, previous_secret, previous_secret_until, \
     signing, purpose";

pub(super) fn subscription_from_row(r: &Row, cipher: Option<&SecretCipher>) -> Result<StoredSubscription, PgErr> {
    let events: Vec<EventType> = serde_json::from_str(r.try_get::<_, &str>(4)?).map_err(data)?;
    let integrations: Vec<Integration> = serde_json::from_str(r.try_get::<_, &str>(5)?).map_err(data)?;
    let status = match r.try_get::<_, Option<String>>(6)? {
        None => SubscriptionStatus::Enabled,
        Some(reason) => SubscriptionStatus::Paused { reason },
    };
    let created_by_kind: CreatedByKind = r.try_get::<_, &str>(7)?.parse().map_err(data)?;
    let signing: SigningMode = r.try_get::<_, &str>(15)?.parse().map_err(data)?;
    let secret = StoredSecret::open(cipher, r.try_get::<_, &str>(12)?).map_err(data)?;
    let filtered = !events.is_empty() || !integrations.is_empty();
    let purpose = Purpose::from_stored(r.try_get::<_, &str>(16)?, filtered).map_err(data)?;
    let previous_secret = match (r.try_get::<_, Option<&str>>(13)?, r.try_get::<_, Option<i64>>(14)?) {
        (Some(s), Some(until)) => Some((StoredSecret::open(cipher, s).map_err(data)?, ts(until))),
        _ => None,
    };
    Ok(StoredSubscription {
        workspace_id: r.try_get(1)?,
        subscription: Subscription {
            id: r.try_get(0)?,
            name: r.try_get(2)?,
            url: r.try_get(3)?,
            events,
            integrations,
            status,
            created_by_kind,
            consecutive_failures: r.try_get::<_, i64>(8)?.clamp(0, u32::MAX as i64) as u32,
            last_success_at: opt_ts(r.try_get(9)?),
            created_at: ts(r.try_get(11)?),
            signing,
        },
        secret,
        previous_secret,
        failing_since: opt_ts(r.try_get(10)?),
        purpose,
    })
}

pub(super) async fn upsert_workspace(store: &PostgresStore, workspace: Workspace) -> StoreResult<()> {
    store
        .run("upsert workspace", move |c: Client| {
            let w = workspace.clone();
            Box::pin(async move {
                c.execute(
                    "INSERT INTO workspaces (id, name) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET name = excluded.name",
                    &[&w.id, &w.name],
                )
                .await?;
                Ok(())
            })
        })
        .await
}

pub(super) async fn workspace(store: &PostgresStore, id: String) -> StoreResult<Option<Workspace>> {
    store
        .run("read workspace", move |c: Client| {
            let id = id.clone();
            Box::pin(async move {
                let st = c
                    .prepare_cached("SELECT id, name FROM workspaces WHERE id = $1")
                    .await?;
                c.query_opt(&st, &[&id])
                    .await?
                    .map(|r| {
                        Ok(Workspace {
                            id: r.try_get(0)?,
                            name: r.try_get(1)?,
                        })
                    })
                    .transpose()
            })
        })
        .await
}

pub(super) async fn upsert_integration(store: &PostgresStore, workspace_id: String, i: Integration) -> StoreResult<()> {
    store
        .run("upsert integration", move |c: Client| {
            let (ws, i) = (workspace_id.clone(), i.clone());
            Box::pin(async move {
                c.execute(
                    "INSERT INTO integrations (workspace_id, id, name, provider_identifier, picture) VALUES ($1, $2, $3, $4, $5)
                     ON CONFLICT (workspace_id, id) DO UPDATE SET name = excluded.name,
                       provider_identifier = excluded.provider_identifier, picture = excluded.picture",
                    &[&ws, &i.id, &i.name, &i.provider_identifier, &i.picture],
                )
                .await?;
                Ok(())
            })
        })
        .await
}

pub(super) async fn integrations(
    store: &PostgresStore,
    workspace_id: String,
    ids: Vec<String>,
) -> StoreResult<Vec<Integration>> {
    store
        .run("read integrations", move |c: Client| {
            let (ws, ids) = (workspace_id.clone(), ids.clone());
            Box::pin(async move {
                let st = c
                    .prepare_cached(
                        "SELECT id, name, provider_identifier, picture FROM integrations
                         WHERE workspace_id = $1 AND id = ANY($2)",
                    )
                    .await?;
                let rows = c.query(&st, &[&ws, &ids]).await?;
                let mut found: Vec<Integration> = rows
                    .iter()
                    .map(|r| {
                        Ok(Integration {
                            id: r.try_get(0)?,
                            name: r.try_get(1)?,
                            provider_identifier: r.try_get(2)?,
                            picture: r.try_get(3)?,
                        })
                    })
                    .collect::<Result<_, PgErr>>()?;
                // In the order asked for, as the SQLite store answers.
                found.sort_by_key(|i| ids.iter().position(|id| *id == i.id));
                Ok(found)
            })
        })
        .await
}

/// The namespace (first key) of the two-key advisory lock of a workspace's inserts.
const WORKSPACE_LOCK: i32 = 0x7078; // "px"

pub(super) async fn insert_subscription(
    store: &PostgresStore,
    s: StoredSubscription,
    completion: Option<Completion>,
    limit: Option<u64>,
) -> StoreResult<bool> {
    let cipher = store.cipher.clone();
    let completion = super::idempotency::Once::new(completion);
    let limit = limit.map(|l| i64::try_from(l).unwrap_or(i64::MAX));
    store
        .run("insert subscription", move |mut c: Client| {
            let cipher = cipher.clone();
            let s = s.clone();
            let completion = completion.clone();
            Box::pin(async move {
                let tx = c.transaction().await?;
                if let Some(limit) = limit {
                    // Inserts into one workspace take turns (in every process) until
                    // their transactions end, so the count cannot go stale before the
                    // insert.
                    tx.execute(
                        "SELECT pg_advisory_xact_lock($1, hashtext($2))",
                        &[&WORKSPACE_LOCK, &s.workspace_id],
                    )
                    .await?;
                    let count: i64 = tx
                        .query_one(
                            "SELECT count(*) FROM subscriptions WHERE workspace_id = $1 AND purpose = $2",
                            &[&s.workspace_id, &s.purpose.as_str()],
                        )
                        .await?
                        .try_get(0)?;
                    if count >= limit {
                        return Ok(false);
                    }
                }
                let sub = &s.subscription;
                let reason = match &sub.status {
                    SubscriptionStatus::Enabled => None,
                    SubscriptionStatus::Paused { reason } => Some(reason.clone()),
                };
                tx.execute(
                    "INSERT INTO subscriptions (id, workspace_id, name, url, events, integrations, paused_reason,
                       created_by_kind, consecutive_failures, last_success_at, failing_since, created_at, secret, signing,
                       purpose)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)",
                    &[
                        &sub.id,
                        &s.workspace_id,
                        &sub.name,
                        &sub.url,
                        &serde_json::to_string(&sub.events).map_err(data)?,
                        &serde_json::to_string(&sub.integrations).map_err(data)?,
                        &reason,
                        &sub.created_by_kind.as_str(),
                        &i64::from(sub.consecutive_failures),
                        &sub.last_success_at.map(|t| t.unix_millis()),
                        &s.failing_since.map(|t| t.unix_millis()),
                        &sub.created_at.unix_millis(),
                        &StoredSecret::seal(cipher.as_deref(), &s.secret).map_err(data)?,
                        &sub.signing.as_str(),
                        &s.purpose.as_str(),
                    ],
                )
                .await?;
                super::idempotency::complete(&tx, &completion, &[]).await?;
                tx.commit().await.map_err(PgErr::Commit)?;
                Ok(true)
            })
        })
        .await
}

pub(super) async fn subscription(store: &PostgresStore, id: String) -> StoreResult<Option<StoredSubscription>> {
    let cipher = store.cipher.clone();
    store
        .run("read subscription", move |c: Client| {
            let cipher = cipher.clone();
            let id = id.clone();
            Box::pin(async move {
                let st = c
                    .prepare_cached(&format!(
                        "SELECT {SUBSCRIPTION_COLUMNS} FROM subscriptions WHERE id = $1"
                    ))
                    .await?;
                c.query_opt(&st, &[&id])
                    .await?
                    .map(|r| subscription_from_row(&r, cipher.as_deref()))
                    .transpose()
            })
        })
        .await
}

pub(super) async fn list_subscriptions(
    store: &PostgresStore,
    workspace_id: String,
) -> StoreResult<Vec<StoredSubscription>> {
    let cipher = store.cipher.clone();
    store
        .run("list subscriptions", move |c: Client| {
            let cipher = cipher.clone();
            let ws = workspace_id.clone();
            Box::pin(async move {
                let st = c
                    .prepare_cached(&format!(
                        "SELECT {SUBSCRIPTION_COLUMNS} FROM subscriptions WHERE workspace_id = $1 ORDER BY seq"
                    ))
                    .await?;
                c.query(&st, &[&ws])
                    .await?
                    .iter()
                    .map(|r| subscription_from_row(r, cipher.as_deref()))
                    .collect()
            })
        })
        .await
}

pub(super) async fn update_subscription(
    store: &PostgresStore,
    id: String,
    ch: SubscriptionChanges,
) -> StoreResult<bool> {
    store
        .run("update subscription", move |mut c: Client| {
            let (id, ch) = (id.clone(), ch.clone());
            Box::pin(async move {
                let tx = c.transaction().await?;
                if tx
                    .query_opt("SELECT seq FROM subscriptions WHERE id = $1 FOR UPDATE", &[&id])
                    .await?
                    .is_none()
                {
                    return Ok(false);
                }
                if let Some(name) = ch.name {
                    tx.execute("UPDATE subscriptions SET name = $2 WHERE id = $1", &[&id, &name])
                        .await?;
                }
                if let Some(url) = ch.url {
                    tx.execute("UPDATE subscriptions SET url = $2 WHERE id = $1", &[&id, &url])
                        .await?;
                }
                if let Some(events) = ch.events {
                    let json = serde_json::to_string(&events).map_err(data)?;
                    tx.execute("UPDATE subscriptions SET events = $2 WHERE id = $1", &[&id, &json])
                        .await?;
                }
                if let Some(integrations) = ch.integrations {
                    let json = serde_json::to_string(&integrations).map_err(data)?;
                    tx.execute(
                        "UPDATE subscriptions SET integrations = $2 WHERE id = $1",
                        &[&id, &json],
                    )
                    .await?;
                }
                if let Some(signing) = ch.signing {
                    tx.execute(
                        "UPDATE subscriptions SET signing = $2 WHERE id = $1",
                        &[&id, &signing.as_str()],
                    )
                    .await?;
                }
                tx.commit().await.map_err(PgErr::Commit)?;
                Ok(true)
            })
        })
        .await
}

pub(super) async fn delete_subscription(store: &PostgresStore, id: String) -> StoreResult<bool> {
    store
        .run("delete subscription", move |mut c: Client| {
            let id = id.clone();
            Box::pin(async move {
                let tx = c.transaction().await?;
                let Some(row) = tx
                    .query_opt("DELETE FROM subscriptions WHERE id = $1 RETURNING seq", &[&id])
                    .await?
                else {
                    return Ok(false);
                };
                let seq: i64 = row.try_get(0)?;
                // The key that created it, with the copy of its secret in the stored response.
                tx.execute("DELETE FROM idempotency_keys WHERE resource = $1", &[&id])
                    .await?;
                tx.execute(
                    "DELETE FROM attempts WHERE delivery_seq IN (SELECT seq FROM deliveries WHERE sub_seq = $1)",
                    &[&seq],
                )
                .await?;
                tx.execute("DELETE FROM queue_heads WHERE sub_seq = $1", &[&seq])
                    .await?;
                tx.execute("DELETE FROM deliveries WHERE sub_seq = $1", &[&seq]).await?;
                tx.commit().await.map_err(PgErr::Commit)?;
                Ok(true)
            })
        })
        .await
}

pub(super) async fn rotate_secret(
    store: &PostgresStore,
    id: String,
    new_secret: Secret,
    until: Timestamp,
    notice: NewNotice,
) -> StoreResult<bool> {
    let cipher = store.cipher.clone();
    store
        .run("rotate secret", move |mut c: Client| {
            let cipher = cipher.clone();
            let (id, notice) = (id.clone(), notice.clone());
            let secret = StoredSecret::seal(cipher.as_deref(), &new_secret).map_err(data);
            Box::pin(async move {
                let secret = secret?;
                let tx = c.transaction().await?;
                let n = tx
                    .execute(
                        "UPDATE subscriptions SET previous_secret = secret, previous_secret_until = $3, secret = $2
                         WHERE id = $1",
                        &[&id, &secret, &until.unix_millis()],
                    )
                    .await?;
                if n > 0 {
                    super::notices::insert(&tx, &notice).await?;
                }
                tx.commit().await.map_err(PgErr::Commit)?;
                Ok(n > 0)
            })
        })
        .await
}

/// At connect, as the SQLite store does at open: checks that every stored secret opens
/// with the store's cipher (a clear error naming the missing key otherwise), then seals
/// again under the current key every secret that is plain or sealed under another key,
/// and every sealed stored response likewise, in one transaction. Returns how many values
/// were sealed again. The check reads without locking first: a start with nothing to
/// seal again (every start but the first after a key change) takes no row lock, where
/// locking every subscription made the writes of the processes already dispatching wait
/// for it. When something needs sealing, the pass runs again with the rows locked (`FOR
/// UPDATE`), on which processes starting together serialise.
pub(super) async fn reseal_all(store: &PostgresStore) -> StoreResult<u64> {
    if let Some(n) = reseal_pass(store, false).await? {
        return Ok(n);
    }
    Ok(reseal_pass(store, true).await?.unwrap_or(0))
}

/// One pass of [`reseal_all`]: `None` when, not `locked`, it found something to seal
/// again (and changed nothing).
async fn reseal_pass(store: &PostgresStore, locked: bool) -> StoreResult<Option<u64>> {
    let cipher = store.cipher.clone();
    let lock = if locked { "FOR UPDATE" } else { "" };
    store
        .run("seal stored secrets", move |mut c: Client| {
            let cipher = cipher.clone();
            Box::pin(async move {
                let cipher = cipher.as_deref();
                let sealing = |e: CipherError| PgErr::Data(e.to_string());
                let tx = c.transaction().await?;
                let rows = tx
                    .query(
                        &format!("SELECT seq, secret, previous_secret FROM subscriptions ORDER BY seq {lock}"),
                        &[],
                    )
                    .await?;
                let mut resealed = 0u64;
                for r in rows {
                    let (seq, secret, previous): (i64, String, Option<String>) =
                        (r.try_get(0)?, r.try_get(1)?, r.try_get(2)?);
                    let current = StoredSecret::open(cipher, &secret).map_err(sealing)?;
                    if StoredSecret::needs_reseal(cipher, &secret) {
                        if !locked {
                            return Ok(None);
                        }
                        let sealed = StoredSecret::seal(cipher, &current).map_err(sealing)?;
                        tx.execute("UPDATE subscriptions SET secret = $2 WHERE seq = $1", &[&seq, &sealed])
                            .await?;
                        resealed += 1;
                    }
                    if let Some(text) = previous {
                        let previous = StoredSecret::open(cipher, &text).map_err(sealing)?;
                        if StoredSecret::needs_reseal(cipher, &text) {
                            if !locked {
                                return Ok(None);
                            }
                            let sealed = StoredSecret::seal(cipher, &previous).map_err(sealing)?;
                            tx.execute(
                                "UPDATE subscriptions SET previous_secret = $2 WHERE seq = $1",
                                &[&seq, &sealed],
                            )
                            .await?;
                            resealed += 1;
                        }
                    }
                }
                let keys = tx
                    .query(
                        &format!(
                            "SELECT id, signing_key, previous_signing_key FROM workspaces
                             WHERE signing_key IS NOT NULL OR previous_signing_key IS NOT NULL ORDER BY id {lock}"
                        ),
                        &[],
                    )
                    .await?;
                for r in keys {
                    let id: String = r.try_get(0)?;
                    for (i, column) in [(1, "signing_key"), (2, "previous_signing_key")] {
                        let Some(text) = r.try_get::<_, Option<String>>(i)? else {
                            continue;
                        };
                        let key = StoredSecret::open_signing_key(cipher, &text).map_err(sealing)?;
                        if StoredSecret::needs_reseal(cipher, &text) {
                            if !locked {
                                return Ok(None);
                            }
                            let sealed = StoredSecret::seal_signing_key(cipher, &key).map_err(sealing)?;
                            tx.execute(
                                &format!("UPDATE workspaces SET {column} = $2 WHERE id = $1"),
                                &[&id, &sealed],
                            )
                            .await?;
                            resealed += 1;
                        }
                    }
                }
                let responses = tx
                    .query(
                        &format!(
                            "SELECT scope, key, response FROM idempotency_keys WHERE response LIKE 'pwenc1.%' {lock}"
                        ),
                        &[],
                    )
                    .await?;
                for r in responses {
                    let (scope, key, response): (String, String, String) =
                        (r.try_get(0)?, r.try_get(1)?, r.try_get(2)?);
                    let Some(c) = cipher else {
                        let id = crate::secret_box::key_id_of(&response).unwrap_or("?").to_owned();
                        return Err(sealing(CipherError::NoCipher(id)));
                    };
                    let plain = zeroize::Zeroizing::new(c.open_text(&response).map_err(sealing)?);
                    if StoredSecret::needs_reseal(cipher, &response) {
                        if !locked {
                            return Ok(None);
                        }
                        let sealed = c.seal_text(&plain).map_err(sealing)?;
                        tx.execute(
                            "UPDATE idempotency_keys SET response = $3 WHERE scope = $1 AND key = $2",
                            &[&scope, &key, &sealed],
                        )
                        .await?;
                        resealed += 1;
                    }
                }
                tx.commit().await.map_err(PgErr::Commit)?;
                Ok(Some(resealed))
            })
        })
        .await
}

/// One batch of the background re-encryption after a key rotation, as the SQLite
/// store's: at most `batch` subscriptions and `batch` sealed stored responses not sealed
/// under the current key are sealed again under it. Rows another process is sealing are
/// skipped (`SKIP LOCKED`): it seals them. Returns how many values changed.
pub(super) async fn reseal_batch(store: &PostgresStore, batch: usize) -> StoreResult<u64> {
    let Some(cipher) = store.cipher.clone() else {
        return Ok(0);
    };
    let batch = i64::try_from(batch.clamp(1, 100_000)).unwrap_or(500);
    store
        .run("seal stored secrets again", move |mut c: Client| {
            let cipher = cipher.clone();
            Box::pin(async move {
                let sealing = |e: CipherError| PgErr::Data(e.to_string());
                let prefix = format!("{}{}.", crate::secret_box::SEALED_PREFIX, cipher.current_key_id());
                let tx = c.transaction().await?;
                let rows = tx
                    .query(
                        "SELECT seq, secret, previous_secret FROM subscriptions
                         WHERE NOT starts_with(secret, $1)
                            OR (previous_secret IS NOT NULL AND NOT starts_with(previous_secret, $1))
                         ORDER BY seq LIMIT $2 FOR UPDATE SKIP LOCKED",
                        &[&prefix, &batch],
                    )
                    .await?;
                let mut resealed = 0u64;
                let mut reseal = |text: &str| -> Result<Option<String>, CipherError> {
                    if !StoredSecret::needs_reseal(Some(&cipher), text) {
                        return Ok(None);
                    }
                    resealed += 1;
                    let secret = StoredSecret::open(Some(&cipher), text)?;
                    StoredSecret::seal(Some(&cipher), &secret).map(Some)
                };
                let mut updates = Vec::with_capacity(rows.len());
                for r in rows {
                    let (seq, secret, previous): (i64, String, Option<String>) =
                        (r.try_get(0)?, r.try_get(1)?, r.try_get(2)?);
                    let secret = reseal(&secret).map_err(sealing)?;
                    let previous = match previous {
                        Some(p) => reseal(&p).map_err(sealing)?,
                        None => None,
                    };
                    updates.push((seq, secret, previous));
                }
                for (seq, secret, previous) in updates {
                    tx.execute(
                        "UPDATE subscriptions SET secret = COALESCE($2, secret),
                             previous_secret = COALESCE($3, previous_secret) WHERE seq = $1",
                        &[&seq, &secret, &previous],
                    )
                    .await?;
                }
                let keys = tx
                    .query(
                        "SELECT id, signing_key, previous_signing_key FROM workspaces
                         WHERE (signing_key IS NOT NULL AND NOT starts_with(signing_key, $1))
                            OR (previous_signing_key IS NOT NULL AND NOT starts_with(previous_signing_key, $1))
                         ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED",
                        &[&prefix, &batch],
                    )
                    .await?;
                for r in keys {
                    let id: String = r.try_get(0)?;
                    let mut sealed: [Option<String>; 2] = [None, None];
                    for (i, slot) in sealed.iter_mut().enumerate() {
                        let Some(text) = r.try_get::<_, Option<String>>(i + 1)? else {
                            continue;
                        };
                        if StoredSecret::needs_reseal(Some(&cipher), &text) {
                            let key = StoredSecret::open_signing_key(Some(&cipher), &text).map_err(sealing)?;
                            *slot = Some(StoredSecret::seal_signing_key(Some(&cipher), &key).map_err(sealing)?);
                            resealed += 1;
                        }
                    }
                    tx.execute(
                        "UPDATE workspaces SET signing_key = COALESCE($2, signing_key),
                             previous_signing_key = COALESCE($3, previous_signing_key) WHERE id = $1",
                        &[&id, &sealed[0], &sealed[1]],
                    )
                    .await?;
                }
                let responses = tx
                    .query(
                        "SELECT scope, key, response FROM idempotency_keys
                         WHERE starts_with(response, 'pwenc1.') AND NOT starts_with(response, $1)
                         LIMIT $2 FOR UPDATE SKIP LOCKED",
                        &[&prefix, &batch],
                    )
                    .await?;
                for r in responses {
                    let (scope, key, response): (String, String, String) =
                        (r.try_get(0)?, r.try_get(1)?, r.try_get(2)?);
                    let plain = zeroize::Zeroizing::new(cipher.open_text(&response).map_err(sealing)?);
                    let sealed = cipher.seal_text(&plain).map_err(sealing)?;
                    tx.execute(
                        "UPDATE idempotency_keys SET response = $3 WHERE scope = $1 AND key = $2",
                        &[&scope, &key, &sealed],
                    )
                    .await?;
                    resealed += 1;
                }
                tx.commit().await.map_err(PgErr::Commit)?;
                Ok(resealed)
            })
        })
        .await
}

/// The columns [`keys_from_row`] reads, in its order.
const KEY_COLUMNS: &str = "signing_key, signing_key_created_at, previous_signing_key, \
     previous_signing_key_created_at, previous_signing_key_until, key_set_id";

/// A workspace's key pair from the [`KEY_COLUMNS`] of a row; `None` without a key.
fn keys_from_row(r: &Row, cipher: Option<&SecretCipher>) -> Result<Option<WorkspaceKeys>, PgErr> {
    let Some(current) = r.try_get::<_, Option<&str>>(0)? else {
        return Ok(None);
    };
    let current = StoredSecret::open_signing_key(cipher, current).map_err(data)?;
    let previous = match (
        r.try_get::<_, Option<&str>>(2)?,
        r.try_get::<_, Option<i64>>(3)?,
        r.try_get::<_, Option<i64>>(4)?,
    ) {
        (Some(key), Some(created), Some(until)) => Some(PreviousKey {
            key: StoredSecret::open_signing_key(cipher, key).map_err(data)?,
            created_at: ts(created),
            until: ts(until),
        }),
        _ => None,
    };
    Ok(Some(WorkspaceKeys {
        current,
        created_at: ts(r.try_get::<_, Option<i64>>(1)?.unwrap_or(0)),
        previous,
        key_set_id: r.try_get::<_, Option<String>>(5)?.unwrap_or_default(),
    }))
}

pub(super) async fn signing_keys(store: &PostgresStore, workspace_id: String) -> StoreResult<Option<WorkspaceKeys>> {
    let cipher = store.cipher.clone();
    store
        .run("read signing keys", move |c: Client| {
            let cipher = cipher.clone();
            let ws = workspace_id.clone();
            Box::pin(async move {
                let st = c
                    .prepare_cached(&format!("SELECT {KEY_COLUMNS} FROM workspaces WHERE id = $1"))
                    .await?;
                match c.query_opt(&st, &[&ws]).await? {
                    Some(r) => keys_from_row(&r, cipher.as_deref()),
                    None => Ok(None),
                }
            })
        })
        .await
}

/// The key set published under `key_set_id`: one read of the unique index on the id.
pub(super) async fn key_set(store: &PostgresStore, key_set_id: String) -> StoreResult<Option<WorkspaceKeys>> {
    let cipher = store.cipher.clone();
    store
        .run("read a key set", move |c: Client| {
            let cipher = cipher.clone();
            let id = key_set_id.clone();
            Box::pin(async move {
                let st = c
                    .prepare_cached(&format!("SELECT {KEY_COLUMNS} FROM workspaces WHERE key_set_id = $1"))
                    .await?;
                match c.query_opt(&st, &[&id]).await? {
                    Some(r) => keys_from_row(&r, cipher.as_deref()),
                    None => Ok(None),
                }
            })
        })
        .await
}

pub(super) async fn ensure_signing_key(
    store: &PostgresStore,
    workspace_id: String,
    key: crate::signer::WorkspaceKey,
    key_set_id: String,
    now: Timestamp,
) -> StoreResult<Option<WorkspaceKeys>> {
    let cipher = store.cipher.clone();
    let sealed = StoredSecret::seal_signing_key(cipher.as_deref(), &key).map_err(SenderError::storage)?;
    store
        .run("make a signing key", move |mut c: Client| {
            let cipher = cipher.clone();
            let (ws, sealed, key_set_id) = (workspace_id.clone(), sealed.clone(), key_set_id.clone());
            Box::pin(async move {
                let tx = c.transaction().await?;
                // The row lock serialises concurrent first uses (in every process): the
                // second one finds the first one's key and keeps it.
                tx.execute(
                    "UPDATE workspaces SET signing_key = $2, signing_key_created_at = $3, key_set_id = $4
                     WHERE id = $1 AND signing_key IS NULL",
                    &[&ws, &sealed, &now.unix_millis(), &key_set_id],
                )
                .await?;
                let row = tx
                    .query_opt(&format!("SELECT {KEY_COLUMNS} FROM workspaces WHERE id = $1"), &[&ws])
                    .await?;
                let keys = match row {
                    Some(r) => keys_from_row(&r, cipher.as_deref())?,
                    None => None,
                };
                tx.commit().await.map_err(PgErr::Commit)?;
                Ok(keys)
            })
        })
        .await
}

pub(super) async fn rotate_signing_key(
    store: &PostgresStore,
    workspace_id: String,
    key: crate::signer::WorkspaceKey,
    now: Timestamp,
    until: Timestamp,
    notice: NewNotice,
) -> StoreResult<bool> {
    let sealed = StoredSecret::seal_signing_key(store.cipher.as_deref(), &key).map_err(SenderError::storage)?;
    store
        .run("rotate signing key", move |mut c: Client| {
            let (ws, sealed, notice) = (workspace_id.clone(), sealed.clone(), notice.clone());
            Box::pin(async move {
                let tx = c.transaction().await?;
                let n = tx
                    .execute(
                        "UPDATE workspaces SET previous_signing_key = signing_key,
                             previous_signing_key_created_at = signing_key_created_at, previous_signing_key_until = $4,
                             signing_key = $2, signing_key_created_at = $3
                         WHERE id = $1 AND signing_key IS NOT NULL",
                        &[&ws, &sealed, &now.unix_millis(), &until.unix_millis()],
                    )
                    .await?;
                if n > 0 {
                    super::notices::insert(&tx, &notice).await?;
                }
                tx.commit().await.map_err(PgErr::Commit)?;
                Ok(n > 0)
            })
        })
        .await
}
