//! `POST /public/v1/workspaces/{workspaceId}/portal-sessions`: a magic link that logs a
//! browser into that workspace's Settings screen, for the platform's backend to hand
//! to its user (like Svix's App Portal links); and `DELETE …/portal-sessions/{id}` to
//! revoke it and the session it opened. See [`crate::portal`].

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};

use crate::auth::Caller;
use crate::errors::{ApiResult, CommonErrors, ErrorBody, ValidationErrorBody};
use crate::schemas::PortalLink;
use crate::state::AppState;
use crate::tokens::Scope;
use crate::validation::{ApiPath, check_id_param};

/// The URL of a magic link: `{public_url}/settings/login?link=…`, where the public URL
/// is the server's configured one or, without one, `http://` and the request's `Host`.
pub fn link_url(state: &AppState, headers: &HeaderMap, token: &str) -> String {
    let base = match state.portal.public_url() {
        Some(u) => u.trim_end_matches('/').to_owned(),
        None => {
            let host = headers
                .get(header::HOST)
                .and_then(|h| h.to_str().ok())
                .filter(|h| !h.is_empty() && h.len() <= 255 && h.bytes().all(|b| b.is_ascii_graphic()))
                .unwrap_or("127.0.0.1");
            format!("http://{host}")
        }
    };
    format!("{base}/settings/login?link={token}")
}

/// Creates a single-use, short-lived magic link to the workspace's Settings screen.
#[utoipa::path(
    post,
    path = "/public/v1/workspaces/{workspaceId}/portal-sessions",
    tag = "Settings screen",
    operation_id = "createPortalSession",
    params(("workspaceId" = String, Path, description = "Workspace id.")),
    responses(
        (status = 201, description = "A magic link: opening it once, before `expiresAt`, logs the browser into this workspace's Settings screen (a `Secure; HttpOnly; SameSite=Strict` session cookie). Hand it to the user; never log it.", body = PortalLink),
        (status = 400, description = "`invalid_request`: an invalid `workspaceId`.", body = ValidationErrorBody),
        (status = 401, description = "`unauthorized`.", body = ErrorBody),
        (status = 403, description = "`insufficient_scope` (needs `webhooks:write`) or `forbidden`.", body = ErrorBody),
        (status = 404, description = "No such workspace (`not_found`).", body = ErrorBody),
        CommonErrors,
    ),
    security(("bearer" = ["webhooks:write"]))
)]
pub async fn create_portal_session(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(workspace_id): ApiPath<String>,
    headers: HeaderMap,
) -> ApiResult<(StatusCode, Json<PortalLink>)> {
    check_id_param("workspaceId", &workspace_id)?;
    caller.authorize(&state, Scope::WebhooksWrite, &workspace_id).await?;
    let link = state.portal.create_link(&workspace_id, state.clock.now()).await?;
    tracing::info!(portal_session = %link.id, workspace_id = %workspace_id, token_id = %caller.0.id, "portal link created");
    Ok((
        StatusCode::CREATED,
        Json(PortalLink {
            id: link.id.clone(),
            url: link_url(&state, &headers, &link.token),
            expires_at: link.expires_at.to_string(),
        }),
    ))
}

/// Revokes a portal session: its link stops working and its browser session ends.
#[utoipa::path(
    delete,
    path = "/public/v1/workspaces/{workspaceId}/portal-sessions/{sessionId}",
    tag = "Settings screen",
    operation_id = "revokePortalSession",
    params(
        ("workspaceId" = String, Path, description = "Workspace id."),
        ("sessionId" = String, Path, description = "The `id` returned with the link.", pattern = "^ps_[0-9a-f]{16}$", example = "ps_0123456789abcdef"),
    ),
    responses(
        (status = 204, description = "Revoked (revoking twice is fine)."),
        (status = 400, description = "`invalid_request`: an invalid `workspaceId`, or a `sessionId` not of the form `ps_` + 16 hex digits.", body = ValidationErrorBody),
        (status = 401, description = "`unauthorized`.", body = ErrorBody),
        (status = 403, description = "`insufficient_scope` (needs `webhooks:write`) or `forbidden`.", body = ErrorBody),
        (status = 404, description = "No such workspace, or no such portal session of it (`not_found`).", body = ErrorBody),
        CommonErrors,
    ),
    security(("bearer" = ["webhooks:write"]))
)]
pub async fn revoke_portal_session(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath((workspace_id, session_id)): ApiPath<(String, String)>,
) -> ApiResult<StatusCode> {
    if !crate::portal::is_session_id(&session_id) {
        return Err(crate::errors::ApiError::invalid(
            "`sessionId` must be `ps_` and 16 hex digits, as returned with the link",
        ));
    }
    caller.authorize(&state, Scope::WebhooksWrite, &workspace_id).await?;
    state
        .portal
        .revoke(&workspace_id, &session_id, state.clock.now())
        .await?;
    tracing::info!(portal_session = %session_id, workspace_id = %workspace_id, token_id = %caller.0.id, "portal session revoked");
    Ok(StatusCode::NO_CONTENT)
}
