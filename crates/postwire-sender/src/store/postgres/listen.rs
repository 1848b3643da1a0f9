//! Wake-ups across processes: a connection of its own runs `LISTEN postwire_due` and
//! wakes this process's dispatcher whenever any process commits a write that made a
//! delivery due (a publish, a resume, a retry or successor due now).
//!
//! The listener reconnects after a lost connection (with a backoff) and wakes the
//! dispatcher once when it does, since notifications sent meanwhile were missed. The
//! dispatcher's poll (`idle_poll`) remains the fallback: a missed wake-up delays a
//! delivery by at most that long.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio_postgres::AsyncMessage;

use super::CHANNEL;
use super::connect::PgTarget;

/// The listening task; stopped when the last store clone drops this.
pub(super) struct Listener {
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Listener {
    /// Starts listening on a new connection to `target`; `wake` is notified on
    /// every notification.
    pub(super) fn start(target: PgTarget, wake: Arc<Notify>) -> Listener {
        Listener {
            task: tokio::spawn(listen(target, wake)),
        }
    }
}

async fn listen(target: PgTarget, wake: Arc<Notify>) {
    let mut backoff = Duration::from_millis(100);
    loop {
        let connected = target
            .connect_and_drive(|client, mut connection| {
                backoff = Duration::from_millis(100);
                let wake = wake.clone();
                async move {
                    let wake_on_message = wake.clone();
                    // Drives the connection (LISTEN's reply included) until it ends.
                    let messages = async move {
                        loop {
                            match std::future::poll_fn(|cx| connection.poll_message(cx)).await {
                                Some(Ok(AsyncMessage::Notification(_))) => wake_on_message.notify_one(),
                                Some(Ok(_)) => {}
                                Some(Err(e)) => {
                                    tracing::warn!(error = %e, "the wake-up connection failed; reconnecting");
                                    return;
                                }
                                None => return,
                            }
                        }
                    };
                    let mut messages = std::pin::pin!(messages);
                    let statement = format!("LISTEN {CHANNEL}");
                    tokio::select! {
                        subscribed = client.batch_execute(&statement) => match subscribed {
                            // Notifications sent before LISTEN took effect were missed.
                            Ok(()) => {
                                wake.notify_one();
                                messages.await;
                            }
                            Err(e) => tracing::warn!(error = %e, "LISTEN failed; reconnecting"),
                        },
                        _ = &mut messages => {}
                    }
                    drop(client);
                }
            })
            .await;
        if let Err(e) = connected {
            tracing::debug!(error = %e, "the wake-up connection could not be made; trying again");
        }
        // Catch up with whatever was missed while not listening.
        wake.notify_one();
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(5));
    }
}
