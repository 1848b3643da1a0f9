//! A clock that runs faster than real time, so `postwire demo` can show the spec's
//! 30-second and 2-minute retry delays within seconds.
//!
//! It starts at the real current time and then advances `factor` times as fast. The
//! sender and the demo receiver share it, so signatures are verified against the same
//! (fast) time that signed them. Never use it outside demos.

use std::time::Instant;

use postwire_core::{Clock, SystemClock, Timestamp};

/// Real time, sped up by a constant factor.
#[derive(Debug, Clone)]
pub struct ScaledClock {
    origin: Timestamp,
    started: Instant,
    factor: f64,
}

impl ScaledClock {
    /// A clock showing now, running `factor` times faster than real time (1.0 or more).
    pub fn new(factor: f64) -> ScaledClock {
        ScaledClock {
            origin: SystemClock.now(),
            started: Instant::now(),
            factor: factor.max(1.0),
        }
    }

    /// How many times faster than real time it runs.
    pub fn factor(&self) -> f64 {
        self.factor
    }
}

impl Clock for ScaledClock {
    fn now(&self) -> Timestamp {
        let elapsed = self.started.elapsed().as_secs_f64() * self.factor * 1000.0;
        self.origin.add_millis(elapsed as i64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_faster_than_real_time() {
        let c = ScaledClock::new(60.0);
        let a = c.now();
        std::thread::sleep(std::time::Duration::from_millis(50));
        let moved = c.now().unix_millis() - a.unix_millis();
        assert!(moved >= 2_900, "moved {moved} ms in 50 real ms");
    }
}
