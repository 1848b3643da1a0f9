//! The one error type of the HTTP API, and how it becomes a response.
//!
//! Every failure, whatever its status, answers with the spec's error body
//! `{"statusCode", "code", "message"}`; validation failures (400) carry `message` as a
//! string, or as an array when several rules failed. Codes are the spec's stable codes
//! (`invalid_request`, `unauthorized`, `insufficient_scope`, `forbidden`, `not_found`,
//! `rate_limited`, `plan_limit`, `quota_exceeded`) plus `method_not_allowed`,
//! `request_timeout`, `unavailable` and `internal_error` for the statuses the spec does
//! not name. Messages are written for the client and never carry
//! secret material: storage details are logged, not returned.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use postwire_sender::{SenderError, SenderErrorCode};
use serde::Serialize;

use crate::db::DbError;
use crate::scope::{Scope, UnknownScope};

/// Everything an API call can fail with. Converts into the spec's error body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApiError {
    /// 400 `invalid_request`: one or more validation failures.
    #[error("invalid request: {}", .0.join("; "))]
    Invalid(Vec<String>),
    /// 401 `unauthorized`: no bearer token, or one that is unknown or revoked.
    #[error("unauthorized: {0}")]
    Unauthorized(&'static str),
    /// 403 `insufficient_scope`: the token lacks the scope the operation needs.
    #[error("the token lacks the `{}` scope", .0.as_str())]
    InsufficientScope(Scope),
    /// 403 `forbidden`: the workspace is outside the token's selection.
    #[error("the token may not use workspace `{0}`")]
    Forbidden(String),
    /// 404 `not_found`: no such workspace, subscription or route.
    #[error("{0}")]
    NotFound(String),
    /// 405 `method_not_allowed`.
    #[error("method not allowed")]
    MethodNotAllowed,
    /// 408 `request_timeout`: the request body did not arrive within the body-read
    /// timeout.
    #[error("the request body did not arrive within {0} s")]
    RequestTimeout(u64),
    /// 403 `plan_limit`: the workspace already has its maximum number of subscriptions.
    #[error("the workspace has reached its limit of {0} subscriptions; delete one first")]
    PlanLimit(u64),
    /// 403 `plan_limit`: the workspace already has its maximum number of operator
    /// endpoints.
    #[error("the workspace has reached its limit of {0} operator endpoints; delete one first")]
    OperatorEndpointLimit(u64),
    /// 429 `quota_exceeded`: the workspace's daily event quota is used up.
    #[error("the workspace's daily quota of {limit} events is used up; it resets at 00:00 UTC")]
    QuotaExceeded {
        /// The daily quota.
        limit: u64,
        /// Seconds until the quota resets (`Retry-After`).
        retry_after_secs: u64,
    },
    /// 409 `idempotency_key_reused` or `idempotency_in_progress`.
    #[error("{message}")]
    Conflict {
        /// The stable code.
        code: &'static str,
        /// What happened.
        message: String,
    },
    /// 410 `payload_erased`: a resend of a delivery whose event's payload was erased.
    #[error("{0}")]
    PayloadErased(String),
    /// 429 `rate_limited`, with the seconds until the window resets (`Retry-After`).
    #[error("hourly API limit of {limit} requests exceeded")]
    RateLimited {
        /// The hourly limit.
        limit: u32,
        /// Seconds until a request is accepted again.
        retry_after_secs: u64,
    },
    /// 503 `unavailable`: the server is shutting down.
    #[error("the server is shutting down; retry shortly")]
    Unavailable,
    /// 500 `internal_error`. The detail is logged, never returned.
    #[error("internal error")]
    Internal(String),
}

/// The spec's error body (every status but 400).
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ErrorBody {
    /// The HTTP status, repeated.
    #[schema(example = 401, minimum = 401, maximum = 599)]
    pub status_code: u16,
    /// A stable code, e.g. `unauthorized`.
    #[schema(value_type = ErrorCodeName, example = "unauthorized")]
    pub code: String,
    /// A sentence for a human.
    #[schema(example = "a bearer token is required: Authorization: Bearer <API_TOKEN>")]
    pub message: String,
}

/// The error answers every API operation documents besides its own: the hourly rate
/// limit and server-side failures. Operations list it in their `responses(...)` once,
/// instead of repeating both entries.
#[derive(utoipa::IntoResponses)]
pub enum CommonErrors {
    /// The hourly limit.
    #[response(
        status = 429,
        description = "`rate_limited`; see `Retry-After`.",
        headers(("Retry-After" = u64, description = "Seconds until the limit resets."))
    )]
    RateLimited(ErrorBody),
    /// A failure on the server's side.
    #[response(
        status = "5XX",
        description = "`internal_error` (500; details in the server log only) or `unavailable` (503, shutting down)."
    )]
    ServerError(ErrorBody),
}

/// The spec's validation error body (status 400): `message` is a string, or an array of
/// strings when several rules failed.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ValidationErrorBody {
    /// One violation, or several.
    pub message: ValidationMessage,
    /// Always `invalid_request`.
    #[schema(value_type = InvalidRequestCode, example = "invalid_request")]
    pub code: String,
    /// Always 400.
    #[schema(example = 400, minimum = 400, maximum = 400)]
    pub status_code: u16,
}

/// The stable codes of [`ErrorBody`], one per [`ApiError`] variant but `Invalid` (whose
/// body is a [`ValidationErrorBody`]). Documents them; [`ApiError::code`] writes them.
#[derive(Debug, Clone, Copy, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCodeName {
    /// 401: no bearer token, or one that is unknown or revoked.
    Unauthorized,
    /// 403: the token lacks the operation's scope.
    InsufficientScope,
    /// 403: the workspace is outside the token's selection.
    Forbidden,
    /// 404: no such workspace, subscription or route.
    NotFound,
    /// 405: known path, other method.
    MethodNotAllowed,
    /// 408: the request body did not arrive within the body-read timeout.
    RequestTimeout,
    /// 403: the workspace has its maximum number of subscriptions (or of operator
    /// endpoints).
    PlanLimit,
    /// 429: the workspace's daily event quota (ingest) is used up.
    QuotaExceeded,
    /// 409: the `Idempotency-Key` was used for a different request.
    IdempotencyKeyReused,
    /// 409: the `Idempotency-Key`'s first request is still running.
    IdempotencyInProgress,
    /// 409: a resend of a delivery that is not finished (it will be attempted anyway).
    DeliveryUnfinished,
    /// 410: a resend of a delivery whose event's payload was erased (it is gone for good).
    PayloadErased,
    /// 429: the hourly limit.
    RateLimited,
    /// 503: shutting down.
    Unavailable,
    /// 500: a failure on the server's side.
    InternalError,
}

/// The one code of a [`ValidationErrorBody`].
#[derive(Debug, Clone, Copy, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum InvalidRequestCode {
    /// 400: validation failed.
    InvalidRequest,
}

/// `message` of a validation error: one string, or an array when several rules failed.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum ValidationMessage {
    /// A single violation.
    One(String),
    /// Several violations.
    Many(Vec<String>),
}

impl ApiError {
    /// One validation failure.
    pub fn invalid(message: impl Into<String>) -> Self {
        ApiError::Invalid(vec![message.into()])
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::Invalid(_) => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            ApiError::InsufficientScope(_) | ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::RequestTimeout(_) => StatusCode::REQUEST_TIMEOUT,
            ApiError::PlanLimit(_) | ApiError::OperatorEndpointLimit(_) => StatusCode::FORBIDDEN,
            ApiError::QuotaExceeded { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Conflict { .. } => StatusCode::CONFLICT,
            ApiError::PayloadErased(_) => StatusCode::GONE,
            ApiError::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The stable code.
    pub fn code(&self) -> &'static str {
        match self {
            ApiError::Invalid(_) => "invalid_request",
            ApiError::Unauthorized(_) => "unauthorized",
            ApiError::InsufficientScope(_) => "insufficient_scope",
            ApiError::Forbidden(_) => "forbidden",
            ApiError::NotFound(_) => "not_found",
            ApiError::MethodNotAllowed => "method_not_allowed",
            ApiError::RequestTimeout(_) => "request_timeout",
            ApiError::PlanLimit(_) | ApiError::OperatorEndpointLimit(_) => "plan_limit",
            ApiError::QuotaExceeded { .. } => "quota_exceeded",
            ApiError::Conflict { code, .. } => code,
            ApiError::PayloadErased(_) => "payload_erased",
            ApiError::RateLimited { .. } => "rate_limited",
            ApiError::Unavailable => "unavailable",
            ApiError::Internal(_) => "internal_error",
        }
    }

    fn message(&self) -> String {
        match self {
            ApiError::Unauthorized(why) => (*why).to_owned(),
            ApiError::RateLimited {
                limit,
                retry_after_secs,
            } => {
                format!("hourly API limit of {limit} requests exceeded; retry in {retry_after_secs} s")
            }
            ApiError::Internal(_) => "internal error; the server log has the details".to_owned(),
            other => other.to_string(),
        }
    }
}

impl From<SenderError> for ApiError {
    fn from(e: SenderError) -> Self {
        if let SenderError::PlanLimit { limit } = e {
            return ApiError::PlanLimit(limit);
        }
        match e.code() {
            SenderErrorCode::InvalidRequest => ApiError::Invalid(e.messages()),
            SenderErrorCode::NotFound => ApiError::NotFound(e.to_string()),
            SenderErrorCode::Unavailable => ApiError::Unavailable,
            code @ (SenderErrorCode::IdempotencyKeyReused
            | SenderErrorCode::IdempotencyInProgress
            | SenderErrorCode::DeliveryUnfinished) => ApiError::Conflict {
                code: code.as_str(),
                message: e.to_string(),
            },
            SenderErrorCode::PayloadErased => ApiError::PayloadErased(e.to_string()),
            _ => ApiError::Internal(e.to_string()),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let mut response = match &self {
            ApiError::Invalid(messages) => {
                let message = match messages.as_slice() {
                    [one] => ValidationMessage::One(one.clone()),
                    [] => ValidationMessage::One("invalid request".to_owned()),
                    many => ValidationMessage::Many(many.to_vec()),
                };
                let body = ValidationErrorBody {
                    message,
                    code: "invalid_request".to_owned(),
                    status_code: 400,
                };
                (status, axum::Json(body)).into_response()
            }
            other => {
                if let ApiError::Internal(detail) = other {
                    tracing::error!(detail = %detail, "internal error");
                }
                let body = ErrorBody {
                    status_code: status.as_u16(),
                    code: other.code().to_owned(),
                    message: other.message(),
                };
                (status, axum::Json(body)).into_response()
            }
        };
        let headers = response.headers_mut();
        match &self {
            ApiError::Unauthorized(_) => {
                headers.insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static("Bearer realm=\"postwire\""),
                );
            }
            ApiError::InsufficientScope(scope) => {
                let value = format!(
                    "Bearer realm=\"postwire\", error=\"insufficient_scope\", scope=\"{}\"",
                    scope.as_str()
                );
                if let Ok(v) = HeaderValue::from_str(&value) {
                    headers.insert(header::WWW_AUTHENTICATE, v);
                }
            }
            ApiError::RateLimited { retry_after_secs, .. } | ApiError::QuotaExceeded { retry_after_secs, .. } => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(*retry_after_secs));
            }
            _ => {}
        }
        response
    }
}

/// What every handler returns.
pub type ApiResult<T> = Result<T, ApiError>;

impl From<UnknownScope> for ApiError {
    fn from(e: UnknownScope) -> ApiError {
        ApiError::invalid(e.to_string())
    }
}

impl From<DbError> for ApiError {
    /// A failure of the server's tables is an internal error; the client never sees
    /// its detail.
    fn from(e: DbError) -> ApiError {
        ApiError::Internal(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_sent_is_a_documented_one() {
        let documented: Vec<String> = [
            ErrorCodeName::Unauthorized,
            ErrorCodeName::InsufficientScope,
            ErrorCodeName::Forbidden,
            ErrorCodeName::NotFound,
            ErrorCodeName::MethodNotAllowed,
            ErrorCodeName::RequestTimeout,
            ErrorCodeName::PlanLimit,
            ErrorCodeName::QuotaExceeded,
            ErrorCodeName::IdempotencyKeyReused,
            ErrorCodeName::IdempotencyInProgress,
            ErrorCodeName::DeliveryUnfinished,
            ErrorCodeName::PayloadErased,
            ErrorCodeName::RateLimited,
            ErrorCodeName::Unavailable,
            ErrorCodeName::InternalError,
        ]
        .iter()
        .map(|c| serde_json::to_value(c).unwrap().as_str().unwrap().to_owned())
        .collect();
        let errors = [
            ApiError::Unauthorized("x"),
            ApiError::InsufficientScope(Scope::WebhooksRead),
            ApiError::Forbidden("ws".into()),
            ApiError::NotFound("x".into()),
            ApiError::MethodNotAllowed,
            ApiError::RequestTimeout(1),
            ApiError::PlanLimit(1),
            ApiError::QuotaExceeded {
                limit: 1,
                retry_after_secs: 1,
            },
            SenderError::IdempotencyKeyReused.into(),
            SenderError::IdempotencyInProgress.into(),
            SenderError::DeliveryUnfinished {
                delivery: "dlv_1".into(),
            }
            .into(),
            SenderError::PayloadErased {
                delivery: "dlv_1".into(),
            }
            .into(),
            ApiError::RateLimited {
                limit: 1,
                retry_after_secs: 1,
            },
            ApiError::Unavailable,
            ApiError::Internal("x".into()),
        ];
        for e in &errors {
            assert!(documented.iter().any(|d| d == e.code()), "{} is documented", e.code());
        }
        assert_eq!(errors.len(), documented.len());
        assert_eq!(
            serde_json::to_value(InvalidRequestCode::InvalidRequest).unwrap(),
            ApiError::invalid("x").code()
        );
    }
}
