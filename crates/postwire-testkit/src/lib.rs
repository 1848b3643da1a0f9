//! Test support shared by postwire's crates, so each test suite does not write its own.
//!
//! * [`receiver`]: a webhook receiver on loopback that verifies every delivery with
//!   postwire-core, de-duplicates by `webhook-id`, can fail on purpose and counts what it
//!   saw. It is the same file `postwire demo` runs (in the CLI, which needs it at run
//!   time and must stay publishable), compiled here with `#[path]`: one implementation.
//! * [`fast_receiver`]: a bare HTTP/1 receiver for load tests and benchmarks, whose
//!   answers the caller decides from the headers.
//! * [`scripted`]: a receiver that records every request and answers as a handler says
//!   (status, delay, headers, body), to play receivers that fail, hang or answer oddly.
//! * [`vectors`]: the shared test vectors of `tests/vectors/` and the event catalogue
//!   `tests/vectors/catalogue.json`, loaded by name.
//! * [`eventually`]: polls a condition until it holds, with a deadline.
//!
//! Not published (`publish = false`); a dev-dependency only. Its helpers panic on
//! failure, as test code does: a missing vector file is a failed test, never a skip.

use std::time::{Duration, Instant};

#[path = "../../postwire-cli/src/commands/demo/receiver.rs"]
pub mod receiver;

pub mod fast_receiver;
pub mod scripted;
pub mod vectors;

/// Polls `check` every 20 ms until it holds; panics naming `what` after 10 s.
pub async fn eventually<F: Fn() -> bool>(what: &str, check: F) {
    let start = Instant::now();
    while !check() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
