//! A publishing service that embeds `postwire-sender`: its own domain model (posts and
//! social accounts), and the one place where domain changes become webhook events.
//!
//! The pattern: change your record, then report the change with [`Sender::publish`].
//! `publish` returns once the event and one delivery per matching subscription are on
//! disk (SQLite here), so an accepted event is never lost, even if the process dies; the
//! dispatcher delivers it in the background, signed, retried for about a day, in order
//! per post and per account. You never build JSON, sign, retry or order anything.
//!
//! Two rules the sender enforces for you: drafts emit no events (report every change,
//! drafts included; the sender drops them), and post content never reaches an event (the
//! summary type has no field for it).

use postwire_core::{Actor, DisconnectReason, EventError, Integration, PostState, Timestamp};
use postwire_sender::{
    AccountChange, AccountChangeKind, PostChange, PostChangeKind, PostRecord, Published, Sender, SenderError, Workspace,
};

/// A connected social account, as this service keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    /// Account id.
    pub id: String,
    /// Display name.
    pub name: String,
    /// Provider, e.g. `linkedin`.
    pub provider: String,
}

/// Where a post is in its life, as this service models it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PostStatus {
    /// Being written; no events.
    Draft,
    /// Approved and queued for `publish_at`.
    Scheduled,
    /// Being sent to the provider.
    Publishing,
    /// Live on the provider.
    Published {
        /// Address of the live post.
        url: String,
        /// The provider's id for it.
        release_id: String,
    },
    /// Could not be published.
    Failed {
        /// Why.
        error: EventError,
    },
}

/// A post, as this service keeps it (with its content, which events never carry).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Post {
    /// Post id.
    pub id: String,
    /// The workspace it belongs to.
    pub workspace_id: String,
    /// The client's own reference.
    pub external_id: String,
    /// Group (campaign) id.
    pub group: String,
    /// The account it is for.
    pub account: Account,
    /// The text. Never sent in a webhook.
    pub content: String,
    /// When it is to go out.
    pub publish_at: Timestamp,
    /// Where it is in its life.
    pub status: PostStatus,
}

impl Post {
    /// The record the sender summarizes into `data.post`.
    fn record(&self) -> PostRecord {
        let (state, release_url, release_id, error) = match &self.status {
            PostStatus::Draft | PostStatus::Scheduled => (PostState::Queue, None, None, None),
            PostStatus::Publishing => (PostState::Publishing, None, None, None),
            PostStatus::Published { url, release_id } => {
                (PostState::Published, Some(url.clone()), Some(release_id.clone()), None)
            }
            PostStatus::Failed { error } => (PostState::Error, None, None, Some(error.message().to_owned())),
        };
        PostRecord {
            id: self.id.clone(),
            external_id: self.external_id.clone(),
            group: self.group.clone(),
            state,
            is_draft: self.status == PostStatus::Draft,
            publish_date: self.publish_at,
            integration: self.account.integration(),
            release_url,
            release_id,
            error,
            content: self.content.clone(),
        }
    }
}

impl Account {
    fn integration(&self) -> Integration {
        Integration {
            id: self.id.clone(),
            name: self.name.clone(),
            provider_identifier: self.provider.clone(),
            picture: None,
        }
    }
}

/// The service's post operations. Each changes the post, then reports the change.
///
/// In a real service the post lives in your database: write it first, then call
/// `publish`; if `publish` fails (the sender's disk), retry it or fail the request.
pub struct Posts<'a> {
    sender: &'a Sender,
}

impl<'a> Posts<'a> {
    /// Operations that report to `sender`.
    pub fn new(sender: &'a Sender) -> Self {
        Posts { sender }
    }

    /// Registers a workspace and its accounts with the sender (idempotent), so
    /// subscriptions can be limited to accounts.
    pub async fn register(&self, workspace: Workspace, accounts: &[Account]) -> Result<(), SenderError> {
        let id = workspace.id.clone();
        self.sender.upsert_workspace(workspace).await?;
        for a in accounts {
            self.sender.upsert_integration(&id, a.integration()).await?;
        }
        Ok(())
    }

    async fn report(&self, post: &Post, kind: PostChangeKind) -> Result<Published, SenderError> {
        self.sender
            .publish(PostChange {
                workspace_id: post.workspace_id.clone(),
                post: post.record(),
                kind,
            })
            .await
    }

    /// Saves a draft. Reported like any change; drafts emit no event.
    pub async fn save_draft(&self, post: &mut Post, content: &str) -> Result<Published, SenderError> {
        post.content = content.to_owned();
        post.status = PostStatus::Draft;
        self.report(post, PostChangeKind::DraftSaved).await
    }

    /// Approves and queues a post: `post.scheduled`.
    pub async fn schedule(&self, post: &mut Post, at: Timestamp) -> Result<Published, SenderError> {
        post.publish_at = at;
        post.status = PostStatus::Scheduled;
        self.report(post, PostChangeKind::Scheduled).await
    }

    /// Sends a queued post back to draft: `post.unscheduled`.
    pub async fn unschedule(&self, post: &mut Post) -> Result<Published, SenderError> {
        post.status = PostStatus::Draft;
        self.report(post, PostChangeKind::Unscheduled).await
    }

    /// The publishing job picked the post up: `post.publishing`.
    pub async fn start_publishing(&self, post: &mut Post) -> Result<Published, SenderError> {
        post.status = PostStatus::Publishing;
        self.report(post, PostChangeKind::PublishingStarted).await
    }

    /// The provider accepted it: `post.published`.
    pub async fn published(&self, post: &mut Post, url: &str, release_id: &str) -> Result<Published, SenderError> {
        post.status = PostStatus::Published {
            url: url.to_owned(),
            release_id: release_id.to_owned(),
        };
        let kind = PostChangeKind::Published {
            release_url: url.to_owned(),
            release_id: release_id.to_owned(),
        };
        self.report(post, kind).await
    }

    /// The provider refused it: `post.failed`.
    pub async fn failed(&self, post: &mut Post, error: EventError) -> Result<Published, SenderError> {
        post.status = PostStatus::Failed { error: error.clone() };
        self.report(post, PostChangeKind::Failed { error }).await
    }

    /// Deleted by someone: `post.deleted`.
    pub async fn delete(&self, post: &Post, by: Actor) -> Result<Published, SenderError> {
        self.report(post, PostChangeKind::Deleted { by }).await
    }

    /// The account's token stopped working: `integration.disconnected`.
    pub async fn account_disconnected(
        &self,
        workspace_id: &str,
        account: &Account,
        reason: DisconnectReason,
    ) -> Result<Published, SenderError> {
        let change = AccountChange {
            workspace_id: workspace_id.to_owned(),
            integration: account.integration(),
            kind: AccountChangeKind::Disconnected { reason },
        };
        self.sender.publish(change).await
    }

    /// The account works again: `integration.reconnected`.
    pub async fn account_reconnected(&self, workspace_id: &str, account: &Account) -> Result<Published, SenderError> {
        let change = AccountChange {
            workspace_id: workspace_id.to_owned(),
            integration: account.integration(),
            kind: AccountChangeKind::Reconnected,
        };
        self.sender.publish(change).await
    }
}
