//! Turning the host's domain changes into events.
//!
//! The host calls [`Sender::publish`](crate::Sender::publish) with a [`DomainChange`]: a
//! post changed state, an account was disconnected or reconnected, or a test event was
//! asked for. This module decides whether that change is an event at all (drafts emit
//! none), builds the [`Event`] with a fresh id that stays the same across retries, and
//! says what the event must stay in order with.
//!
//! The post content never reaches an event: [`summarize`] copies a [`PostRecord`]'s
//! fields one by one into a [`PostSummary`], a type that has no field for content, so
//! there is nothing to copy it into.

use postwire_core::{
    Actor, DisconnectReason, Event, EventData, EventError, Integration, IntegrationData, IntegrationDisconnectedData,
    OperationalEventType, OrderingKey, PostData, PostDeletedData, PostFailedData, PostState, PostSummary, TestData,
    Timestamp,
};

use crate::error::{SenderError, Violations};

/// Longest identifier (workspace, post, account, subscription) accepted, in characters
/// (Unicode scalar values, what JSON Schema's `maxLength` counts in the API documents).
pub const MAX_ID_LEN: usize = 200;
/// Longest free text (names, messages) accepted, in characters.
pub const MAX_TEXT_LEN: usize = 4096;

/// The host's record of a post, as it has it. It may carry the content; events never do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostRecord {
    /// Post identifier.
    pub id: String,
    /// Client-supplied reference.
    pub external_id: String,
    /// Group identifier.
    pub group: String,
    /// The post's state.
    pub state: PostState,
    /// True while the post is a draft. Changes to a draft emit no events (except going
    /// back to draft, which is `post.unscheduled`).
    pub is_draft: bool,
    /// Planned publish time.
    pub publish_date: Timestamp,
    /// The account the post is for.
    pub integration: Integration,
    /// Address of the published post, once published.
    pub release_url: Option<String>,
    /// Provider's id of the published post, once published.
    pub release_id: Option<String>,
    /// Failure text of a failed post.
    pub error: Option<String>,
    /// The post's content. Never copied into an event.
    pub content: String,
}

/// What happened to a post.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PostChangeKind {
    /// An approved post was queued, rescheduled or edited (`post.scheduled`).
    Scheduled,
    /// A queued post went back to draft or to awaiting approval (`post.unscheduled`).
    Unscheduled,
    /// Publishing to the provider started (`post.publishing`).
    PublishingStarted,
    /// The provider accepted the post (`post.published`); sets the release fields.
    Published {
        /// Address of the published post.
        release_url: String,
        /// Provider's id of the published post.
        release_id: String,
    },
    /// The post could not be published (`post.failed`); the summary's state becomes
    /// `ERROR` and its `error` the failure message, unless the record has one.
    Failed {
        /// Why.
        error: EventError,
    },
    /// The post was deleted (`post.deleted`).
    Deleted {
        /// Who deleted it.
        by: Actor,
    },
    /// A draft was saved or edited: never an event. Lets the host call `publish` for
    /// every change without filtering drafts itself.
    DraftSaved,
}

/// A change to a post.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostChange {
    /// The workspace the post belongs to.
    pub workspace_id: String,
    /// The post as it is after the change.
    pub post: PostRecord,
    /// What happened.
    pub kind: PostChangeKind,
}

/// What happened to a connected account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AccountChangeKind {
    /// It must be reconnected, or was disabled or deleted (`integration.disconnected`).
    Disconnected {
        /// Why.
        reason: DisconnectReason,
    },
    /// It works again (`integration.reconnected`).
    Reconnected,
}

/// A change to a connected account (integration).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountChange {
    /// The workspace the account belongs to.
    pub workspace_id: String,
    /// The account.
    pub integration: Integration,
    /// What happened.
    pub kind: AccountChangeKind,
}

/// A `webhook.test` event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestEvent {
    /// The workspace.
    pub workspace_id: String,
    /// Send only to this subscription (whatever its filters), or, when `None`, to every
    /// matching subscription of the workspace.
    pub subscription_id: Option<String>,
    /// Free text carried in `data.message`.
    pub message: String,
}

/// Anything the host reports.
// Post changes are the common case; boxing them would cost an allocation per publish.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DomainChange {
    /// A post changed.
    Post(PostChange),
    /// An account changed.
    Account(AccountChange),
    /// A test event.
    Test(TestEvent),
}

impl From<PostChange> for DomainChange {
    fn from(c: PostChange) -> Self {
        DomainChange::Post(c)
    }
}
impl From<AccountChange> for DomainChange {
    fn from(c: AccountChange) -> Self {
        DomainChange::Account(c)
    }
}
impl From<TestEvent> for DomainChange {
    fn from(c: TestEvent) -> Self {
        DomainChange::Test(c)
    }
}

/// Why a change produced no event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoEventReason {
    /// The post is a draft: drafts emit no events.
    Draft,
}

/// An event ready to store, with what the store needs to route and order it.
#[derive(Debug, Clone)]
pub struct BuiltEvent {
    /// What it is: one of the spec's events, or an operational notice.
    pub envelope: Envelope,
    /// Its JSON body, exactly as it will be signed and sent on every attempt.
    pub body: String,
    /// What it stays in order with, per subscription.
    pub ordering_key: Option<OrderingKey>,
    /// The post it is about, for look-ups by post.
    pub post_id: Option<String>,
    /// The post's client-supplied reference (when not empty), for look-ups by it.
    pub external_id: Option<String>,
    /// Only this subscription (a targeted test event).
    pub only_subscription: Option<String>,
}

/// What a [`BuiltEvent`] carries, which decides who gets it ([`crate::routing`]).
// The spec's events are the hot path (every publish); boxing them to shrink the rare
// notice variant's footprint would add an allocation to each.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum Envelope {
    /// One of the spec's events, for the subscriptions it matches.
    Event(Event),
    /// An operational notice ([`crate::notices`]), for the workspace's operator
    /// endpoints other than the one it is about.
    Notice(NoticeHeader),
}

/// The envelope fields of an operational notice being relayed to operator endpoints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoticeHeader {
    /// The stored notification it comes from; the store marks it relayed in the
    /// transaction that queues it, and queues nothing for a notification already relayed.
    pub notification_id: i64,
    /// `webhook-id`.
    pub id: String,
    /// The workspace.
    pub workspace_id: String,
    /// Its type.
    pub kind: OperationalEventType,
    /// When it happened.
    pub created_at: Timestamp,
    /// The subscription it is about, which it never goes to.
    pub about: Option<String>,
}

impl BuiltEvent {
    /// The `webhook-id`.
    pub fn id(&self) -> &str {
        match &self.envelope {
            Envelope::Event(e) => e.id(),
            Envelope::Notice(n) => &n.id,
        }
    }

    /// The workspace.
    pub fn workspace_id(&self) -> &str {
        match &self.envelope {
            Envelope::Event(e) => e.workspace_id(),
            Envelope::Notice(n) => &n.workspace_id,
        }
    }

    /// The stored type name, e.g. `post.published` or `endpoint.paused`.
    pub fn type_name(&self) -> &'static str {
        match &self.envelope {
            Envelope::Event(e) => e.event_type().as_str(),
            Envelope::Notice(n) => n.kind.as_str(),
        }
    }

    /// When it was created.
    pub fn created_at(&self) -> Timestamp {
        match &self.envelope {
            Envelope::Event(e) => e.created_at(),
            Envelope::Notice(n) => n.created_at,
        }
    }

    /// The notice, for an operational one.
    pub fn notice(&self) -> Option<&NoticeHeader> {
        match &self.envelope {
            Envelope::Notice(n) => Some(n),
            Envelope::Event(_) => None,
        }
    }
}

/// The summary of a post for an event. Copies each summary field; the content has
/// nowhere to go.
pub fn summarize(post: &PostRecord) -> PostSummary {
    let integration = Integration {
        id: post.integration.id.clone(),
        name: post.integration.name.clone(),
        provider_identifier: post.integration.provider_identifier.clone(),
        picture: None,
    };
    PostSummary::new(
        post.id.clone(),
        post.external_id.clone(),
        post.group.clone(),
        post.state.clone(),
        post.publish_date,
        integration,
    )
    .with_optional_release(post.release_url.clone(), post.release_id.clone())
    .with_error(post.error.clone())
}

pub(crate) fn check_id(v: &mut Violations, field: &str, id: &str) {
    if id.is_empty() {
        v.push(format!("`{field}` must not be empty"));
    } else if id.chars().count() > MAX_ID_LEN {
        v.push(format!("`{field}` must be at most {MAX_ID_LEN} characters"));
    } else if id.chars().any(|c| c.is_control()) {
        v.push(format!("`{field}` must not contain control characters"));
    }
}

pub(crate) fn check_text(v: &mut Violations, field: &str, text: &str) {
    if text.chars().count() > MAX_TEXT_LEN {
        v.push(format!("`{field}` must be at most {MAX_TEXT_LEN} characters"));
    }
}

fn check_integration(v: &mut Violations, prefix: &str, i: &Integration) {
    check_id(v, &format!("{prefix}.id"), &i.id);
    check_text(v, &format!("{prefix}.name"), &i.name);
    check_id(v, &format!("{prefix}.providerIdentifier"), &i.provider_identifier);
}

/// Builds the event for `change` with id `event_id`, created at `now`; `Ok(Err(_))` when
/// the change is not an event.
pub fn build_event(
    change: &DomainChange,
    event_id: String,
    now: Timestamp,
) -> Result<Result<BuiltEvent, NoEventReason>, SenderError> {
    let mut v = Violations::default();
    let (workspace_id, data, only_subscription) = match change {
        DomainChange::Post(c) => {
            check_id(&mut v, "workspaceId", &c.workspace_id);
            check_id(&mut v, "post.id", &c.post.id);
            check_text(&mut v, "post.externalId", &c.post.external_id);
            check_text(&mut v, "post.group", &c.post.group);
            check_integration(&mut v, "post.integration", &c.post.integration);
            v.into_result()?;
            let is_draft_change = c.post.is_draft && !matches!(c.kind, PostChangeKind::Unscheduled);
            if is_draft_change || matches!(c.kind, PostChangeKind::DraftSaved) {
                return Ok(Err(NoEventReason::Draft));
            }
            let post = summarize(&c.post);
            let data = match &c.kind {
                PostChangeKind::Scheduled => EventData::PostScheduled(PostData { post }),
                PostChangeKind::Unscheduled => EventData::PostUnscheduled(PostData { post }),
                PostChangeKind::PublishingStarted => EventData::PostPublishing(PostData { post }),
                PostChangeKind::Published {
                    release_url,
                    release_id,
                } => EventData::PostPublished(PostData {
                    post: post.with_release(release_url.clone(), release_id.clone()),
                }),
                PostChangeKind::Failed { error } => {
                    let text = post.error().unwrap_or(error.message()).to_owned();
                    let post = post.with_state(PostState::Error).with_error(Some(text));
                    EventData::PostFailed(PostFailedData {
                        post,
                        error: error.clone(),
                    })
                }
                PostChangeKind::Deleted { by } => EventData::PostDeleted(PostDeletedData {
                    post,
                    deleted_by: by.clone(),
                }),
                PostChangeKind::DraftSaved => return Ok(Err(NoEventReason::Draft)),
            };
            (&c.workspace_id, data, None)
        }
        DomainChange::Account(c) => {
            check_id(&mut v, "workspaceId", &c.workspace_id);
            check_integration(&mut v, "integration", &c.integration);
            v.into_result()?;
            let integration = c.integration.clone();
            let data = match c.kind {
                AccountChangeKind::Disconnected { reason } => {
                    EventData::IntegrationDisconnected(IntegrationDisconnectedData { integration, reason })
                }
                AccountChangeKind::Reconnected => EventData::IntegrationReconnected(IntegrationData { integration }),
            };
            (&c.workspace_id, data, None)
        }
        DomainChange::Test(t) => {
            check_id(&mut v, "workspaceId", &t.workspace_id);
            check_text(&mut v, "message", &t.message);
            if let Some(id) = &t.subscription_id {
                check_id(&mut v, "subscriptionId", id);
            }
            v.into_result()?;
            (
                &t.workspace_id,
                EventData::WebhookTest(TestData {
                    message: t.message.clone(),
                }),
                t.subscription_id.clone(),
            )
        }
    };
    let event =
        Event::new(event_id, now, workspace_id.clone(), data).map_err(|e| SenderError::invalid(e.to_string()))?;
    let body = event.to_json();
    let ordering_key = OrderingKey::of(&event);
    let post_id = event.data().post().map(|p| p.id().to_owned());
    let external_id = event
        .data()
        .post()
        .map(|p| p.external_id().to_owned())
        .filter(|e| !e.is_empty());
    Ok(Ok(BuiltEvent {
        envelope: Envelope::Event(event),
        body,
        ordering_key,
        post_id,
        external_id,
        only_subscription,
    }))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A post of account `acc1` for tests, with content the bodies must never carry.
    pub(crate) fn record(draft: bool) -> PostRecord {
        PostRecord {
            id: "p1".into(),
            external_id: "ext".into(),
            group: "g".into(),
            state: PostState::Queue,
            is_draft: draft,
            publish_date: Timestamp::from_unix_millis(1_700_000_000_000),
            integration: Integration {
                id: "acc1".into(),
                name: "Acme".into(),
                provider_identifier: "x".into(),
                picture: None,
            },
            release_url: None,
            release_id: None,
            error: None,
            content: "TOP SECRET launch text".into(),
        }
    }

    fn change(draft: bool, kind: PostChangeKind) -> DomainChange {
        DomainChange::Post(PostChange {
            workspace_id: "ws".into(),
            post: record(draft),
            kind,
        })
    }

    #[test]
    fn content_never_reaches_the_body() {
        let built = build_event(
            &change(false, PostChangeKind::Scheduled),
            "msg_1".into(),
            Timestamp::from_unix_millis(0),
        )
        .unwrap()
        .unwrap();
        assert!(!built.body.contains("TOP SECRET"));
        assert_eq!(built.ordering_key, Some(OrderingKey::Post("p1".into())));
        assert_eq!(built.post_id.as_deref(), Some("p1"));
    }

    #[test]
    fn drafts_emit_nothing_except_going_back_to_draft() {
        let now = Timestamp::from_unix_millis(0);
        assert_eq!(
            build_event(&change(true, PostChangeKind::Scheduled), "m".into(), now)
                .unwrap()
                .unwrap_err(),
            NoEventReason::Draft
        );
        assert_eq!(
            build_event(&change(false, PostChangeKind::DraftSaved), "m".into(), now)
                .unwrap()
                .unwrap_err(),
            NoEventReason::Draft
        );
        assert!(
            build_event(&change(true, PostChangeKind::Unscheduled), "m".into(), now)
                .unwrap()
                .is_ok()
        );
    }

    #[test]
    fn malformed_input_is_invalid_request() {
        let mut c = change(false, PostChangeKind::Scheduled);
        if let DomainChange::Post(p) = &mut c {
            p.workspace_id.clear();
            p.post.id = "x".repeat(500);
        }
        let err = build_event(&c, "m".into(), Timestamp::from_unix_millis(0)).unwrap_err();
        assert_eq!(err.messages().len(), 2);
    }
}
