//! The registry: workspaces, their connected accounts, and subscriptions (create,
//! read, update, delete, rotate). Writes that change a subscription's URL or secrets
//! clear the claims' targets cache after their commit.

use postwire_core::{
    CreatedByKind, EventType, Integration, Secret, SigningMode, Subscription, SubscriptionStatus, Timestamp,
};
use rusqlite::{Connection, OptionalExtension, params};

use super::schema::UPSERT_WORKSPACE_SQL;
use super::*;
use crate::idempotency::Completion;
use crate::model::{PreviousKey, Purpose, StoredSubscription, SubscriptionChanges, Workspace, WorkspaceKeys};
use crate::notices::NewNotice;
use crate::secret_box::{CipherError, SecretCipher, StoredSecret};
use crate::store::{BoxFuture, StoreResult};
use zeroize::Zeroizing;

pub(super) const SUBSCRIPTION_COLUMNS: &str = "id, workspace_id, name, url, events, integrations, paused_reason, created_by_kind, \
     consecutive_failures, last_success_at, failing_since, created_at, secret, previous_secret, previous_secret_until, \
     signing, purpose";

pub(super) fn subscription_from_row(
    r: &rusqlite::Row<'_>,
    cipher: Option<&SecretCipher>,
) -> rusqlite::Result<StoredSubscription> {
    let events: Vec<EventType> = serde_json::from_str(&r.get::<_, String>(4)?).map_err(conversion)?;
    let integrations: Vec<Integration> = serde_json::from_str(&r.get::<_, String>(5)?).map_err(conversion)?;
    let status = match r.get::<_, Option<String>>(6)? {
        None => SubscriptionStatus::Enabled,
        Some(reason) => SubscriptionStatus::Paused { reason },
    };
    let created_by_kind: CreatedByKind = r.get::<_, String>(7)?.parse().map_err(conversion)?;
    let signing: SigningMode = r.get::<_, String>(15)?.parse().map_err(conversion)?;
    let secret = StoredSecret::open(cipher, &r.get::<_, String>(12)?).map_err(conversion)?;
    let filtered = !events.is_empty() || !integrations.is_empty();
    let purpose = Purpose::from_stored(&r.get::<_, String>(16)?, filtered).map_err(conversion)?;
    let previous_secret = match (r.get::<_, Option<String>>(13)?, r.get::<_, Option<i64>>(14)?) {
        (Some(s), Some(until)) => Some((StoredSecret::open(cipher, &s).map_err(conversion)?, ts(until))),
        _ => None,
    };
    Ok(StoredSubscription {
        workspace_id: r.get(1)?,
        subscription: Subscription {
            id: r.get(0)?,
            name: r.get(2)?,
            url: r.get(3)?,
            events,
            integrations,
            status,
            created_by_kind,
            consecutive_failures: r.get::<_, i64>(8)?.clamp(0, u32::MAX as i64) as u32,
            last_success_at: opt_ts(r.get(9)?),
            created_at: ts(r.get(11)?),
            signing,
        },
        secret,
        previous_secret,
        failing_since: opt_ts(r.get(10)?),
        purpose,
    })
}

pub(super) fn load_subscription(
    tx: &Connection,
    id: &str,
    cipher: Option<&SecretCipher>,
) -> rusqlite::Result<Option<StoredSubscription>> {
    tx.prepare_cached(&format!(
        "SELECT {SUBSCRIPTION_COLUMNS} FROM subscriptions WHERE id = ?1"
    ))?
    .query_row([id], |r| subscription_from_row(r, cipher))
    .optional()
}

/// Checks that every stored secret opens with `cipher` (a clear error naming the
/// missing key otherwise), then seals again under the current key every secret that is
/// plain or sealed under another key, and every sealed stored response likewise.
/// Returns how many values were sealed again.
pub(super) fn reseal_all(tx: &Connection, cipher: Option<&SecretCipher>) -> Result<u64, CipherError> {
    let db = |e: rusqlite::Error| CipherError::Unreadable {
        path: "the database".into(),
        why: e.to_string(),
    };
    let rows: Vec<(i64, String, Option<String>)> = tx
        .prepare("SELECT seq, secret, previous_secret FROM subscriptions")
        .and_then(|mut s| {
            s.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                .collect::<Result<Vec<_>, _>>()
        })
        .map_err(db)?;
    let mut resealed = 0u64;
    for (seq, secret, previous) in rows {
        let current = StoredSecret::open(cipher, &secret)?;
        let previous = previous
            .map(|p| StoredSecret::open(cipher, &p).map(|s| (p, s)))
            .transpose()?;
        if StoredSecret::needs_reseal(cipher, &secret) {
            tx.execute(
                "UPDATE subscriptions SET secret = ?2 WHERE seq = ?1",
                params![seq, StoredSecret::seal(cipher, &current)?],
            )
            .map_err(db)?;
            resealed += 1;
        }
        if let Some((text, previous)) = previous
            && StoredSecret::needs_reseal(cipher, &text)
        {
            tx.execute(
                "UPDATE subscriptions SET previous_secret = ?2 WHERE seq = ?1",
                params![seq, StoredSecret::seal(cipher, &previous)?],
            )
            .map_err(db)?;
            resealed += 1;
        }
    }
    let keys: Vec<(String, Option<String>, Option<String>)> = tx
        .prepare(
            "SELECT id, signing_key, previous_signing_key FROM workspaces
             WHERE signing_key IS NOT NULL OR previous_signing_key IS NOT NULL",
        )
        .and_then(|mut s| {
            s.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                .collect::<Result<Vec<_>, _>>()
        })
        .map_err(db)?;
    for (id, key, previous) in keys {
        for (column, text) in [("signing_key", key), ("previous_signing_key", previous)] {
            let Some(text) = text else { continue };
            let opened = StoredSecret::open_signing_key(cipher, &text)?;
            if StoredSecret::needs_reseal(cipher, &text) {
                tx.execute(
                    &format!("UPDATE workspaces SET {column} = ?2 WHERE id = ?1"),
                    params![id, StoredSecret::seal_signing_key(cipher, &opened)?],
                )
                .map_err(db)?;
                resealed += 1;
            }
        }
    }
    let responses: Vec<(String, String, String)> = tx
        .prepare("SELECT scope, key, response FROM idempotency_keys WHERE response LIKE 'pwenc1.%'")
        .and_then(|mut s| {
            s.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                .collect::<Result<Vec<_>, _>>()
        })
        .map_err(db)?;
    for (scope, key, response) in responses {
        let Some(c) = cipher else {
            return Err(CipherError::NoCipher(
                crate::secret_box::key_id_of(&response).unwrap_or("?").to_owned(),
            ));
        };
        let plain = Zeroizing::new(c.open_text(&response)?);
        if StoredSecret::needs_reseal(cipher, &response) {
            tx.execute(
                "UPDATE idempotency_keys SET response = ?3 WHERE scope = ?1 AND key = ?2",
                params![scope, key, c.seal_text(&plain)?],
            )
            .map_err(db)?;
            resealed += 1;
        }
    }
    Ok(resealed)
}

/// One batch of the background re-encryption after a key rotation (see
/// [`crate::secret_box`]): seals again under the current key at most `batch`
/// subscriptions whose secret or previous secret is not sealed under it, and at most
/// `batch` sealed stored responses likewise. Returns how many values were sealed again;
/// the caller repeats until it returns 0. `secure_delete` is on for the batch, so the
/// replaced ciphertexts are zeroed in their pages.
pub(super) fn reseal_batch(tx: &Connection, cipher: &SecretCipher, batch: usize) -> Result<u64, CipherError> {
    let db = |e: rusqlite::Error| CipherError::Unreadable {
        path: "the database".into(),
        why: e.to_string(),
    };
    let prefix = format!("{}{}.", crate::secret_box::SEALED_PREFIX, cipher.current_key_id());
    let batch = i64::try_from(batch.clamp(1, 100_000)).unwrap_or(500);
    tx.execute_batch("PRAGMA secure_delete=ON").map_err(db)?;
    let rows: Vec<(i64, String, Option<String>)> = tx
        .prepare_cached(
            "SELECT seq, secret, previous_secret FROM subscriptions
             WHERE substr(secret, 1, length(?1)) <> ?1
                OR (previous_secret IS NOT NULL AND substr(previous_secret, 1, length(?1)) <> ?1)
             ORDER BY seq LIMIT ?2",
        )
        .and_then(|mut s| {
            s.query_map(params![prefix, batch], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                .collect::<Result<Vec<_>, _>>()
        })
        .map_err(db)?;
    let mut resealed = 0u64;
    let mut reseal = |text: &str| -> Result<Option<String>, CipherError> {
        if !StoredSecret::needs_reseal(Some(cipher), text) {
            return Ok(None);
        }
        resealed += 1;
        let secret = StoredSecret::open(Some(cipher), text)?;
        StoredSecret::seal(Some(cipher), &secret).map(Some)
    };
    for (seq, secret, previous) in rows {
        let secret = reseal(&secret)?;
        let previous = match previous {
            Some(p) => reseal(&p)?,
            None => None,
        };
        tx.execute(
            "UPDATE subscriptions SET secret = COALESCE(?2, secret),
                 previous_secret = COALESCE(?3, previous_secret) WHERE seq = ?1",
            params![seq, secret, previous],
        )
        .map_err(db)?;
    }
    let keys: Vec<(String, Option<String>, Option<String>)> = tx
        .prepare_cached(
            "SELECT id, signing_key, previous_signing_key FROM workspaces
             WHERE (signing_key IS NOT NULL AND substr(signing_key, 1, length(?1)) <> ?1)
                OR (previous_signing_key IS NOT NULL AND substr(previous_signing_key, 1, length(?1)) <> ?1)
             ORDER BY id LIMIT ?2",
        )
        .and_then(|mut s| {
            s.query_map(params![prefix, batch], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                .collect::<Result<Vec<_>, _>>()
        })
        .map_err(db)?;
    for (id, key, previous) in keys {
        let mut reseal_key = |text: Option<String>| -> Result<Option<String>, CipherError> {
            match text {
                Some(t) if StoredSecret::needs_reseal(Some(cipher), &t) => {
                    resealed += 1;
                    let key = StoredSecret::open_signing_key(Some(cipher), &t)?;
                    StoredSecret::seal_signing_key(Some(cipher), &key).map(Some)
                }
                _ => Ok(None),
            }
        };
        let key = reseal_key(key)?;
        let previous = reseal_key(previous)?;
        tx.execute(
            "UPDATE workspaces SET signing_key = COALESCE(?2, signing_key),
                 previous_signing_key = COALESCE(?3, previous_signing_key) WHERE id = ?1",
            params![id, key, previous],
        )
        .map_err(db)?;
    }
    let responses: Vec<(String, String, String)> = tx
        .prepare_cached(
            "SELECT scope, key, response FROM idempotency_keys
             WHERE substr(response, 1, 7) = 'pwenc1.' AND substr(response, 1, length(?1)) <> ?1 LIMIT ?2",
        )
        .and_then(|mut s| {
            s.query_map(params![prefix, batch], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                .collect::<Result<Vec<_>, _>>()
        })
        .map_err(db)?;
    for (scope, key, response) in responses {
        let plain = Zeroizing::new(cipher.open_text(&response)?);
        tx.execute(
            "UPDATE idempotency_keys SET response = ?3 WHERE scope = ?1 AND key = ?2",
            params![scope, key, cipher.seal_text(&plain)?],
        )
        .map_err(db)?;
        resealed += 1;
    }
    // Left on: the store's writer connection always runs with it (`schema.rs`).
    Ok(resealed)
}

/// The internal row number of a subscription, which deliveries refer to.
pub(super) fn sub_seq(tx: &Connection, id: &str) -> rusqlite::Result<Option<i64>> {
    tx.prepare_cached("SELECT seq FROM subscriptions WHERE id = ?1")?
        .query_row([id], |r| r.get(0))
        .optional()
}

pub(super) fn upsert_workspace(store: &SqliteStore, workspace: Workspace) -> BoxFuture<'_, StoreResult<()>> {
    store.write(move |tx| {
        tx.execute(UPSERT_WORKSPACE_SQL, params![workspace.id, workspace.name])?;
        Ok(())
    })
}

pub(super) fn workspace(store: &SqliteStore, id: String) -> BoxFuture<'_, StoreResult<Option<Workspace>>> {
    store.read(move |c| {
        c.prepare_cached("SELECT id, name FROM workspaces WHERE id = ?1")?
            .query_row([id], |r| {
                Ok(Workspace {
                    id: r.get(0)?,
                    name: r.get(1)?,
                })
            })
            .optional()
    })
}

pub(super) fn upsert_integration(
    store: &SqliteStore,
    workspace_id: String,
    i: Integration,
) -> BoxFuture<'_, StoreResult<()>> {
    store.write(move |tx| {
        tx.execute(
            "INSERT INTO integrations (workspace_id, id, name, provider_identifier, picture) VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT (workspace_id, id) DO UPDATE SET name = excluded.name,
               provider_identifier = excluded.provider_identifier, picture = excluded.picture",
            params![workspace_id, i.id, i.name, i.provider_identifier, i.picture],
        )?;
        Ok(())
    })
}

pub(super) fn integrations(
    store: &SqliteStore,
    workspace_id: String,
    ids: Vec<String>,
) -> BoxFuture<'_, StoreResult<Vec<Integration>>> {
    store.read(move |c| {
        let mut stmt = c.prepare_cached(
            "SELECT id, name, provider_identifier, picture FROM integrations WHERE workspace_id = ?1 AND id = ?2",
        )?;
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(i) = stmt
                .query_row(params![workspace_id, id], |r| {
                    Ok(Integration {
                        id: r.get(0)?,
                        name: r.get(1)?,
                        provider_identifier: r.get(2)?,
                        picture: r.get(3)?,
                    })
                })
                .optional()?
            {
                out.push(i);
            }
        }
        Ok(out)
    })
}

pub(super) fn insert_subscription(
    store: &SqliteStore,
    s: StoredSubscription,
    completion: Option<Completion>,
    limit: Option<u64>,
) -> BoxFuture<'_, StoreResult<bool>> {
    let cipher = store.cipher.clone();
    store.write(move |tx| {
        // One writer: the count and the insert cannot interleave with another insert.
        if let Some(limit) = limit {
            let count: i64 = tx
                .prepare_cached("SELECT count(*) FROM subscriptions WHERE workspace_id = ?1 AND purpose = ?2")?
                .query_row(params![&s.workspace_id, s.purpose.as_str()], |r| r.get(0))?;
            if u64::try_from(count).unwrap_or(0) >= limit {
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
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
            params![
                sub.id,
                s.workspace_id,
                sub.name,
                sub.url,
                serde_json::to_string(&sub.events).map_err(conversion)?,
                serde_json::to_string(&sub.integrations).map_err(conversion)?,
                reason,
                sub.created_by_kind.as_str(),
                sub.consecutive_failures,
                sub.last_success_at.map(|t| t.unix_millis()),
                s.failing_since.map(|t| t.unix_millis()),
                sub.created_at.unix_millis(),
                StoredSecret::seal(cipher.as_deref(), &s.secret).map_err(conversion)?,
                sub.signing.as_str(),
                s.purpose.as_str(),
            ],
        )?;
        if let Some(completion) = completion {
            super::idempotency::complete(tx, completion, &[])?;
        }
        Ok(true)
    })
}

pub(super) fn subscription(store: &SqliteStore, id: String) -> BoxFuture<'_, StoreResult<Option<StoredSubscription>>> {
    let cipher = store.cipher.clone();
    store.read(move |c| load_subscription(c, &id, cipher.as_deref()))
}

pub(super) fn list_subscriptions(
    store: &SqliteStore,
    workspace_id: String,
) -> BoxFuture<'_, StoreResult<Vec<StoredSubscription>>> {
    let cipher = store.cipher.clone();
    store.read(move |c| {
        let mut stmt = c.prepare_cached(&format!(
            "SELECT {SUBSCRIPTION_COLUMNS} FROM subscriptions WHERE workspace_id = ?1 ORDER BY seq"
        ))?;
        let rows = stmt.query_map([workspace_id], |r| subscription_from_row(r, cipher.as_deref()))?;
        rows.collect()
    })
}

pub(super) fn update_subscription(
    store: &SqliteStore,
    id: String,
    ch: SubscriptionChanges,
) -> BoxFuture<'_, StoreResult<bool>> {
    let cipher = store.cipher.clone();
    store.write_target(move |tx| {
        if load_subscription(tx, &id, cipher.as_deref())?.is_none() {
            return Ok(false);
        }
        if let Some(name) = ch.name {
            tx.execute("UPDATE subscriptions SET name = ?2 WHERE id = ?1", params![id, name])?;
        }
        if let Some(url) = ch.url {
            tx.execute("UPDATE subscriptions SET url = ?2 WHERE id = ?1", params![id, url])?;
        }
        if let Some(events) = ch.events {
            let json = serde_json::to_string(&events).map_err(conversion)?;
            tx.execute("UPDATE subscriptions SET events = ?2 WHERE id = ?1", params![id, json])?;
        }
        if let Some(integrations) = ch.integrations {
            let json = serde_json::to_string(&integrations).map_err(conversion)?;
            tx.execute(
                "UPDATE subscriptions SET integrations = ?2 WHERE id = ?1",
                params![id, json],
            )?;
        }
        if let Some(signing) = ch.signing {
            tx.execute(
                "UPDATE subscriptions SET signing = ?2 WHERE id = ?1",
                params![id, signing.as_str()],
            )?;
        }
        Ok(true)
    })
}

pub(super) fn delete_subscription(store: &SqliteStore, id: String) -> BoxFuture<'_, StoreResult<bool>> {
    store.write_target(move |tx| {
        let Some(seq) = sub_seq(tx, &id)? else { return Ok(false) };
        tx.execute("DELETE FROM subscriptions WHERE seq = ?1", [seq])?;
        // The key that created it, with the copy of its secret in the stored response.
        tx.execute("DELETE FROM idempotency_keys WHERE resource = ?1", [&id])?;
        tx.execute(
            "DELETE FROM attempts WHERE delivery_seq IN (SELECT seq FROM deliveries WHERE sub_seq = ?1)",
            [seq],
        )?;
        tx.execute("DELETE FROM deliveries WHERE sub_seq = ?1", [seq])?;
        Ok(true)
    })
}

pub(super) fn rotate_secret(
    store: &SqliteStore,
    id: String,
    new_secret: Secret,
    until: Timestamp,
    notice: NewNotice,
) -> BoxFuture<'_, StoreResult<bool>> {
    let cipher = store.cipher.clone();
    store.write_target(move |tx| {
        let n = tx.execute(
            "UPDATE subscriptions SET previous_secret = secret, previous_secret_until = ?3, secret = ?2 WHERE id = ?1",
            params![
                id,
                StoredSecret::seal(cipher.as_deref(), &new_secret).map_err(conversion)?,
                until.unix_millis()
            ],
        )?;
        if n > 0 {
            super::notices::insert(tx, &notice)?;
        }
        Ok(n > 0)
    })
}

/// The columns [`keys_from_row`] reads, in its order.
const KEY_COLUMNS: &str = "signing_key, signing_key_created_at, previous_signing_key, \
     previous_signing_key_created_at, previous_signing_key_until, key_set_id";

/// A workspace's key pair from the [`KEY_COLUMNS`] of a row; `None` without a key.
fn keys_from_row(r: &rusqlite::Row<'_>, cipher: Option<&SecretCipher>) -> rusqlite::Result<Option<WorkspaceKeys>> {
    let Some(current) = r.get::<_, Option<String>>(0)? else {
        return Ok(None);
    };
    let current = StoredSecret::open_signing_key(cipher, &current).map_err(conversion)?;
    let previous = match (
        r.get::<_, Option<String>>(2)?,
        r.get::<_, Option<i64>>(3)?,
        r.get::<_, Option<i64>>(4)?,
    ) {
        (Some(key), Some(created), Some(until)) => Some(PreviousKey {
            key: StoredSecret::open_signing_key(cipher, &key).map_err(conversion)?,
            created_at: ts(created),
            until: ts(until),
        }),
        _ => None,
    };
    Ok(Some(WorkspaceKeys {
        current,
        created_at: ts(r.get::<_, Option<i64>>(1)?.unwrap_or(0)),
        previous,
        key_set_id: r.get::<_, Option<String>>(5)?.unwrap_or_default(),
    }))
}

fn load_keys(
    c: &Connection,
    workspace_id: &str,
    cipher: Option<&SecretCipher>,
) -> rusqlite::Result<Option<Option<WorkspaceKeys>>> {
    c.prepare_cached(&format!("SELECT {KEY_COLUMNS} FROM workspaces WHERE id = ?1"))?
        .query_row([workspace_id], |r| keys_from_row(r, cipher))
        .optional()
}

pub(super) fn signing_keys(
    store: &SqliteStore,
    workspace_id: String,
) -> BoxFuture<'_, StoreResult<Option<WorkspaceKeys>>> {
    let cipher = store.cipher.clone();
    store.read(move |c| Ok(load_keys(c, &workspace_id, cipher.as_deref())?.flatten()))
}

/// The statement of [`key_set`].
pub(super) fn key_set_sql() -> String {
    format!("SELECT {KEY_COLUMNS} FROM workspaces WHERE key_set_id = ?1")
}

/// The key set published under `key_set_id`: one read of the unique index on the id.
pub(super) fn key_set(store: &SqliteStore, key_set_id: String) -> BoxFuture<'_, StoreResult<Option<WorkspaceKeys>>> {
    let cipher = store.cipher.clone();
    store.read(move |c| {
        Ok(c.prepare_cached(&key_set_sql())?
            .query_row([&key_set_id], |r| keys_from_row(r, cipher.as_deref()))
            .optional()?
            .flatten())
    })
}

pub(super) fn ensure_signing_key(
    store: &SqliteStore,
    workspace_id: String,
    key: crate::signer::WorkspaceKey,
    key_set_id: String,
    now: Timestamp,
) -> BoxFuture<'_, StoreResult<Option<WorkspaceKeys>>> {
    let cipher = store.cipher.clone();
    store.write_target(move |tx| {
        tx.execute(
            "UPDATE workspaces SET signing_key = ?2, signing_key_created_at = ?3, key_set_id = ?4
             WHERE id = ?1 AND signing_key IS NULL",
            params![
                workspace_id,
                StoredSecret::seal_signing_key(cipher.as_deref(), &key).map_err(conversion)?,
                now.unix_millis(),
                key_set_id
            ],
        )?;
        Ok(load_keys(tx, &workspace_id, cipher.as_deref())?.flatten())
    })
}

pub(super) fn rotate_signing_key(
    store: &SqliteStore,
    workspace_id: String,
    key: crate::signer::WorkspaceKey,
    now: Timestamp,
    until: Timestamp,
    notice: NewNotice,
) -> BoxFuture<'_, StoreResult<bool>> {
    let cipher = store.cipher.clone();
    store.write_target(move |tx| {
        let n = tx.execute(
            "UPDATE workspaces SET previous_signing_key = signing_key,
                 previous_signing_key_created_at = signing_key_created_at, previous_signing_key_until = ?4,
                 signing_key = ?2, signing_key_created_at = ?3
             WHERE id = ?1 AND signing_key IS NOT NULL",
            params![
                workspace_id,
                StoredSecret::seal_signing_key(cipher.as_deref(), &key).map_err(conversion)?,
                now.unix_millis(),
                until.unix_millis()
            ],
        )?;
        if n > 0 {
            super::notices::insert(tx, &notice)?;
        }
        Ok(n > 0)
    })
}
