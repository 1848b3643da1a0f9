//! Resend one delivery and recover a subscription's failures: the replay operations of
//! Svix (`resend`, `recover`) on the spec's paths.
//!
//! `POST …/webhooks/{webhookId}/deliveries/{deliveryId}/resend` queues a new attempt
//! series of a finished delivery's event (same `webhook-id`, same body, signed afresh),
//! behind any unfinished delivery of its post or account. `POST …/webhooks/{webhookId}/recover`
//! does that for every delivery that failed for good since a time, at most
//! [`MAX_RECOVER`] per call, each once. Both are [`Sender::resend`](postwire_sender::Sender::resend)
//! and [`Sender::recover`](postwire_sender::Sender::recover).

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::StatusCode;
use postwire_sender::MAX_RECOVER;

use crate::auth::Caller;
use crate::errors::{ApiResult, CommonErrors, ErrorBody, ValidationErrorBody};
use crate::routes::endpoints::{Subscriptions, endpoint_operation, load};
use crate::schemas::{RecoverRequest, RecoverResult};
use crate::state::AppState;
use crate::tokens::Scope;
use crate::validation::{ApiPath, parse_json, parse_recover, read_body};

endpoint_operation! {
    /// Resends one finished delivery (delivered, failed or expired), payload not erased.
    resend Subscriptions "webhookId" => resend_delivery, "resendDelivery"
}

/// Resends every delivery of the subscription that failed for good since a time.
#[utoipa::path(
    post,
    path = "/public/v1/workspaces/{workspaceId}/webhooks/{webhookId}/recover",
    tag = "Webhooks",
    operation_id = "recoverFailedDeliveries",
    params(("workspaceId" = String, Path, description = "Workspace id."), ("webhookId" = String, Path, description = "Subscription id.")),
    request_body(content = RecoverRequest, content_type = "application/json"),
    responses(
        (status = 202, description = "The failed deliveries since `since` that were not resent before, and whose payload was not erased, are queued again, in publish order (at most 1000 per call; call again until `queued` is 0). A `since` in the future queues nothing.", body = RecoverResult),
        (status = 400, description = "`invalid_request`: the body is not `{\"since\": date-time}`, or an invalid `webhookId`.", body = ValidationErrorBody),
        (status = 401, description = "`unauthorized`.", body = ErrorBody),
        (status = 403, description = "`insufficient_scope` (needs `webhooks:write`) or `forbidden`.", body = ErrorBody),
        (status = 404, description = "No such workspace or subscription (`not_found`).", body = ErrorBody),
        CommonErrors,
    ),
    security(("bearer" = ["webhooks:write"]))
)]
pub async fn recover_failed(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath((workspace_id, webhook_id)): ApiPath<(String, String)>,
    body: Body,
) -> ApiResult<(StatusCode, Json<RecoverResult>)> {
    caller.authorize(&state, Scope::WebhooksWrite, &workspace_id).await?;
    load::<Subscriptions>(&state, &workspace_id, &webhook_id).await?;
    let bytes = read_body(body, state.max_body_bytes).await?;
    let since = parse_recover(parse_json(&bytes)?.as_ref())?;
    let queued = state.sender.recover(&webhook_id, since).await?;
    debug_assert!(queued <= MAX_RECOVER as u64);
    tracing::info!(subscription_id = %webhook_id, queued, token_id = %caller.0.id, "failed deliveries recovered");
    Ok((StatusCode::ACCEPTED, Json(RecoverResult { queued })))
}
