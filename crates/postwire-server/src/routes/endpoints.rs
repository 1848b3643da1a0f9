//! The two kinds of endpoint a workspace has, subscribers' subscriptions (`…/webhooks`)
//! and operator endpoints (`…/operator-webhooks`), and the one implementation of the
//! operations both have: load with the ownership check, list, delete, pause or resume,
//! rotate the secret, send a test event, list the deliveries and resend one.
//!
//! Why: the two kinds share one table, one id space and every [`Sender`] method, and
//! differ only in what [`EndpointKind`] declares (the purpose a record must have, the
//! name of the id in paths and messages, the API's view of one and of its deliveries).
//! The public handlers of these operations, in [`crate::routes::webhooks`],
//! [`crate::routes::operator_webhooks`], [`crate::routes::deliveries`] and
//! [`crate::routes::replay`], are written by [`endpoint_operation!`] from one template per
//! operation (its `#[utoipa::path]` description included), given the kind, the doc comment
//! and the names; the kind's own words are its [`KindDocs`]. The Settings screen calls the
//! same functions, so there is one path to the data per operation, whatever the kind.
//!
//! [`Sender`]: postwire_sender::Sender

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::{StatusCode, Uri};
use postwire_core::Subscription;
use postwire_sender::{DeliveryId, Published, Purpose, SubscriptionRecord, TestEvent};
use serde::Serialize;

use crate::auth::Caller;
use crate::errors::{ApiError, ApiResult};
use crate::routes::deliveries;
use crate::schemas::{
    DeliveryList, EventTypeName, OperatorDelivery, OperatorDeliveryList, OperatorEndpoint, OperatorEndpointList,
    ResentDelivery, RotatedSecret, TestEventQueued,
};
use crate::state::AppState;
use crate::tokens::Scope;
use crate::validation::{ApiPath, check_id_param, parse_enabled, parse_json, parse_test_message, read_body};

/// The `data.message` of a test event when the request gives none.
pub const DEFAULT_TEST_MESSAGE: &str = "This is a test event from postwire.";

/// What sets one kind of endpoint apart from the other; everything else is shared.
pub trait EndpointKind: Send + Sync + 'static {
    /// The purpose its records have; a record of the other purpose is `not_found`.
    const PURPOSE: Purpose;
    /// The name of its id in paths and validation messages (`webhookId`, `endpointId`).
    const ID_PARAM: &'static str;
    /// What one is called in a `not_found` message (`webhook subscription`).
    const API_NOUN: &'static str;
    /// What one is called in log lines (`subscription`, `operator endpoint`).
    const LOG_NOUN: &'static str;
    /// The API document's words for this kind, where they differ from the other kind's
    /// (what [`endpoint_operation!`] writes into each operation's description).
    const DOCS: KindDocs;
    /// The API's view of one (never its secret).
    type View: Serialize;
    /// The API's body of a list of them.
    type List: Serialize;
    /// The API's body of a page of one's deliveries.
    type Deliveries: Serialize;
    /// The view of `record`.
    fn view(record: SubscriptionRecord) -> Self::View;
    /// The body listing `records`.
    fn list(records: Vec<SubscriptionRecord>) -> Self::List;
    /// The body of `page`.
    fn deliveries(page: DeliveryList) -> Self::Deliveries;
}

/// The sentences of the API document that name one kind of endpoint: the rest of each
/// shared operation's description is written once, in [`endpoint_operation!`].
#[derive(Debug)]
pub struct KindDocs {
    /// The tag its operations are listed under.
    pub tag: &'static str,
    /// The collection's path, `…/webhooks`; one endpoint's is [`item_path`] below it.
    pub collection_path: &'static str,
    /// The description of its id in paths.
    pub id: &'static str,
    /// What one is called in the document (`subscription`).
    pub one: &'static str,
    /// What several are called (`subscriptions`).
    pub several: &'static str,
    /// The `404` of an operation on one.
    pub not_found: &'static str,
    /// The `202` of its test operation.
    pub test_queued: &'static str,
    /// The description of `deliveryId` in its resend operation.
    pub delivery_id: &'static str,
    /// The `202` of its resend operation.
    pub resent: &'static str,
    /// The `404` of its resend operation.
    pub resend_not_found: &'static str,
    /// The `410` of its resend operation.
    pub resend_erased: &'static str,
}

/// A subscriber's webhook subscription: the spec's events it matches.
#[derive(Debug)]
pub enum Subscriptions {}

impl EndpointKind for Subscriptions {
    const PURPOSE: Purpose = Purpose::Events;
    const ID_PARAM: &'static str = "webhookId";
    const API_NOUN: &'static str = "webhook subscription";
    const LOG_NOUN: &'static str = "subscription";
    const DOCS: KindDocs = KindDocs {
        tag: "Webhooks",
        collection_path: "/public/v1/workspaces/{workspaceId}/webhooks",
        id: "Subscription id.",
        one: "subscription",
        several: "subscriptions",
        not_found: "No such workspace or subscription (`not_found`).",
        test_queued: "The test event is queued for delivery.",
        delivery_id: "A delivery id from the deliveries list.",
        resent: "A new delivery of the same event (same `webhook-id`) is queued; it waits behind unfinished deliveries of its post or account, and is held while the subscription is paused.",
        resend_not_found: "No such workspace, subscription, or delivery of that subscription (`not_found`).",
        resend_erased: "`payload_erased`: the event's payload was erased (`DELETE …/payloads`); there is nothing to send, for good.",
    };
    type View = Subscription;
    type List = serde_json::Value;
    type Deliveries = DeliveryList;
    fn view(record: SubscriptionRecord) -> Subscription {
        record.subscription
    }
    fn list(records: Vec<SubscriptionRecord>) -> serde_json::Value {
        let data: Vec<Subscription> = records.into_iter().map(Self::view).collect();
        serde_json::json!({ "data": data })
    }
    fn deliveries(page: DeliveryList) -> DeliveryList {
        page
    }
}

/// An operator endpoint: the workspace's operational notices, and nothing else.
#[derive(Debug)]
pub enum OperatorEndpoints {}

impl EndpointKind for OperatorEndpoints {
    const PURPOSE: Purpose = Purpose::Operator;
    const ID_PARAM: &'static str = "endpointId";
    const API_NOUN: &'static str = "operator endpoint";
    const LOG_NOUN: &'static str = "operator endpoint";
    const DOCS: KindDocs = KindDocs {
        tag: "Operator endpoints",
        collection_path: "/public/v1/workspaces/{workspaceId}/operator-webhooks",
        id: "Operator endpoint id.",
        one: "operator endpoint",
        several: "operator endpoints",
        not_found: "No such workspace or operator endpoint (`not_found`); a subscription's id is not an operator endpoint's.",
        test_queued: "The test event is queued for delivery to this endpoint.",
        delivery_id: "A delivery id from the endpoint's deliveries list.",
        resent: "A new delivery of the same notice (same `webhook-id`) is queued; it waits behind unfinished notices about the same subscription, and is held while the endpoint is paused.",
        resend_not_found: "No such workspace, operator endpoint, or delivery of that endpoint (`not_found`).",
        resend_erased: "`payload_erased`: the payload was erased; there is nothing to send, for good.",
    };
    type View = OperatorEndpoint;
    type List = OperatorEndpointList;
    type Deliveries = OperatorDeliveryList;
    fn view(record: SubscriptionRecord) -> OperatorEndpoint {
        OperatorEndpoint::from(&record)
    }
    fn list(records: Vec<SubscriptionRecord>) -> OperatorEndpointList {
        OperatorEndpointList {
            data: records.iter().map(OperatorEndpoint::from).collect(),
        }
    }
    fn deliveries(page: DeliveryList) -> OperatorDeliveryList {
        OperatorDeliveryList {
            data: page.data.into_iter().map(OperatorDelivery::from).collect(),
            next_cursor: page.next_cursor,
        }
    }
}

/// The endpoint `id` of kind `K` of `workspace_id`: 400 `invalid_request` when `id` breaks
/// the documented id rule ([`check_id_param`]), `not_found` when there is no such
/// endpoint in that workspace, or when `id` is the other kind's.
pub(crate) async fn load<K: EndpointKind>(
    state: &AppState,
    workspace_id: &str,
    id: &str,
) -> ApiResult<SubscriptionRecord> {
    check_id_param(K::ID_PARAM, id)?;
    let record = state.sender.subscription(id).await?;
    if record.workspace_id != workspace_id || record.purpose != K::PURPOSE {
        let shown: String = id.chars().take(64).collect();
        return Err(ApiError::NotFound(format!("{} `{shown}` not found", K::API_NOUN)));
    }
    Ok(record)
}

/// `GET` the collection: the workspace's endpoints of kind `K`, oldest first.
pub(crate) async fn list<K: EndpointKind>(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(workspace_id): ApiPath<String>,
) -> ApiResult<Json<K::List>> {
    caller.authorize(&state, Scope::WebhooksRead, &workspace_id).await?;
    let records = state.sender.list_endpoints(&workspace_id, K::PURPOSE).await?;
    Ok(Json(K::list(records)))
}

/// `GET` one endpoint.
pub(crate) async fn get<K: EndpointKind>(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath((workspace_id, id)): ApiPath<(String, String)>,
) -> ApiResult<Json<K::View>> {
    caller.authorize(&state, Scope::WebhooksRead, &workspace_id).await?;
    Ok(Json(K::view(load::<K>(&state, &workspace_id, &id).await?)))
}

/// `DELETE` one endpoint, with its deliveries.
pub(crate) async fn delete<K: EndpointKind>(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath((workspace_id, id)): ApiPath<(String, String)>,
) -> ApiResult<StatusCode> {
    caller.authorize(&state, Scope::WebhooksWrite, &workspace_id).await?;
    load::<K>(&state, &workspace_id, &id).await?;
    state.sender.delete_subscription(&id).await?;
    tracing::info!(subscription_id = %id, token_id = %caller.0.id, "{} deleted", K::LOG_NOUN);
    Ok(StatusCode::NO_CONTENT)
}

/// `PUT …/enabled`: pause (`{"enabled": false}`) or resume (`{"enabled": true}`).
pub(crate) async fn set_enabled<K: EndpointKind>(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath((workspace_id, id)): ApiPath<(String, String)>,
    body: Body,
) -> ApiResult<Json<K::View>> {
    caller.authorize(&state, Scope::WebhooksWrite, &workspace_id).await?;
    load::<K>(&state, &workspace_id, &id).await?;
    let bytes = read_body(body, state.max_body_bytes).await?;
    let enabled = parse_enabled(parse_json(&bytes)?.as_ref())?;
    let record = state.sender.set_enabled(&id, enabled).await?;
    tracing::info!(subscription_id = %id, enabled, token_id = %caller.0.id, "{} enabled state set", K::LOG_NOUN);
    Ok(Json(K::view(record)))
}

/// `POST …/rotate-secret`: the new secret, returned this once.
pub(crate) async fn rotate_secret<K: EndpointKind>(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath((workspace_id, id)): ApiPath<(String, String)>,
) -> ApiResult<Json<RotatedSecret>> {
    caller.authorize(&state, Scope::WebhooksWrite, &workspace_id).await?;
    load::<K>(&state, &workspace_id, &id).await?;
    let rotated = state.sender.rotate_secret(&id).await?;
    tracing::info!(subscription_id = %id, token_id = %caller.0.id, "{} signing secret rotated", K::LOG_NOUN);
    Ok(Json(RotatedSecret {
        secret: rotated.secret.expose(),
        previous_secret_expires_at: rotated.previous_valid_until.to_string(),
    }))
}

/// Queues a `webhook.test` event (`data.message`) to the endpoint `id` of kind `K` of
/// `workspace_id` only, whatever its filters, and returns its event id. The caller has
/// checked ownership ([`load`]).
pub(crate) async fn queue_test<K: EndpointKind>(
    state: &AppState,
    workspace_id: &str,
    id: &str,
    message: String,
) -> ApiResult<String> {
    let published = state
        .sender
        .publish(TestEvent {
            workspace_id: workspace_id.to_owned(),
            subscription_id: Some(id.to_owned()),
            message,
        })
        .await?;
    match published {
        Published::Event { event_id, .. } => {
            tracing::info!(subscription_id = %id, event_id = %event_id, "test event queued to a {}", K::LOG_NOUN);
            Ok(event_id)
        }
        Published::NoEvent(_) => Err(ApiError::Internal("a test event produced no event".into())),
    }
}

/// `POST …/test`: a `webhook.test` event (the body's optional `message`) to this endpoint.
pub(crate) async fn send_test<K: EndpointKind>(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath((workspace_id, id)): ApiPath<(String, String)>,
    body: Body,
) -> ApiResult<(StatusCode, Json<TestEventQueued>)> {
    caller.authorize(&state, Scope::WebhooksWrite, &workspace_id).await?;
    load::<K>(&state, &workspace_id, &id).await?;
    let bytes = read_body(body, state.max_body_bytes).await?;
    let message = parse_test_message(parse_json(&bytes)?.as_ref())?.unwrap_or_else(|| DEFAULT_TEST_MESSAGE.to_owned());
    let event_id = queue_test::<K>(&state, &workspace_id, &id, message).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(TestEventQueued {
            event_id,
            event_type: EventTypeName::WebhookTest,
        }),
    ))
}

/// `GET …/deliveries`: a page of the endpoint's deliveries, newest first
/// ([`deliveries::page`]).
pub(crate) async fn list_deliveries<K: EndpointKind>(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath((workspace_id, id)): ApiPath<(String, String)>,
    uri: Uri,
) -> ApiResult<Json<K::Deliveries>> {
    caller.authorize(&state, Scope::WebhooksRead, &workspace_id).await?;
    load::<K>(&state, &workspace_id, &id).await?;
    Ok(Json(K::deliveries(deliveries::page(&state, &id, &uri).await?)))
}

/// `POST …/deliveries/{deliveryId}/resend`: the same event again (same `webhook-id`,
/// same body), signed afresh, as a new delivery.
pub(crate) async fn resend<K: EndpointKind>(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath((workspace_id, id, delivery_id)): ApiPath<(String, String, String)>,
) -> ApiResult<(StatusCode, Json<ResentDelivery>)> {
    caller.authorize(&state, Scope::WebhooksWrite, &workspace_id).await?;
    load::<K>(&state, &workspace_id, &id).await?;
    let delivery: DeliveryId = delivery_id.parse()?;
    let new = state.sender.resend(&id, delivery).await?;
    tracing::info!(subscription_id = %id, delivery = %delivery, resent_as = %new, token_id = %caller.0.id, "{} delivery resent", K::LOG_NOUN);
    Ok((
        StatusCode::ACCEPTED,
        Json(ResentDelivery {
            delivery_id: new.to_string(),
            resent_from: delivery.to_string(),
        }),
    ))
}

/// The path of an operation on one endpoint of kind `K`: the collection's, the endpoint's
/// id parameter, then `rest` (`""` for the endpoint itself, `"/enabled"`, ...).
pub(crate) fn item_path<K: EndpointKind>(rest: &str) -> String {
    format!("{}/{{{}}}{rest}", K::DOCS.collection_path, K::ID_PARAM)
}

/// The `400` of an operation on one endpoint: `prefix` (the operation's own reasons,
/// ending in "or an "), then the id rule of [`check_id_param`] for `id_param`.
pub(crate) fn invalid_id(prefix: &str, id_param: &str) -> String {
    format!(
        "`invalid_request`: {prefix}invalid `{id_param}` (empty, over 200 characters, or with a control character)."
    )
}

/// Writes the public handler of one operation both kinds of endpoint have, with its
/// `#[utoipa::path]` description, for the kind named: the doc comment (the operation's
/// summary and description), the handler's name, its `operationId`, the kind's id
/// parameter and the schema of its answer are given; every other word of the description
/// is the kind's [`KindDocs`] or written here once, so the two kinds' documents cannot
/// drift apart. The handler calls this module's generic function of the same operation.
///
/// ```ignore
/// endpoint_operation! {
///     /// Deletes a subscription, with its deliveries.
///     delete Subscriptions "webhookId" => delete_webhook, "deleteWebhook"
/// }
/// ```
macro_rules! endpoint_operation {
    ($(#[doc = $doc:literal])* list $kind:ident $id:literal => $fn:ident, $op:literal, $list:ident) => {
        endpoint_operation!(@handler [$(#[doc = $doc])*] get (<$kind as crate::routes::endpoints::EndpointKind>::DOCS.collection_path) $kind $op "webhooks:read"
            params: [("workspaceId" = String, Path, description = "Workspace id.")]
            request: []
            responses: [
                (status = 200, description = format!("The {} (never their secrets).", <$kind as crate::routes::endpoints::EndpointKind>::DOCS.several), body = $list),
                (status = 404, description = "No such workspace (`not_found`).", body = crate::errors::ErrorBody),
            ]
            fn $fn(path: crate::validation::ApiPath<String>) -> axum::Json<<$kind as crate::routes::endpoints::EndpointKind>::List> => list);
    };
    ($(#[doc = $doc:literal])* delete $kind:ident $id:literal => $fn:ident, $op:literal) => {
        endpoint_operation!(@handler [$(#[doc = $doc])*] delete (crate::routes::endpoints::item_path::<$kind>("")) $kind $op "webhooks:write"
            params: [("workspaceId" = String, Path, description = "Workspace id."), ($id = String, Path, description = <$kind as crate::routes::endpoints::EndpointKind>::DOCS.id)]
            request: []
            responses: [
                (status = 204, description = "Deleted."),
                (status = 400, description = crate::routes::endpoints::invalid_id("", $id), body = crate::errors::ValidationErrorBody),
                (status = 404, description = <$kind as crate::routes::endpoints::EndpointKind>::DOCS.not_found, body = crate::errors::ErrorBody),
            ]
            fn $fn(path: crate::validation::ApiPath<(String, String)>) -> axum::http::StatusCode => delete);
    };
    ($(#[doc = $doc:literal])* set_enabled $kind:ident $id:literal => $fn:ident, $op:literal, $view:ident) => {
        endpoint_operation!(@handler [$(#[doc = $doc])*] put (crate::routes::endpoints::item_path::<$kind>("/enabled")) $kind $op "webhooks:write"
            params: [("workspaceId" = String, Path, description = "Workspace id."), ($id = String, Path, description = <$kind as crate::routes::endpoints::EndpointKind>::DOCS.id)]
            request: [request_body(content = crate::schemas::SetEnabledRequest, content_type = "application/json"),]
            responses: [
                (status = 200, description = format!("The {} after the change.", <$kind as crate::routes::endpoints::EndpointKind>::DOCS.one), body = $view),
                (status = 400, description = crate::routes::endpoints::invalid_id("the body is not `{\"enabled\": boolean}`, or an ", $id), body = crate::errors::ValidationErrorBody),
                (status = 404, description = <$kind as crate::routes::endpoints::EndpointKind>::DOCS.not_found, body = crate::errors::ErrorBody),
            ]
            fn $fn(path: crate::validation::ApiPath<(String, String)>, body: axum::body::Body) -> axum::Json<<$kind as crate::routes::endpoints::EndpointKind>::View> => set_enabled);
    };
    ($(#[doc = $doc:literal])* rotate_secret $kind:ident $id:literal => $fn:ident, $op:literal) => {
        endpoint_operation!(@handler [$(#[doc = $doc])*] post (crate::routes::endpoints::item_path::<$kind>("/rotate-secret")) $kind $op "webhooks:write"
            params: [("workspaceId" = String, Path, description = "Workspace id."), ($id = String, Path, description = <$kind as crate::routes::endpoints::EndpointKind>::DOCS.id)]
            request: []
            responses: [
                (status = 200, description = "The new secret, shown this once.", body = crate::schemas::RotatedSecret),
                (status = 400, description = crate::routes::endpoints::invalid_id("", $id), body = crate::errors::ValidationErrorBody),
                (status = 404, description = <$kind as crate::routes::endpoints::EndpointKind>::DOCS.not_found, body = crate::errors::ErrorBody),
            ]
            fn $fn(path: crate::validation::ApiPath<(String, String)>) -> axum::Json<crate::schemas::RotatedSecret> => rotate_secret);
    };
    ($(#[doc = $doc:literal])* send_test $kind:ident $id:literal => $fn:ident, $op:literal) => {
        endpoint_operation!(@handler [$(#[doc = $doc])*] post (crate::routes::endpoints::item_path::<$kind>("/test")) $kind $op "webhooks:write"
            params: [("workspaceId" = String, Path, description = "Workspace id."), ($id = String, Path, description = <$kind as crate::routes::endpoints::EndpointKind>::DOCS.id)]
            request: [request_body(content = Option<crate::schemas::SendTestRequest>, content_type = "application/json", description = "Optional."),]
            responses: [
                (status = 202, description = <$kind as crate::routes::endpoints::EndpointKind>::DOCS.test_queued, body = crate::schemas::TestEventQueued),
                (status = 400, description = crate::routes::endpoints::invalid_id("the body is not `{\"message\": string}` (or empty, or `null`), the message is over 4096 characters, or an ", $id), body = crate::errors::ValidationErrorBody),
                (status = 404, description = <$kind as crate::routes::endpoints::EndpointKind>::DOCS.not_found, body = crate::errors::ErrorBody),
            ]
            fn $fn(path: crate::validation::ApiPath<(String, String)>, body: axum::body::Body) -> (axum::http::StatusCode, axum::Json<crate::schemas::TestEventQueued>) => send_test);
    };
    ($(#[doc = $doc:literal])* list_deliveries $kind:ident $id:literal => $fn:ident, $op:literal, $page:ident) => {
        endpoint_operation!(@handler [$(#[doc = $doc])*] get (crate::routes::endpoints::item_path::<$kind>("/deliveries")) $kind $op "webhooks:read"
            params: [
                ("workspaceId" = String, Path, description = "Workspace id."),
                ($id = String, Path, description = <$kind as crate::routes::endpoints::EndpointKind>::DOCS.id),
                ("limit" = Option<u32>, Query, description = "Page size, 1 to 100 (default 20).", minimum = 1, maximum = 100),
                ("cursor" = Option<String>, Query, description = "`nextCursor` of the previous page.", pattern = "^c_[1-9][0-9]{0,17}$", example = "c_42"),
            ]
            request: []
            responses: [
                (status = 200, description = "A page of deliveries. Finished deliveries (delivered, failed, expired) are kept for the server's retention period (30 days by default, `--retention-days`), then removed with their attempts; pending and held ones are always listed.", body = $page),
                (status = 400, description = crate::routes::endpoints::invalid_id("bad `limit` or `cursor`, an unknown or repeated parameter, or an ", $id), body = crate::errors::ValidationErrorBody),
                (status = 404, description = <$kind as crate::routes::endpoints::EndpointKind>::DOCS.not_found, body = crate::errors::ErrorBody),
            ]
            fn $fn(path: crate::validation::ApiPath<(String, String)>, uri: axum::http::Uri) -> axum::Json<<$kind as crate::routes::endpoints::EndpointKind>::Deliveries> => list_deliveries);
    };
    ($(#[doc = $doc:literal])* resend $kind:ident $id:literal => $fn:ident, $op:literal) => {
        endpoint_operation!(@handler [$(#[doc = $doc])*] post (crate::routes::endpoints::item_path::<$kind>("/deliveries/{deliveryId}/resend")) $kind $op "webhooks:write"
            params: [
                ("workspaceId" = String, Path, description = "Workspace id."),
                ($id = String, Path, description = <$kind as crate::routes::endpoints::EndpointKind>::DOCS.id),
                ("deliveryId" = String, Path, description = <$kind as crate::routes::endpoints::EndpointKind>::DOCS.delivery_id, pattern = "^dlv_[1-9][0-9]{0,17}$", example = "dlv_42"),
            ]
            request: []
            responses: [
                (status = 202, description = <$kind as crate::routes::endpoints::EndpointKind>::DOCS.resent, body = crate::schemas::ResentDelivery),
                (status = 400, description = format!("`invalid_request`: `deliveryId` is not a delivery id, or an invalid `{}`.", $id), body = crate::errors::ValidationErrorBody),
                (status = 404, description = <$kind as crate::routes::endpoints::EndpointKind>::DOCS.resend_not_found, body = crate::errors::ErrorBody),
                (status = 409, description = "`delivery_unfinished`: the delivery is still pending, waiting for a retry or held; it will be attempted without a resend.", body = crate::errors::ErrorBody),
                (status = 410, description = <$kind as crate::routes::endpoints::EndpointKind>::DOCS.resend_erased, body = crate::errors::ErrorBody),
            ]
            fn $fn(path: crate::validation::ApiPath<(String, String, String)>) -> (axum::http::StatusCode, axum::Json<crate::schemas::ResentDelivery>) => resend);
    };
    // What every operation has: its place in the document, the token it needs (401, 403)
    // and the errors of every route, then the handler that calls the generic function.
    (@handler [$($doc:tt)*] $method:ident ($($path:tt)*) $kind:ident $op:literal $scope:literal
        params: [$($params:tt)*] request: [$($request:tt)*] responses: [$($responses:tt)*]
        fn $fn:ident($($arg:ident: $arg_type:ty),*) -> $answer:ty => $generic:ident) => {
        $($doc)*
        #[utoipa::path(
            $method,
            path = $($path)*,
            tag = <$kind as crate::routes::endpoints::EndpointKind>::DOCS.tag,
            operation_id = $op,
            params($($params)*),
            $($request)*
            responses(
                $($responses)*
                (status = 401, description = "`unauthorized`.", body = crate::errors::ErrorBody),
                (status = 403, description = format!("`insufficient_scope` (needs `{}`) or `forbidden`.", $scope), body = crate::errors::ErrorBody),
                crate::errors::CommonErrors,
            ),
            security(("bearer" = [$scope]))
        )]
        pub async fn $fn(
            state: axum::extract::State<crate::state::AppState>,
            caller: crate::auth::Caller,
            $($arg: $arg_type),*
        ) -> crate::errors::ApiResult<$answer> {
            crate::routes::endpoints::$generic::<$kind>(state, caller, $($arg),*).await
        }
    };
}
pub(crate) use endpoint_operation;
