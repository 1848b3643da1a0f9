//! The once-store: where the claims and done marks of `webhook-id`s live, shared by every
//! process that receives the same webhooks.
//!
//! The protocol (the same as the npm package's `postwire/once`, so Rust and Node receivers
//! can share one store):
//! 1. [`Store::claim`] the id with a fresh [`ClaimToken`] and a lease: the store answers
//!    [`Claim::Claimed`] (run the handler), [`Claim::Done`] (already handled) or
//!    [`Claim::InFlight`] (another copy holds a live lease);
//! 2. the handler succeeded: [`Store::complete`] marks the id done for `keep`;
//! 3. the handler failed: [`Store::release`] forgets the claim, so the sender's retry runs it;
//! 4. while the handler runs, [`Store::renew`] extends the lease, so a slow handler keeps
//!    its claim.
//!
//! `complete`, `release` and `renew` act only while the id holds the caller's token (or,
//! for `complete`, its lease has run out and nobody took it over), so a copy whose lease
//! expired cannot undo the claim another copy took over. A claim that is neither completed
//! nor released (the process died) is no longer renewed and expires with its lease: at
//! least once across a crash, once otherwise.
//!
//! No store drops a live claim to make room: a store that is full of live claims answers
//! [`StoreError::Full`], and the delivery is answered 503 (the handler is not run).

use std::fmt::Write as _;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

pub mod memory;
#[cfg(feature = "postgres")]
pub mod postgres;
#[cfg(feature = "redis")]
pub mod redis;

/// What a claim found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// The id is now this copy's for the lease: run the handler.
    Claimed,
    /// The id was handled already: do not run the handler again.
    Done,
    /// Another copy holds a live claim; its lease ends in `retry_after` (at least 1 ms).
    InFlight {
        /// How long until the other copy's lease runs out.
        retry_after: Duration,
    },
}

/// A claim's random token: 128 bits, as 32 lower-case hex digits. Unique per claim so
/// that only its holder can complete or release it; it is not a secret.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ClaimToken(String);

impl ClaimToken {
    /// A new token from the operating system's random source (or, should that fail, from
    /// the clock, the process id and a counter: still unique, which is all a token needs).
    pub fn generate() -> Self {
        let mut bytes = [0u8; 16];
        if getrandom::fill(&mut bytes).is_err() {
            static COUNTER: AtomicU64 = AtomicU64::new(0);
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(0);
            let count = COUNTER.fetch_add(1, Ordering::Relaxed);
            let mixed = (u128::from(nanos) << 64) | (u128::from(std::process::id()) << 32) | u128::from(count as u32);
            bytes = mixed.to_le_bytes();
        }
        let mut hex = String::with_capacity(32);
        for b in bytes {
            let _ = write!(hex, "{b:02x}");
        }
        ClaimToken(hex)
    }

    /// A token with a value of your choosing (tests, or a store that wraps another).
    pub fn from_string(value: String) -> Self {
        ClaimToken(value)
    }

    /// The token as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A stable, machine-readable code for a [`StoreError`]: its [`as_str`](Self::as_str)
/// form never changes between releases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StoreErrorCode {
    /// The store could not be reached or refused the command (`store_unavailable`).
    Unavailable,
    /// The store did not answer in time (`store_timeout`).
    Timeout,
    /// The store answered something this protocol does not expect (`store_protocol`).
    Protocol,
    /// The store is full of live claims and takes no new one until some end (`store_full`).
    Full,
}

impl StoreErrorCode {
    /// The stable string form, e.g. `"store_unavailable"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            StoreErrorCode::Unavailable => "store_unavailable",
            StoreErrorCode::Timeout => "store_timeout",
            StoreErrorCode::Protocol => "store_protocol",
            StoreErrorCode::Full => "store_full",
        }
    }
}

impl std::fmt::Display for StoreErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A store call that failed. The delivery is then answered 503 and its handler not run.
/// Messages hold the driver's error text, never a password or a connection string.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The store could not be reached or refused the command.
    #[error("the idempotency store is unavailable: {0}")]
    Unavailable(String),
    /// The store did not answer within the layer's `store_timeout`.
    #[error("the idempotency store did not answer within {} ms", .0.as_millis())]
    Timeout(Duration),
    /// The store answered something the protocol does not expect.
    #[error("the idempotency store answered unexpectedly: {0}")]
    Protocol(String),
    /// The store holds its capacity in live claims: it takes no new id until one ends
    /// (a live claim is never dropped to make room).
    #[error("the idempotency store is full: its {0} ids are all live claims")]
    Full(usize),
}

impl StoreError {
    /// The error's stable code.
    pub fn code(&self) -> StoreErrorCode {
        match self {
            StoreError::Unavailable(_) => StoreErrorCode::Unavailable,
            StoreError::Timeout(_) => StoreErrorCode::Timeout,
            StoreError::Protocol(_) => StoreErrorCode::Protocol,
            StoreError::Full(_) => StoreErrorCode::Full,
        }
    }

    /// [`StoreError::Unavailable`] with the error's message and its sources'.
    pub fn unavailable(err: &(dyn std::error::Error + 'static)) -> Self {
        let mut message = err.to_string();
        let mut source = err.source();
        while let Some(s) = source {
            let text = s.to_string();
            if !message.contains(&text) {
                message.push_str(": ");
                message.push_str(&text);
            }
            source = s.source();
        }
        StoreError::Unavailable(message)
    }
}

/// Where claims live. Implement it to keep them somewhere else; the stores of this crate
/// ([`memory::MemoryStore`], and with their features `redis::RedisStore` and
/// `postgres::PostgresStore`) pass the same conformance suite, which yours should too.
///
/// Every method must be atomic with respect to the others for the same id across every
/// process sharing the store: two concurrent `claim`s of one id never both answer
/// [`Claim::Claimed`] while a lease is live.
pub trait Store: Send + Sync + 'static {
    /// Claims `id` with `token` for `lease`, unless it is done or claimed with a live lease.
    /// An id whose lease ran out (its holder died) is claimed again.
    fn claim(
        &self,
        id: &str,
        token: &ClaimToken,
        lease: Duration,
    ) -> impl Future<Output = Result<Claim, StoreError>> + Send;

    /// Marks `id` done for `keep`, if it still holds `token`'s claim or no live claim at all;
    /// `Ok(false)` when another copy's live claim or a done mark holds it.
    fn complete(
        &self,
        id: &str,
        token: &ClaimToken,
        keep: Duration,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Forgets `id`'s claim if it still holds `token`; `Ok(false)` otherwise.
    fn release(&self, id: &str, token: &ClaimToken) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Extends `id`'s claim to `lease` from now if it still holds `token`; `Ok(false)` when
    /// the claim is gone (released, done, or expired and dropped) or another copy's. The
    /// layer calls it while the handler runs, so a live process keeps its claim and a dead
    /// one (which renews nothing) loses it after one lease.
    fn renew(
        &self,
        id: &str,
        token: &ClaimToken,
        lease: Duration,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;
}

impl<S: Store> Store for Arc<S> {
    fn claim(
        &self,
        id: &str,
        token: &ClaimToken,
        lease: Duration,
    ) -> impl Future<Output = Result<Claim, StoreError>> + Send {
        (**self).claim(id, token, lease)
    }

    fn complete(
        &self,
        id: &str,
        token: &ClaimToken,
        keep: Duration,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        (**self).complete(id, token, keep)
    }

    fn release(&self, id: &str, token: &ClaimToken) -> impl Future<Output = Result<bool, StoreError>> + Send {
        (**self).release(id, token)
    }

    fn renew(
        &self,
        id: &str,
        token: &ClaimToken,
        lease: Duration,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        (**self).renew(id, token, lease)
    }
}

/// A duration in whole milliseconds, at least 1 (stores count in milliseconds).
pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_32_hex_digits_and_differ() {
        let a = ClaimToken::generate();
        let b = ClaimToken::generate();
        assert_eq!(a.as_str().len(), 32);
        assert!(a.as_str().bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }

    #[test]
    fn error_codes_are_stable() {
        assert_eq!(StoreError::Unavailable("x".into()).code().as_str(), "store_unavailable");
        assert_eq!(
            StoreError::Timeout(Duration::from_secs(1)).code().as_str(),
            "store_timeout"
        );
        assert_eq!(StoreError::Protocol("x".into()).code().as_str(), "store_protocol");
        assert_eq!(StoreError::Full(3).code().as_str(), "store_full");
    }
}
