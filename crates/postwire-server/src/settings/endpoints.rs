//! The Settings screen's handlers for what both kinds of endpoint have (one endpoint's
//! page with its delivery log, pause, resume, rotate the secret, delete, send a test
//! event, resend a delivery), written once over [`SettingsKind`]: the API's
//! [`EndpointKind`] plus where the kind's pages are and the words they use.
//!
//! Each handler checks the session (a post also the CSRF rules, through [`Posted`]),
//! the ownership with the API's [`load`], and calls the same
//! [`Sender`](postwire_sender::Sender) method as the API's handler. What only one kind
//! has (a subscription's form, edit and recovery; the operator endpoints' list with its
//! add form) stays in [`super::handlers`] and [`super::operator`].

use axum::extract::State;
use axum::http::Uri;
use postwire_sender::{DeliveryCursor, DeliveryEventType, DeliveryId, DeliveryRecord, SubscriptionRecord};

use super::forms::Posted;
use super::handlers::{day_counts, detail_query, html, log_page};
use super::pages::{self, DeliveryFilter, Flash, KindWords};
use super::{PageResult, Session, see_other};
use crate::routes::endpoints::{
    DEFAULT_TEST_MESSAGE, EndpointKind, OperatorEndpoints, Subscriptions, load, queue_test,
};
use crate::state::AppState;
use crate::validation::ApiPath;

/// One endpoint's page, as its kind renders it: what the generic [`detail`] read.
pub(super) struct DetailView<'a> {
    /// The signed-in session.
    pub session: &'a Session,
    /// The endpoint.
    pub record: &'a SubscriptionRecord,
    /// The log's filters.
    pub filter: &'a DeliveryFilter,
    /// The log's page.
    pub deliveries: &'a [DeliveryRecord],
    /// The log's next page.
    pub next: Option<DeliveryCursor>,
    /// The outcome of the action that led here.
    pub flash: &'a Flash,
    /// The last 24 hours' summary, for a kind that shows one.
    pub counts: Option<pages::DayCounts>,
    /// Now, by the sender's clock.
    pub now: postwire_core::Timestamp,
}

/// What the Settings screen adds to an [`EndpointKind`]: where its pages are, and the
/// words and page it shows.
pub(super) trait SettingsKind: EndpointKind {
    /// One endpoint's page is `{BASE}/{id}`; its actions are below it.
    const BASE: &'static str;
    /// The page that lists them; a deletion returns there.
    const LIST: &'static str;
    /// Whether pause, resume, rotate and delete are on the endpoint's own page (which
    /// then shows their outcome), rather than on the list.
    const CONTROLS_ON_PAGE: bool;
    /// Whether its page shows the last 24 hours' summary.
    const DAY_SUMMARY: bool;
    /// The words of its pages.
    const WORDS: KindWords;
    /// The types its delivery log can be filtered by.
    fn log_types() -> Vec<DeliveryEventType>;
    /// Its page.
    fn detail_page(view: &DetailView<'_>) -> maud::Markup;
}

impl SettingsKind for Subscriptions {
    const BASE: &'static str = "/settings/webhooks";
    const LIST: &'static str = "/settings/";
    const CONTROLS_ON_PAGE: bool = true;
    const DAY_SUMMARY: bool = true;
    const WORDS: KindWords = KindWords {
        noun: "Subscription",
        created_title: "Subscription created",
        delete_title: "Delete subscription?",
        delete_lead: "Delete ",
        delete_consequence: "Its deliveries and their records go with it.",
    };
    fn log_types() -> Vec<DeliveryEventType> {
        pages::subscription_types()
    }
    fn detail_page(v: &DetailView<'_>) -> maud::Markup {
        pages::detail(
            v.session,
            v.record,
            &v.counts.unwrap_or_default(),
            v.filter,
            v.deliveries,
            v.next,
            v.flash,
            v.now,
        )
    }
}

impl SettingsKind for OperatorEndpoints {
    const BASE: &'static str = "/settings/operator-endpoints";
    const LIST: &'static str = "/settings/operator-endpoints";
    const CONTROLS_ON_PAGE: bool = false;
    const DAY_SUMMARY: bool = false;
    const WORDS: KindWords = KindWords {
        noun: "Operator endpoint",
        created_title: "Operator endpoint created",
        delete_title: "Delete operator endpoint?",
        delete_lead: "Delete the operator endpoint ",
        delete_consequence: "Its notices not yet delivered are dropped.",
    };
    fn log_types() -> Vec<DeliveryEventType> {
        pages::operator_types()
    }
    fn detail_page(v: &DetailView<'_>) -> maud::Markup {
        pages::operator_detail(v.session, v.record, v.filter, v.deliveries, v.next, v.flash)
    }
}

/// Where the controls of endpoint `id` are: its page, or the list.
fn controls<K: SettingsKind>(id: &str) -> String {
    if K::CONTROLS_ON_PAGE {
        format!("{}/{id}", K::BASE)
    } else {
        K::LIST.to_owned()
    }
}

/// Where a control's post returns: the page of the controls, with the outcome `done`
/// (a query) where that page shows outcomes.
fn after_control<K: SettingsKind>(id: &str, done: &str) -> String {
    if K::CONTROLS_ON_PAGE {
        format!("{}/{id}?{done}", K::BASE)
    } else {
        K::LIST.to_owned()
    }
}

/// The page that shows a new secret of endpoint `id` named `name`, this once
/// (`rotated_until`: after a rotation).
fn secret_page<K: SettingsKind>(
    session: &Session,
    id: &str,
    name: &str,
    secret: &str,
    rotated_until: Option<postwire_core::Timestamp>,
) -> maud::Markup {
    pages::secret_shown(session, &K::WORDS, name, secret, rotated_until, &controls::<K>(id))
}

/// The answer to a create form that made `created`: its secret, shown this once.
pub(super) fn show_created<K: SettingsKind>(
    session: &Session,
    created: &postwire_core::CreatedSubscription,
) -> PageResult {
    let s = &created.subscription;
    tracing::info!(subscription_id = %s.id, portal_session = %session.portal.id, "{} created on the settings screen", K::LOG_NOUN);
    Ok(html(secret_page::<K>(
        session,
        &s.id,
        &s.name,
        &created.secret.expose(),
        None,
    )))
}

/// `GET {BASE}/{id}`: one endpoint, its actions and its delivery log.
pub(super) async fn detail<K: SettingsKind>(
    State(state): State<AppState>,
    session: Session,
    ApiPath(id): ApiPath<String>,
    uri: Uri,
) -> PageResult {
    let record = load::<K>(&state, &session.portal.workspace_id, &id).await?;
    let (filter, cursor, flash) = detail_query(&uri, &K::log_types())?;
    let (deliveries, next) = log_page(&state, &id, &filter, cursor).await?;
    let counts = if K::DAY_SUMMARY {
        Some(day_counts(&state, &id).await?)
    } else {
        None
    };
    Ok(html(K::detail_page(&DetailView {
        session: &session,
        record: &record,
        filter: &filter,
        deliveries: &deliveries,
        next,
        flash: &flash,
        counts,
        now: state.sender.clock().now(),
    })))
}

/// `POST {BASE}/{id}/pause`.
pub(super) async fn pause<K: SettingsKind>(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    Posted { session, .. }: Posted,
) -> PageResult {
    load::<K>(&state, &session.portal.workspace_id, &id).await?;
    state.sender.pause(&id).await?;
    Ok(see_other(&after_control::<K>(&id, "done=paused")))
}

/// `POST {BASE}/{id}/resume`: its held events of the last 7 days go out, in order (the
/// page says how many, and how many expired).
pub(super) async fn resume<K: SettingsKind>(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    Posted { session, .. }: Posted,
) -> PageResult {
    load::<K>(&state, &session.portal.workspace_id, &id).await?;
    let (_, summary) = state.sender.resume(&id).await?;
    let done = format!("done=resumed&released={}&expired={}", summary.released, summary.expired);
    Ok(see_other(&after_control::<K>(&id, &done)))
}

/// `POST {BASE}/{id}/rotate`: the new secret, shown this once.
pub(super) async fn rotate<K: SettingsKind>(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    Posted { session, .. }: Posted,
) -> PageResult {
    let record = load::<K>(&state, &session.portal.workspace_id, &id).await?;
    let rotated = state.sender.rotate_secret(&id).await?;
    tracing::info!(subscription_id = %id, portal_session = %session.portal.id, "{} signing secret rotated on the settings screen", K::LOG_NOUN);
    Ok(html(secret_page::<K>(
        &session,
        &id,
        &record.subscription.name,
        &rotated.secret.expose(),
        Some(rotated.previous_valid_until),
    )))
}

/// `GET {BASE}/{id}/delete`: asks for confirmation.
pub(super) async fn delete_form<K: SettingsKind>(
    State(state): State<AppState>,
    session: Session,
    ApiPath(id): ApiPath<String>,
) -> PageResult {
    let record = load::<K>(&state, &session.portal.workspace_id, &id).await?;
    Ok(html(pages::confirm_delete(
        &session,
        &K::WORDS,
        &record,
        K::BASE,
        &controls::<K>(&id),
    )))
}

/// `POST {BASE}/{id}/delete`: deletes it with its deliveries, back to the list.
pub(super) async fn delete<K: SettingsKind>(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    Posted { session, .. }: Posted,
) -> PageResult {
    load::<K>(&state, &session.portal.workspace_id, &id).await?;
    state.sender.delete_subscription(&id).await?;
    tracing::info!(subscription_id = %id, portal_session = %session.portal.id, "{} deleted on the settings screen", K::LOG_NOUN);
    Ok(see_other(K::LIST))
}

/// `POST {BASE}/{id}/test`: a `webhook.test` event to this endpoint only; then its page,
/// where the log shows it arrive.
pub(super) async fn send_test<K: SettingsKind>(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    Posted { session, .. }: Posted,
) -> PageResult {
    let workspace_id = &session.portal.workspace_id;
    load::<K>(&state, workspace_id, &id).await?;
    queue_test::<K>(&state, workspace_id, &id, DEFAULT_TEST_MESSAGE.to_owned()).await?;
    Ok(see_other(&format!("{}/{id}?done=test", K::BASE)))
}

/// `POST {BASE}/{id}/deliveries/{delivery}/resend`.
pub(super) async fn resend<K: SettingsKind>(
    State(state): State<AppState>,
    ApiPath((id, delivery)): ApiPath<(String, String)>,
    Posted { session, .. }: Posted,
) -> PageResult {
    load::<K>(&state, &session.portal.workspace_id, &id).await?;
    let delivery: DeliveryId = delivery.parse()?;
    let new = state.sender.resend(&id, delivery).await?;
    Ok(see_other(&format!("{}/{id}?done=resent&resent={new}", K::BASE)))
}

/// The routes of one kind's endpoint pages under [`SettingsKind::BASE`].
pub(super) fn routes<K: SettingsKind>() -> axum::Router<AppState> {
    use axum::routing::{get, post};
    let at = |path: &str| format!("{}{path}", K::BASE);
    axum::Router::new()
        .route(&at("/{id}"), get(detail::<K>))
        .route(&at("/{id}/pause"), post(pause::<K>))
        .route(&at("/{id}/resume"), post(resume::<K>))
        .route(&at("/{id}/rotate"), post(rotate::<K>))
        .route(&at("/{id}/delete"), get(delete_form::<K>).post(delete::<K>))
        .route(&at("/{id}/test"), post(send_test::<K>))
        .route(&at("/{id}/deliveries/{delivery}/resend"), post(resend::<K>))
}
