//! The Settings screen's operator endpoints list: the workspace's endpoints with their
//! controls, and the form that adds one (its secret shown once). One endpoint's page,
//! its test notice, log and resend, and the controls' posts (pause, resume, rotate,
//! delete) are the endpoints' handlers over [`OperatorEndpoints`]
//! ([`super::endpoints`]). Each handler checks the session (a post also the CSRF rules,
//! through [`Posted`]) and calls the same [`Sender`](postwire_sender::Sender) methods as
//! the API's handlers ([`crate::routes::operator_webhooks`]).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse};
use postwire_core::CreatedByKind;
use postwire_sender::{MAX_OPERATOR_ENDPOINTS, SenderError, SenderErrorCode};

use super::endpoints::show_created;
use super::forms::Posted;
use super::handlers::html;
use super::pages::{self, OperatorFormValues};
use super::{PageResult, Session};
use crate::errors::ApiError;
use crate::routes::endpoints::OperatorEndpoints;
use crate::routes::operator_webhooks::create as create_endpoint;
use crate::state::AppState;

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
        Ok(c) => show_created::<OperatorEndpoints>(&session, &c),
        Err(e) if e.code() == SenderErrorCode::InvalidRequest => {
            let page = list_page(&state, &session, &values, &e.messages()).await?;
            Ok((StatusCode::BAD_REQUEST, Html(page.into_string())).into_response())
        }
        Err(SenderError::PlanLimit { limit }) => Err(ApiError::OperatorEndpointLimit(limit).into()),
        Err(e) => Err(e.into()),
    }
}
