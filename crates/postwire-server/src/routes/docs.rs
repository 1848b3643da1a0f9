//! `GET /public/v1/openapi.json`: the OpenAPI 3.1 description of this API, unauthenticated,
//! and its assembly: the fixed parts of [`crate::openapi`] plus every route of
//! [`super::authenticated_routes`] and [`super::open_routes`].

use std::sync::OnceLock;

use axum::http::header;
use axum::response::IntoResponse;
use utoipa::OpenApi as _;

use crate::openapi::{ApiDoc, complete};

/// Serves the OpenAPI document (the same bytes as `docs/openapi.json` in the repository).
#[utoipa::path(
    get,
    path = "/public/v1/openapi.json",
    tag = "Meta",
    operation_id = "getOpenApiDocument",
    responses((status = 200, description = "The OpenAPI 3.1 document of this API.", content_type = "application/json", body = Object)),
    security(())
)]
pub async fn openapi_document() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], document_json())
}

/// The full document: fixed parts plus every registered public route, with the id
/// parameters' rules and the links between operations added by [`complete`].
pub fn document() -> utoipa::openapi::OpenApi {
    let mut doc = utoipa_axum::router::OpenApiRouter::<crate::state::AppState>::with_openapi(ApiDoc::openapi())
        .merge(super::authenticated_routes())
        .merge(super::open_routes())
        .into_openapi();
    complete(&mut doc);
    doc
}

/// The document as pretty JSON with a final newline, exactly as in `docs/openapi.json`.
pub fn document_json() -> &'static str {
    static JSON: OnceLock<String> = OnceLock::new();
    JSON.get_or_init(|| {
        let mut s = serde_json::to_string_pretty(&document()).unwrap_or_else(|_| "{}".to_owned());
        s.push('\n');
        s
    })
}
