//! [`MemoryStore`]: claims in this process's memory. Right for one process only: two
//! processes, two containers or two serverless instances each have their own, so each
//! would run the handler of the same delivery. Use a shared store (Redis, PostgreSQL) there.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use postwire_core::{Clock, SystemClock};

use super::{Claim, ClaimToken, Store, StoreError, millis};

/// The most ids a [`MemoryStore`] holds by default. Beyond it the oldest done mark is
/// dropped; a live claim never is (a store full of live claims answers [`StoreError::Full`]).
pub const DEFAULT_MEMORY_CAPACITY: usize = 100_000;

/// The once-store in this process's memory (see the [module docs](self)). Expired ids are
/// swept on every claim; at most `capacity` ids are held. To make room for a new id the
/// oldest done mark is dropped (that id may then run again if a late copy arrives); a live
/// claim is never dropped, since its copy would run twice: when only live claims fill the
/// store, a new claim fails with [`StoreError::Full`] (answered 503, the sender retries).
#[derive(Clone)]
pub struct MemoryStore {
    inner: Arc<Mutex<Entries>>,
    clock: Arc<dyn Clock>,
    capacity: usize,
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore")
            .field("len", &self.len())
            .field("capacity", &self.capacity)
            .finish_non_exhaustive()
    }
}

/// The key of an entry in an expiry index: (when it is forgotten, ms; a sequence number).
type ExpiryKey = (i64, u64);

#[derive(Default)]
struct Entries {
    /// id → its claim's token (`None` once done), when it is forgotten and its index key.
    by_id: HashMap<String, Entry>,
    /// The claims' ids, the soonest to expire first.
    claims: BTreeMap<ExpiryKey, String>,
    /// The done marks' ids, the soonest to expire (the oldest) first: dropped first when full.
    done: BTreeMap<ExpiryKey, String>,
    next_seq: u64,
}

struct Entry {
    token: Option<String>,
    until: i64,
    seq: u64,
}

impl Entry {
    fn key(&self) -> ExpiryKey {
        (self.until, self.seq)
    }
}

impl Entries {
    fn index(&mut self, token_is_some: bool) -> &mut BTreeMap<ExpiryKey, String> {
        if token_is_some {
            &mut self.claims
        } else {
            &mut self.done
        }
    }

    /// Sets `id`'s entry. A new id needs room: the oldest done mark is dropped for it, and
    /// when there is none (only live claims), nothing changes and the store is full.
    fn put(&mut self, id: &str, token: Option<String>, until: i64, capacity: usize) -> Result<(), StoreError> {
        if !self.remove(id) && self.by_id.len() >= capacity {
            match self.done.pop_first() {
                Some((_, oldest)) => {
                    self.by_id.remove(&oldest);
                }
                None => return Err(StoreError::Full(capacity)),
            }
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.index(token.is_some()).insert((until, seq), id.to_owned());
        self.by_id.insert(id.to_owned(), Entry { token, until, seq });
        Ok(())
    }

    /// Forgets `id`; whether it was held.
    fn remove(&mut self, id: &str) -> bool {
        match self.by_id.remove(id) {
            Some(old) => {
                let key = old.key();
                self.index(old.token.is_some()).remove(&key);
                true
            }
            None => false,
        }
    }

    fn sweep(&mut self, now: i64) {
        for index in [&mut self.claims, &mut self.done] {
            while let Some(entry) = index.first_entry() {
                if entry.key().0 > now {
                    break;
                }
                let id = entry.remove();
                self.by_id.remove(&id);
            }
        }
    }
}

impl Default for MemoryStore {
    fn default() -> Self {
        MemoryStore::new()
    }
}

impl MemoryStore {
    /// An empty store on the system clock, holding at most [`DEFAULT_MEMORY_CAPACITY`] ids.
    pub fn new() -> Self {
        MemoryStore::with_clock(Arc::new(SystemClock))
    }

    /// An empty store on `clock` (a `postwire_core::ManualClock` in tests).
    pub fn with_clock(clock: Arc<dyn Clock>) -> Self {
        MemoryStore {
            inner: Arc::new(Mutex::new(Entries::default())),
            clock,
            capacity: DEFAULT_MEMORY_CAPACITY,
        }
    }

    /// Holds at most `capacity` ids (default [`DEFAULT_MEMORY_CAPACITY`]; at least 1). To make
    /// room the oldest done mark is dropped, never a live claim.
    pub fn with_capacity(mut self, capacity: usize) -> Self {
        self.capacity = capacity.max(1);
        self
    }

    /// How many ids are held (claimed or done; expired ones not yet swept included).
    pub fn len(&self) -> usize {
        self.lock().by_id.len()
    }

    /// Whether no id is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        // A panic while holding the lock cannot leave the maps half-updated in a way that
        // breaks the protocol's safety (at worst an id is forgotten early), so go on.
        self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn now(&self) -> i64 {
        self.clock.now().unix_millis()
    }

    fn claim_now(&self, id: &str, token: &ClaimToken, lease: Duration) -> Result<Claim, StoreError> {
        let now = self.now();
        let mut entries = self.lock();
        entries.sweep(now);
        if let Some(entry) = entries.by_id.get(id)
            && entry.until > now
        {
            return Ok(match entry.token {
                None => Claim::Done,
                Some(_) => Claim::InFlight {
                    retry_after: Duration::from_millis(u64::try_from(entry.until - now).unwrap_or(1).max(1)),
                },
            });
        }
        let until = now.saturating_add(i64::try_from(millis(lease)).unwrap_or(i64::MAX));
        entries.put(id, Some(token.as_str().to_owned()), until, self.capacity)?;
        Ok(Claim::Claimed)
    }

    fn complete_now(&self, id: &str, token: &ClaimToken, keep: Duration) -> Result<bool, StoreError> {
        let now = self.now();
        let mut entries = self.lock();
        if let Some(entry) = entries.by_id.get(id)
            && entry.until > now
            && entry.token.as_deref() != Some(token.as_str())
        {
            return Ok(false);
        }
        let until = now.saturating_add(i64::try_from(millis(keep)).unwrap_or(i64::MAX));
        entries.put(id, None, until, self.capacity)?;
        Ok(true)
    }

    fn release_now(&self, id: &str, token: &ClaimToken) -> bool {
        let mut entries = self.lock();
        match entries.by_id.get(id) {
            Some(entry) if entry.token.as_deref() == Some(token.as_str()) => {
                entries.remove(id);
                true
            }
            _ => false,
        }
    }

    fn renew_now(&self, id: &str, token: &ClaimToken, lease: Duration) -> bool {
        let now = self.now();
        let mut entries = self.lock();
        match entries.by_id.get(id) {
            Some(entry) if entry.token.as_deref() == Some(token.as_str()) => {
                let until = now.saturating_add(i64::try_from(millis(lease)).unwrap_or(i64::MAX));
                // The id is held already: putting it again takes no room, so it cannot fail.
                entries
                    .put(id, Some(token.as_str().to_owned()), until, self.capacity)
                    .is_ok()
            }
            _ => false,
        }
    }
}

impl Store for MemoryStore {
    async fn claim(&self, id: &str, token: &ClaimToken, lease: Duration) -> Result<Claim, StoreError> {
        self.claim_now(id, token, lease)
    }

    async fn complete(&self, id: &str, token: &ClaimToken, keep: Duration) -> Result<bool, StoreError> {
        self.complete_now(id, token, keep)
    }

    async fn release(&self, id: &str, token: &ClaimToken) -> Result<bool, StoreError> {
        Ok(self.release_now(id, token))
    }

    async fn renew(&self, id: &str, token: &ClaimToken, lease: Duration) -> Result<bool, StoreError> {
        Ok(self.renew_now(id, token, lease))
    }
}
