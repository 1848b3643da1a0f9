//! `GET /public/v1/workspaces/{workspaceId}/posts/lookup`: the events about one post,
//! so a receiver that missed some (it was down longer than the retry span, or lost its
//! database) can reconcile.
//!
//! Look a post up by `postId`, or by the client's own `externalId` (stored with each
//! event, in the event's own transaction), never both and never an empty value: the
//! either-or rule is in the document ([`PostLookupQuery`]); `since` keeps only
//! events created at or after a time. Events come newest first, exactly as delivered,
//! so the receiver can feed them to the same handler (de-duplicating by `id`).

use axum::Json;
use axum::extract::State;
use axum::http::Uri;
use postwire_core::Timestamp;
use postwire_sender::MAX_PAGE_SIZE;

use crate::auth::Caller;
use crate::errors::{ApiError, ApiResult, CommonErrors, ErrorBody, ValidationErrorBody};
use crate::schemas::{PostLookup, PostLookupQuery};
use crate::state::AppState;
use crate::tokens::Scope;
use crate::validation::{ApiPath, QueryParams, check_id_param};

/// Most posts one external id resolves to.
pub const MAX_POSTS_PER_EXTERNAL_ID: usize = 20;

/// Looks up the events of a post.
#[utoipa::path(
    get,
    path = "/public/v1/workspaces/{workspaceId}/posts/lookup",
    tag = "Posts",
    operation_id = "lookupPostEvents",
    params(
        ("workspaceId" = String, Path, description = "Workspace id."),
        ("lookup" = PostLookupQuery, Query, style = Form, explode,
            description = "Exactly one of `postId` and `externalId`, optionally `since` and `limit`, as plain query parameters (`?postId=post_1&limit=20`). An empty value is refused, not taken as absent."),
    ),
    responses(
        (status = 200, description = "The post's events, newest first. An unknown post gives an empty list. Events are kept while a delivery refers to them and for the server's retention period (30 days by default, `--retention-days`); older ones are no longer found.", body = PostLookup),
        (status = 400, description = "`invalid_request`: neither or both of `postId` and `externalId`, an empty value, a `postId` over 200 characters or with a control character, a bad `since` or `limit`, or an unknown or repeated parameter.", body = ValidationErrorBody),
        (status = 401, description = "`unauthorized`.", body = ErrorBody),
        (status = 403, description = "`insufficient_scope` (needs `webhooks:read`) or `forbidden`.", body = ErrorBody),
        (status = 404, description = "No such workspace (`not_found`).", body = ErrorBody),
        CommonErrors,
    ),
    security(("bearer" = ["webhooks:read"]))
)]
pub async fn lookup_post_events(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(workspace_id): ApiPath<String>,
    uri: Uri,
) -> ApiResult<Json<PostLookup>> {
    caller.authorize(&state, Scope::WebhooksRead, &workspace_id).await?;
    let query = QueryParams::parse(uri.query(), &["postId", "externalId", "since", "limit"])?;
    let limit = query.int("limit", MAX_PAGE_SIZE, 1, MAX_PAGE_SIZE)?;
    let since = match query.get("since") {
        None => None,
        Some(s) => Some(
            s.parse::<Timestamp>()
                .map_err(|_| ApiError::invalid("`since` must be an RFC 3339 timestamp, e.g. 2026-11-22T10:00:00Z"))?,
        ),
    };
    let post_ids = match (query.get("postId"), query.get("externalId")) {
        (Some(_), Some(_)) => return Err(ApiError::invalid("give either `postId` or `externalId`, not both")),
        (None, None) => return Err(ApiError::invalid("`postId` or `externalId` is required")),
        (Some(p), None) => {
            check_id_param("postId", p)?;
            vec![p.to_owned()]
        }
        (None, Some("")) => return Err(ApiError::invalid("`externalId` must not be empty")),
        (None, Some(e)) => {
            state
                .sender
                .posts_with_external_id(&workspace_id, e, MAX_POSTS_PER_EXTERNAL_ID)
                .await?
        }
    };
    let mut events = Vec::new();
    for post_id in &post_ids {
        events.extend(
            state
                .sender
                .events_for_post(&workspace_id, post_id, MAX_PAGE_SIZE)
                .await?,
        );
    }
    if let Some(since) = since {
        events.retain(|e| e.created_at() >= since);
    }
    events.sort_by_key(|e| std::cmp::Reverse(e.created_at()));
    let has_more = events.len() > limit;
    events.truncate(limit);
    let data = events
        .iter()
        .map(|e| serde_json::to_value(e).unwrap_or_default())
        .collect();
    Ok(Json(PostLookup {
        post_ids,
        data,
        has_more,
    }))
}
