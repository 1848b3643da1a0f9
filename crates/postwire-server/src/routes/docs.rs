//! `GET /public/v1/openapi.json`: the OpenAPI 3.1 description of this API, unauthenticated.

use axum::http::header;
use axum::response::IntoResponse;

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
    (
        [(header::CONTENT_TYPE, "application/json")],
        crate::openapi::document_json(),
    )
}
