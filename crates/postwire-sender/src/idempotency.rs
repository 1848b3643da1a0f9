//! Idempotency keys: a client's retry of a request it did not hear back from does
//! nothing twice.
//!
//! A request that carries a key (`Idempotency-Key` in the HTTP API) first *begins* it
//! ([`decide`] says what happens), then does its work; the transaction that commits the
//! work also stores the response under the key. So:
//! * the same key with the same request within 24 h returns the first response,
//!   without doing anything again, even if the process died between committing the work
//!   and answering;
//! * the same key with a different request is refused (`idempotency_key_reused`);
//! * a key whose first request is still running is refused
//!   (`idempotency_in_progress`). A first request whose process died before its work
//!   committed did nothing; its key is free again after [`IN_PROGRESS_LEASE_MS`].
//!
//! A request that fails (validation, a missing workspace) stores nothing and frees its
//! key, as Stripe does: its retry is judged afresh. Keys are scoped (per API token, or
//! the ingest token), so two clients never share one. Deleting a subscription frees the
//! key that created it (see [`Completion::created`]).

use sha2::{Digest, Sha256};

use crate::error::SenderError;

/// How long a finished key replays its response; an older one starts afresh.
pub const IDEMPOTENCY_WINDOW_MS: i64 = 24 * 3_600_000;
/// How long a key stays "in progress" without its work committing; after that a retry
/// may start it again (its first request's process is taken to have died).
pub const IN_PROGRESS_LEASE_MS: i64 = 30_000;
/// Longest key accepted.
pub const MAX_KEY_LEN: usize = 255;

/// A validated key with its scope and the fingerprint of the request it guards.
#[derive(Clone, PartialEq, Eq)]
pub struct IdempotencyKey {
    scope: String,
    key: String,
    request_hash: [u8; 32],
}

impl std::fmt::Debug for IdempotencyKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdempotencyKey")
            .field("scope", &self.scope)
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl IdempotencyKey {
    /// `key` (1 to 255 visible ASCII characters) in `scope`, for the request whose
    /// canonical bytes are `request` (e.g. method, path and body): the same key with
    /// other bytes is a different request.
    ///
    /// ```
    /// use postwire_sender::idempotency::IdempotencyKey;
    /// assert!(IdempotencyKey::new("tok_1", "order-42", b"POST /x {}").is_ok());
    /// let err = IdempotencyKey::new("tok_1", "bad key", b"").unwrap_err();
    /// assert_eq!(err.code().as_str(), "invalid_request");
    /// ```
    pub fn new(scope: &str, key: &str, request: &[u8]) -> Result<Self, SenderError> {
        if key.is_empty() || key.len() > MAX_KEY_LEN || !key.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(SenderError::invalid(format!(
                "`Idempotency-Key` must be 1 to {MAX_KEY_LEN} visible ASCII characters (no spaces)"
            )));
        }
        Ok(IdempotencyKey {
            scope: scope.to_owned(),
            key: key.to_owned(),
            request_hash: Sha256::digest(request).into(),
        })
    }

    /// Who the key belongs to.
    pub fn scope(&self) -> &str {
        &self.scope
    }

    /// The key as the client sent it.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// SHA-256 of the request's canonical bytes.
    pub fn request_hash(&self) -> &[u8; 32] {
        &self.request_hash
    }
}

/// A key as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredKey {
    /// SHA-256 of the request that began it.
    pub request_hash: Vec<u8>,
    /// When it began (ms).
    pub created_at_ms: i64,
    /// The stored response once its work committed; `None` while in progress.
    pub response: Option<String>,
    /// While in progress: when a retry may start it again (ms).
    pub lease_until_ms: i64,
}

/// What a request with a key does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Do the work; the key is now in progress until `lease_until_ms`.
    Start {
        /// The in-progress lease; the work's commit checks it is still its own.
        lease_until_ms: i64,
    },
    /// Answer with this stored response; do nothing.
    Replay(String),
    /// The key was used for another request.
    Reused,
    /// The key's first request is still running.
    InProgress,
}

/// The rule, given the key's stored row (if any): every backend calls it inside the
/// transaction that reads the row, and stores `Start`'s lease.
pub fn decide(stored: Option<&StoredKey>, key: &IdempotencyKey, now_ms: i64) -> Decision {
    let start = Decision::Start {
        lease_until_ms: now_ms + IN_PROGRESS_LEASE_MS,
    };
    let Some(row) = stored else { return start };
    if now_ms - row.created_at_ms >= IDEMPOTENCY_WINDOW_MS {
        return start; // expired: a new request
    }
    match &row.response {
        _ if row.request_hash != key.request_hash => Decision::Reused,
        Some(response) => Decision::Replay(response.clone()),
        None if now_ms < row.lease_until_ms => Decision::InProgress,
        None => start, // its first request died before committing anything
    }
}

/// Makes a stored response from the delivery counts an enqueue returns.
pub type RenderFromCounts = Box<dyn FnOnce(&[usize]) -> String + Send>;

/// The stored response of a request whose work a transaction commits with its key.
pub enum Response {
    /// Known before the work.
    Ready(String),
    /// Made from the delivery counts an enqueue returns.
    FromCounts(RenderFromCounts),
}

impl std::fmt::Debug for Response {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Response::Ready(_) => "Response::Ready(…)",
            Response::FromCounts(_) => "Response::FromCounts(…)",
        })
    }
}

/// A key to mark done, with its response, in the transaction of the work it guards.
#[derive(Debug)]
pub struct Completion {
    /// The key.
    pub key: IdempotencyKey,
    /// The lease [`decide`] gave: the commit fails if the key was taken over since.
    pub lease_until_ms: i64,
    /// The response to store.
    pub response: Response,
    /// The subscription the request created, if it did: deleting it frees the key (the
    /// stored response, and the copy of the secret in it, go with the subscription), so
    /// a retry after a deletion creates afresh instead of replaying a subscription that
    /// no longer exists.
    pub created: Option<String>,
}

/// A result, and whether it was done now or replayed from an earlier request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Idempotent<T> {
    /// Done by this call.
    Fresh(T),
    /// The stored result of an earlier call with the same key and request.
    Replayed(T),
}

impl<T> Idempotent<T> {
    /// The result either way.
    pub fn into_inner(self) -> T {
        match self {
            Idempotent::Fresh(t) | Idempotent::Replayed(t) => t,
        }
    }

    /// Whether it was replayed.
    pub fn is_replay(&self) -> bool {
        matches!(self, Idempotent::Replayed(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(body: &[u8]) -> IdempotencyKey {
        IdempotencyKey::new("tok", "k1", body).unwrap()
    }

    fn row(body: &[u8], created: i64, response: Option<&str>) -> StoredKey {
        StoredKey {
            request_hash: Sha256::digest(body).to_vec(),
            created_at_ms: created,
            response: response.map(str::to_owned),
            lease_until_ms: created + IN_PROGRESS_LEASE_MS,
        }
    }

    #[test]
    fn the_rule_over_every_stored_state() {
        let t = 1_000_000;
        let start = Decision::Start {
            lease_until_ms: t + IN_PROGRESS_LEASE_MS,
        };
        assert_eq!(decide(None, &key(b"a"), t), start);
        let done = row(b"a", t - 1_000, Some("r"));
        assert_eq!(decide(Some(&done), &key(b"a"), t), Decision::Replay("r".into()));
        assert_eq!(decide(Some(&done), &key(b"b"), t), Decision::Reused);
        let running = row(b"a", t - 1_000, None);
        assert_eq!(decide(Some(&running), &key(b"a"), t), Decision::InProgress);
        assert_eq!(decide(Some(&running), &key(b"b"), t), Decision::Reused);
        // A first request that died: free once its lease ends.
        let died = row(b"a", t - IN_PROGRESS_LEASE_MS, None);
        assert_eq!(decide(Some(&died), &key(b"a"), t), start);
        // After 24 h a key is new again, whatever it guarded.
        let old = row(b"b", t - IDEMPOTENCY_WINDOW_MS, Some("r"));
        assert_eq!(decide(Some(&old), &key(b"a"), t), start);
        let young = row(b"a", t - IDEMPOTENCY_WINDOW_MS + 1, Some("r"));
        assert_eq!(decide(Some(&young), &key(b"a"), t), Decision::Replay("r".into()));
    }

    #[test]
    fn keys_are_visible_ascii_up_to_255() {
        assert!(IdempotencyKey::new("s", &"k".repeat(255), b"").is_ok());
        for bad in ["", " ", "a b", "é", "a\u{0}", &"k".repeat(256)] {
            assert!(IdempotencyKey::new("s", bad, b"").is_err(), "{bad:?}");
        }
    }
}
