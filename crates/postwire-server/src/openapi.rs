//! The OpenAPI 3.1 document of the public API, generated from the code: its fixed parts
//! and the rules added to every operation. [`crate::routes`] assembles the document
//! (`routes::docs`) from the routes it registers and these parts, so this module does
//! not depend on the routes.
//!
//! The operations come from the `#[utoipa::path]` attributes of the handlers that
//! [`crate::routes`] registers; the shared parts (title, version 1.0.0, bearer security
//! scheme, tags, error schemas) from [`ApiDoc`]; the rules of the id path parameters and
//! the links between operations, the same for every operation, from [`complete`]. The
//! document is served at `GET /public/v1/openapi.json` and checked in as
//! `docs/openapi.json`; a test fails when the two differ (regenerate with
//! `postwire openapi > docs/openapi.json`). Schemathesis checks it against the server
//! in `tests/contract/test.sh`.

use utoipa::openapi::RefOr;
use utoipa::openapi::extensions::Extensions;
use utoipa::openapi::link::{Link, LinkBuilder};
use utoipa::openapi::path::{Operation, ParameterIn, PathItem};
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::errors::{ErrorBody, ErrorCodeName, InvalidRequestCode, ValidationErrorBody, ValidationMessage};
use crate::schemas::{EventEnvelope, EventTypeName, PostLookupQuery};
use crate::validation::{ID_PATTERN, MAX_ID_CHARS};

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
        (name = "Operator endpoints", description = "The workspace operator's own endpoints, which receive operational notices (an endpoint failing, about to pause, paused, resumed, recovered; a rotated secret or signing key) as signed webhooks."),
        (name = "Posts", description = "Reconciling missed events."),
        (name = "Signing keys", description = "Extension: the workspace's ed25519 key pair for asymmetric (`v1a`) signatures; its public keys and their rotation."),
        (name = "Meta", description = "This document."),
    ),
    components(schemas(ErrorBody, ValidationErrorBody, ValidationMessage, ErrorCodeName, InvalidRequestCode, EventEnvelope, EventTypeName, PostLookupQuery))
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

/// Every operation of a path item, mutably.
fn operations_mut(item: &mut PathItem) -> impl Iterator<Item = &mut Operation> {
    [
        &mut item.get,
        &mut item.put,
        &mut item.post,
        &mut item.delete,
        &mut item.options,
        &mut item.head,
        &mut item.patch,
        &mut item.trace,
    ]
    .into_iter()
    .flatten()
}

/// The schema of the `workspaceId` and `webhookId` path parameters: the rule
/// [`crate::validation::check_id_param`] enforces.
fn id_schema() -> Schema {
    Schema::Object(
        ObjectBuilder::new()
            .schema_type(Type::String)
            .min_length(Some(1))
            .max_length(Some(MAX_ID_CHARS))
            .pattern(Some(ID_PATTERN))
            .build(),
    )
}

/// A link to the operation `target`, passing the path's `workspaceId` and, as
/// `id_param`, the subscription's or operator endpoint's id found at `id_at` in the
/// response.
fn link(target: &str, id_param: &str, id_at: &str, which: &str) -> Link {
    LinkBuilder::new()
        .parameter("workspaceId", "$request.path.workspaceId")
        .parameter(id_param, id_at)
        .description(format!("`{target}` on {which}."))
        .extensions(Some(operation_id_extension(target)))
        .build()
}

/// Adds what the handlers' attributes cannot say once for all operations:
///
/// * the rule of the id path parameters (`workspaceId`, `webhookId`, `endpointId`,
///   `postId`, `integrationId`), the same on every
///   operation, enforced by [`crate::validation::check_id_param`] for `webhookId`; a
///   `workspaceId` outside the token's selection is answered 403 whatever its form;
/// * OpenAPI `links` from the creation response (`201`, the new subscription's `id`)
///   and from the list (`200`, the first subscription's `id`) to every operation that
///   takes a `webhookId`, so clients and tools (Schemathesis' stateful phase) can chain
///   "create, then read / update / pause / test / rotate / list deliveries / delete";
///   the same from an operator endpoint's creation and list to the operations that take
///   an `endpointId` (pause, test, list deliveries, rotate, delete);
///   and from the workspace list (`200`, the first workspace's `id`) to the operations
///   that take only a `workspaceId` (create, list, post look-up, portal link), or a
///   `workspaceId` and an erasure's subject.
///   Operations with another path parameter get theirs from the response that has that
///   id (`add_id_links`): a portal session's revocation from its creation, a resend
///   from the deliveries list (a subscription's or an operator endpoint's).
pub fn complete(doc: &mut utoipa::openapi::OpenApi) {
    let (mut takes_webhook_id, mut takes_endpoint_id, mut takes_workspace_id) = (Vec::new(), Vec::new(), Vec::new());
    for item in doc.paths.paths.values_mut() {
        for op in operations_mut(item) {
            let (mut has_workspace_id, mut has_webhook_id, mut has_endpoint_id, mut has_other) =
                (false, false, false, false);
            for param in op.parameters.iter_mut().flatten() {
                if param.parameter_in == ParameterIn::Path
                    && ["workspaceId", "webhookId", "endpointId"].contains(&param.name.as_str())
                {
                    param.schema = Some(RefOr::T(id_schema()));
                    has_workspace_id |= param.name == "workspaceId";
                    has_webhook_id |= param.name == "webhookId";
                    has_endpoint_id |= param.name == "endpointId";
                } else if param.parameter_in == ParameterIn::Path
                    && ["postId", "integrationId"].contains(&param.name.as_str())
                {
                    // The same rule (erasure's subjects). Any id is a valid subject (an
                    // unknown one erases nothing), so these operations are linked from
                    // the workspace list like those that take only a `workspaceId`.
                    param.schema = Some(RefOr::T(id_schema()));
                } else if param.parameter_in == ParameterIn::Path {
                    has_other = true;
                }
            }
            let Some(id) = &op.operation_id else { continue };
            // A link can only fill the ids a response has: operations that need another
            // path parameter (a delivery, a portal session) get none.
            if has_other {
                continue;
            }
            if has_webhook_id {
                takes_webhook_id.push(id.clone());
            } else if has_endpoint_id {
                takes_endpoint_id.push(id.clone());
            } else if has_workspace_id {
                takes_workspace_id.push(id.clone());
            }
        }
    }
    for item in doc.paths.paths.values_mut() {
        for op in operations_mut(item) {
            let (status, targets, id_param, id_at, which) = match op.operation_id.as_deref() {
                Some("createWebhook") => (
                    "201",
                    &takes_webhook_id,
                    "webhookId",
                    "$response.body#/id",
                    "the new subscription",
                ),
                Some("listWebhooks") => (
                    "200",
                    &takes_webhook_id,
                    "webhookId",
                    "$response.body#/data/0/id",
                    "the first subscription listed",
                ),
                Some("createOperatorWebhook") => (
                    "201",
                    &takes_endpoint_id,
                    "endpointId",
                    "$response.body#/id",
                    "the new operator endpoint",
                ),
                Some("listOperatorWebhooks") => (
                    "200",
                    &takes_endpoint_id,
                    "endpointId",
                    "$response.body#/data/0/id",
                    "the first operator endpoint listed",
                ),
                Some("listWorkspaces") => ("200", &takes_workspace_id, "", "", "the first workspace listed"),
                _ => continue,
            };
            let Some(RefOr::T(response)) = op.responses.responses.get_mut(status) else {
                continue;
            };
            for target in targets {
                let link = if id_at.is_empty() {
                    workspace_link(target, which)
                } else {
                    link(target, id_param, id_at, which)
                };
                response.links.insert(target.clone(), RefOr::T(link));
            }
        }
    }
    add_id_links(doc);
    constrain_integration_ids(doc);
}

/// Gives the `integrationIds` entries of the create and update bodies the id rule the
/// sender checks (1 to [`MAX_ID_CHARS`] characters, no control character), so a client
/// built from the document cannot send `[""]` and be refused with a 400.
fn constrain_integration_ids(doc: &mut utoipa::openapi::OpenApi) {
    let Some(components) = doc.components.as_mut() else {
        return;
    };
    for name in ["CreateWebhookRequest", "UpdateWebhookRequest"] {
        let Some(RefOr::T(Schema::Object(body))) = components.schemas.get_mut(name) else {
            continue;
        };
        if let Some(RefOr::T(Schema::Array(list))) = body.properties.get_mut("integrationIds") {
            list.items = utoipa::openapi::schema::ArrayItems::RefOrSchema(Box::new(RefOr::T(id_schema())));
        }
    }
}

/// The links that hand an id other than a subscription's to the next operation: a new
/// portal session's `id` to its revocation, the newest delivery listed (of a subscription
/// or an operator endpoint) to a resend,
/// a post looked up to the erasure of its payloads, and a workspace's key listing to its
/// published key set.
fn add_id_links(doc: &mut utoipa::openapi::OpenApi) {
    let specific = [
        (
            "createPortalSession",
            "201",
            "revokePortalSession",
            "sessionId",
            "$response.body#/id",
            "the new portal session",
        ),
        (
            "lookupPostEvents",
            "200",
            "erasePostPayloads",
            "postId",
            "$response.body#/postIds/0",
            "the first post looked up",
        ),
        (
            "listDeliveries",
            "200",
            "resendDelivery",
            "deliveryId",
            "$response.body#/data/0/id",
            "the newest delivery listed",
        ),
        (
            "listOperatorWebhookDeliveries",
            "200",
            "resendOperatorWebhookDelivery",
            "deliveryId",
            "$response.body#/data/0/id",
            "the newest delivery listed",
        ),
        (
            "listSigningKeys",
            "200",
            "getKeySet",
            "keySetId",
            "$response.body#/keySetId",
            "the workspace's published key set",
        ),
    ];
    for item in doc.paths.paths.values_mut() {
        for op in operations_mut(item) {
            for (from, status, target, param, at, which) in specific {
                if op.operation_id.as_deref() != Some(from) {
                    continue;
                }
                let Some(RefOr::T(response)) = op.responses.responses.get_mut(status) else {
                    continue;
                };
                let mut builder = LinkBuilder::new();
                // A key set is found by its id alone (its path names no workspace).
                if target != "getKeySet" {
                    builder = builder.parameter("workspaceId", "$request.path.workspaceId");
                }
                builder = builder
                    .parameter(param, at)
                    .description(format!("`{target}` on {which}."))
                    .extensions(Some(operation_id_extension(target)));
                match from {
                    "listDeliveries" => builder = builder.parameter("webhookId", "$request.path.webhookId"),
                    "listOperatorWebhookDeliveries" => {
                        builder = builder.parameter("endpointId", "$request.path.endpointId")
                    }
                    _ => {}
                }
                response.links.insert(target.to_owned(), RefOr::T(builder.build()));
            }
        }
    }
}

/// A link to the operation `target` with the `id` of the first workspace listed.
fn workspace_link(target: &str, which: &str) -> Link {
    LinkBuilder::new()
        .parameter("workspaceId", "$response.body#/data/0/id")
        .description(format!("`{target}` in {which}."))
        .extensions(Some(operation_id_extension(target)))
        .build()
}

/// `{"operationId": target}`, as an extension: utoipa 5.5 serializes
/// [`Link::operation_id`](utoipa::openapi::link::Link) as `operation_id`, a name OpenAPI
/// does not know, while extensions are flattened into the link object as they are.
fn operation_id_extension(target: &str) -> Extensions {
    let mut extension = Extensions::default();
    extension.insert("operationId".to_owned(), target.into());
    extension
}
