//! A workspace's operator endpoints: create, list, delete, pause or resume, rotate the
//! secret, send a test notice, list an endpoint's deliveries and resend one.
//!
//! An operator endpoint is the workspace operator's own webhook endpoint, kept apart from
//! the subscribers' subscriptions (`…/webhooks`): it receives the operational notices
//! about the workspace's endpoints (`endpoint.failing`, `endpoint.paused`, …, see
//! [`postwire_core::OperationalEventType`]) as signed webhooks, through the same queue,
//! retries and SSRF checks, each with its own `whsec_` secret. A notice about an
//! operator endpoint never goes to that endpoint itself. At most
//! [`postwire_sender::MAX_OPERATOR_ENDPOINTS`] per workspace.
//!
//! The two kinds share one id space and one table in the sender, so each side checks the
//! purpose: an operator endpoint's id is `not_found` under `…/webhooks/{webhookId}`, and
//! a subscription's id is `not_found` here. Creation is an operator endpoint's own; the
//! other operations are [`crate::routes::endpoints`]' over [`OperatorEndpoints`].

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::{StatusCode, Uri};
use postwire_core::{CreatedByKind, SigningMode};
use postwire_sender::{NewSubscription, SenderError};

use crate::auth::Caller;
use crate::errors::{ApiError, ApiResult, CommonErrors, ErrorBody, ValidationErrorBody};
use crate::routes::endpoints::{self, OperatorEndpoints};
use crate::schemas::{
    CreateOperatorEndpointRequest, CreatedOperatorEndpoint, OperatorDeliveryList, OperatorEndpoint,
    OperatorEndpointList, ResentDelivery, RotatedSecret, SendTestRequest, SetEnabledRequest, TestEventQueued,
};
use crate::state::AppState;
use crate::tokens::Scope;
use crate::validation::{ApiPath, parse_json, parse_operator_create, read_body};

/// Creates an operator endpoint of `workspace_id` named `name` at `url`, with
/// [`SenderError::PlanLimit`] as [`ApiError::OperatorEndpointLimit`]. Shared with the
/// Settings screen, which passes its own `created_by_kind`.
pub(crate) async fn create(
    state: &AppState,
    workspace_id: &str,
    name: String,
    url: String,
    created_by_kind: CreatedByKind,
) -> Result<postwire_core::CreatedSubscription, SenderError> {
    state
        .sender
        .create_operator_endpoint(NewSubscription {
            workspace_id: workspace_id.to_owned(),
            name,
            url,
            events: Vec::new(),
            integration_ids: Vec::new(),
            created_by_kind,
            signing: SigningMode::Symmetric,
        })
        .await
}

fn limit_error(e: SenderError) -> ApiError {
    match e {
        SenderError::PlanLimit { limit } => ApiError::OperatorEndpointLimit(limit),
        other => other.into(),
    }
}

/// Creates an operator endpoint. The response is the only one that ever carries its
/// `secret`.
#[utoipa::path(
    post,
    path = "/public/v1/workspaces/{workspaceId}/operator-webhooks",
    tag = "Operator endpoints",
    operation_id = "createOperatorWebhook",
    params(("workspaceId" = String, Path, description = "A workspace id from `GET /public/v1/workspaces`.")),
    request_body(content = CreateOperatorEndpointRequest, content_type = "application/json"),
    responses(
        (status = 201, description = "Created and enabled; the body carries its signing secret, this once. From now on it receives the workspace's operational notices (but those about itself).", body = CreatedOperatorEndpoint),
        (status = 400, description = "Validation failed (`invalid_request`): missing or empty `name`; missing, malformed, non-https or non-public `url`; unknown field; wrong JSON type; malformed JSON; body over the size limit.", body = ValidationErrorBody),
        (status = 401, description = "Bearer token missing or invalid (`unauthorized`).", body = ErrorBody),
        (status = 403, description = "The token lacks `webhooks:write` (`insufficient_scope`), may not use the workspace (`forbidden`), or the workspace already has 10 operator endpoints (`plan_limit`).", body = ErrorBody),
        (status = 404, description = "No such workspace (`not_found`).", body = ErrorBody),
        CommonErrors,
    ),
    security(("bearer" = ["webhooks:write"]))
)]
pub async fn create_operator_webhook(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(workspace_id): ApiPath<String>,
    body: Body,
) -> ApiResult<(StatusCode, Json<CreatedOperatorEndpoint>)> {
    caller.authorize(&state, Scope::WebhooksWrite, &workspace_id).await?;
    let bytes = read_body(body, state.max_body_bytes).await?;
    let (name, url) = parse_operator_create(parse_json(&bytes)?.as_ref())?;
    let created = create(&state, &workspace_id, name, url, CreatedByKind::ApiToken)
        .await
        .map_err(limit_error)?;
    let id = created.subscription.id.clone();
    let record = state.sender.subscription(&id).await?;
    tracing::info!(subscription_id = %id, workspace_id = %workspace_id, token_id = %caller.0.id, "operator endpoint created");
    Ok((
        StatusCode::CREATED,
        Json(CreatedOperatorEndpoint::new(
            OperatorEndpoint::from(&record),
            created.secret.expose(),
        )),
    ))
}

/// Lists the operator endpoints of a workspace, oldest first.
#[utoipa::path(
    get,
    path = "/public/v1/workspaces/{workspaceId}/operator-webhooks",
    tag = "Operator endpoints",
    operation_id = "listOperatorWebhooks",
    params(("workspaceId" = String, Path, description = "Workspace id.")),
    responses(
        (status = 200, description = "The operator endpoints (never their secrets).", body = OperatorEndpointList),
        (status = 401, description = "`unauthorized`.", body = ErrorBody),
        (status = 403, description = "`insufficient_scope` (needs `webhooks:read`) or `forbidden`.", body = ErrorBody),
        (status = 404, description = "No such workspace (`not_found`).", body = ErrorBody),
        CommonErrors,
    ),
    security(("bearer" = ["webhooks:read"]))
)]
pub async fn list_operator_webhooks(
    state: State<AppState>,
    caller: Caller,
    path: ApiPath<String>,
) -> ApiResult<Json<OperatorEndpointList>> {
    endpoints::list::<OperatorEndpoints>(state, caller, path).await
}

/// Deletes an operator endpoint, with its deliveries; its notices not yet delivered are
/// dropped.
#[utoipa::path(
    delete,
    path = "/public/v1/workspaces/{workspaceId}/operator-webhooks/{endpointId}",
    tag = "Operator endpoints",
    operation_id = "deleteOperatorWebhook",
    params(("workspaceId" = String, Path, description = "Workspace id."), ("endpointId" = String, Path, description = "Operator endpoint id.")),
    responses(
        (status = 204, description = "Deleted."),
        (status = 400, description = "`invalid_request`: invalid `endpointId` (empty, over 200 characters, or with a control character).", body = ValidationErrorBody),
        (status = 401, description = "`unauthorized`.", body = ErrorBody),
        (status = 403, description = "`insufficient_scope` (needs `webhooks:write`) or `forbidden`.", body = ErrorBody),
        (status = 404, description = "No such workspace or operator endpoint (`not_found`); a subscription's id is not an operator endpoint's.", body = ErrorBody),
        CommonErrors,
    ),
    security(("bearer" = ["webhooks:write"]))
)]
pub async fn delete_operator_webhook(
    state: State<AppState>,
    caller: Caller,
    path: ApiPath<(String, String)>,
) -> ApiResult<StatusCode> {
    endpoints::delete::<OperatorEndpoints>(state, caller, path).await
}

/// Pauses (`{"enabled": false}`) or resumes (`{"enabled": true}`) an operator endpoint,
/// e.g. one the sender paused after 50 failed deliveries in a row. While paused its
/// notices are held; on resume those held during the last 7 days are delivered in order
/// and older ones expire. Resuming also resets `consecutiveFailures`.
#[utoipa::path(
    put,
    path = "/public/v1/workspaces/{workspaceId}/operator-webhooks/{endpointId}/enabled",
    tag = "Operator endpoints",
    operation_id = "setOperatorWebhookEnabled",
    params(("workspaceId" = String, Path, description = "Workspace id."), ("endpointId" = String, Path, description = "Operator endpoint id.")),
    request_body(content = SetEnabledRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "The operator endpoint after the change.", body = OperatorEndpoint),
        (status = 400, description = "`invalid_request`: the body is not `{\"enabled\": boolean}`, or an invalid `endpointId` (empty, over 200 characters, or with a control character).", body = ValidationErrorBody),
        (status = 401, description = "`unauthorized`.", body = ErrorBody),
        (status = 403, description = "`insufficient_scope` (needs `webhooks:write`) or `forbidden`.", body = ErrorBody),
        (status = 404, description = "No such workspace or operator endpoint (`not_found`); a subscription's id is not an operator endpoint's.", body = ErrorBody),
        CommonErrors,
    ),
    security(("bearer" = ["webhooks:write"]))
)]
pub async fn set_operator_webhook_enabled(
    state: State<AppState>,
    caller: Caller,
    path: ApiPath<(String, String)>,
    body: Body,
) -> ApiResult<Json<OperatorEndpoint>> {
    endpoints::set_enabled::<OperatorEndpoints>(state, caller, path, body).await
}

/// Replaces an operator endpoint's signing secret. The new secret is returned this once;
/// for the next 24 hours every notice carries two signatures, one with each secret. The
/// workspace's other operator endpoints get an `endpoint.secret_rotated` notice (never
/// the secret).
#[utoipa::path(
    post,
    path = "/public/v1/workspaces/{workspaceId}/operator-webhooks/{endpointId}/rotate-secret",
    tag = "Operator endpoints",
    operation_id = "rotateOperatorWebhookSecret",
    params(("workspaceId" = String, Path, description = "Workspace id."), ("endpointId" = String, Path, description = "Operator endpoint id.")),
    responses(
        (status = 200, description = "The new secret, shown this once.", body = RotatedSecret),
        (status = 400, description = "`invalid_request`: invalid `endpointId` (empty, over 200 characters, or with a control character).", body = ValidationErrorBody),
        (status = 401, description = "`unauthorized`.", body = ErrorBody),
        (status = 403, description = "`insufficient_scope` (needs `webhooks:write`) or `forbidden`.", body = ErrorBody),
        (status = 404, description = "No such workspace or operator endpoint (`not_found`); a subscription's id is not an operator endpoint's.", body = ErrorBody),
        CommonErrors,
    ),
    security(("bearer" = ["webhooks:write"]))
)]
pub async fn rotate_operator_webhook_secret(
    state: State<AppState>,
    caller: Caller,
    path: ApiPath<(String, String)>,
) -> ApiResult<Json<RotatedSecret>> {
    endpoints::rotate_secret::<OperatorEndpoints>(state, caller, path).await
}

/// Sends a `webhook.test` event to this operator endpoint only, so an operator can check
/// that it receives and verifies notices. It is delivered, signed with the endpoint's
/// own secret and retried like a notice (held while paused), and listed in its
/// deliveries.
#[utoipa::path(
    post,
    path = "/public/v1/workspaces/{workspaceId}/operator-webhooks/{endpointId}/test",
    tag = "Operator endpoints",
    operation_id = "sendOperatorWebhookTest",
    params(("workspaceId" = String, Path, description = "Workspace id."), ("endpointId" = String, Path, description = "Operator endpoint id.")),
    request_body(content = Option<SendTestRequest>, content_type = "application/json", description = "Optional."),
    responses(
        (status = 202, description = "The test event is queued for delivery to this endpoint.", body = TestEventQueued),
        (status = 400, description = "`invalid_request`: the body is not `{\"message\": string}` (or empty, or `null`), the message is over 4096 characters, or an invalid `endpointId` (empty, over 200 characters, or with a control character).", body = ValidationErrorBody),
        (status = 401, description = "`unauthorized`.", body = ErrorBody),
        (status = 403, description = "`insufficient_scope` (needs `webhooks:write`) or `forbidden`.", body = ErrorBody),
        (status = 404, description = "No such workspace or operator endpoint (`not_found`); a subscription's id is not an operator endpoint's.", body = ErrorBody),
        CommonErrors,
    ),
    security(("bearer" = ["webhooks:write"]))
)]
pub async fn send_operator_webhook_test(
    state: State<AppState>,
    caller: Caller,
    path: ApiPath<(String, String)>,
    body: Body,
) -> ApiResult<(StatusCode, Json<TestEventQueued>)> {
    endpoints::send_test::<OperatorEndpoints>(state, caller, path, body).await
}

/// Lists the deliveries of an operator endpoint (its notices and test events), newest
/// first, paged like a subscription's deliveries.
#[utoipa::path(
    get,
    path = "/public/v1/workspaces/{workspaceId}/operator-webhooks/{endpointId}/deliveries",
    tag = "Operator endpoints",
    operation_id = "listOperatorWebhookDeliveries",
    params(
        ("workspaceId" = String, Path, description = "Workspace id."),
        ("endpointId" = String, Path, description = "Operator endpoint id."),
        ("limit" = Option<u32>, Query, description = "Page size, 1 to 100 (default 20).", minimum = 1, maximum = 100),
        ("cursor" = Option<String>, Query, description = "`nextCursor` of the previous page.", pattern = "^c_[1-9][0-9]{0,17}$", example = "c_42"),
    ),
    responses(
        (status = 200, description = "A page of deliveries. Finished deliveries (delivered, failed, expired) are kept for the server's retention period (30 days by default, `--retention-days`), then removed with their attempts; pending and held ones are always listed.", body = OperatorDeliveryList),
        (status = 400, description = "`invalid_request`: bad `limit` or `cursor`, an unknown or repeated parameter, or an invalid `endpointId` (empty, over 200 characters, or with a control character).", body = ValidationErrorBody),
        (status = 401, description = "`unauthorized`.", body = ErrorBody),
        (status = 403, description = "`insufficient_scope` (needs `webhooks:read`) or `forbidden`.", body = ErrorBody),
        (status = 404, description = "No such workspace or operator endpoint (`not_found`); a subscription's id is not an operator endpoint's.", body = ErrorBody),
        CommonErrors,
    ),
    security(("bearer" = ["webhooks:read"]))
)]
pub async fn list_operator_webhook_deliveries(
    state: State<AppState>,
    caller: Caller,
    path: ApiPath<(String, String)>,
    uri: Uri,
) -> ApiResult<Json<OperatorDeliveryList>> {
    endpoints::list_deliveries::<OperatorEndpoints>(state, caller, path, uri).await
}

/// Resends one finished delivery of an operator endpoint (delivered, failed or expired):
/// the same notice (same `webhook-id`, same body), signed afresh.
#[utoipa::path(
    post,
    path = "/public/v1/workspaces/{workspaceId}/operator-webhooks/{endpointId}/deliveries/{deliveryId}/resend",
    tag = "Operator endpoints",
    operation_id = "resendOperatorWebhookDelivery",
    params(
        ("workspaceId" = String, Path, description = "Workspace id."),
        ("endpointId" = String, Path, description = "Operator endpoint id."),
        ("deliveryId" = String, Path, description = "A delivery id from the endpoint's deliveries list.", pattern = "^dlv_[1-9][0-9]{0,17}$", example = "dlv_42"),
    ),
    responses(
        (status = 202, description = "A new delivery of the same notice (same `webhook-id`) is queued; it waits behind unfinished notices about the same subscription, and is held while the endpoint is paused.", body = ResentDelivery),
        (status = 400, description = "`invalid_request`: `deliveryId` is not a delivery id, or an invalid `endpointId`.", body = ValidationErrorBody),
        (status = 401, description = "`unauthorized`.", body = ErrorBody),
        (status = 403, description = "`insufficient_scope` (needs `webhooks:write`) or `forbidden`.", body = ErrorBody),
        (status = 404, description = "No such workspace, operator endpoint, or delivery of that endpoint (`not_found`).", body = ErrorBody),
        (status = 409, description = "`delivery_unfinished`: the delivery is still pending, waiting for a retry or held; it will be attempted without a resend.", body = ErrorBody),
        (status = 410, description = "`payload_erased`: the payload was erased; there is nothing to send, for good.", body = ErrorBody),
        CommonErrors,
    ),
    security(("bearer" = ["webhooks:write"]))
)]
pub async fn resend_operator_webhook_delivery(
    state: State<AppState>,
    caller: Caller,
    path: ApiPath<(String, String, String)>,
) -> ApiResult<(StatusCode, Json<ResentDelivery>)> {
    endpoints::resend::<OperatorEndpoints>(state, caller, path).await
}
