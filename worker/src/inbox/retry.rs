//! When a delivery the origin did not accept is tried again, or given up as *dead*.
//!
//! Exponential backoff with jitter: the `n`-th failed attempt waits a base of 1 s × 2ⁿ⁻¹
//! (at most 1 h), of which a random half is added to the other half ("equal jitter"), so
//! deliveries that failed together do not come back together. A `429` or `503` with a
//! `retry-after` in seconds waits that long instead (at most 1 h). Retries stop at the
//! horizon, counted from the `202`: a wait that would pass it is cut to end there (one last
//! attempt), and an attempt that fails at or after it makes the delivery dead.

/// The first retry's base wait.
pub const FIRST_BACKOFF_MS: f64 = 1_000.0;
/// The longest wait between two attempts (also the cap of an origin's `retry-after`).
pub const MAX_BACKOFF_MS: f64 = 3_600_000.0;

/// What follows a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Next {
    /// Try again at this time (ms since the epoch).
    RetryAt(f64),
    /// The horizon passed: the delivery is dead and frees its ordering key.
    Dead,
}

/// The next step after failed attempt number `attempt` (1 for the first), which ended at
/// `now_ms`, for a delivery accepted at `accepted_ms`. `jitter` is a random number in
/// `[0, 1)`; `retry_after_secs` the origin's `retry-after` when it is honoured.
///
/// ```
/// use postwire_worker::inbox::retry::{Next, after_failure};
/// assert_eq!(after_failure(1, 10_000.0, 10_000.0, 3600, None, 0.0), Next::RetryAt(10_500.0));
/// assert_eq!(after_failure(1, 10_000.0, 10_000.0, 3600, Some(30), 0.5), Next::RetryAt(40_000.0));
/// assert_eq!(after_failure(9, 3_610_000.0, 10_000.0, 3600, None, 0.5), Next::Dead);
/// ```
pub fn after_failure(
    attempt: u32,
    now_ms: f64,
    accepted_ms: f64,
    horizon_secs: u64,
    retry_after_secs: Option<u64>,
    jitter: f64,
) -> Next {
    let horizon_end = accepted_ms + horizon_secs as f64 * 1000.0;
    if now_ms >= horizon_end {
        return Next::Dead;
    }
    let wait = match retry_after_secs {
        Some(secs) => (secs as f64 * 1000.0).min(MAX_BACKOFF_MS),
        None => {
            let exponent = attempt.saturating_sub(1).min(32);
            let base = (FIRST_BACKOFF_MS * f64::from(2u32.saturating_pow(exponent))).min(MAX_BACKOFF_MS);
            base / 2.0 + base / 2.0 * jitter.clamp(0.0, 1.0)
        }
    };
    Next::RetryAt((now_ms + wait).min(horizon_end))
}

/// Whether the origin's `retry-after` is honoured for this status: `429` and `503`.
pub fn honours_retry_after(status: u16) -> bool {
    matches!(status, 429 | 503)
}

/// A `retry-after` of whole seconds (an HTTP date is ignored: the backoff applies).
pub fn parse_retry_after(value: &str) -> Option<u64> {
    let v = value.trim();
    if v.is_empty() || v.len() > 10 || !v.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    v.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_jitter_and_is_capped() {
        let at = |attempt, jitter| match after_failure(attempt, 0.0, 0.0, 30 * 24 * 3600, None, jitter) {
            Next::RetryAt(t) => t,
            Next::Dead => panic!("dead"),
        };
        assert_eq!((at(1, 0.0), at(1, 0.998)), (500.0, 999.0));
        assert_eq!((at(2, 0.0), at(3, 0.0), at(4, 0.0)), (1000.0, 2000.0, 4000.0));
        assert_eq!(at(30, 1.0), MAX_BACKOFF_MS);
        assert_eq!(at(u32::MAX, 0.0), MAX_BACKOFF_MS / 2.0);
        assert_eq!(at(1, 7.0), 1000.0, "jitter clamped");
    }

    #[test]
    fn the_horizon_cuts_the_wait_then_kills() {
        // 10 s horizon; failure at 9 s with a 1 h retry-after: one last try at 10 s.
        assert_eq!(
            after_failure(5, 9_000.0, 0.0, 10, Some(3600), 0.0),
            Next::RetryAt(10_000.0)
        );
        assert_eq!(after_failure(6, 10_000.0, 0.0, 10, None, 0.0), Next::Dead);
        assert_eq!(after_failure(1, 0.0, 0.0, 10, Some(0), 0.0), Next::RetryAt(0.0));
        assert_eq!(
            after_failure(1, 0.0, 0.0, 100_000, Some(86_400), 0.0),
            Next::RetryAt(MAX_BACKOFF_MS)
        );
    }

    #[test]
    fn retry_after_is_seconds_only_for_429_and_503() {
        assert_eq!(parse_retry_after(" 120 "), Some(120));
        for bad in ["", "-1", "1.5", "Wed, 21 Oct 2015 07:28:00 GMT", "99999999999"] {
            assert_eq!(parse_retry_after(bad), None, "{bad}");
        }
        assert!(honours_retry_after(429) && honours_retry_after(503));
        assert!(!honours_retry_after(500) && !honours_retry_after(502));
    }
}
