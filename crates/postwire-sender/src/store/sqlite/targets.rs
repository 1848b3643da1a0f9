//! Where and how to send each subscription's deliveries, cached between claims.
//!
//! Claiming needs, per subscription, its public id, its URL and a [`DeliverySigner`] with the
//! secrets and keys that sign now ([`crate::signing::signer_at`] decides which). Building
//! a signer parses the stored secrets and keys and prepares them, so the cache keeps it
//! between claims. An entry is dropped when the subscription's URL, secrets or signing
//! choice, or its workspace's signing keys, change (the store's writes call
//! [`TargetCache::clear`]), and reloaded when a dual-signing window ends.

use std::collections::HashMap;
use std::sync::Arc;

use postwire_core::{SigningMode, Timestamp};
use rusqlite::{Connection, OptionalExtension};

use super::{conversion, ts};
use crate::secret_box::{SecretCipher, StoredSecret};
use crate::signer::DeliverySigner;
use crate::signing::{SigningMaterial, signer_at};

/// A subscription's delivery target.
#[derive(Debug)]
pub(super) struct Target {
    /// The subscription's public id.
    pub(super) id: String,
    /// Its endpoint.
    pub(super) url: String,
    /// Signs as the subscription's `signing` choice says, with the previous secret or key
    /// while its window is open.
    pub(super) signer: Arc<DeliverySigner>,
}

struct Cached {
    target: Arc<Target>,
    /// Load again at or after this time (ms): the end of a rotation's dual-signing window.
    reload_at: Option<i64>,
}

/// Targets by subscription row number. Bounded by the number of subscriptions.
pub(super) struct TargetCache {
    entries: HashMap<i64, Cached>,
    /// Opens the stored secrets.
    cipher: Option<Arc<SecretCipher>>,
}

/// The columns [`TargetCache::get`] reads.
struct TargetRow {
    id: String,
    url: String,
    secret: String,
    previous_secret: Option<String>,
    previous_secret_until: Option<i64>,
    signing: String,
    key: Option<String>,
    previous_key: Option<String>,
    previous_key_until: Option<i64>,
}

impl TargetCache {
    /// An empty cache whose secrets open with `cipher`.
    pub(super) fn new(cipher: Option<Arc<SecretCipher>>) -> TargetCache {
        TargetCache {
            entries: HashMap::new(),
            cipher,
        }
    }

    /// The target of subscription row `sub_seq` at `now`; `None` when it was deleted.
    pub(super) fn get(
        &mut self,
        conn: &Connection,
        sub_seq: i64,
        now: Timestamp,
    ) -> rusqlite::Result<Option<Arc<Target>>> {
        let now_ms = now.unix_millis();
        if let Some(c) = self.entries.get(&sub_seq)
            && c.reload_at.is_none_or(|at| now_ms < at)
        {
            return Ok(Some(c.target.clone()));
        }
        let row: Option<TargetRow> = conn
            .prepare_cached(
                "SELECT s.id, s.url, s.secret, s.previous_secret, s.previous_secret_until, s.signing,
                     w.signing_key, w.previous_signing_key, w.previous_signing_key_until
                 FROM subscriptions s LEFT JOIN workspaces w ON w.id = s.workspace_id WHERE s.seq = ?1",
            )?
            .query_row([sub_seq], |r| {
                Ok(TargetRow {
                    id: r.get(0)?,
                    url: r.get(1)?,
                    secret: r.get(2)?,
                    previous_secret: r.get(3)?,
                    previous_secret_until: r.get(4)?,
                    signing: r.get(5)?,
                    key: r.get(6)?,
                    previous_key: r.get(7)?,
                    previous_key_until: r.get(8)?,
                })
            })
            .optional()?;
        let Some(row) = row else {
            self.entries.remove(&sub_seq);
            return Ok(None);
        };
        let cipher = self.cipher.as_deref();
        let mode: SigningMode = row.signing.parse().map_err(conversion)?;
        let open_secret = |text: &str| StoredSecret::open(cipher, text).map_err(conversion);
        let open_key = |text: &str| StoredSecret::open_signing_key(cipher, text).map_err(conversion);
        let previous_secret = match (&row.previous_secret, row.previous_secret_until) {
            (Some(text), Some(until)) if until > now_ms => Some((open_secret(text)?, ts(until))),
            _ => None,
        };
        // Keys are opened only for subscriptions that sign with them.
        let (key, previous_key) = if mode.asymmetric() {
            let key = row.key.as_deref().map(open_key).transpose()?;
            let previous = match (&row.previous_key, row.previous_key_until) {
                (Some(text), Some(until)) if until > now_ms => Some((open_key(text)?, ts(until))),
                _ => None,
            };
            (key, previous)
        } else {
            (None, None)
        };
        let material = SigningMaterial {
            mode,
            secret: open_secret(&row.secret)?,
            previous_secret,
            key,
            previous_key,
        };
        let (signer, reload_at) = signer_at(material, now).map_err(conversion)?;
        let reload_at = reload_at.map(|t| t.unix_millis());
        let target = Arc::new(Target {
            id: row.id,
            url: row.url,
            signer: Arc::new(signer),
        });
        self.entries.insert(
            sub_seq,
            Cached {
                target: target.clone(),
                reload_at,
            },
        );
        Ok(Some(target))
    }

    /// Forgets every entry: a subscription's URL or secrets changed, or it was deleted.
    pub(super) fn clear(&mut self) {
        self.entries.clear();
    }
}
