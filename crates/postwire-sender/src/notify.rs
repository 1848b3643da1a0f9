//! Telling workspace admins that a subscription was paused by failures.
//!
//! Every such pause is recorded in the store, in the same transaction as the pause
//! itself, so the API can list it ([`Sender::notifications`](crate::Sender::notifications)).
//! After the commit the sender also calls the configured [`Notifier`]; the default,
//! [`LogNotifier`], writes a warning to the `tracing` log. A host that sends e-mail or
//! in-app notices implements [`Notifier`] (it must not block: hand the work to a task).

use crate::model::Notification;

/// Called once for each subscription paused by failures, after the pause is stored.
pub trait Notifier: Send + Sync + 'static {
    /// A subscription was paused; tell the admins of `notification.workspace_id`.
    fn subscription_paused(&self, notification: &Notification);
}

/// The default notifier: logs a warning (the notification itself is already stored).
#[derive(Debug, Clone, Copy, Default)]
pub struct LogNotifier;

impl Notifier for LogNotifier {
    fn subscription_paused(&self, n: &Notification) {
        tracing::warn!(
            workspace_id = %n.workspace_id,
            subscription_id = %n.subscription_id,
            cause = ?n.cause,
            "webhook subscription paused by failures; workspace admins notified"
        );
    }
}
