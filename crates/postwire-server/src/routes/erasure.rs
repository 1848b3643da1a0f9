//! `DELETE …/posts/{postId}/payloads` and `DELETE …/integrations/{integrationId}/payloads`:
//! erasure of one subject's stored event payloads, for a data-protection request.
//!
//! Both are [`Sender::erase_payloads`](postwire_sender::Sender::erase_payloads): in one
//! transaction, every stored event about the post (its `post.*` events) or about the
//! connected account (its own `integration.*` events) keeps its row with an empty body,
//! marked erased, and its unfinished deliveries are cancelled, so the post's or account's
//! next event is delivered without waiting for them. Delivery metadata (ids, times,
//! states, attempt outcomes) stays; the deliveries list says `payloadErased`, and a
//! resend of such a delivery is `410 payload_erased`. Idempotent: a repeat answers zeros.

use axum::Json;
use axum::extract::State;
use postwire_sender::ErasureSubject;

use crate::auth::Caller;
use crate::errors::{ApiResult, CommonErrors, ErrorBody, ValidationErrorBody};
use crate::schemas::ErasedPayloads;
use crate::state::AppState;
use crate::tokens::Scope;
use crate::validation::{ApiPath, check_id_param};

/// Erases the stored payloads of a post's events.
#[utoipa::path(
    delete,
    path = "/public/v1/workspaces/{workspaceId}/posts/{postId}/payloads",
    tag = "Posts",
    operation_id = "erasePostPayloads",
    params(
        ("workspaceId" = String, Path, description = "Workspace id."),
        ("postId" = String, Path, description = "The post whose events' payloads are erased."),
    ),
    responses(
        (status = 200, description = "Done, in one transaction: every stored event about the post has an empty body now (its id, type, times, deliveries and attempts stay), and its deliveries not yet finished are `cancelled`. `erased` counts the events this call erased: a repeat answers 0.", body = ErasedPayloads),
        (status = 400, description = "`invalid_request`: a `postId` over 200 characters or with a control character.", body = ValidationErrorBody),
        (status = 401, description = "`unauthorized`.", body = ErrorBody),
        (status = 403, description = "`insufficient_scope` (needs `webhooks:write`) or `forbidden`.", body = ErrorBody),
        (status = 404, description = "No such workspace (`not_found`).", body = ErrorBody),
        CommonErrors,
    ),
    security(("bearer" = ["webhooks:write"]))
)]
pub async fn erase_post_payloads(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath((workspace_id, post_id)): ApiPath<(String, String)>,
) -> ApiResult<Json<ErasedPayloads>> {
    caller.authorize(&state, Scope::WebhooksWrite, &workspace_id).await?;
    check_id_param("postId", &post_id)?;
    erase(&state, &caller, &workspace_id, ErasureSubject::Post(post_id)).await
}

/// Erases the stored payloads of a connected account's own events.
#[utoipa::path(
    delete,
    path = "/public/v1/workspaces/{workspaceId}/integrations/{integrationId}/payloads",
    tag = "Posts",
    operation_id = "eraseIntegrationPayloads",
    params(
        ("workspaceId" = String, Path, description = "Workspace id."),
        ("integrationId" = String, Path, description = "The connected account whose `integration.*` events' payloads are erased (its posts' events are erased per post)."),
    ),
    responses(
        (status = 200, description = "Done, in one transaction: every stored `integration.*` event of the account has an empty body now (its id, type, times, deliveries and attempts stay), and its deliveries not yet finished are `cancelled`. `erased` counts the events this call erased: a repeat answers 0.", body = ErasedPayloads),
        (status = 400, description = "`invalid_request`: an `integrationId` over 200 characters or with a control character.", body = ValidationErrorBody),
        (status = 401, description = "`unauthorized`.", body = ErrorBody),
        (status = 403, description = "`insufficient_scope` (needs `webhooks:write`) or `forbidden`.", body = ErrorBody),
        (status = 404, description = "No such workspace (`not_found`).", body = ErrorBody),
        CommonErrors,
    ),
    security(("bearer" = ["webhooks:write"]))
)]
pub async fn erase_integration_payloads(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath((workspace_id, integration_id)): ApiPath<(String, String)>,
) -> ApiResult<Json<ErasedPayloads>> {
    caller.authorize(&state, Scope::WebhooksWrite, &workspace_id).await?;
    check_id_param("integrationId", &integration_id)?;
    erase(
        &state,
        &caller,
        &workspace_id,
        ErasureSubject::Integration(integration_id),
    )
    .await
}

async fn erase(
    state: &AppState,
    caller: &Caller,
    workspace_id: &str,
    subject: ErasureSubject,
) -> ApiResult<Json<ErasedPayloads>> {
    let erased = state.sender.erase_payloads(workspace_id, subject).await?;
    // The subject's id may itself be personal data: not logged.
    tracing::info!(workspace_id = %workspace_id, erased = erased.events, cancelled = erased.cancelled, token_id = %caller.0.id, "payloads erased");
    Ok(Json(ErasedPayloads {
        erased: erased.events,
        cancelled: erased.cancelled,
    }))
}
