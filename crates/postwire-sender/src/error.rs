//! The one error type of the sender's public API, and its stable string codes.
//!
//! Every public entry point returns [`SenderError`]. Its [`SenderErrorCode`] uses the
//! spec's error codes where one fits (`invalid_request`, `not_found`), so the HTTP layer
//! can map an error to a status and a body without looking at the message. Messages are
//! written for the API client, and never contain secrets.

use std::fmt;

/// A stable, machine-readable error code. The [`as_str`](SenderErrorCode::as_str) form
/// never changes between releases; new codes may be added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SenderErrorCode {
    /// The request is malformed or breaks a rule (status 400 in the spec's error body).
    InvalidRequest,
    /// The subscription, workspace or other resource does not exist.
    NotFound,
    /// The sender is shutting down and accepts no more work.
    Unavailable,
    /// The store failed (disk full, corrupt file, lost connection). Not the caller's fault.
    Internal,
    /// An idempotency key was sent again with a different request (status 409).
    IdempotencyKeyReused,
    /// An idempotency key's first request is still running (status 409).
    IdempotencyInProgress,
    /// The workspace already has its maximum number of subscriptions (status 403).
    PlanLimit,
    /// A resend asked for a delivery that is not finished yet (status 409): it will be
    /// attempted anyway, so there is nothing to resend.
    DeliveryUnfinished,
    /// A resend asked for a delivery whose event's payload was erased (status 410): there
    /// is no body left to send, and there never will be.
    PayloadErased,
}

impl SenderErrorCode {
    /// The stable string form, e.g. `"not_found"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            SenderErrorCode::InvalidRequest => "invalid_request",
            SenderErrorCode::NotFound => "not_found",
            SenderErrorCode::Unavailable => "unavailable",
            SenderErrorCode::Internal => "internal_error",
            SenderErrorCode::IdempotencyKeyReused => "idempotency_key_reused",
            SenderErrorCode::IdempotencyInProgress => "idempotency_in_progress",
            SenderErrorCode::PlanLimit => "plan_limit",
            SenderErrorCode::DeliveryUnfinished => "delivery_unfinished",
            SenderErrorCode::PayloadErased => "payload_erased",
        }
    }

    /// The HTTP status that goes with the code, for the API layer.
    pub const fn http_status(self) -> u16 {
        match self {
            SenderErrorCode::InvalidRequest => 400,
            SenderErrorCode::NotFound => 404,
            SenderErrorCode::Unavailable => 503,
            SenderErrorCode::Internal => 500,
            SenderErrorCode::IdempotencyKeyReused
            | SenderErrorCode::IdempotencyInProgress
            | SenderErrorCode::DeliveryUnfinished => 409,
            SenderErrorCode::PlanLimit => 403,
            SenderErrorCode::PayloadErased => 410,
        }
    }
}

impl fmt::Display for SenderErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What kind of resource was not found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Resource {
    /// A workspace.
    Workspace,
    /// A webhook subscription.
    Subscription,
    /// A connected account (integration) of a workspace.
    Integration,
    /// A delivery of a subscription.
    Delivery,
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Resource::Workspace => "workspace",
            Resource::Subscription => "webhook subscription",
            Resource::Integration => "integration",
            Resource::Delivery => "delivery",
        })
    }
}

/// Everything a sender operation can fail with.
///
/// ```
/// use postwire_sender::{SenderError, SenderErrorCode};
/// let err = SenderError::invalid("`url` must use https");
/// assert_eq!(err.code(), SenderErrorCode::InvalidRequest);
/// assert_eq!(err.code().as_str(), "invalid_request");
/// assert_eq!(err.messages(), ["`url` must use https"]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SenderError {
    /// One or more validation failures, each a sentence for the client.
    #[error("invalid request: {}", .messages.join("; "))]
    InvalidRequest {
        /// The violations, at least one.
        messages: Vec<String>,
    },
    /// The resource does not exist (or belongs to another workspace).
    #[error("{resource} `{id}` not found")]
    NotFound {
        /// What was looked for.
        resource: Resource,
        /// The identifier given (truncated to 64 characters).
        id: String,
    },
    /// The sender is shutting down.
    #[error("the sender is shutting down")]
    Unavailable,
    /// The idempotency key was used for a different request within 24 h.
    #[error("this Idempotency-Key was already used for a different request")]
    IdempotencyKeyReused,
    /// The idempotency key's first request is still running.
    #[error("a request with this Idempotency-Key is still running; retry shortly")]
    IdempotencyInProgress,
    /// The workspace already has `limit` subscriptions
    /// ([`SenderConfig::max_subscriptions_per_workspace`](crate::SenderConfig)).
    #[error("the workspace already has its maximum of {limit} subscriptions")]
    PlanLimit {
        /// The maximum.
        limit: u64,
    },
    /// A resend of a delivery that is still pending, waiting for a retry or held: a
    /// state conflict, not a malformed request (it will be attempted without a resend).
    #[error("delivery `{delivery}` is not finished yet; it will be attempted without a resend")]
    DeliveryUnfinished {
        /// The delivery's id.
        delivery: String,
    },
    /// A resend of a delivery whose event's payload was erased: gone for good.
    #[error("the payload of delivery `{delivery}` was erased; it cannot be sent again")]
    PayloadErased {
        /// The delivery's id.
        delivery: String,
    },
    /// The store failed. The detail is for logs; it never holds secrets.
    #[error("storage error: {detail}")]
    Storage {
        /// What the store reported.
        detail: String,
    },
}

impl SenderError {
    /// The stable code of this error.
    pub fn code(&self) -> SenderErrorCode {
        match self {
            SenderError::InvalidRequest { .. } => SenderErrorCode::InvalidRequest,
            SenderError::NotFound { .. } => SenderErrorCode::NotFound,
            SenderError::Unavailable => SenderErrorCode::Unavailable,
            SenderError::Storage { .. } => SenderErrorCode::Internal,
            SenderError::IdempotencyKeyReused => SenderErrorCode::IdempotencyKeyReused,
            SenderError::IdempotencyInProgress => SenderErrorCode::IdempotencyInProgress,
            SenderError::PlanLimit { .. } => SenderErrorCode::PlanLimit,
            SenderError::DeliveryUnfinished { .. } => SenderErrorCode::DeliveryUnfinished,
            SenderError::PayloadErased { .. } => SenderErrorCode::PayloadErased,
        }
    }

    /// The messages for the spec's validation body (`message` as a string or an array).
    pub fn messages(&self) -> Vec<String> {
        match self {
            SenderError::InvalidRequest { messages } => messages.clone(),
            other => vec![other.to_string()],
        }
    }

    /// One validation failure.
    pub fn invalid(message: impl Into<String>) -> Self {
        SenderError::InvalidRequest {
            messages: vec![message.into()],
        }
    }

    /// A missing resource; long ids are truncated.
    pub fn not_found(resource: Resource, id: &str) -> Self {
        let id = match id.char_indices().nth(64) {
            Some((i, _)) => format!("{}…", &id[..i]),
            None => id.to_owned(),
        };
        SenderError::NotFound { resource, id }
    }

    /// A storage failure.
    pub fn storage(detail: impl fmt::Display) -> Self {
        SenderError::Storage {
            detail: detail.to_string(),
        }
    }
}

/// Collects validation failures so a request reports all of them at once.
#[derive(Debug, Default)]
pub(crate) struct Violations(Vec<String>);

impl Violations {
    pub(crate) fn push(&mut self, message: impl Into<String>) {
        self.0.push(message.into());
    }

    pub(crate) fn into_result(self) -> Result<(), SenderError> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(SenderError::InvalidRequest { messages: self.0 })
        }
    }
}
