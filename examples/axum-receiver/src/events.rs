//! Typed events: `event.data` is an enum with one variant per event type, so a `match`
//! is checked by the compiler (add a type and every `match` without it stops compiling).

use postwire_core::{Event, EventData};

/// A one-line description of an event, e.g. for a log line or a notification.
pub fn describe(event: &Event) -> String {
    match event.data() {
        EventData::PostScheduled(d) | EventData::PostUnscheduled(d) | EventData::PostPublishing(d) => format!(
            "{}: post {} on {} ({})",
            event.event_type(),
            d.post.id(),
            d.post.integration().name,
            d.post.state().as_str()
        ),
        // post.published always has its release fields (checked when parsing).
        EventData::PostPublished(d) => {
            format!(
                "post {} is live at {}",
                d.post.id(),
                d.post.release_url().unwrap_or_default()
            )
        }
        EventData::PostFailed(d) => format!(
            "post {} failed: {}{}",
            d.post.id(),
            d.error.code(),
            if d.error.retryable() { " (will retry)" } else { "" }
        ),
        EventData::PostDeleted(d) => format!("post {} deleted by {}", d.post.id(), d.deleted_by.kind),
        EventData::IntegrationDisconnected(d) => format!("account {} disconnected: {}", d.integration.name, d.reason),
        EventData::IntegrationReconnected(d) => format!("account {} reconnected", d.integration.name),
        EventData::WebhookTest(d) => format!("test event: {}", d.message),
    }
}
