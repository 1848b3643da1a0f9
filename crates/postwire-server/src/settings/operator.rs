//! The Settings screen's operator endpoints pages: list, add (the secret shown once),
//! pause or resume, rotate the secret (shown once), delete, send a test notice, and one
//! endpoint's delivery log (with resend), rendered like a subscription's. Each handler checks the
//! session (a post also the CSRF rules, through [`Posted`]) and calls the same
//! [`Sender`](postwire_sender::Sender) methods as the API's handlers
//! ([`crate::routes::operator_webhooks`]), after the same ownership check
//! ([`load`]): a subscriber's subscription id is `not_found` here.

use axum::extract::State;
use axum::http::{StatusCode, Uri};
use axum::response::{Html, IntoResponse, Response};
use postwire_core::CreatedByKind;
use postwire_sender::{DeliveryId, MAX_OPERATOR_ENDPOINTS, SenderError, SenderErrorCode};

use super::forms::Posted;
use super::handlers::{detail_query, log_page};
use super::pages::{self, OperatorFormValues};
use super::{PageResult, Session, see_other};
use crate::errors::ApiError;
use crate::routes::operator_webhooks::{create as create_endpoint, load, queue_test};
use crate::routes::webhooks::DEFAULT_TEST_MESSAGE;
use crate::state::AppState;
use crate::validation::ApiPath;

const PAGE: &str = "/settings/operator-endpoints";

fn html(markup: maud::Markup) -> Response {
    Html(markup.into_string()).into_response()
}

async fn list_page(
    state: &AppState,
    session: &Session,
    values: &OperatorFormValues,
    problems: &[String],
) -> Result<maud::Markup, SenderError> {
    let list = state
        .sender
        .list_operator_endpoints(&session.portal.workspace_id)
        .await?;
    Ok(pages::operator_endpoints(
        session,
        &list,
        values,
        problems,
        MAX_OPERATOR_ENDPOINTS,
    ))
}

/// `GET /settings/operator-endpoints`.
pub async fn list(State(state): State<AppState>, session: Session) -> PageResult {
    Ok(html(
        list_page(&state, &session, &OperatorFormValues::default(), &[]).await?,
    ))
}

/// `POST /settings/operator-endpoints` (`name`, `url`): the new endpoint's secret, shown
/// this once; the page again with the problems (400) when the sender refuses the name
/// or the URL.
pub async fn create(State(state): State<AppState>, Posted { session, form }: Posted) -> PageResult {
    let values = OperatorFormValues {
        name: form.get("name").unwrap_or("").to_owned(),
        url: form.get("url").unwrap_or("").trim().to_owned(),
    };
    let created = create_endpoint(
        &state,
        &session.portal.workspace_id,
        values.name.clone(),
        values.url.clone(),
        CreatedByKind::Dashboard,
    )
    .await;
    match created {
        Ok(c) => {
            tracing::info!(subscription_id = %c.subscription.id, portal_session = %session.portal.id, "operator endpoint created on the settings screen");
            Ok(html(pages::operator_secret_shown(
                &session,
                &c.subscription.name,
                &c.secret.expose(),
                None,
            )))
        }
        Err(e) if e.code() == SenderErrorCode::InvalidRequest => {
            let page = list_page(&state, &session, &values, &e.messages()).await?;
            Ok((StatusCode::BAD_REQUEST, Html(page.into_string())).into_response())
        }
        Err(SenderError::PlanLimit { limit }) => Err(ApiError::OperatorEndpointLimit(limit).into()),
        Err(e) => Err(e.into()),
    }
}

/// `POST /settings/operator-endpoints/{id}/rotate`: the new secret, shown this once.
pub async fn rotate(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    Posted { session, .. }: Posted,
) -> PageResult {
    let record = load(&state, &session.portal.workspace_id, &id).await?;
    let rotated = state.sender.rotate_secret(&id).await?;
    tracing::info!(subscription_id = %id, portal_session = %session.portal.id, "operator endpoint secret rotated on the settings screen");
    Ok(html(pages::operator_secret_shown(
        &session,
        &record.subscription.name,
        &rotated.secret.expose(),
        Some(rotated.previous_valid_until),
    )))
}

/// `POST /settings/operator-endpoints/{id}/pause`.
pub async fn pause(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    Posted { session, .. }: Posted,
) -> PageResult {
    load(&state, &session.portal.workspace_id, &id).await?;
    state.sender.pause(&id).await?;
    Ok(see_other(PAGE))
}

/// `POST /settings/operator-endpoints/{id}/resume`: its held notices of the last 7 days
/// go out, in order.
pub async fn resume(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    Posted { session, .. }: Posted,
) -> PageResult {
    load(&state, &session.portal.workspace_id, &id).await?;
    state.sender.resume(&id).await?;
    Ok(see_other(PAGE))
}

/// `GET /settings/operator-endpoints/{id}/delete`: asks for confirmation.
pub async fn delete_form(State(state): State<AppState>, session: Session, ApiPath(id): ApiPath<String>) -> PageResult {
    let record = load(&state, &session.portal.workspace_id, &id).await?;
    Ok(html(pages::confirm_operator_delete(&session, &record)))
}

/// `POST /settings/operator-endpoints/{id}/delete`.
pub async fn delete(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    Posted { session, .. }: Posted,
) -> PageResult {
    load(&state, &session.portal.workspace_id, &id).await?;
    state.sender.delete_subscription(&id).await?;
    tracing::info!(subscription_id = %id, portal_session = %session.portal.id, "operator endpoint deleted on the settings screen");
    Ok(see_other(PAGE))
}

/// `GET /settings/operator-endpoints/{id}`: one operator endpoint and its delivery log.
pub async fn detail(
    State(state): State<AppState>,
    session: Session,
    ApiPath(id): ApiPath<String>,
    uri: Uri,
) -> PageResult {
    let record = load(&state, &session.portal.workspace_id, &id).await?;
    let (filter, cursor, flash) = detail_query(&uri, &pages::operator_types())?;
    let (deliveries, next) = log_page(&state, &id, &filter, cursor).await?;
    Ok(html(pages::operator_detail(
        &session,
        &record,
        &filter,
        &deliveries,
        next,
        &flash,
    )))
}

/// `POST /settings/operator-endpoints/{id}/test`: a `webhook.test` event to this
/// endpoint only; then its page, where the log shows it arrive.
pub async fn send_test(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    Posted { session, .. }: Posted,
) -> PageResult {
    load(&state, &session.portal.workspace_id, &id).await?;
    queue_test(
        &state,
        &session.portal.workspace_id,
        &id,
        DEFAULT_TEST_MESSAGE.to_owned(),
    )
    .await?;
    Ok(see_other(&format!("{PAGE}/{id}?done=test")))
}

/// `POST /settings/operator-endpoints/{id}/deliveries/{delivery}/resend`.
pub async fn resend(
    State(state): State<AppState>,
    ApiPath((id, delivery)): ApiPath<(String, String)>,
    Posted { session, .. }: Posted,
) -> PageResult {
    load(&state, &session.portal.workspace_id, &id).await?;
    let delivery: DeliveryId = delivery.parse()?;
    let new = state.sender.resend(&id, delivery).await?;
    Ok(see_other(&format!("{PAGE}/{id}?done=resent&resent={new}")))
}
