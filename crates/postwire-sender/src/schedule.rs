//! The retry schedule: when the next attempt of a failed delivery is due.
//!
//! ## How the spec's schedule is read
//! The spec lists eight delays after failed attempts (30 s, 2 min, 10 min, 30 min, 1 h,
//! 3 h, 6 h, 12 h) and says a delivery is marked failed "after the eighth failed attempt"
//! and that retries last "about 24 hours". This crate reads the list as **the first
//! attempt plus eight retries**: attempt *n* (1-based) that fails waits `DELAYS[n-1]`
//! before attempt *n+1*; attempt 9 is the last, and when it fails the delivery is
//! `failed`. Without jitter the ninth attempt starts 22 h 42 min 30 s after the first,
//! which is the spec's "about 24 hours". (Counting the first attempt as one of eight
//! would leave the 12 h delay unused.)
//!
//! ## Jitter
//! Each delay is multiplied by a factor drawn uniformly from `1 ± jitter` (default
//! ±10 %), so receivers that failed together are not retried in one burst. Jitter is a
//! setting ([`Jitter`]); tests switch it off to assert exact times.
//!
//! ## Retry-After
//! A failed attempt whose response carries `Retry-After` (delta-seconds or an HTTP date)
//! gets `max(scheduled, retry_after)`, capped at the *next* step of the schedule (the
//! 12 h step for the last ones). A receiver can ask for more time, within the schedule's
//! bounds; it can never make the sender retry sooner than scheduled, nor stretch the
//! total span beyond about two days.

use std::time::Duration;

/// The delays after failed attempts 1 to 8, in milliseconds.
pub const RETRY_DELAYS_MS: [i64; 8] = [
    30_000,
    2 * 60_000,
    10 * 60_000,
    30 * 60_000,
    60 * 60_000,
    3 * 3_600_000,
    6 * 3_600_000,
    12 * 3_600_000,
];

/// Attempts per delivery: the first plus one per delay.
pub const MAX_ATTEMPTS: u32 = RETRY_DELAYS_MS.len() as u32 + 1;

/// How much each delay may vary.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Jitter {
    /// Exact delays, for tests.
    None,
    /// Each delay times a factor uniform in `1 ± fraction`; `fraction` is clamped to 0..=0.5.
    Proportional {
        /// E.g. `0.1` for ±10 %.
        fraction: f64,
    },
}

impl Default for Jitter {
    fn default() -> Self {
        Jitter::Proportional { fraction: 0.1 }
    }
}

/// What to do after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextStep {
    /// Try again after this many milliseconds.
    RetryAfterMillis(i64),
    /// That was the last attempt: the delivery has failed.
    GiveUp,
}

/// The retry schedule with its jitter and random source.
#[derive(Debug)]
pub struct RetrySchedule {
    jitter: Jitter,
    rng: std::sync::Mutex<SplitMix64>,
}

impl RetrySchedule {
    /// A schedule with `jitter`, seeded from `seed` (or the OS when `None`).
    pub fn new(jitter: Jitter, seed: Option<u64>) -> Self {
        let seed = seed.unwrap_or_else(|| {
            let mut b = [0u8; 8];
            // A failing OS random source only makes the jitter predictable; not fatal.
            let _ = getrandom::fill(&mut b);
            u64::from_le_bytes(b)
        });
        RetrySchedule {
            jitter,
            rng: std::sync::Mutex::new(SplitMix64(seed)),
        }
    }

    /// The step after attempt number `attempt` (1-based) failed, given the response's
    /// `Retry-After`, if any.
    ///
    /// ```
    /// use postwire_sender::schedule::{Jitter, NextStep, RetrySchedule};
    /// use std::time::Duration;
    /// let s = RetrySchedule::new(Jitter::None, Some(1));
    /// assert_eq!(s.after_failed_attempt(1, None), NextStep::RetryAfterMillis(30_000));
    /// // Retry-After may lengthen a delay up to the next step (2 min), not beyond.
    /// assert_eq!(s.after_failed_attempt(1, Some(Duration::from_secs(3600))), NextStep::RetryAfterMillis(120_000));
    /// assert_eq!(s.after_failed_attempt(9, None), NextStep::GiveUp);
    /// ```
    pub fn after_failed_attempt(&self, attempt: u32, retry_after: Option<Duration>) -> NextStep {
        if attempt == 0 || attempt >= MAX_ATTEMPTS {
            return NextStep::GiveUp;
        }
        let i = (attempt - 1) as usize;
        let scheduled = RETRY_DELAYS_MS[i];
        let next_step = RETRY_DELAYS_MS[(i + 1).min(RETRY_DELAYS_MS.len() - 1)];
        let mut delay = match self.jitter {
            Jitter::None => scheduled,
            Jitter::Proportional { fraction } => {
                let fraction = if fraction.is_finite() {
                    fraction.clamp(0.0, 0.5)
                } else {
                    0.0
                };
                let u = self.next_unit();
                let factor = 1.0 + fraction * (2.0 * u - 1.0);
                (scheduled as f64 * factor).round() as i64
            }
        };
        if let Some(ra) = retry_after {
            let ra_ms = i64::try_from(ra.as_millis()).unwrap_or(i64::MAX);
            if ra_ms > delay {
                delay = ra_ms.min(next_step.max(delay));
            }
        }
        NextStep::RetryAfterMillis(delay.max(0))
    }

    fn next_unit(&self) -> f64 {
        let mut rng = self.rng.lock().unwrap_or_else(|p| p.into_inner());
        (rng.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Parses a `Retry-After` value: delta-seconds or an HTTP date (relative to `now_ms`).
pub(crate) fn parse_retry_after(value: &str, now_ms: i64) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs.min(u32::MAX as u64)));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    let at_ms = at.duration_since(std::time::UNIX_EPOCH).ok()?.as_millis() as i64;
    Some(Duration::from_millis(at_ms.saturating_sub(now_ms).max(0) as u64))
}

/// A tiny, well-known PRNG (SplitMix64): enough for jitter, no dependency.
#[derive(Debug)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eight_delays_add_up_to_22h_42m_30s() {
        let total: i64 = RETRY_DELAYS_MS.iter().sum();
        assert_eq!(total, ((22 * 60 + 42) * 60 + 30) * 1000);
        assert_eq!(MAX_ATTEMPTS, 9);
    }

    #[test]
    fn exact_without_jitter_and_gives_up_after_the_ninth() {
        let s = RetrySchedule::new(Jitter::None, Some(7));
        for (i, d) in RETRY_DELAYS_MS.iter().enumerate() {
            assert_eq!(
                s.after_failed_attempt(i as u32 + 1, None),
                NextStep::RetryAfterMillis(*d)
            );
        }
        assert_eq!(s.after_failed_attempt(9, None), NextStep::GiveUp);
        assert_eq!(s.after_failed_attempt(0, None), NextStep::GiveUp);
    }

    #[test]
    fn jitter_stays_within_ten_percent_and_varies() {
        let s = RetrySchedule::new(Jitter::default(), Some(42));
        let mut seen = std::collections::HashSet::new();
        for _ in 0..1000 {
            let NextStep::RetryAfterMillis(d) = s.after_failed_attempt(1, None) else {
                panic!()
            };
            assert!((27_000..=33_000).contains(&d), "{d}");
            seen.insert(d);
        }
        assert!(seen.len() > 100);
    }

    #[test]
    fn retry_after_only_lengthens_and_is_capped_at_the_next_step() {
        let s = RetrySchedule::new(Jitter::None, Some(1));
        assert_eq!(
            s.after_failed_attempt(2, Some(Duration::from_secs(1))),
            NextStep::RetryAfterMillis(120_000)
        );
        assert_eq!(
            s.after_failed_attempt(2, Some(Duration::from_secs(300))),
            NextStep::RetryAfterMillis(300_000)
        );
        assert_eq!(
            s.after_failed_attempt(2, Some(Duration::from_secs(9999))),
            NextStep::RetryAfterMillis(600_000)
        );
        assert_eq!(
            s.after_failed_attempt(8, Some(Duration::from_secs(100 * 3600))),
            NextStep::RetryAfterMillis(12 * 3_600_000)
        );
    }

    #[test]
    fn parses_retry_after_forms() {
        assert_eq!(parse_retry_after(" 120 ", 0), Some(Duration::from_secs(120)));
        assert_eq!(
            parse_retry_after("Thu, 01 Jan 1970 00:01:40 GMT", 40_000),
            Some(Duration::from_secs(60))
        );
        assert_eq!(parse_retry_after("soon", 0), None);
        assert_eq!(parse_retry_after("-5", 0), None);
    }
}
