//! The two kinds of endpoint a workspace has, subscribers' subscriptions (`…/webhooks`)
//! and operator endpoints (`…/operator-webhooks`), and the one implementation of the
//! operations both have: load with the ownership check, list, delete, pause or resume,
//! rotate the secret, send a test event, list the deliveries and resend one.
//!
//! Why: the two kinds share one table, one id space and every [`Sender`] method, and
//! differ only in what [`EndpointKind`] declares (the purpose a record must have, the
//! name of the id in paths and messages, the API's view of one and of its deliveries).
//! The handlers of [`crate::routes::webhooks`], [`crate::routes::operator_webhooks`],
//! [`crate::routes::deliveries`] and [`crate::routes::replay`] keep their own
//! `#[utoipa::path]` descriptions (each kind's documentation) and call these functions;
//! the Settings screen calls the same ones, so there is one path to the data per
//! operation, whatever the kind.
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

/// A subscriber's webhook subscription: the spec's events it matches.
#[derive(Debug)]
pub enum Subscriptions {}

impl EndpointKind for Subscriptions {
    const PURPOSE: Purpose = Purpose::Events;
    const ID_PARAM: &'static str = "webhookId";
    const API_NOUN: &'static str = "webhook subscription";
    const LOG_NOUN: &'static str = "subscription";
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
