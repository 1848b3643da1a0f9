//! The OpenAPI 3.1 document of the public API, generated from the code.
//!
//! The operations come from the `#[utoipa::path]` attributes of the handlers that
//! [`crate::routes`] registers; the shared parts (title, version 1.0.0, bearer security
//! scheme, tags, error schemas) from [`ApiDoc`]. The document is served at
//! `GET /public/v1/openapi.json` and checked in as `docs/openapi.json`; a test fails when
//! the two differ (regenerate with `postwire openapi > docs/openapi.json`).

use std::sync::OnceLock;

use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::errors::{ErrorBody, ValidationErrorBody, ValidationMessage};
use crate::schemas::{EventEnvelope, EventTypeName};

/// The document's fixed parts.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "postwire webhooks API",
        version = "1.0.0",
        description = "Webhook subscriptions and event delivery of a social publishing API (the spec's webhooks area). \
Authenticate with `Authorization: Bearer <API_TOKEN>` (create one with `postwire token create`). \
Every error has the body `{statusCode, code, message}`; validation errors (400) carry `message` as a string, \
or an array when several rules failed. Deliveries are Standard Webhooks `POST`s of the `EventEnvelope`, \
signed with `webhook-id`, `webhook-timestamp` and `webhook-signature`.",
        license(name = "MIT OR Apache-2.0")
    ),
    modifiers(&BearerSecurity),
    tags(
        (name = "Workspaces", description = "Workspaces the token may use."),
        (name = "Webhooks", description = "Webhook subscriptions, their deliveries, test events and secrets."),
        (name = "Posts", description = "Reconciling missed events."),
        (name = "Meta", description = "This document."),
    ),
    components(schemas(ErrorBody, ValidationErrorBody, ValidationMessage, EventEnvelope, EventTypeName))
)]
pub struct ApiDoc;

/// Adds the `bearer` security scheme.
struct BearerSecurity;

impl Modify for BearerSecurity {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("pw_…")
                    .description(Some(
                        "An API token. Scopes: `webhooks:read`, `webhooks:write` (implies read).",
                    ))
                    .build(),
            ),
        );
    }
}

/// The full document: fixed parts plus every registered public route.
pub fn document() -> utoipa::openapi::OpenApi {
    utoipa_axum::router::OpenApiRouter::<crate::state::AppState>::with_openapi(ApiDoc::openapi())
        .merge(crate::routes::authenticated_routes())
        .merge(crate::routes::open_routes())
        .into_openapi()
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
