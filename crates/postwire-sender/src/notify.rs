//! Telling a process's host about subscriptions' health changes as they happen.
//!
//! Every operational notice is stored in the transaction of its change and sent as a
//! signed webhook to the workspace's operator endpoints ([`crate::notices`]), and the
//! API lists it ([`Sender::notifications`](crate::Sender::notifications)). After the
//! commit of a batch of outcomes, the dispatcher also calls the configured [`Notifier`]
//! with each health notice it stored (failing, pause warning, paused, recovered); the
//! default, [`LogNotifier`], writes them to the `tracing` log. A host that sends e-mail or
//! in-app notices implements [`Notifier`] (it must not block: hand the work to a task).

use postwire_core::OperationalEventType;

use crate::model::Notification;

/// Called once for each health notice the dispatcher stores, after it is stored.
pub trait Notifier: Send + Sync + 'static {
    /// A subscription's health changed; `notification.kind` says how.
    fn notice(&self, notification: &Notification);
}

/// The default notifier: a log line per notice (the notice itself is already stored
/// and on its way to the operator endpoints); a warning for failing, warned and paused,
/// information for a recovery.
#[derive(Debug, Clone, Copy, Default)]
pub struct LogNotifier;

impl Notifier for LogNotifier {
    fn notice(&self, n: &Notification) {
        let subscription_id = n.subscription_id.as_deref().unwrap_or("-");
        match n.kind {
            OperationalEventType::EndpointRecovered | OperationalEventType::EndpointResumed => tracing::info!(
                workspace_id = %n.workspace_id, subscription_id, kind = n.kind.as_str(), "{}", n.message
            ),
            _ => tracing::warn!(
                workspace_id = %n.workspace_id, subscription_id, kind = n.kind.as_str(), "{}", n.message
            ),
        }
    }
}
