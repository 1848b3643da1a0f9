//! The event catalogue: one sample delivery body per event type, built by the sender's
//! own [`build_event`] from sample domain changes, so the samples are exactly what a
//! receiver gets (and cannot drift from the code), with a sentence about each type.

use postwire_core::{
    Actor, ActorKind, DisconnectReason, EventError, EventType, FailureCode, Integration, PostState, Timestamp,
};
use postwire_sender::events::build_event;
use postwire_sender::{
    AccountChange, AccountChangeKind, DomainChange, PostChange, PostChangeKind, PostRecord, TestEvent,
};

/// One entry of the catalogue.
#[derive(Debug, Clone)]
pub struct Sample {
    /// The event type.
    pub event_type: EventType,
    /// When it is sent.
    pub about: &'static str,
    /// A pretty-printed sample body.
    pub body: String,
    /// Every field of the sample, as (dotted path, JSON type), in document order.
    pub fields: Vec<(String, &'static str)>,
}

/// The fields of `value` under `prefix`, depth first (array items as `[]`).
fn fields_of(prefix: &str, value: &serde_json::Value, out: &mut Vec<(String, &'static str)>) {
    use serde_json::Value;
    let kind = match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    if !prefix.is_empty() {
        out.push((prefix.to_owned(), kind));
    }
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                let path = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                fields_of(&path, v, out);
            }
        }
        Value::Array(items) => {
            if let Some(first) = items.first() {
                fields_of(&format!("{prefix}[]"), first, out);
            }
        }
        _ => {}
    }
}

fn integration() -> Integration {
    Integration {
        id: "acc_1".into(),
        name: "Acme on LinkedIn".into(),
        provider_identifier: "linkedin".into(),
        picture: None,
    }
}

fn post(state: PostState) -> PostRecord {
    PostRecord {
        id: "post_1".into(),
        external_id: "ext-42".into(),
        group: "grp_1".into(),
        state,
        is_draft: false,
        publish_date: Timestamp::from_unix_millis(1_795_860_000_000),
        integration: integration(),
        release_url: None,
        release_id: None,
        error: None,
        content: String::new(),
    }
}

fn post_change(kind: PostChangeKind, state: PostState) -> DomainChange {
    PostChange {
        workspace_id: "ws_1".into(),
        post: post(state),
        kind,
    }
    .into()
}

/// The sample changes, one per event type, with what each means.
fn changes() -> Vec<(EventType, &'static str, DomainChange)> {
    let account = |kind| -> DomainChange {
        AccountChange {
            workspace_id: "ws_1".into(),
            integration: integration(),
            kind,
        }
        .into()
    };
    let mut out = vec![
        (
            EventType::PostScheduled,
            "A post was queued, rescheduled or edited while queued.",
            post_change(PostChangeKind::Scheduled, PostState::Queue),
        ),
        (
            EventType::PostUnscheduled,
            "A queued post went back to draft or to awaiting approval.",
            post_change(PostChangeKind::Unscheduled, PostState::Queue),
        ),
        (
            EventType::PostPublishing,
            "Publishing to the provider started.",
            post_change(PostChangeKind::PublishingStarted, PostState::Queue),
        ),
        (
            EventType::PostPublished,
            "The provider accepted the post; releaseURL and releaseId are set.",
            post_change(
                PostChangeKind::Published {
                    release_url: "https://www.linkedin.com/feed/update/urn:li:share:1".into(),
                    release_id: "urn:li:share:1".into(),
                },
                PostState::Published,
            ),
        ),
        (
            EventType::IntegrationDisconnected,
            "An account must be reconnected, or was disabled or deleted.",
            account(AccountChangeKind::Disconnected {
                reason: DisconnectReason::ReconnectRequired,
            }),
        ),
        (
            EventType::IntegrationReconnected,
            "An account works again.",
            account(AccountChangeKind::Reconnected),
        ),
        (
            EventType::WebhookTest,
            "Sent on request (the Send test event button, or the API) to one subscription.",
            TestEvent {
                workspace_id: "ws_1".into(),
                subscription_id: None,
                message: "This is a test event from postwire.".into(),
            }
            .into(),
        ),
    ];
    if let Ok(error) = EventError::new(FailureCode::RateLimited, "Rate limit reached", true) {
        out.insert(
            4,
            (
                EventType::PostFailed,
                "The post could not be published; error says why and whether a retry may work.",
                post_change(PostChangeKind::Failed { error }, PostState::Error),
            ),
        );
    }
    out.insert(
        5,
        (
            EventType::PostDeleted,
            "The post was deleted; deletedBy says by whom.",
            post_change(
                PostChangeKind::Deleted {
                    by: Actor {
                        kind: ActorKind::Dashboard,
                        id: Some("user_7".into()),
                    },
                },
                PostState::Queue,
            ),
        ),
    );
    out
}

/// Every event type with a sample body, in the order of the spec.
pub fn samples() -> Vec<Sample> {
    let now = Timestamp::from_unix_millis(1_795_856_400_000);
    let mut out = Vec::new();
    for (event_type, about, change) in changes() {
        let Ok(Ok(built)) = build_event(&change, "msg_01MCC5RM00X7Q2W9KD3FTB8N4P".into(), now) else {
            continue;
        };
        let Ok(value) = serde_json::from_str::<serde_json::Value>(&built.body) else {
            continue;
        };
        let mut fields = Vec::new();
        fields_of("", &value, &mut fields);
        out.push(Sample {
            event_type,
            about,
            body: serde_json::to_string_pretty(&value).unwrap_or(built.body),
            fields,
        });
    }
    out.sort_by_key(|s| EventType::ALL.iter().position(|t| *t == s.event_type));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_type_has_a_sample_that_parses_as_its_type() {
        let samples = samples();
        assert_eq!(samples.len(), EventType::ALL.len());
        for (s, t) in samples.iter().zip(EventType::ALL) {
            assert_eq!(s.event_type, *t);
            let event = postwire_core::Event::from_json(s.body.as_bytes()).unwrap();
            assert_eq!(event.event_type(), *t);
            assert!(s.fields.iter().any(|(p, k)| p == "id" && *k == "string"));
            assert!(s.fields.iter().any(|(p, _)| p.starts_with("data.")), "{:?}", s.fields);
        }
        let failed = &samples[4];
        assert!(failed.fields.contains(&("data.error.retryable".to_owned(), "boolean")));
    }
}
