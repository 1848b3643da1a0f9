//! The Settings screen's handlers of sign-in, the subscriptions' own pages (the list,
//! the create and edit forms, recovery), notifications and the event catalogue, and the
//! delivery log's reading, which both kinds of endpoint's page use
//! ([`super::endpoints`] has the rest of an endpoint's actions). Each checks the session
//! (and, for a post, the CSRF rules in [`forms`], through its [`Posted`] extractor),
//! calls the same [`Sender`](postwire_sender::Sender) method as the API's handler after
//! the same ownership check ([`load`]), and renders a page from [`pages`] or redirects
//! (303) to one.

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{Html, IntoResponse, Response};
use postwire_core::{CreatedByKind, EventType, SigningMode, Timestamp};
use postwire_sender::{
    DeliveryCursor, DeliveryEventType, DeliveryId, DeliveryRecord, DeliveryState, NewSubscription, SubscriptionUpdate,
};

use super::assets;
use super::endpoints::show_created;
use super::forms::{self, Form, Posted};
use super::pages::{self, DayCounts, DeliveryFilter, Flash};
use super::{COOKIE, PageError, PageResult, Session, see_other};
use crate::errors::ApiError;
use crate::routes::endpoints::{Subscriptions, load};
use crate::state::AppState;
use crate::validation::{ApiPath, QueryParams};

/// Deliveries shown per page of the log.
pub const LOG_PAGE: usize = 20;
/// Most deliveries a filtered log page reads to fill itself (then it offers the next
/// page from where it stopped).
pub const LOG_SCAN: usize = 500;
/// Most deliveries the 24-hour summary of a subscription reads.
pub const DAY_SCAN: usize = 1000;

/// `markup` as an HTML response.
pub(super) fn html(markup: maud::Markup) -> Response {
    Html(markup.into_string()).into_response()
}

fn link_refused() -> Response {
    tracing::info!("a settings link was refused (unknown, used, expired or revoked)");
    let page = pages::error_page(
        StatusCode::FORBIDDEN,
        "link_invalid",
        &["This link has expired, was already used, or was revoked. Ask for a new one.".to_owned()],
    );
    (StatusCode::FORBIDDEN, Html(page.into_string())).into_response()
}

/// `GET /settings/login?link=…`: a page with one button that signs in. Opening the link
/// uses nothing up, so a mail scanner or chat preview that fetches it cannot spend the
/// single use; a link that no longer works is refused here already.
pub async fn login_page(State(state): State<AppState>, uri: Uri) -> PageResult {
    let query = QueryParams::parse(uri.query(), &["link"])?;
    let link = query.get("link").unwrap_or("");
    if !state.portal.link_is_live(link, state.clock.now()).await? {
        return Ok(link_refused());
    }
    Ok(html(pages::sign_in(link)))
}

/// `POST /settings/login` (`link=…`, from that page): exchanges the magic link for a
/// session cookie, once, and goes to the screen (303).
pub async fn login(State(state): State<AppState>, headers: HeaderMap, body: Body) -> PageResult {
    if !forms::same_origin(&state, &headers) {
        return Err(PageError::Refused("Sign in from the link's own page."));
    }
    let bytes = crate::validation::read_body(body, state.max_body_bytes).await?;
    let link: String = url::form_urlencoded::parse(&bytes)
        .find(|(k, _)| k == "link")
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default();
    let Some(opened) = state.portal.exchange(&link, state.clock.now()).await? else {
        return Ok(link_refused());
    };
    tracing::info!(portal_session = %opened.id, workspace_id = %opened.workspace_id, "settings session opened");
    let cookie = format!(
        "{COOKIE}={}; Path=/settings; Max-Age={}; Secure; HttpOnly; SameSite=Strict",
        opened.token,
        state.portal.session_ttl_secs()
    );
    let mut response = see_other("/settings/");
    response.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_str(&cookie).map_err(|_| ApiError::Internal("a session cookie was not a header".into()))?,
    );
    Ok(response)
}

/// `POST /settings/logout`: revokes the session and clears the cookie.
pub async fn logout(State(state): State<AppState>, Posted { session, .. }: Posted) -> PageResult {
    state
        .portal
        .revoke(&session.portal.workspace_id, &session.portal.id, state.clock.now())
        .await?;
    let mut response = html(pages::signed_out());
    response.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_static("pw_settings=; Path=/settings; Max-Age=0; Secure; HttpOnly; SameSite=Strict"),
    );
    Ok(response)
}

/// What the last 24 hours of deliveries of `subscription_id` look like (at most
/// [`DAY_SCAN`] read, newest first).
pub(super) async fn day_counts(state: &AppState, subscription_id: &str) -> Result<DayCounts, PageError> {
    let since = state.sender.clock().now().add_millis(-24 * 3_600_000);
    let mut counts = DayCounts::default();
    let mut cursor: Option<DeliveryCursor> = None;
    let mut read = 0;
    loop {
        let page = state
            .sender
            .list_deliveries(subscription_id, cursor, postwire_sender::MAX_PAGE_SIZE)
            .await?;
        for d in &page.items {
            read += 1;
            if d.created_at < since {
                return Ok(counts);
            }
            match d.state {
                DeliveryState::Delivered => counts.delivered += 1,
                DeliveryState::Failed => counts.failed += 1,
                DeliveryState::Pending if !d.attempts.is_empty() => counts.retrying += 1,
                _ => counts.waiting += 1,
            }
        }
        match page.next_cursor {
            Some(c) if read < DAY_SCAN => cursor = Some(c),
            Some(_) => {
                counts.truncated = true;
                return Ok(counts);
            }
            None => return Ok(counts),
        }
    }
}

/// `GET /settings/`: the workspace's subscriptions.
pub async fn home(State(state): State<AppState>, session: Session) -> PageResult {
    let subs = state.sender.list_subscriptions(&session.portal.workspace_id).await?;
    let mut rows = Vec::with_capacity(subs.len());
    for s in subs {
        let counts = day_counts(&state, &s.subscription.id).await?;
        rows.push((s, counts));
    }
    let notices = state.sender.notifications(&session.portal.workspace_id, 5).await?;
    Ok(html(pages::home(&session, &rows, notices.len())))
}

/// `GET /settings/new`: the form to create a subscription.
pub async fn new_form(session: Session) -> PageResult {
    Ok(html(pages::subscription_form(
        &session,
        None,
        &pages::FormValues::default(),
        &[],
    )))
}

/// The subscription fields of a create or edit form.
fn form_values(form: &Form) -> pages::FormValues {
    pages::FormValues {
        name: form.get("name").unwrap_or("").to_owned(),
        url: form.get("url").unwrap_or("").to_owned(),
        events: form.all("events"),
        integration_ids: form
            .get("integrationIds")
            .unwrap_or("")
            .split([',', ' ', '\n'])
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect(),
        // Checked in `signing_mode`: an unknown value is a problem, none is the default.
        signing: form.get("signing").and_then(|v| v.parse().ok()).unwrap_or_default(),
    }
}

/// The form's signing choice: absent is the default (`symmetric`), unknown is refused.
fn signing_mode(form: &Form) -> Result<SigningMode, Vec<String>> {
    match form.get("signing") {
        None => Ok(SigningMode::default()),
        Some(v) => v
            .parse()
            .map_err(|_| vec!["an unknown signing choice was picked".to_owned()]),
    }
}

/// The event types checked in a form; unknown names are a validation error.
fn event_types(values: &pages::FormValues) -> Result<Vec<EventType>, Vec<String>> {
    let mut out = Vec::new();
    let mut problems = Vec::new();
    for name in &values.events {
        match EventType::ALL.iter().find(|t| t.as_str() == name) {
            Some(t) => out.push(*t),
            None => problems.push("an unknown event type was checked".to_owned()),
        }
    }
    if problems.is_empty() { Ok(out) } else { Err(problems) }
}

/// `POST /settings/webhooks`: creates a subscription (`createdByKind: dashboard`) and
/// shows its secret, this once.
pub async fn create(State(state): State<AppState>, Posted { session, form }: Posted) -> PageResult {
    let values = form_values(&form);
    let (events, signing) = match (event_types(&values), signing_mode(&form)) {
        (Ok(e), Ok(s)) => (e, s),
        (e, s) => {
            let problems: Vec<String> = e.err().into_iter().chain(s.err()).flatten().collect();
            return Ok(invalid_form(&session, None, &values, &problems));
        }
    };
    let created = state
        .sender
        .create_subscription(NewSubscription {
            workspace_id: session.portal.workspace_id.clone(),
            name: values.name.clone(),
            url: values.url.clone(),
            events,
            integration_ids: values.integration_ids.clone(),
            created_by_kind: CreatedByKind::Dashboard,
            signing,
        })
        .await;
    match created {
        Ok(c) => show_created::<Subscriptions>(&session, &c),
        Err(e) if e.code() == postwire_sender::SenderErrorCode::InvalidRequest => {
            Ok(invalid_form(&session, None, &values, &e.messages()))
        }
        Err(e) => Err(e.into()),
    }
}

fn invalid_form(session: &Session, id: Option<&str>, values: &pages::FormValues, problems: &[String]) -> Response {
    let page = pages::subscription_form(session, id, values, problems);
    (StatusCode::BAD_REQUEST, Html(page.into_string())).into_response()
}

/// The optional filters, cursor and outcome notices of a page with a delivery log (a
/// subscription's, or an operator endpoint's), whose log shows deliveries of `types`.
pub(super) fn detail_query(
    uri: &Uri,
    types: &[DeliveryEventType],
) -> Result<(DeliveryFilter, Option<DeliveryCursor>, Flash), ApiError> {
    let q = QueryParams::parse(
        uri.query(),
        &[
            "state",
            "type",
            "cursor",
            "done",
            "released",
            "expired",
            "recovered",
            "resent",
        ],
    )?;
    let state = match q.get("state").filter(|s| !s.is_empty()) {
        None => None,
        Some(s) => Some(
            pages::DELIVERY_STATES
                .iter()
                .copied()
                .find(|d| d.as_str() == s)
                .ok_or_else(|| ApiError::invalid("`state` is not a delivery state"))?,
        ),
    };
    let event_type = match q.get("type").filter(|s| !s.is_empty()) {
        None => None,
        Some(s) => Some(
            types
                .iter()
                .copied()
                .find(|t| t.as_str() == s)
                .ok_or_else(|| ApiError::invalid("`type` is not an event type of this log"))?,
        ),
    };
    let cursor = q.get("cursor").map(str::parse::<DeliveryCursor>).transpose()?;
    let count = |name: &str| q.get(name).and_then(|v| v.parse::<u64>().ok());
    let flash = match q.get("done") {
        Some("updated") => Flash::Updated,
        Some("paused") => Flash::Paused,
        Some("resumed") => Flash::Resumed {
            released: count("released").unwrap_or(0),
            expired: count("expired").unwrap_or(0),
        },
        Some("test") => Flash::TestSent,
        Some("recovered") => Flash::Recovered(count("recovered").unwrap_or(0)),
        Some("resent") => match q.get("resent").map(str::parse::<DeliveryId>) {
            Some(Ok(id)) => Flash::Resent(id),
            _ => Flash::None,
        },
        _ => Flash::None,
    };
    Ok((DeliveryFilter { state, event_type }, cursor, flash))
}

/// One page of the delivery log, filtered: reads at most [`LOG_SCAN`] deliveries to
/// find [`LOG_PAGE`] that match; the cursor continues from the last one read.
pub(super) async fn log_page(
    state: &AppState,
    subscription_id: &str,
    filter: &DeliveryFilter,
    mut cursor: Option<DeliveryCursor>,
) -> Result<(Vec<DeliveryRecord>, Option<DeliveryCursor>), PageError> {
    let mut found = Vec::new();
    let mut read = 0;
    loop {
        let want = if filter.is_empty() {
            LOG_PAGE
        } else {
            postwire_sender::MAX_PAGE_SIZE
        };
        let page = state.sender.list_deliveries(subscription_id, cursor, want).await?;
        let n = page.items.len();
        for (i, d) in page.items.into_iter().enumerate() {
            read += 1;
            if filter.matches(&d) {
                found.push(d);
                if found.len() == LOG_PAGE {
                    let more = i + 1 < n || page.next_cursor.is_some();
                    let last = found.last().map(|d| d.id.0);
                    let next = if more {
                        last.and_then(|id| format!("c_{id}").parse().ok())
                    } else {
                        None
                    };
                    return Ok((found, next));
                }
            }
        }
        match page.next_cursor {
            Some(c) if read < LOG_SCAN => cursor = Some(c),
            other => return Ok((found, other)),
        }
    }
}

/// `GET /settings/webhooks/{id}/edit`.
pub async fn edit_form(State(state): State<AppState>, session: Session, ApiPath(id): ApiPath<String>) -> PageResult {
    let record = load::<Subscriptions>(&state, &session.portal.workspace_id, &id).await?;
    let s = &record.subscription;
    let values = pages::FormValues {
        name: s.name.clone(),
        url: s.url.clone(),
        events: s.events.iter().map(|e| e.as_str().to_owned()).collect(),
        integration_ids: s.integrations.iter().map(|i| i.id.clone()).collect(),
        signing: s.signing,
    };
    Ok(html(pages::subscription_form(&session, Some(&id), &values, &[])))
}

/// `POST /settings/webhooks/{id}/edit`.
pub async fn edit(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    Posted { session, form }: Posted,
) -> PageResult {
    load::<Subscriptions>(&state, &session.portal.workspace_id, &id).await?;
    let values = form_values(&form);
    let (events, signing) = match (event_types(&values), signing_mode(&form)) {
        (Ok(e), Ok(s)) => (e, s),
        (e, s) => {
            let problems: Vec<String> = e.err().into_iter().chain(s.err()).flatten().collect();
            return Ok(invalid_form(&session, Some(&id), &values, &problems));
        }
    };
    let update = SubscriptionUpdate {
        name: Some(values.name.clone()),
        url: Some(values.url.clone()),
        events: Some(events),
        integration_ids: Some(values.integration_ids.clone()),
        signing: Some(signing),
    };
    match state.sender.update_subscription(&id, update).await {
        Ok(_) => Ok(see_other(&format!("/settings/webhooks/{id}?done=updated"))),
        Err(e) if e.code() == postwire_sender::SenderErrorCode::InvalidRequest => {
            Ok(invalid_form(&session, Some(&id), &values, &e.messages()))
        }
        Err(e) => Err(e.into()),
    }
}

/// The `since` of the recover form: `YYYY-MM-DDTHH:MM` (a `datetime-local` input, read
/// as UTC), with optional seconds, or a full RFC 3339 date-time.
fn parse_since(value: &str) -> Result<Timestamp, ApiError> {
    let value = value.trim();
    let candidates = [value.to_owned(), format!("{value}Z"), format!("{value}:00Z")];
    candidates
        .iter()
        .find_map(|c| c.parse::<Timestamp>().ok())
        .ok_or_else(|| ApiError::invalid("`since` must be a date and time, e.g. 2026-11-22T09:00 (UTC)"))
}

/// `POST /settings/webhooks/{id}/recover`: resends the failures since a time.
pub async fn recover(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    Posted { session, form }: Posted,
) -> PageResult {
    load::<Subscriptions>(&state, &session.portal.workspace_id, &id).await?;
    let since = parse_since(form.get("since").unwrap_or(""))?;
    let queued = state.sender.recover(&id, since).await?;
    Ok(see_other(&format!(
        "/settings/webhooks/{id}?done=recovered&recovered={queued}"
    )))
}

/// `GET /settings/notifications`.
pub async fn notifications(State(state): State<AppState>, session: Session) -> PageResult {
    let list = state
        .sender
        .notifications(&session.portal.workspace_id, postwire_sender::MAX_PAGE_SIZE)
        .await?;
    let ids = |records: Vec<postwire_sender::SubscriptionRecord>| -> Vec<String> {
        records.into_iter().map(|r| r.subscription.id).collect()
    };
    let subscription_ids = ids(state.sender.list_subscriptions(&session.portal.workspace_id).await?);
    let operator_ids = ids(state
        .sender
        .list_operator_endpoints(&session.portal.workspace_id)
        .await?);
    Ok(html(pages::notifications(
        &session,
        &list,
        &subscription_ids,
        &operator_ids,
    )))
}

/// The message of the Settings screen's signed sample delivery.
pub const SAMPLE_MESSAGE: &str = "A sample delivery, signed by this workspace's v1a key.";

/// `GET /settings/events`: the event catalogue and the verify box, with the workspace's
/// published `v1a` public keys and a sample delivery signed by its current key (so the
/// box verifies with the public key alone; no secret is on the page).
pub async fn events(State(state): State<AppState>, session: Session) -> PageResult {
    let workspace = &session.portal.workspace_id;
    let keys = state.sender.signing_keys(workspace).await?;
    let sample = state.sender.signed_sample(workspace, SAMPLE_MESSAGE).await?;
    let verify = pages::VerifyBox::sample(&keys, &sample);
    Ok(html(pages::events(
        &session,
        &keys,
        &verify,
        assets::IN_BROWSER_VERIFIER,
    )))
}

/// `POST /settings/events/verify`: the verify box checked on the server, with
/// postwire-core, for builds without the npm package's browser builds and for browsers
/// without JavaScript. The page comes back with what was posted (but the secret, never
/// echoed) and the verdict with its stable code. Nothing is stored or logged.
pub async fn verify(State(state): State<AppState>, Posted { session, form }: Posted) -> PageResult {
    let keys = state.sender.signing_keys(&session.portal.workspace_id).await?;
    let field = |name: &str| form.get(name).unwrap_or("").to_owned();
    let (headers, body, public_key, secret) = (field("headers"), field("body"), field("public_key"), field("secret"));
    let key = if secret.trim().is_empty() {
        public_key.trim()
    } else {
        secret.trim()
    };
    // The clock that signs deliveries (and the sample), as a receiver's would be.
    let verdict = verify_pasted(&headers, &body, key, state.sender.clock().now().unix_time());
    let verify = pages::VerifyBox {
        headers,
        body,
        public_key,
        verdict: Some(verdict),
    };
    Ok(html(pages::events(
        &session,
        &keys,
        &verify,
        assets::IN_BROWSER_VERIFIER,
    )))
}

/// Verifies a pasted delivery as a receiver would: `Ok("<type> <id>")`, or
/// `Err("<code>: <why>")`. Header lines are `name: value`; other lines are ignored.
fn verify_pasted(headers: &str, body: &str, key: &str, now: postwire_core::UnixTime) -> Result<String, String> {
    let failed = |e: postwire_core::Error| format!("{}: {e}", e.code());
    let verifier = postwire_core::Verifier::parse_keys([key]).map_err(failed)?;
    let pairs: Vec<(String, String)> = headers
        .lines()
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let event = verifier.verify_event(&pairs, body.as_bytes(), now).map_err(failed)?;
    Ok(format!("{} {}", event.event_type().as_str(), event.id()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_accepts_the_browser_form_and_rfc_3339() {
        let t = parse_since("2026-11-22T09:30").unwrap();
        assert_eq!(t.to_string(), "2026-11-22T09:30:00.000Z");
        assert_eq!(
            parse_since("2026-11-22T09:30:15").unwrap().unix_millis() - t.unix_millis(),
            15_000
        );
        assert!(parse_since("2026-11-22T09:30:00+01:00").is_ok());
        assert_eq!(parse_since("yesterday").unwrap_err().code(), "invalid_request");
    }
}
