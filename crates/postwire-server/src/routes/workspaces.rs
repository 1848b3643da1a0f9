//! `GET /public/v1/workspaces`: the workspaces the token may use.

use axum::Json;
use axum::extract::State;

use crate::auth::Caller;
use crate::errors::{ApiResult, ErrorBody};
use crate::schemas::{Workspace, WorkspaceList};
use crate::state::AppState;

/// Lists the workspaces in the token's selection that exist. Any valid token may call it.
#[utoipa::path(
    get,
    path = "/public/v1/workspaces",
    tag = "Workspaces",
    operation_id = "listWorkspaces",
    responses(
        (status = 200, description = "The workspaces the token may use.", body = WorkspaceList),
        (status = 401, description = "Bearer token missing or invalid (`unauthorized`).", body = ErrorBody),
        (status = 429, description = "Hourly API limit exceeded (`rate_limited`); see `Retry-After`.", body = ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds until the limit resets."))),
        (status = "5XX", description = "`internal_error` (500; details in the server log only) or `unavailable` (503, shutting down).", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn list_workspaces(State(state): State<AppState>, caller: Caller) -> ApiResult<Json<WorkspaceList>> {
    let mut data = Vec::with_capacity(caller.0.workspaces.len());
    for id in &caller.0.workspaces {
        if let Some(w) = state.sender.workspace(id).await? {
            data.push(Workspace { id: w.id, name: w.name });
        }
    }
    Ok(Json(WorkspaceList { data }))
}
