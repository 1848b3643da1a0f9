//! The internal ingest API: how the rest of the platform tells the sender about
//! workspaces, connected accounts, and post and account changes.
//!
//! It lives under `/internal/v1`, apart from the public API: it has its own OpenAPI
//! document ([`crate::ingest_openapi`], served behind the ingest token at
//! `GET /internal/v1/openapi.json`), API tokens do not work on it, and it has its own single bearer token
//! (`POSTWIRE_INGEST_TOKEN`), compared by hash in constant time. It should be reachable
//! only from inside the platform's network. Embedding hosts can skip HTTP and call
//! [`postwire_sender::Sender::publish`] directly.
//!
//! * `PUT /internal/v1/workspaces/{workspaceId}` `{"name"}`: register or rename a workspace.
//! * `PUT /internal/v1/workspaces/{workspaceId}/integrations/{integrationId}`
//!   `{"name", "providerIdentifier", "picture"?}`: register or update an account.
//! * `POST /internal/v1/events` `{"changes": [Change, …]}` (1 to 1000): report changes,
//!   accepted all or none, in order. Answers `{"results": [{"eventId", "deliveries"} |
//!   {"eventId": null, "skipped": "draft"}]}`. When it answers 200 every event is on disk.
//!   An `Idempotency-Key` header makes a retry of the same body (byte for byte) within
//!   24 h return the first answer, with `Idempotent-Replayed: true`, and publish nothing
//!   again; the key is stored in the transaction that stores the events
//!   (`crate::idempotency`).
//!
//! A change is `{"kind": "post", "workspaceId", "change", "post", …}` with `change` one
//! of `scheduled`, `unscheduled`, `publishing`, `published`, `failed` (needs `error`),
//! `deleted` (needs `deletedBy`), `draft_saved`; or `{"kind": "account", "workspaceId",
//! "change": "disconnected" (needs `reason`) | "reconnected", "integration"}`. `post` is
//! the platform's post record; fields beyond the summary (such as `content`) are ignored
//! and never stored.

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::HeaderMap;
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{get, post, put};
use axum::{Json, Router};
use postwire_core::{Actor, DisconnectReason, EventError, Integration, PostState, PostSummary, Timestamp};
use postwire_sender::idempotency::Idempotent;
use postwire_sender::{
    AccountChange, AccountChangeKind, DomainChange, PostChange, PostChangeKind, PostRecord, Published, Workspace,
};
use serde::Deserialize;

use crate::auth::bearer;
use crate::errors::{ApiError, ApiResult};
use crate::idempotency;
use crate::state::AppState;
use crate::validation::{ApiPath, read_body};

/// The scope of the ingest's idempotency keys (it has one token).
const INGEST_KEY_SCOPE: &str = "ingest";

use crate::validation::MAX_INGEST_BATCH;

async fn require_ingest_token(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let ip = crate::auth::client_ip(&request);
    if let Some(refused) = crate::auth::refuse_address(&state, ip) {
        return refused;
    }
    let Some(auth) = state.ingest.as_ref() else {
        return crate::auth::unauthenticated(
            &state,
            ip,
            ApiError::Unauthorized(
                "ingest is disabled on this server: start it with an ingest token (POSTWIRE_INGEST_TOKEN)",
            ),
        );
    };
    match bearer(request.headers()) {
        Ok(token) if auth.accepts(token) => next.run(request).await,
        Ok(_) => crate::auth::unauthenticated(&state, ip, ApiError::Unauthorized("the ingest token is invalid")),
        Err(e) => crate::auth::unauthenticated(&state, ip, e),
    }
}

/// The ingest routes, behind the ingest token.
pub fn router(state: AppState) -> Router<AppState> {
    Router::new()
        .route("/internal/v1/workspaces/{workspaceId}", put(put_workspace))
        .route(
            "/internal/v1/workspaces/{workspaceId}/integrations/{integrationId}",
            put(put_integration),
        )
        .route("/internal/v1/events", post(post_events))
        .route("/internal/v1/openapi.json", get(crate::ingest_openapi::serve))
        .route_layer(middleware::from_fn_with_state(state, require_ingest_token))
}

fn parse<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> ApiResult<T> {
    crate::validation::reject_duplicate_keys(bytes)?;
    serde_json::from_slice(bytes).map_err(|e| ApiError::invalid(format!("invalid body: {e}")))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WorkspaceBody {
    name: String,
}

async fn put_workspace(
    State(state): State<AppState>,
    ApiPath(workspace_id): ApiPath<String>,
    body: Body,
) -> ApiResult<Json<serde_json::Value>> {
    let b: WorkspaceBody = parse(&read_body(body, state.max_body_bytes).await?)?;
    state
        .sender
        .upsert_workspace(Workspace {
            id: workspace_id.clone(),
            name: b.name.clone(),
        })
        .await?;
    Ok(Json(serde_json::json!({ "id": workspace_id, "name": b.name })))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct IntegrationBody {
    name: String,
    provider_identifier: String,
    #[serde(default)]
    picture: Option<String>,
}

async fn put_integration(
    State(state): State<AppState>,
    ApiPath((workspace_id, integration_id)): ApiPath<(String, String)>,
    body: Body,
) -> ApiResult<Json<Integration>> {
    let b: IntegrationBody = parse(&read_body(body, state.max_body_bytes).await?)?;
    let integration = Integration {
        id: integration_id,
        name: b.name,
        provider_identifier: b.provider_identifier,
        picture: b.picture,
    };
    state
        .sender
        .upsert_integration(&workspace_id, integration.clone())
        .await?;
    Ok(Json(integration))
}

/// The platform's post record as sent to ingest. Unknown fields (e.g. `content`) are
/// ignored.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PostBody {
    id: String,
    #[serde(default)]
    external_id: String,
    #[serde(default)]
    group: String,
    state: PostState,
    #[serde(default)]
    is_draft: bool,
    publish_date: Timestamp,
    integration: Integration,
    #[serde(default, rename = "releaseURL")]
    release_url: Option<String>,
    #[serde(default)]
    release_id: Option<String>,
    #[serde(default)]
    error: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum PostChangeName {
    Scheduled,
    Unscheduled,
    Publishing,
    Published,
    Failed,
    Deleted,
    DraftSaved,
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum AccountChangeName {
    Disconnected,
    Reconnected,
}

#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", rename_all_fields = "camelCase")]
#[allow(clippy::large_enum_variant)] // short-lived, parsed once per change
enum ChangeBody {
    Post {
        workspace_id: String,
        change: PostChangeName,
        post: PostBody,
        #[serde(default)]
        error: Option<EventError>,
        #[serde(default)]
        deleted_by: Option<Actor>,
    },
    Account {
        workspace_id: String,
        change: AccountChangeName,
        integration: Integration,
        #[serde(default)]
        reason: Option<DisconnectReason>,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EventsBody {
    changes: Vec<ChangeBody>,
}

fn to_domain(i: usize, c: ChangeBody) -> ApiResult<DomainChange> {
    Ok(match c {
        ChangeBody::Post {
            workspace_id,
            change,
            post,
            error,
            deleted_by,
        } => {
            let kind = match change {
                PostChangeName::Scheduled => PostChangeKind::Scheduled,
                PostChangeName::Unscheduled => PostChangeKind::Unscheduled,
                PostChangeName::Publishing => PostChangeKind::PublishingStarted,
                PostChangeName::Published => {
                    let (url, id) =
                        PostSummary::require_release(post.release_url.as_deref(), post.release_id.as_deref()).map_err(
                            |_| {
                                ApiError::invalid(format!(
                                    "changes[{i}]: `published` needs `post.releaseURL` and `post.releaseId`"
                                ))
                            },
                        )?;
                    PostChangeKind::Published {
                        release_url: url.to_owned(),
                        release_id: id.to_owned(),
                    }
                }
                PostChangeName::Failed => match error {
                    Some(error) => PostChangeKind::Failed { error },
                    None => return Err(ApiError::invalid(format!("changes[{i}]: `failed` needs `error`"))),
                },
                PostChangeName::Deleted => match deleted_by {
                    Some(by) => PostChangeKind::Deleted { by },
                    None => return Err(ApiError::invalid(format!("changes[{i}]: `deleted` needs `deletedBy`"))),
                },
                PostChangeName::DraftSaved => PostChangeKind::DraftSaved,
            };
            let record = PostRecord {
                id: post.id,
                external_id: post.external_id,
                group: post.group,
                state: post.state,
                is_draft: post.is_draft,
                publish_date: post.publish_date,
                integration: post.integration,
                release_url: post.release_url,
                release_id: post.release_id,
                error: post.error,
                content: String::new(),
            };
            DomainChange::Post(PostChange {
                workspace_id,
                post: record,
                kind,
            })
        }
        ChangeBody::Account {
            workspace_id,
            change,
            integration,
            reason,
        } => {
            let kind = match change {
                AccountChangeName::Disconnected => match reason {
                    Some(reason) => AccountChangeKind::Disconnected { reason },
                    None => {
                        return Err(ApiError::invalid(format!(
                            "changes[{i}]: `disconnected` needs `reason`"
                        )));
                    }
                },
                AccountChangeName::Reconnected => AccountChangeKind::Reconnected,
            };
            DomainChange::Account(AccountChange {
                workspace_id,
                integration,
                kind,
            })
        }
    })
}

async fn post_events(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<(HeaderMap, Json<serde_json::Value>)> {
    let bytes = read_body(body, state.max_ingest_body_bytes).await?;
    let key = idempotency::key_of(&headers, INGEST_KEY_SCOPE, "POST", "/internal/v1/events", &bytes)?;
    let b: EventsBody = parse(&bytes)?;
    if b.changes.is_empty() || b.changes.len() > MAX_INGEST_BATCH {
        return Err(ApiError::invalid(format!(
            "`changes` must hold 1 to {MAX_INGEST_BATCH} changes"
        )));
    }
    let mut changes = Vec::with_capacity(b.changes.len());
    let mut problems = Vec::new();
    for (i, c) in b.changes.into_iter().enumerate() {
        match to_domain(i, c) {
            Ok(d) => changes.push(d),
            Err(ApiError::Invalid(m)) => problems.extend(m),
            Err(e) => return Err(e),
        }
    }
    if !problems.is_empty() {
        return Err(ApiError::Invalid(problems));
    }
    let mut response_headers = HeaderMap::new();
    let mut per_workspace: std::collections::HashMap<String, u64> = std::collections::HashMap::new();
    for c in &changes {
        let ws = match c {
            DomainChange::Post(p) => &p.workspace_id,
            DomainChange::Account(a) => &a.workspace_id,
            // The ingest never makes test events; they are not counted.
            DomainChange::Test(_) => continue,
        };
        *per_workspace.entry(ws.clone()).or_default() += 1;
    }
    // A change for a workspace this server does not know (a typo, or one never
    // registered) would be accepted with no subscription to match: refused instead, all
    // or none like the rest of the batch.
    let mut unknown = Vec::new();
    for ws in per_workspace.keys() {
        if state.sender.workspace(ws).await?.is_none() {
            unknown.push(format!("`{ws}`"));
        }
    }
    if !unknown.is_empty() {
        unknown.sort();
        return Err(ApiError::NotFound(format!(
            "unknown workspace {}: register it first (PUT /internal/v1/workspaces/{{workspaceId}})",
            unknown.join(", ")
        )));
    }
    let reservation = state
        .quota
        .reserve(&per_workspace)
        .await?
        .map_err(|over| ApiError::QuotaExceeded {
            limit: over.limit,
            retry_after_secs: over.retry_after_secs,
        })?;
    let outcome = match key {
        None => state.sender.publish_many(changes).await.map(|p| (p, false)),
        Some(key) => match state.sender.publish_many_idempotent(changes, key).await {
            Ok(Idempotent::Fresh(published)) => Ok((published, false)),
            Ok(Idempotent::Replayed(published)) => Ok((published, true)),
            Err(e) => Err(e),
        },
    };
    let published = match outcome {
        Ok((published, false)) => published,
        Ok((published, true)) => {
            // Counted when it was first accepted.
            state.quota.release(reservation).await;
            idempotency::mark_replayed(&mut response_headers);
            published
        }
        Err(e) => {
            state.quota.release(reservation).await;
            return Err(e.into());
        }
    };
    let results: Vec<serde_json::Value> = published
        .iter()
        .map(|p| match p {
            Published::Event { event_id, deliveries } => {
                serde_json::json!({ "eventId": event_id, "deliveries": deliveries })
            }
            Published::NoEvent(_) => serde_json::json!({ "eventId": null, "skipped": "draft" }),
        })
        .collect();
    tracing::info!(changes = results.len(), "ingested changes");
    Ok((response_headers, Json(serde_json::json!({ "results": results }))))
}
