//! Where and how to send each subscription's deliveries, cached between claims.
//!
//! Claiming needs, per subscription, its public id, its URL and a [`Signer`] with the
//! secrets that sign now. Building a signer parses the stored secrets and prepares their
//! HMAC keys, so the cache keeps it between claims. An entry is dropped when the
//! subscription's URL or secrets change (the store's writes call [`TargetCache::clear`]),
//! and reloaded when the old secret's dual-signing window ends.

use std::collections::HashMap;
use std::sync::Arc;

use postwire_core::{Signer, Timestamp};
use rusqlite::{Connection, OptionalExtension};

use super::conversion;
use crate::secret_box::{SecretCipher, StoredSecret};

/// A subscription's delivery target.
#[derive(Debug)]
pub(super) struct Target {
    /// The subscription's public id.
    pub(super) id: String,
    /// Its endpoint.
    pub(super) url: String,
    /// Signs with the current secret, and the previous one while its window is open.
    pub(super) signer: Arc<Signer>,
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
type TargetRow = (String, String, String, Option<String>, Option<i64>);

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
                "SELECT id, url, secret, previous_secret, previous_secret_until FROM subscriptions WHERE seq = ?1",
            )?
            .query_row([sub_seq], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
            })
            .optional()?;
        let Some((id, url, secret, previous, until)) = row else {
            self.entries.remove(&sub_seq);
            return Ok(None);
        };
        let cipher = self.cipher.as_deref();
        let mut secrets = vec![StoredSecret::open(cipher, &secret).map_err(conversion)?];
        let mut reload_at = None;
        if let (Some(previous), Some(until)) = (previous, until)
            && until > now_ms
        {
            secrets.push(StoredSecret::open(cipher, &previous).map_err(conversion)?);
            reload_at = Some(until);
        }
        let target = Arc::new(Target {
            id,
            url,
            signer: Arc::new(Signer::with_secrets(secrets).map_err(conversion)?),
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
