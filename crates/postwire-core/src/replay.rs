//! De-duplication by `webhook-id`: the receiver's defence against repeats.
//!
//! Delivery is at least once, and a retried event keeps its id while its timestamp and
//! signature change, so the 5-minute timestamp tolerance does not catch retries: only
//! remembering ids does. Remember them for the sender's whole retry span (about 23 hours),
//! hence [`DEFAULT_REPLAY_TTL_SECS`] of 25 hours.
//!
//! Record an id as processed only once the event was handled: call
//! [`ReplayGuard::check_and_record`] first, and [`ReplayGuard::forget`] if handling then
//! fails, so the sender's retry is not mistaken for a duplicate.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use crate::UnixTime;

/// How long ids are remembered by default: the sender's retry span (22 h 43 min) plus margin.
pub const DEFAULT_REPLAY_TTL_SECS: u64 = 25 * 3600;
/// How many ids [`MemoryReplayGuard`] holds by default.
pub const DEFAULT_REPLAY_CAPACITY: usize = 100_000;

/// Whether an id was seen before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// First time: handle the event.
    Fresh,
    /// Seen within the TTL: acknowledge it, do not handle it again.
    Duplicate,
}

/// A store of recently processed `webhook-id`s.
pub trait ReplayGuard {
    /// Records `id` at time `now`, and says whether it was already there.
    fn check_and_record(&self, id: &str, now: UnixTime) -> Seen;
    /// Forgets `id`, so a retry of it is [`Seen::Fresh`] again.
    fn forget(&self, id: &str);
}

/// An in-memory [`ReplayGuard`] with bounded memory: at most `capacity` ids, each kept for
/// `ttl`. When full, the oldest id is evicted early (a repeat of it would then pass, so
/// size the capacity for the TTL's worth of traffic).
///
/// ```
/// use postwire_core::{MemoryReplayGuard, ReplayGuard, Seen, UnixTime};
/// let guard = MemoryReplayGuard::new(1000, 3600);
/// let t = UnixTime::from_secs(1_700_000_000);
/// assert_eq!(guard.check_and_record("msg_1", t), Seen::Fresh);
/// assert_eq!(guard.check_and_record("msg_1", t), Seen::Duplicate);
/// assert_eq!(guard.check_and_record("msg_1", UnixTime::from_secs(t.as_secs() + 3601)), Seen::Fresh);
/// ```
#[derive(Debug)]
pub struct MemoryReplayGuard {
    capacity: usize,
    ttl_secs: i64,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// id → the time it expires.
    expires: HashMap<Box<str>, i64>,
    /// Ids in the order recorded; with one TTL for all, also the order they expire.
    order: VecDeque<(Box<str>, i64)>,
}

impl Default for MemoryReplayGuard {
    fn default() -> Self {
        MemoryReplayGuard::new(DEFAULT_REPLAY_CAPACITY, DEFAULT_REPLAY_TTL_SECS)
    }
}

impl MemoryReplayGuard {
    /// A guard holding at most `capacity` ids (at least 1) for `ttl_secs` seconds each.
    pub fn new(capacity: usize, ttl_secs: u64) -> Self {
        MemoryReplayGuard {
            capacity: capacity.max(1),
            ttl_secs: i64::try_from(ttl_secs).unwrap_or(i64::MAX),
            state: Mutex::new(State::default()),
        }
    }

    /// How many ids are held now.
    pub fn len(&self) -> usize {
        self.lock().expires.len()
    }

    /// Whether no id is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic elsewhere cannot leave the maps inconsistent in a way that matters here.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl State {
    /// Drops expired ids, and queue entries that `forget` or a re-record made stale.
    fn evict(&mut self, now: i64, capacity: usize) {
        while let Some((id, expiry)) = self.order.front() {
            let current = self.expires.get(id).copied();
            let stale = current != Some(*expiry);
            if stale || *expiry <= now || self.expires.len() > capacity {
                if !stale {
                    self.expires.remove(id);
                }
                self.order.pop_front();
            } else {
                break;
            }
        }
    }
}

impl ReplayGuard for MemoryReplayGuard {
    fn check_and_record(&self, id: &str, now: UnixTime) -> Seen {
        let now = now.as_secs();
        let mut st = self.lock();
        st.evict(now, self.capacity);
        match st.expires.get(id) {
            Some(&expiry) if expiry > now => Seen::Duplicate,
            _ => {
                let expiry = now.saturating_add(self.ttl_secs);
                st.expires.insert(id.into(), expiry);
                st.order.push_back((id.into(), expiry));
                st.evict(now, self.capacity);
                Seen::Fresh
            }
        }
    }

    fn forget(&self, id: &str) {
        self.lock().expires.remove(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_stays_bounded_by_capacity() {
        let g = MemoryReplayGuard::new(100, 3600);
        for i in 0..10_000 {
            g.check_and_record(&format!("msg_{i}"), UnixTime::from_secs(0));
        }
        assert_eq!(g.len(), 100);
        assert_eq!(g.check_and_record("msg_9999", UnixTime::from_secs(0)), Seen::Duplicate);
        assert_eq!(g.check_and_record("msg_0", UnixTime::from_secs(0)), Seen::Fresh);
    }

    #[test]
    fn forget_lets_a_retry_through() {
        let g = MemoryReplayGuard::default();
        let t = UnixTime::from_secs(10);
        assert_eq!(g.check_and_record("a", t), Seen::Fresh);
        g.forget("a");
        assert_eq!(g.check_and_record("a", t), Seen::Fresh);
        assert_eq!(g.check_and_record("a", t), Seen::Duplicate);
        assert_eq!(g.len(), 1);
    }

    #[test]
    fn default_ttl_covers_the_retry_span() {
        let g = MemoryReplayGuard::default();
        g.check_and_record("a", UnixTime::from_secs(0));
        // The last retry comes 22 h 43 min after the first attempt.
        let last_retry = (30 + 120 + 600 + 1800 + 3600 + 3 * 3600 + 6 * 3600 + 12 * 3600) as i64;
        assert_eq!(
            g.check_and_record("a", UnixTime::from_secs(last_retry)),
            Seen::Duplicate
        );
    }
}
