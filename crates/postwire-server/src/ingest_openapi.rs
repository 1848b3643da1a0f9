//! The OpenAPI 3.1 document of the internal ingest API (`/internal/v1`, see
//! [`crate::ingest`]).
//!
//! It is a document of its own, apart from the public one: the ingest API has its own
//! token and should be reachable only inside the platform's network, so its document is
//! served behind that token, at `GET /internal/v1/openapi.json`, and checked in as
//! `docs/ingest-openapi.json` (a test fails when the two differ; regenerate with
//! `postwire openapi --ingest > docs/ingest-openapi.json`).
//!
//! It is written here as JSON rather than derived from the handlers, because the rules
//! of a change depend on its kind (`published` needs `post.releaseURL` and
//! `post.releaseId`, `failed` needs `error`, …): each kind is its own `oneOf` branch,
//! which derive macros cannot say. It is held to the handlers by Schemathesis
//! (`tests/contract/test.sh`, every phase, every check) and by a test that every
//! documented operation is routed.

use std::sync::OnceLock;

use serde_json::{Value, json};

use crate::validation::{ID_PATTERN, MAX_ID_CHARS, MAX_INGEST_BATCH};

/// Longest free text of the ingest API (names, external ids, groups), in characters:
/// the sender's limit.
const MAX_TEXT_CHARS: usize = postwire_sender::events::MAX_TEXT_LEN;

/// An id: 1 to 200 characters, no control character (the sender's rule).
fn id(description: &str) -> Value {
    json!({
        "type": "string",
        "minLength": 1,
        "maxLength": MAX_ID_CHARS,
        "pattern": ID_PATTERN,
        "description": description,
    })
}

/// Free text of at most 4096 characters.
fn text(description: &str) -> Value {
    json!({ "type": "string", "maxLength": MAX_TEXT_CHARS, "description": description })
}

/// A JSON reference to a component schema.
fn schema_ref(name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

/// A response whose body is the schema `name`.
fn response(description: &str, name: &str) -> Value {
    json!({
        "description": description,
        "content": { "application/json": { "schema": schema_ref(name) } },
    })
}

/// The error answers every ingest operation shares.
fn common_errors(responses: &mut Value) {
    responses["401"] = response(
        "`unauthorized`: the ingest token is missing or wrong, or ingest is disabled on this server.",
        "ErrorBody",
    );
    responses["5XX"] = response(
        "`internal_error` (500; details in the server log only) or `unavailable` (503, shutting down).",
        "ErrorBody",
    );
}

/// One `oneOf` branch of a post change: `kind: "post"`, `change` among `changes`, and
/// the fields `required` on top of the common ones.
fn post_change(description: &str, changes: &[&str], extra_required: &[&str], post: Value) -> Value {
    let mut required = vec!["kind", "workspaceId", "change", "post"];
    required.extend_from_slice(extra_required);
    // Optional objects may be null; a required one may not.
    let object_or_null = |field: &str, name: &str| {
        if extra_required.contains(&field) {
            schema_ref(name)
        } else {
            json!({ "oneOf": [schema_ref(name), { "type": "null" }] })
        }
    };
    json!({
        "type": "object",
        "description": description,
        "required": required,
        "properties": {
            "kind": { "const": "post" },
            "workspaceId": id("A registered workspace."),
            "change": { "type": "string", "enum": changes },
            "post": post,
            "error": object_or_null("error", "EventError"),
            "deletedBy": object_or_null("deletedBy", "Actor"),
        },
    })
}

/// One `oneOf` branch of an account change.
fn account_change(description: &str, change: &str, reason: Value, extra_required: &[&str]) -> Value {
    let mut required = vec!["kind", "workspaceId", "change", "integration"];
    required.extend_from_slice(extra_required);
    json!({
        "type": "object",
        "description": description,
        "required": required,
        "properties": {
            "kind": { "const": "account" },
            "workspaceId": id("A registered workspace."),
            "change": { "const": change },
            "integration": schema_ref("Integration"),
            "reason": reason,
        },
    })
}

/// The component schemas.
fn schemas() -> Value {
    let nullable_string = json!({ "type": ["string", "null"] });
    let failure_codes = [
        "quota_exceeded",
        "integration_disconnected",
        "content_rejected",
        "media_invalid",
        "rate_limited",
        "provider_error",
    ];
    json!({
        "ErrorBody": {
            "type": "object",
            "description": "The error body of every status but 400.",
            "required": ["statusCode", "code", "message"],
            "properties": {
                "statusCode": { "type": "integer", "minimum": 401, "maximum": 599, "description": "The HTTP status, repeated." },
                "code": {
                    "type": "string",
                    "enum": ["unauthorized", "not_found", "method_not_allowed", "request_timeout", "idempotency_key_reused", "idempotency_in_progress", "quota_exceeded", "rate_limited", "unavailable", "internal_error"],
                    "description": "A stable code.",
                },
                "message": { "type": "string", "description": "A sentence for a human." },
            },
        },
        "ValidationErrorBody": {
            "type": "object",
            "description": "A 400: `message` is one string, or an array when several rules failed.",
            "required": ["statusCode", "code", "message"],
            "properties": {
                "statusCode": { "const": 400 },
                "code": { "const": "invalid_request" },
                "message": {
                    "oneOf": [
                        { "type": "string" },
                        { "type": "array", "items": { "type": "string" } },
                    ],
                },
            },
        },
        "WorkspaceBody": {
            "type": "object",
            "description": "A workspace's display name.",
            "required": ["name"],
            "additionalProperties": false,
            "properties": { "name": text("Display name.") },
            "example": { "name": "Acme" },
        },
        "Workspace": {
            "type": "object",
            "required": ["id", "name"],
            "properties": { "id": { "type": "string" }, "name": { "type": "string" } },
        },
        "IntegrationBody": {
            "type": "object",
            "description": "A connected account, as the platform knows it.",
            "required": ["name", "providerIdentifier"],
            "additionalProperties": false,
            "properties": {
                "name": text("Account display name."),
                "providerIdentifier": id("The social provider, e.g. `x`."),
                "picture": { "type": ["string", "null"], "description": "Picture address." },
            },
            "example": { "name": "Acme on X", "providerIdentifier": "x" },
        },
        "Integration": {
            "type": "object",
            "description": "A connected account. Other fields are ignored.",
            "required": ["id", "name", "providerIdentifier"],
            "properties": {
                "id": id("Connected account identifier."),
                "name": text("Account display name."),
                "providerIdentifier": id("The social provider, e.g. `x`."),
                "picture": { "type": ["string", "null"], "description": "Picture address." },
            },
        },
        "Post": {
            "type": "object",
            "description": "The platform's post record. Other fields (such as `content`) are ignored and never stored.",
            "required": ["id", "state", "publishDate", "integration"],
            "properties": {
                "id": id("Post identifier."),
                "externalId": text("The client's own reference (default empty)."),
                "group": text("Group of posts published together (default empty)."),
                "state": { "type": "string", "description": "`QUEUE`, `PUBLISHING`, `PUBLISHED`, `ERROR`, or any other value, kept as sent." },
                "isDraft": { "type": "boolean", "description": "Changes of drafts emit no event (default false)." },
                "publishDate": { "type": "string", "format": "date-time", "description": "RFC 3339." },
                "integration": schema_ref("Integration"),
                "releaseURL": nullable_string.clone(),
                "releaseId": nullable_string.clone(),
                "error": nullable_string,
            },
        },
        "PublishedPost": {
            "description": "A post record with its release: `releaseURL` and `releaseId` are required.",
            "allOf": [
                schema_ref("Post"),
                {
                    "required": ["releaseURL", "releaseId"],
                    "properties": {
                        "releaseURL": { "type": "string" },
                        "releaseId": { "type": "string" },
                    },
                },
            ],
        },
        "EventError": {
            "description": "Why a post failed. A failure with code `unknown` is never retryable. Other fields are ignored.",
            "oneOf": [
                {
                    "type": "object",
                    "required": ["code", "message", "retryable"],
                    "properties": {
                        "code": { "type": "string", "enum": failure_codes },
                        "message": { "type": "string" },
                        "retryable": { "type": "boolean" },
                    },
                },
                {
                    "type": "object",
                    "required": ["code", "message", "retryable"],
                    "properties": {
                        "code": { "const": "unknown" },
                        "message": { "type": "string" },
                        "retryable": { "const": false },
                    },
                },
            ],
        },
        "Actor": {
            "type": "object",
            "description": "Who deleted the post. Other fields are ignored.",
            "required": ["kind"],
            "properties": {
                "kind": { "type": "string", "enum": ["dashboard", "api_token", "oauth_client", "system"] },
                "id": { "type": ["string", "null"] },
            },
        },
        "Change": {
            "description": "One change to report. `kind` and `change` say which rules apply.",
            "oneOf": [
                post_change(
                    "A post was scheduled, unscheduled, started publishing, or saved as a draft (no event).",
                    &["scheduled", "unscheduled", "publishing", "draft_saved"],
                    &[],
                    schema_ref("Post"),
                ),
                post_change("A post was published.", &["published"], &[], schema_ref("PublishedPost")),
                post_change("A post failed; `error` says why.", &["failed"], &["error"], schema_ref("Post")),
                post_change("A post was deleted; `deletedBy` says by whom.", &["deleted"], &["deletedBy"], schema_ref("Post")),
                account_change(
                    "An account must be reconnected, or was disabled or deleted.",
                    "disconnected",
                    json!({ "type": "string", "enum": ["reconnect_required", "disabled", "deleted"] }),
                    &["reason"],
                ),
                account_change(
                    "An account that needed reconnecting works again.",
                    "reconnected",
                    json!({
                        "description": "Ignored.",
                        "oneOf": [
                            { "type": "string", "enum": ["reconnect_required", "disabled", "deleted"] },
                            { "type": "null" },
                        ],
                    }),
                    &[],
                ),
            ],
        },
        "EventsRequest": {
            "type": "object",
            "required": ["changes"],
            "additionalProperties": false,
            "properties": {
                "changes": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": MAX_INGEST_BATCH,
                    "items": schema_ref("Change"),
                    "description": "Accepted all or none, in order.",
                },
            },
            "example": {
                "changes": [{
                    "kind": "post",
                    "workspaceId": "ws_contract",
                    "change": "published",
                    "post": {
                        "id": "post_1",
                        "externalId": "launch",
                        "state": "PUBLISHED",
                        "publishDate": "2026-12-01T09:00:00Z",
                        "integration": { "id": "acc_1", "name": "Acme on X", "providerIdentifier": "x" },
                        "releaseURL": "https://x.com/acme/status/1",
                        "releaseId": "1",
                    },
                }],
            },
        },
        "EventsResult": {
            "type": "object",
            "required": ["results"],
            "properties": {
                "results": {
                    "type": "array",
                    "description": "One entry per change, in order.",
                    "items": {
                        "oneOf": [
                            {
                                "type": "object",
                                "required": ["eventId", "deliveries"],
                                "properties": {
                                    "eventId": { "type": "string", "description": "The event (`webhook-id`)." },
                                    "deliveries": { "type": "integer", "minimum": 0, "description": "Subscriptions it goes to." },
                                },
                            },
                            {
                                "type": "object",
                                "required": ["eventId", "skipped"],
                                "properties": {
                                    "eventId": { "type": "null" },
                                    "skipped": { "const": "draft" },
                                },
                            },
                        ],
                    },
                },
            },
        },
    })
}

/// The document, built once.
pub fn document() -> Value {
    let bad_id = "an id over 200 characters or with a control character";
    let mut put_workspace = json!({
        "200": response("Registered or renamed.", "Workspace"),
        "400": response(&format!("`invalid_request`: the body is not `{{\"name\"}}` (no other field), the name is over 4096 characters, or {bad_id}."), "ValidationErrorBody"),
    });
    put_workspace["200"]["links"] = json!({
        "putIntegration": {
            "operationId": "putIntegration",
            "parameters": { "workspaceId": "$request.path.workspaceId" },
            "description": "Register an account of this workspace.",
        },
        "postEvents": {
            "operationId": "postEvents",
            "requestBody": {
                "changes": [{
                    "kind": "account",
                    "workspaceId": "$request.path.workspaceId",
                    "change": "reconnected",
                    "integration": { "id": "acc_1", "name": "Acme on X", "providerIdentifier": "x" },
                }],
            },
            "description": "Report a change of this workspace.",
        },
    });
    common_errors(&mut put_workspace);
    let mut put_integration = json!({
        "200": response("Registered or updated.", "Integration"),
        "400": response(&format!("`invalid_request`: the body is not `{{\"name\", \"providerIdentifier\", \"picture\"?}}`, or {bad_id}."), "ValidationErrorBody"),
        "404": response("`not_found`: the workspace is not registered.", "ErrorBody"),
    });
    common_errors(&mut put_integration);
    let mut post_events = json!({
        "200": response("Every event is on disk.", "EventsResult"),
        "400": response("`invalid_request`: the body breaks the schema (each problem is listed), or holds no change or more than 1000.", "ValidationErrorBody"),
        "404": response("`not_found`: a change names a workspace that is not registered.", "ErrorBody"),
        "409": response("`idempotency_key_reused`: the `Idempotency-Key` was sent before with a different body; or `idempotency_in_progress`: its first request is still running (retry shortly).", "ErrorBody"),
        "429": response("`quota_exceeded`: a workspace of the batch has used up its daily event quota (none of the batch is accepted; `Retry-After` is the time to 00:00 UTC); or `rate_limited`: too many unauthenticated requests from this address.", "ErrorBody"),
    });
    common_errors(&mut post_events);
    let mut get_document = json!({
        "200": {
            "description": "This document.",
            "content": { "application/json": { "schema": { "type": "object" } } },
        },
    });
    common_errors(&mut get_document);
    let security = json!([{ "ingest": [] }]);
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "postwire ingest API (internal)",
            "version": "1.0.0",
            "description": "How the rest of the platform reports workspaces, connected accounts, and post and account changes to the sender. Internal: reachable only inside the platform's network, with its own bearer token (`POSTWIRE_INGEST_TOKEN`); API tokens do not work here. Errors have the body `{statusCode, code, message}`; a 400's `message` is a string, or an array when several rules failed.",
            "license": { "name": "MIT OR Apache-2.0" },
        },
        "paths": {
            "/internal/v1/workspaces/{workspaceId}": {
                "put": {
                    "operationId": "putWorkspace",
                    "summary": "Register or rename a workspace.",
                    "parameters": [{ "name": "workspaceId", "in": "path", "required": true, "schema": id("Workspace id.") }],
                    "requestBody": { "required": true, "content": { "application/json": { "schema": schema_ref("WorkspaceBody") } } },
                    "responses": put_workspace,
                    "security": security.clone(),
                },
            },
            "/internal/v1/workspaces/{workspaceId}/integrations/{integrationId}": {
                "put": {
                    "operationId": "putIntegration",
                    "summary": "Register or update a connected account (needed before subscriptions can be limited to it).",
                    "parameters": [
                        { "name": "workspaceId", "in": "path", "required": true, "schema": id("A registered workspace.") },
                        { "name": "integrationId", "in": "path", "required": true, "schema": id("Account id.") },
                    ],
                    "requestBody": { "required": true, "content": { "application/json": { "schema": schema_ref("IntegrationBody") } } },
                    "responses": put_integration,
                    "security": security.clone(),
                },
            },
            "/internal/v1/events": {
                "post": {
                    "operationId": "postEvents",
                    "summary": "Report changes: 1 to 1000, accepted all or none, in order. Drafts emit nothing.",
                    "parameters": [{
                        "name": "Idempotency-Key",
                        "in": "header",
                        "required": false,
                        "description": "1 to 255 visible ASCII characters. The same key with the same body (byte for byte) within 24 h returns the first answer, with `Idempotent-Replayed: true`, and publishes nothing again.",
                        "schema": { "type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[!-~]+$" },
                    }],
                    "requestBody": { "required": true, "content": { "application/json": { "schema": schema_ref("EventsRequest") } } },
                    "responses": post_events,
                    "security": security.clone(),
                },
            },
            "/internal/v1/openapi.json": {
                "get": {
                    "operationId": "getIngestOpenApiDocument",
                    "summary": "This document.",
                    "responses": get_document,
                    "security": security,
                },
            },
        },
        "components": {
            "schemas": schemas(),
            "securitySchemes": {
                "ingest": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "The ingest token (`POSTWIRE_INGEST_TOKEN`, or `<db>.ingest-token` when `postwire serve` generated it).",
                },
            },
        },
    })
}

/// The document as pretty JSON with a final newline, exactly as in
/// `docs/ingest-openapi.json`.
pub fn document_json() -> &'static str {
    static JSON: OnceLock<String> = OnceLock::new();
    JSON.get_or_init(|| {
        let mut s = serde_json::to_string_pretty(&document()).unwrap_or_else(|_| "{}".to_owned());
        s.push('\n');
        s
    })
}

/// `GET /internal/v1/openapi.json`, behind the ingest token.
pub async fn serve() -> impl axum::response::IntoResponse {
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        document_json(),
    )
}
