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
use axum::http::StatusCode;
use postwire_core::{CreatedByKind, SigningMode};
use postwire_sender::{NewSubscription, SenderError};

use crate::auth::Caller;
use crate::errors::{ApiError, ApiResult, CommonErrors, ErrorBody, ValidationErrorBody};
use crate::routes::endpoints::{OperatorEndpoints, endpoint_operation};
use crate::schemas::{
    CreateOperatorEndpointRequest, CreatedOperatorEndpoint, OperatorDeliveryList, OperatorEndpoint,
    OperatorEndpointList,
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

endpoint_operation! {
    /// Lists the operator endpoints of a workspace, oldest first.
    list OperatorEndpoints "endpointId" => list_operator_webhooks, "listOperatorWebhooks", OperatorEndpointList
}

endpoint_operation! {
    /// Deletes an operator endpoint, with its deliveries; its notices not yet delivered are
    /// dropped.
    delete OperatorEndpoints "endpointId" => delete_operator_webhook, "deleteOperatorWebhook"
}

endpoint_operation! {
    /// Pauses (`{"enabled": false}`) or resumes (`{"enabled": true}`) an operator endpoint,
    /// e.g. one the sender paused after 50 failed deliveries in a row. While paused its
    /// notices are held; on resume those held during the last 7 days are delivered in order
    /// and older ones expire. Resuming also resets `consecutiveFailures`.
    set_enabled OperatorEndpoints "endpointId" => set_operator_webhook_enabled, "setOperatorWebhookEnabled", OperatorEndpoint
}

endpoint_operation! {
    /// Replaces an operator endpoint's signing secret. The new secret is returned this once;
    /// for the next 24 hours every notice carries two signatures, one with each secret. The
    /// workspace's other operator endpoints get an `endpoint.secret_rotated` notice (never
    /// the secret).
    rotate_secret OperatorEndpoints "endpointId" => rotate_operator_webhook_secret, "rotateOperatorWebhookSecret"
}

endpoint_operation! {
    /// Sends a `webhook.test` event to this operator endpoint only, so an operator can check
    /// that it receives and verifies notices. It is delivered, signed with the endpoint's
    /// own secret and retried like a notice (held while paused), and listed in its
    /// deliveries.
    send_test OperatorEndpoints "endpointId" => send_operator_webhook_test, "sendOperatorWebhookTest"
}

endpoint_operation! {
    /// Lists the deliveries of an operator endpoint (its notices and test events), newest
    /// first, paged like a subscription's deliveries.
    list_deliveries OperatorEndpoints "endpointId" => list_operator_webhook_deliveries, "listOperatorWebhookDeliveries", OperatorDeliveryList
}

endpoint_operation! {
    /// Resends one finished delivery of an operator endpoint (delivered, failed or expired):
    /// the same notice (same `webhook-id`, same body), signed afresh.
    resend OperatorEndpoints "endpointId" => resend_operator_webhook_delivery, "resendOperatorWebhookDelivery"
}
