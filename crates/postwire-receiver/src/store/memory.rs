//! [`MemoryStore`]: claims in this process's memory. Right for one process only: two
//! processes, two containers or two serverless instances each have their own, so each
//! would run the handler of the same delivery. Use a shared store (Redis, PostgreSQL) there.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use postwire_core::{Clock, SystemClock};

use super::{Claim, ClaimToken, Store, StoreError, millis};

/// The most ids a [`MemoryStore`] holds by default; beyond it the one that expires soonest
/// is dropped.
pub const DEFAULT_MEMORY_CAPACITY: usize = 100_000;

/// The once-store in this process's memory (see the [module docs](self)). Expired ids are
/// swept on every claim; at most `capacity` ids are held.
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

#[derive(Default)]
struct Entries {
    /// id → (the claim's token, `None` once done; when it is forgotten, ms; its key in `by_expiry`).
    by_id: HashMap<String, Entry>,
    /// (until, sequence) → id: the soonest to expire first.
    by_expiry: BTreeMap<(i64, u64), String>,
    next_seq: u64,
}

struct Entry {
    token: Option<String>,
    until: i64,
    seq: u64,
}

impl Entries {
    fn put(&mut self, id: &str, token: Option<String>, until: i64, capacity: usize) {
        self.remove(id);
        let seq = self.next_seq;
        self.next_seq += 1;
        self.by_expiry.insert((until, seq), id.to_owned());
        self.by_id.insert(id.to_owned(), Entry { token, until, seq });
        while self.by_id.len() > capacity {
            match self.by_expiry.pop_first() {
                Some((_, old)) => {
                    self.by_id.remove(&old);
                }
                None => break,
            }
        }
    }

    fn remove(&mut self, id: &str) {
        if let Some(old) = self.by_id.remove(id) {
            self.by_expiry.remove(&(old.until, old.seq));
        }
    }

    fn sweep(&mut self, now: i64) {
        while let Some(entry) = self.by_expiry.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let id = entry.remove();
            self.by_id.remove(&id);
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

    /// Holds at most `capacity` ids (at least 1); beyond it the one that expires soonest is dropped.
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

    fn claim_now(&self, id: &str, token: &ClaimToken, lease: Duration) -> Claim {
        let now = self.now();
        let mut entries = self.lock();
        entries.sweep(now);
        if let Some(entry) = entries.by_id.get(id)
            && entry.until > now
        {
            return match entry.token {
                None => Claim::Done,
                Some(_) => Claim::InFlight {
                    retry_after: Duration::from_millis(u64::try_from(entry.until - now).unwrap_or(1).max(1)),
                },
            };
        }
        let until = now.saturating_add(i64::try_from(millis(lease)).unwrap_or(i64::MAX));
        entries.put(id, Some(token.as_str().to_owned()), until, self.capacity);
        Claim::Claimed
    }

    fn complete_now(&self, id: &str, token: &ClaimToken, keep: Duration) -> bool {
        let now = self.now();
        let mut entries = self.lock();
        if let Some(entry) = entries.by_id.get(id)
            && entry.until > now
            && entry.token.as_deref() != Some(token.as_str())
        {
            return false;
        }
        let until = now.saturating_add(i64::try_from(millis(keep)).unwrap_or(i64::MAX));
        entries.put(id, None, until, self.capacity);
        true
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
}

impl Store for MemoryStore {
    async fn claim(&self, id: &str, token: &ClaimToken, lease: Duration) -> Result<Claim, StoreError> {
        Ok(self.claim_now(id, token, lease))
    }

    async fn complete(&self, id: &str, token: &ClaimToken, keep: Duration) -> Result<bool, StoreError> {
        Ok(self.complete_now(id, token, keep))
    }

    async fn release(&self, id: &str, token: &ClaimToken) -> Result<bool, StoreError> {
        Ok(self.release_now(id, token))
    }
}
