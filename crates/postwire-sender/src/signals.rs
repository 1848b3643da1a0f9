//! The signals a [`Sender`](crate::Sender) and its dispatcher share: wake, shutdown and
//! idle. Both sides hold one [`Signals`]; neither reads the other's state, so the
//! dependency goes one way (the sender starts the dispatcher, and both talk through
//! these flags).
//!
//! * wake: a publish, a finished batch or a moved manual clock asks the claim loop to
//!   look again now rather than after `idle_poll`;
//! * shutdown: set once, by [`DispatcherHandle::shutdown`](crate::DispatcherHandle::shutdown)
//!   or when the last [`Owners`] is dropped; the loop stops claiming;
//! * idle: [`Sender::wait_idle`](crate::Sender::wait_idle) takes a ticket and waits until
//!   the loop reports a pass that began after it with nothing in flight and nothing due.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use tokio::sync::{Notify, watch};

/// Wake, shutdown and idle, shared by a sender and its dispatcher.
#[derive(Debug)]
pub(crate) struct Signals {
    wake: Notify,
    shutting_down: AtomicBool,
    started: AtomicBool,
    idle_requested: AtomicU64,
    idle_seen: watch::Sender<u64>,
}

impl Signals {
    /// Fresh signals: not started, not shutting down, no idle asked for.
    pub(crate) fn new() -> Signals {
        Signals {
            wake: Notify::new(),
            shutting_down: AtomicBool::new(false),
            started: AtomicBool::new(false),
            idle_requested: AtomicU64::new(0),
            idle_seen: watch::channel(0).0,
        }
    }

    /// Wakes the claim loop (one pending wake is kept if it is not waiting).
    pub(crate) fn wake(&self) {
        self.wake.notify_one();
    }

    /// Resolves at the next [`wake`](Self::wake) (or at once if one is pending).
    pub(crate) async fn woken(&self) {
        self.wake.notified().await
    }

    /// Asks the dispatcher to stop claiming, and wakes it so it sees the request.
    pub(crate) fn shut_down(&self) {
        self.shutting_down.store(true, Ordering::SeqCst);
        self.wake();
    }

    /// Whether a shutdown was asked for.
    pub(crate) fn is_shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::SeqCst)
    }

    /// Marks the dispatcher started; true if it already was.
    pub(crate) fn mark_started(&self) -> bool {
        self.started.swap(true, Ordering::SeqCst)
    }

    /// Whether the dispatcher was started.
    pub(crate) fn is_started(&self) -> bool {
        self.started.load(Ordering::SeqCst)
    }

    /// Takes an idle ticket: waits until the loop reports a pass, begun after this call,
    /// that found nothing in flight and nothing due. `Err` if the loop has ended.
    pub(crate) async fn wait_idle(&self) -> Result<(), watch::error::RecvError> {
        let ticket = self.idle_requested.fetch_add(1, Ordering::SeqCst) + 1;
        let mut rx = self.idle_seen.subscribe();
        self.wake();
        rx.wait_for(|seen| *seen >= ticket).await.map(|_| ())
    }

    /// The newest idle ticket, read by the loop at the start of a pass.
    pub(crate) fn idle_requested(&self) -> u64 {
        self.idle_requested.load(Ordering::SeqCst)
    }

    /// The loop found nothing to do in a pass that began when `ticket` was the newest.
    pub(crate) fn report_idle(&self, ticket: u64) {
        self.idle_seen.send_replace(ticket);
    }
}

/// Held by every [`Sender`](crate::Sender) clone and every
/// [`DispatcherHandle`](crate::DispatcherHandle), and by nothing the dispatcher's own
/// tasks hold: when the last one is dropped, the host can no longer shut the dispatcher
/// down, so it stops as after `shutdown()` (without waiting for the requests in flight,
/// which finish and are recorded in the background). Then the tasks drop the last
/// references to the store, which closes the database and releases its lock, so the same
/// file can be opened again.
#[derive(Debug)]
pub(crate) struct Owners(pub(crate) Arc<Signals>);

impl Drop for Owners {
    fn drop(&mut self) {
        self.0.shut_down();
    }
}
