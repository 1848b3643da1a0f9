//! The cap on requests started per second (`ORIGIN_MAX_PER_SECOND`): a sliding window of
//! the start times of the last requests.
//!
//! The window is [`WINDOW_MS`], longer than a second: the cap is counted where the requests
//! start, and the origin sees them after a delay that varies from one to the next (the
//! network, the runtime's scheduling); the margin keeps any one second at the origin within
//! the cap when two requests' delays differ by up to 200 ms, at the price of about 17 % of
//! the rate (a cap of 200 sends at most 200 per 1.2 s, about 167 per second).
//!
//! The window outlives one alarm run: the `InboxObject` keeps it in memory for as long as
//! its instance lives, so a run that starts right after another counts the other's starts.
//! A new instance cannot know what the one before it started just before it went away (a
//! deploy, a reset, an eviction), and counts it as a full window ending when it was created
//! ([`RateWindow::after_unknown`]): its first start waits at most [`WINDOW_MS`]. Storing
//! the start times instead would cost a storage write per batch of requests, and each
//! request would then wait for that write's commit before it leaves.

use std::collections::VecDeque;

/// The length of the window, in milliseconds.
pub const WINDOW_MS: f64 = 1_200.0;

/// The starts within the last window, and the cap (0 = none).
#[derive(Debug, Clone, Default)]
pub struct RateWindow {
    cap: u32,
    starts: VecDeque<f64>,
}

impl RateWindow {
    /// A window allowing `cap` starts (0: no cap).
    pub fn new(cap: u32) -> Self {
        RateWindow {
            cap,
            starts: VecDeque::new(),
        }
    }

    fn forget_before(&mut self, now_ms: f64) {
        while self.starts.front().is_some_and(|t| *t <= now_ms - WINDOW_MS) {
            self.starts.pop_front();
        }
    }

    /// A window whose past is unknown up to `at_ms`: it counts `cap` starts at `at_ms`, so
    /// that no start happens within [`WINDOW_MS`] of them.
    ///
    /// ```
    /// use postwire_worker::inbox::pacing::RateWindow;
    /// let mut w = RateWindow::after_unknown(5, 1_000.0);
    /// assert_eq!(w.room(1_500.0), 0);
    /// assert_eq!(w.room(2_200.0), 5);
    /// ```
    pub fn after_unknown(cap: u32, at_ms: f64) -> Self {
        let mut w = RateWindow::new(cap);
        w.starts.extend(std::iter::repeat_n(at_ms, cap as usize));
        w
    }

    /// Changes the cap (the settings changed), keeping the starts counted so far.
    pub fn set_cap(&mut self, cap: u32) {
        self.cap = cap;
    }

    /// The cap (0: none).
    pub fn cap(&self) -> u32 {
        self.cap
    }

    /// How many requests may start at `now_ms` (`usize::MAX` without a cap).
    ///
    /// ```
    /// use postwire_worker::inbox::pacing::RateWindow;
    /// let mut w = RateWindow::new(2);
    /// w.record(0.0);
    /// w.record(10.0);
    /// assert_eq!(w.room(500.0), 0);
    /// assert_eq!(w.room(1_200.0), 1);
    /// ```
    pub fn room(&mut self, now_ms: f64) -> usize {
        if self.cap == 0 {
            return usize::MAX;
        }
        self.forget_before(now_ms);
        (self.cap as usize).saturating_sub(self.starts.len())
    }

    /// Counts a start at `now_ms`.
    pub fn record(&mut self, now_ms: f64) {
        if self.cap != 0 {
            self.starts.push_back(now_ms);
        }
    }

    /// When the next start may happen, if none may now.
    pub fn next_room_at(&mut self, now_ms: f64) -> Option<f64> {
        if self.room(now_ms) > 0 {
            return None;
        }
        self.starts.front().map(|t| t + WINDOW_MS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_window_ever_holds_more_than_the_cap() {
        let mut w = RateWindow::new(200);
        let mut started = Vec::new();
        let mut now = 0.0;
        while now < 5_000.0 {
            for _ in 0..w.room(now).min(7) {
                w.record(now);
                started.push(now);
            }
            now += 3.0;
        }
        for (i, t) in started.iter().enumerate() {
            let within = started[i..].iter().take_while(|u| **u < t + WINDOW_MS).count();
            assert!(within <= 200, "{within} starts in the window from {t}");
        }
        assert!(started.len() > 900, "{} starts in 5 s", started.len());
    }

    #[test]
    fn no_cap_means_always_room() {
        let mut w = RateWindow::new(0);
        w.record(1.0);
        assert_eq!(w.room(1.0), usize::MAX);
        assert_eq!(w.next_room_at(1.0), None);
        let mut w = RateWindow::new(1);
        w.record(100.0);
        assert_eq!(w.next_room_at(200.0), Some(100.0 + WINDOW_MS));
    }
}
