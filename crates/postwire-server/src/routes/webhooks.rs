//! The webhook subscriptions of a workspace: create, list, read, update, delete, pause
//! and resume, send a test event, rotate the secret.
//!
//! Paths follow the spec's `POST /public/v1/workspaces/{workspaceId}/webhooks` and the
//! resource style of Svix and Stripe: the collection, then `/{webhookId}` for one
//! subscription, then a sub-resource (`/enabled`) or an action (`/test`,
//! `/rotate-secret`) below it. A subscription of another workspace is `not_found`, and
//! so is an operator endpoint's id. Creation and update are a subscription's own; the
//! other operations are [`crate::routes::endpoints`]' over [`Subscriptions`].

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use postwire_core::{CreatedByKind, CreatedSubscription, Subscription};
use postwire_sender::NewSubscription;
use postwire_sender::idempotency::Idempotent;

use crate::auth::Caller;
use crate::errors::{ApiError, ApiResult, CommonErrors, ErrorBody, ValidationErrorBody};
use crate::idempotency;
use crate::routes::endpoints::{self, Subscriptions, endpoint_operation, load};
use crate::schemas::{
    CreateWebhookRequest, CreatedWebhookSubscription, UpdateWebhookRequest, WebhookList, WebhookSubscription,
};
use crate::state::AppState;
use crate::tokens::Scope;
use crate::validation::{ApiPath, parse_create, parse_json, parse_update, read_body};

/// Creates a subscription. The response is the only one that ever carries its `secret`.
#[utoipa::path(
    post,
    path = "/public/v1/workspaces/{workspaceId}/webhooks",
    tag = "Webhooks",
    operation_id = "createWebhook",
    params(
        ("workspaceId" = String, Path, description = "A workspace id from `GET /public/v1/workspaces`."),
        ("Idempotency-Key" = Option<String>, Header, description = "1 to 255 visible ASCII characters. The same key with the same body (byte for byte) within 24 h returns the first response (status and body, the same secret) without creating another subscription; keys are per token.", min_length = 1, max_length = 255, pattern = "^[!-~]+$"),
    ),
    request_body(content = CreateWebhookRequest, content_type = "application/json"),
    responses(
        (status = 201, description = "Created; the body carries the signing secret, this once.", body = CreatedWebhookSubscription),
        (status = 400, description = "Validation failed (`invalid_request`): missing or empty `name`; missing, malformed, non-https or non-public `url`; unknown event type; account ids not of this workspace; unknown `signing` choice; wrong JSON type; malformed JSON; body over the size limit.", body = ValidationErrorBody),
        (status = 401, description = "Bearer token missing or invalid (`unauthorized`).", body = ErrorBody),
        (status = 403, description = "The token lacks `webhooks:write` (`insufficient_scope`), may not use the workspace (`forbidden`), or the workspace already has its maximum number of subscriptions (`plan_limit`).", body = ErrorBody),
        (status = 404, description = "No such workspace (`not_found`).", body = ErrorBody),
        (status = 409, description = "`idempotency_key_reused`: the `Idempotency-Key` was used for a different request; or `idempotency_in_progress`: its first request is still running.", body = ErrorBody),
        (status = 429, description = "Hourly API limit exceeded (`rate_limited`); see `Retry-After`.", body = ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds until the limit resets."))),
        (status = "5XX", description = "`internal_error` (500; details in the server log only) or `unavailable` (503, shutting down).", body = ErrorBody),
    ),
    security(("bearer" = ["webhooks:write"]))
)]
pub async fn create_webhook(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(workspace_id): ApiPath<String>,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<(StatusCode, HeaderMap, Json<CreatedSubscription>)> {
    caller.authorize(&state, Scope::WebhooksWrite, &workspace_id).await?;
    let bytes = read_body(body, state.max_body_bytes).await?;
    let key = idempotency::key_of(&headers, &caller.0.id, "POST", uri.path(), &bytes)?;
    let input = parse_create(parse_json(&bytes)?.as_ref())?;
    let new = NewSubscription {
        workspace_id: workspace_id.clone(),
        name: input.name,
        url: input.url,
        events: input.events,
        integration_ids: input.integration_ids,
        created_by_kind: CreatedByKind::ApiToken,
        signing: input.signing,
    };
    let mut response_headers = HeaderMap::new();
    let _one_creation_at_a_time = state.create_lock.lock().await;
    let max = state.limits.max_subscriptions_per_workspace;
    if state.sender.list_subscriptions(&workspace_id).await?.len() as u64 >= max {
        return Err(ApiError::PlanLimit(max));
    }
    let created = match key {
        None => state.sender.create_subscription(new).await?,
        Some(key) => match state.sender.create_subscription_idempotent(new, key).await? {
            Idempotent::Fresh(created) => created,
            Idempotent::Replayed(created) => {
                idempotency::mark_replayed(&mut response_headers);
                return Ok((StatusCode::CREATED, response_headers, Json(created)));
            }
        },
    };
    tracing::info!(subscription_id = %created.subscription.id, workspace_id = %workspace_id, token_id = %caller.0.id, "subscription created");
    Ok((StatusCode::CREATED, response_headers, Json(created)))
}

endpoint_operation! {
    /// Lists the subscriptions of a workspace, oldest first.
    list Subscriptions "webhookId" => list_webhooks, "listWebhooks", WebhookList
}

/// Reads one subscription.
#[utoipa::path(
    get,
    path = "/public/v1/workspaces/{workspaceId}/webhooks/{webhookId}",
    tag = "Webhooks",
    operation_id = "getWebhook",
    params(("workspaceId" = String, Path, description = "Workspace id."), ("webhookId" = String, Path, description = "Subscription id.")),
    responses(
        (status = 200, description = "The subscription.", body = WebhookSubscription),
        (status = 400, description = "`invalid_request`: invalid `webhookId` (empty, over 200 characters, or with a control character).", body = ValidationErrorBody),
        (status = 401, description = "`unauthorized`.", body = ErrorBody),
        (status = 403, description = "`insufficient_scope` (needs `webhooks:read`) or `forbidden`.", body = ErrorBody),
        (status = 404, description = "No such workspace or subscription (`not_found`).", body = ErrorBody),
        CommonErrors,
    ),
    security(("bearer" = ["webhooks:read"]))
)]
pub async fn get_webhook(
    state: State<AppState>,
    caller: Caller,
    path: ApiPath<(String, String)>,
) -> ApiResult<Json<Subscription>> {
    endpoints::get::<Subscriptions>(state, caller, path).await
}

/// Changes a subscription's name, URL, event types, account restriction or `signing`
/// choice; fields left out keep their value.
#[utoipa::path(
    patch,
    path = "/public/v1/workspaces/{workspaceId}/webhooks/{webhookId}",
    tag = "Webhooks",
    operation_id = "updateWebhook",
    params(("workspaceId" = String, Path, description = "Workspace id."), ("webhookId" = String, Path, description = "Subscription id.")),
    request_body(content = UpdateWebhookRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "The updated subscription.", body = WebhookSubscription),
        (status = 400, description = "Validation failed (`invalid_request`), with the same rules as creation (`null` is refused), or an invalid `webhookId` (empty, over 200 characters, or with a control character).", body = ValidationErrorBody),
        (status = 401, description = "`unauthorized`.", body = ErrorBody),
        (status = 403, description = "`insufficient_scope` (needs `webhooks:write`) or `forbidden`.", body = ErrorBody),
        (status = 404, description = "No such workspace or subscription (`not_found`).", body = ErrorBody),
        CommonErrors,
    ),
    security(("bearer" = ["webhooks:write"]))
)]
pub async fn update_webhook(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath((workspace_id, webhook_id)): ApiPath<(String, String)>,
    body: Body,
) -> ApiResult<Json<Subscription>> {
    caller.authorize(&state, Scope::WebhooksWrite, &workspace_id).await?;
    load::<Subscriptions>(&state, &workspace_id, &webhook_id).await?;
    let bytes = read_body(body, state.max_body_bytes).await?;
    let update = parse_update(parse_json(&bytes)?.as_ref())?;
    let record = state.sender.update_subscription(&webhook_id, update).await?;
    tracing::info!(subscription_id = %webhook_id, token_id = %caller.0.id, "subscription updated");
    Ok(Json(record.subscription))
}

endpoint_operation! {
    /// Deletes a subscription, with its deliveries.
    delete Subscriptions "webhookId" => delete_webhook, "deleteWebhook"
}

endpoint_operation! {
    /// Pauses (`{"enabled": false}`) or resumes (`{"enabled": true}`) a subscription.
    /// While paused its events are held; on resume those held during the last 7 days are
    /// delivered in order and older ones expire. Resuming also resets
    /// `consecutiveFailures`. Setting the current state again changes nothing.
    set_enabled Subscriptions "webhookId" => set_webhook_enabled, "setWebhookEnabled", WebhookSubscription
}

endpoint_operation! {
    /// Sends a `webhook.test` event to this subscription only, whatever its event filter.
    /// It is delivered, signed and retried like any event (held while paused).
    send_test Subscriptions "webhookId" => send_test_event, "sendTestEvent"
}

endpoint_operation! {
    /// Replaces the signing secret. The new secret is returned this once; for the next 24
    /// hours every delivery carries two signatures, one with each secret, so receivers can
    /// switch without losing a delivery.
    rotate_secret Subscriptions "webhookId" => rotate_webhook_secret, "rotateWebhookSecret"
}
