//! The Settings screen's HTML, as `maud` templates: every `(value)` is escaped, so
//! names, URLs, receiver bodies and messages are always text, never markup. No inline
//! script or style (the CSP forbids both): behaviour comes from `/settings/assets/settings.js`,
//! looks from `/settings/assets/settings.css`, and the small 24-hour chart is an SVG
//! whose bar widths are attributes.

use axum::http::StatusCode;
use maud::{DOCTYPE, Markup, html};
use postwire_core::{EventType, OperationalEventType, SigningMode, Timestamp};
use postwire_sender::{
    AttemptOutcome, DeliveryCursor, DeliveryEventType, DeliveryId, DeliveryRecord, DeliveryState, Notification,
    SubscriptionRecord, SubscriptionStatus,
};

use super::assets;
use super::catalog;
use super::forms::CSRF_FIELD;
use super::{Attention, Session};

/// The delivery states a log can be filtered by.
pub const DELIVERY_STATES: [DeliveryState; 6] = [
    DeliveryState::Pending,
    DeliveryState::Held,
    DeliveryState::Delivered,
    DeliveryState::Failed,
    DeliveryState::Expired,
    DeliveryState::Cancelled,
];

/// What a subscription's last 24 hours of deliveries look like.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DayCounts {
    /// Delivered.
    pub delivered: u64,
    /// Waiting for a retry after a failed attempt.
    pub retrying: u64,
    /// Failed for good.
    pub failed: u64,
    /// Not attempted yet, held or expired.
    pub waiting: u64,
    /// More deliveries than were read.
    pub truncated: bool,
}

/// The types a subscription's delivery log can be filtered by: the spec's events.
pub fn subscription_types() -> Vec<DeliveryEventType> {
    EventType::ALL.iter().map(|t| DeliveryEventType::Event(*t)).collect()
}

/// The types an operator endpoint's delivery log can be filtered by: the operational
/// notices, and the test event.
pub fn operator_types() -> Vec<DeliveryEventType> {
    OperationalEventType::ALL
        .iter()
        .map(|t| DeliveryEventType::Notice(*t))
        .chain([DeliveryEventType::Event(EventType::WebhookTest)])
        .collect()
}

/// The delivery log's filters.
#[derive(Debug, Clone, Default)]
pub struct DeliveryFilter {
    /// Only this state.
    pub state: Option<DeliveryState>,
    /// Only this type (a spec event's, or a notice's on an operator endpoint's log).
    pub event_type: Option<DeliveryEventType>,
}

impl DeliveryFilter {
    /// No filter.
    pub fn is_empty(&self) -> bool {
        self.state.is_none() && self.event_type.is_none()
    }

    /// Whether `d` passes.
    pub fn matches(&self, d: &DeliveryRecord) -> bool {
        self.state.is_none_or(|s| s == d.state) && self.event_type.is_none_or(|t| t == d.event_type)
    }

    fn query(&self) -> String {
        let mut q = String::new();
        if let Some(s) = self.state {
            q.push_str("&state=");
            q.push_str(s.as_str());
        }
        if let Some(t) = self.event_type {
            q.push_str("&type=");
            q.push_str(t.as_str());
        }
        q
    }
}

/// What the last action on a subscription's page did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Flash {
    /// Nothing to say.
    None,
    /// Saved.
    Updated,
    /// Paused.
    Paused,
    /// Resumed: held events released and expired.
    Resumed {
        /// Held events that will be delivered.
        released: u64,
        /// Held events older than 7 days, not delivered.
        expired: u64,
    },
    /// A test event was queued.
    TestSent,
    /// Recover queued this many.
    Recovered(u64),
    /// A delivery was resent as this one.
    Resent(DeliveryId),
}

/// The fields of the create and edit forms.
#[derive(Debug, Clone, Default)]
pub struct FormValues {
    /// Name.
    pub name: String,
    /// Endpoint URL.
    pub url: String,
    /// Checked event types (wire names).
    pub events: Vec<String>,
    /// Account ids.
    pub integration_ids: Vec<String>,
    /// Which signatures deliveries carry (`v1`, `v1a` or both).
    pub signing: SigningMode,
}

fn layout(title: &str, session: Option<&Session>, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="color-scheme" content="light dark";
                title { (title) " · postwire settings" }
                link rel="stylesheet" href=(assets::CSS_PATH);
                link rel="icon" href=(assets::ICON_PATH) type="image/svg+xml";
                script src=(assets::JS_PATH) defer {}
            }
            body {
                a.skip href="#main" { "Skip to content" }
                header.top {
                    @if let Some(s) = session {
                        nav aria-label="Settings" {
                            span.brand { "Webhooks · " (s.workspace_name) }
                            ul {
                                li { a href="/settings/" { "Subscriptions" } }
                                li { a href="/settings/operator-endpoints" { "Operator endpoints" } }
                                li { a href="/settings/notifications" { "Notifications" } }
                                li { a href="/settings/events" { "Event catalogue" } }
                            }
                            form method="post" action="/settings/logout" {
                                (csrf(s))
                                button.link type="submit" { "Sign out" }
                            }
                        }
                    } @else {
                        span.brand { "Webhooks" }
                    }
                }
                main #main tabindex="-1" {
                    h1 { (title) }
                    @if let Some(s) = session {
                        (attention_banner(&s.attention))
                    }
                    (body)
                }
            }
        }
    }
}

/// The banner of every page while an endpoint of the workspace is paused or failing.
fn attention_banner(a: &Attention) -> Markup {
    if a.is_clear() {
        return html! {};
    }
    let plural = |n: usize| if n == 1 { "endpoint is" } else { "endpoints are" };
    html! {
        div.notice.warn #attention role="status" {
            p {
                @if a.paused > 0 { strong { (a.paused) " " (plural(a.paused)) " paused" } ": events held until resumed. " }
                @if a.failing > 0 { strong { (a.failing) " " (plural(a.failing)) " failing" } ": deliveries being retried. " }
                a href="/settings/notifications" { "See the notifications" }
            }
        }
    }
}

fn csrf(session: &Session) -> Markup {
    html! { input type="hidden" name=(CSRF_FIELD) value=(session.portal.csrf); }
}

/// A post button: a small form with the CSRF field.
fn action(session: &Session, path: &str, label: &str, class: &str) -> Markup {
    html! {
        form.inline method="post" action=(path) {
            (csrf(session))
            button type="submit" class=(class) { (label) }
        }
    }
}

/// A time as every page shows it: `2026-11-27 18:30:05 UTC` (to the second; the
/// `datetime` attribute keeps the milliseconds).
fn time(t: Timestamp) -> Markup {
    let s = t.to_string();
    let shown = s
        .split('.')
        .next()
        .unwrap_or(&s)
        .trim_end_matches('Z')
        .replace('T', " ");
    html! { time datetime=(s) { (shown) " UTC" } }
}

/// The label of `consecutiveFailures`, which counts failed *deliveries* (each after all
/// its attempts), not attempts: with the note that says so, since two failed attempts
/// still show 0.
fn failures_in_a_row(count: u32) -> Markup {
    html! {
        (count)
        span.muted { " (a delivery counts as failed after its last retry, about 23 h after the first attempt)" }
    }
}

/// An error page.
pub fn error_page(status: StatusCode, code: &str, messages: &[String]) -> Markup {
    let title = match status {
        StatusCode::UNAUTHORIZED => "Signed out",
        StatusCode::FORBIDDEN => "Not allowed",
        StatusCode::NOT_FOUND => "Not found",
        StatusCode::BAD_REQUEST => "Please check the request",
        _ => "Something went wrong",
    };
    layout(
        title,
        None,
        html! {
            div.notice.error role="alert" {
                @for m in messages { p { (m) } }
                p.code { "Code: " code { (code) } }
            }
        },
    )
}

/// The page a magic link opens: one button signs in (a `POST` from this origin, which
/// spends the link; the redirect that follows is same-site, so the `SameSite=Strict`
/// cookie goes with it).
pub fn sign_in(link: &str) -> Markup {
    layout(
        "Sign in",
        None,
        html! {
            p { "This link signs you in to a workspace's webhook settings. It works once." }
            form method="post" action="/settings/login" {
                input type="hidden" name="link" value=(link);
                button #continue type="submit" { "Sign in" }
            }
        },
    )
}

/// After sign-out.
pub fn signed_out() -> Markup {
    layout(
        "Signed out",
        None,
        html! { p { "Your session has ended. Open a new link to sign in again." } },
    )
}

fn state_badge(status: &SubscriptionStatus) -> Markup {
    match status {
        SubscriptionStatus::Enabled => html! { span.badge.ok { "Enabled" } },
        SubscriptionStatus::Paused { reason } => html! {
            span.badge.warn { "Paused" }
            " " span.reason { (reason) }
        },
    }
}

fn chart(c: &DayCounts) -> Markup {
    let total = (c.delivered + c.retrying + c.failed).max(1);
    let width = |n: u64| (n * 120 / total).to_string();
    let (d, r) = (c.delivered * 120 / total, c.retrying * 120 / total);
    let label = format!(
        "Last 24 hours: {} delivered, {} retrying, {} failed{}",
        c.delivered,
        c.retrying,
        c.failed,
        if c.truncated {
            " (most recent 1000 deliveries)"
        } else {
            ""
        }
    );
    html! {
        figure.chart {
            svg width="120" height="10" viewBox="0 0 120 10" role="img" aria-label=(label) {
                rect.bg x="0" y="0" width="120" height="10" {}
                rect.delivered x="0" y="0" width=(width(c.delivered)) height="10" {}
                rect.retrying x=(d.to_string()) y="0" width=(width(c.retrying)) height="10" {}
                rect.failed x=((d + r).to_string()) y="0" width=(width(c.failed)) height="10" {}
            }
            figcaption {
                span.delivered-text { (c.delivered) " delivered" } " · "
                span.retrying-text { (c.retrying) " retrying" } " · "
                span.failed-text { (c.failed) " failed" }
            }
        }
    }
}

fn events_text(events: &[EventType]) -> String {
    if events.is_empty() {
        "all event types".to_owned()
    } else {
        events.iter().map(|e| e.as_str()).collect::<Vec<_>>().join(", ")
    }
}

/// The list of subscriptions.
pub fn home(session: &Session, rows: &[(SubscriptionRecord, DayCounts)], notices: usize) -> Markup {
    layout(
        "Subscriptions",
        Some(session),
        html! {
            @if notices > 0 {
                p.notice.warn { a href="/settings/notifications" { "Notifications: " (notices) " recent" } }
            }
            p { a.button href="/settings/new" { "Add a subscription" } }
            @if rows.is_empty() {
                p { "No subscriptions yet." }
            } @else {
                ul.cards {
                    @for (r, counts) in rows {
                        @let s = &r.subscription;
                        li.card {
                            h2 { a href={ "/settings/webhooks/" (s.id) } { (s.name) } }
                            p.url { code { (s.url) } }
                            dl {
                                dt { "State" } dd { (state_badge(&s.status)) }
                                dt { "Events" } dd { (events_text(&s.events)) }
                                dt { "Accounts" } dd {
                                    @if s.integrations.is_empty() { "all accounts" }
                                    @else { (s.integrations.iter().map(|i| i.name.as_str()).collect::<Vec<_>>().join(", ")) }
                                }
                                dt { "Failed deliveries in a row" } dd.failures { (failures_in_a_row(s.consecutive_failures)) }
                                dt { "Last success" } dd {
                                    @match s.last_success_at { Some(t) => (time(t)), None => "never" }
                                }
                                dt { "Last 24 h" } dd { (chart(counts)) }
                            }
                        }
                    }
                }
            }
        },
    )
}

/// The create or edit form (`id` for an edit), with the problems of a refused post.
pub fn subscription_form(session: &Session, id: Option<&str>, v: &FormValues, problems: &[String]) -> Markup {
    let (title, action_path) = match id {
        Some(id) => ("Edit subscription", format!("/settings/webhooks/{id}/edit")),
        None => ("Add a subscription", "/settings/webhooks".to_owned()),
    };
    layout(
        title,
        Some(session),
        html! {
            @if !problems.is_empty() {
                div.notice.error role="alert" #problems {
                    p { "Please fix:" }
                    ul { @for p in problems { li { (p) } } }
                }
            }
            form.stack method="post" action=(action_path) {
                (csrf(session))
                label for="name" { "Name" }
                input #name type="text" name="name" required maxlength="200" value=(v.name);
                label for="url" { "Endpoint URL (https)" }
                input #url type="url" name="url" required value=(v.url) placeholder="https://example.com/webhooks";
                fieldset {
                    legend { "Event types (none checked: all)" }
                    @for t in EventType::ALL {
                        @let checked = v.events.iter().any(|e| e == t.as_str());
                        label.check {
                            input type="checkbox" name="events" value=(t.as_str()) checked[checked];
                            " " (t.as_str())
                        }
                    }
                }
                label for="integrationIds" { "Only these account ids (comma-separated; empty: all accounts)" }
                input #integrationIds type="text" name="integrationIds" value=(v.integration_ids.join(", "));
                fieldset {
                    legend { "Signatures" }
                    @for mode in SigningMode::ALL {
                        label.check {
                            input type="radio" name="signing" value=(mode.as_str()) checked[*mode == v.signing];
                            " " (signing_label(*mode))
                        }
                    }
                }
                div.actions {
                    button type="submit" { @if id.is_some() { "Save" } @else { "Create" } }
                    a href=(id.map_or("/settings/".to_owned(), |i| format!("/settings/webhooks/{i}"))) { "Cancel" }
                }
            }
        },
    )
}

/// What each signing choice means, for the form.
fn signing_label(mode: SigningMode) -> &'static str {
    match mode {
        SigningMode::Symmetric => "v1: HMAC with this subscription's secret (the standard)",
        SigningMode::Asymmetric => "v1a only: ed25519, verified with the workspace's public key",
        SigningMode::Both => "v1 and v1a: both signatures on every delivery",
    }
}

/// The words the Settings pages use for one kind of endpoint (a subscription, an
/// operator endpoint); the pages themselves are the same.
#[derive(Debug, Clone, Copy)]
pub struct KindWords {
    /// What one is called at the start of a sentence (`Subscription`).
    pub noun: &'static str,
    /// The title of the page that shows a new one's secret (`Subscription created`).
    pub created_title: &'static str,
    /// The title of the delete confirmation (`Delete subscription?`).
    pub delete_title: &'static str,
    /// The confirmation's words before the endpoint's name (`Delete `).
    pub delete_lead: &'static str,
    /// What a deletion takes with it, a sentence.
    pub delete_consequence: &'static str,
}

/// A new secret of a `words` endpoint named `name`, shown this once (`rotated_until`:
/// after a rotation); `done` is the page the Done button returns to.
pub fn secret_shown(
    session: &Session,
    words: &KindWords,
    name: &str,
    secret: &str,
    rotated_until: Option<Timestamp>,
    done: &str,
) -> Markup {
    let title = if rotated_until.is_some() {
        "New signing secret"
    } else {
        words.created_title
    };
    layout(
        title,
        Some(session),
        html! {
            p { (words.noun) " " strong { (name) } ": its signing secret is below." }
            div.notice.warn role="alert" {
                p { strong { "Copy it now: it will not be shown again." } }
                @if let Some(until) = rotated_until {
                    p { "Until " (time(until)) " every delivery is signed with both the old and the new secret, so your receiver can switch without missing one." }
                }
            }
            div.secret {
                label for="secret" { "Signing secret" }
                input #secret type="text" readonly value=(secret) autocomplete="off" spellcheck="false";
                button type="button" data-copy="secret" { "Copy" }
                span.copied aria-live="polite" {}
            }
            p { a.button href=(done) { "Done" } }
        },
    )
}

/// A JSON body, indented for reading (as it is when it is not JSON).
fn pretty(body: &str) -> String {
    serde_json::from_str::<serde_json::Value>(body)
        .and_then(|v| serde_json::to_string_pretty(&v))
        .unwrap_or_else(|_| body.to_owned())
}

fn outcome(o: &AttemptOutcome) -> Markup {
    match o {
        AttemptOutcome::Response { status, body_prefix } => html! {
            span class=(if (200..300).contains(status) { "badge ok" } else { "badge bad" }) { "HTTP " (status) }
            @if !body_prefix.is_empty() {
                details {
                    summary { "Response body (start)" }
                    pre.body { (body_prefix) }
                }
            }
        },
        AttemptOutcome::Error { error } => html! {
            span.badge.bad { (error.as_str()) }
            " " span.muted { (error.describe()) }
        },
    }
}

fn flash(f: &Flash) -> Markup {
    let text = match f {
        Flash::None => return html! {},
        Flash::Updated => "Saved.".to_owned(),
        Flash::Paused => "Paused: new events are held until you resume.".to_owned(),
        Flash::Resumed { released, expired } => format!(
            "Resumed: {released} held event{} will be delivered; {expired} expired (held over 7 days).",
            if *released == 1 { "" } else { "s" }
        ),
        Flash::TestSent => "Test event queued: watch it arrive in the delivery log.".to_owned(),
        Flash::Recovered(n) => format!(
            "Recover queued {n} failed deliver{}.",
            if *n == 1 { "y" } else { "ies" }
        ),
        Flash::Resent(id) => format!("Resent: the new delivery is {id}."),
    };
    html! { p.notice.ok role="status" #flash { (text) } }
}

/// One subscription with its actions and delivery log.
#[allow(clippy::too_many_arguments)]
pub fn detail(
    session: &Session,
    r: &SubscriptionRecord,
    counts: &DayCounts,
    filter: &DeliveryFilter,
    deliveries: &[DeliveryRecord],
    next: Option<DeliveryCursor>,
    f: &Flash,
    now: Timestamp,
) -> Markup {
    let s = &r.subscription;
    let base = format!("/settings/webhooks/{}", s.id);
    let day_ago = now.add_millis(-24 * 3_600_000).to_string();
    let since_default: String = day_ago.chars().take(16).collect();
    layout(
        &s.name,
        Some(session),
        html! {
            (flash(f))
            dl.facts {
                dt { "Endpoint" } dd { code { (s.url) } }
                dt { "State" } dd #state { (state_badge(&s.status)) }
                dt { "Events" } dd { (events_text(&s.events)) }
                dt { "Accounts" } dd {
                    @if s.integrations.is_empty() { "all accounts" }
                    @else { (s.integrations.iter().map(|i| format!("{} ({})", i.name, i.id)).collect::<Vec<_>>().join(", ")) }
                }
                dt { "Failed deliveries in a row" } dd { (failures_in_a_row(s.consecutive_failures)) }
                dt { "Last success" } dd { @match s.last_success_at { Some(t) => (time(t)), None => "never" } }
                dt { "Created" } dd { (time(s.created_at)) " (" (s.created_by_kind.as_str()) ")" }
                @if let Some(until) = r.previous_secret_valid_until {
                    dt { "Previous secret" } dd { "also signs until " (time(until)) }
                }
                dt { "Last 24 h" } dd { (chart(counts)) }
            }
            div.actions {
                a.button href={ (base) "/edit" } { "Edit" }
                @if s.status.is_paused() {
                    (action(session, &format!("{base}/resume"), "Resume", "primary"))
                } @else {
                    (action(session, &format!("{base}/pause"), "Pause", ""))
                }
                (action(session, &format!("{base}/test"), "Send test event", ""))
                (action(session, &format!("{base}/rotate"), "Rotate secret", ""))
                a.button.danger href={ (base) "/delete" } { "Delete" }
            }
            section aria-labelledby="recover-h" {
                h2 #recover-h { "Recover failed deliveries" }
                form.inline method="post" action={ (base) "/recover" } {
                    (csrf(session))
                    label for="since" { "Failed since (UTC)" }
                    input #since type="datetime-local" name="since" required value=(since_default);
                    button type="submit" { "Recover" }
                }
            }
            (delivery_log(session, &base, filter, &subscription_types(), deliveries, next))
        },
    )
}

/// A delivery log (a subscription's or an operator endpoint's page, at `base`): the
/// filters (by state, and by one of `types`), each delivery with its state, type,
/// payload, attempts and a resend button once finished, and the link to older ones.
fn delivery_log(
    session: &Session,
    base: &str,
    filter: &DeliveryFilter,
    types: &[DeliveryEventType],
    deliveries: &[DeliveryRecord],
    next: Option<DeliveryCursor>,
) -> Markup {
    // Something may still change on its own: the script refreshes the log while so.
    let live = deliveries.iter().any(|d| d.state == DeliveryState::Pending);
    html! {
        section #log aria-labelledby="log-h" data-live=[live.then_some("true")] {
            h2 #log-h { "Delivery log" }
            p.muted #log-status aria-live="polite" {}
            form.filters method="get" action=(base) {
                label for="f-state" { "State" }
                select #f-state name="state" {
                    option value="" { "any" }
                    @for st in DELIVERY_STATES {
                        option value=(st.as_str()) selected[filter.state == Some(st)] { (st.as_str()) }
                    }
                }
                label for="f-type" { "Event type" }
                select #f-type name="type" {
                    option value="" { "any" }
                    @for t in types {
                        option value=(t.as_str()) selected[filter.event_type == Some(*t)] { (t.as_str()) }
                    }
                }
                button type="submit" { "Filter" }
            }
            @if deliveries.is_empty() {
                p #no-deliveries { "No deliveries match." }
            }
            ol.log {
                @for d in deliveries {
                    li.delivery data-state=(d.state.as_str()) data-event=(d.event_id) {
                        div.head {
                            span class={ "badge state-" (d.state.as_str()) } { (d.state.as_str()) }
                            " " code { (d.event_type.as_str()) }
                            " " span.muted { (d.id.to_string()) " · " (d.event_id) " · " (time(d.created_at)) }
                            @if d.payload_erased {
                                " " span.badge.erased { "payload erased" }
                            } @else if d.state.is_final() {
                                (action(session, &format!("{base}/deliveries/{}/resend", d.id), "Resend", "small"))
                            }
                        }
                        @if let Some(next) = d.next_attempt_at {
                            p.muted { "Next attempt at " (time(next)) }
                        }
                        @if d.payload_erased {
                            p.muted.erased { "Payload erased: the event's body is no longer stored." }
                        } @else {
                            details.payload {
                                summary { "Payload" }
                                pre.body { (pretty(&d.payload)) }
                            }
                        }
                        @if d.attempts.is_empty() {
                            p.muted { "No attempt yet." }
                        } @else {
                            table.attempts {
                                caption.visually-hidden { "Attempts of " (d.id.to_string()) }
                                thead { tr { th scope="col" { "#" } th scope="col" { "Sent" } th scope="col" { "Duration" } th scope="col" { "Outcome" } } }
                                tbody {
                                    @for a in &d.attempts {
                                        // `data-label`: the column's name, shown beside
                                        // each cell where narrow screens stack the row.
                                        tr.attempt {
                                            td data-label="#" { (a.number) }
                                            td data-label="Sent" { (time(a.started_at)) }
                                            td data-label="Duration" { (a.duration_ms) " ms" }
                                            td data-label="Outcome" { (outcome(&a.outcome)) }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            nav.pager aria-label="Delivery log pages" {
                @if let Some(c) = next {
                    a href={ (base) "?cursor=" (c.to_string()) (filter.query()) } rel="next" { "Older deliveries" }
                }
            }
        }
    }
}

/// Asks before deleting the `words` endpoint `r`, whose page is at `base`; `back` is
/// where Cancel goes.
pub fn confirm_delete(session: &Session, words: &KindWords, r: &SubscriptionRecord, base: &str, back: &str) -> Markup {
    let s = &r.subscription;
    layout(
        words.delete_title,
        Some(session),
        html! {
            p { (words.delete_lead) strong { (s.name) } " (" code { (s.url) } ")? " (words.delete_consequence) " This cannot be undone." }
            div.actions {
                (action(session, &format!("{base}/{}/delete", s.id), "Delete for good", "danger"))
                a href=(back) { "Cancel" }
            }
        },
    )
}

/// The workspace's admin notifications, each linked to the page of the endpoint it is
/// about: `subscription_ids` are the workspace's subscriptions, `operator_ids` its
/// operator endpoints; a notice about an endpoint that is neither (deleted since) says so
/// instead of linking to a page that no longer exists.
pub fn notifications(
    session: &Session,
    list: &[Notification],
    subscription_ids: &[String],
    operator_ids: &[String],
) -> Markup {
    layout(
        "Notifications",
        Some(session),
        html! {
            @if list.is_empty() {
                p { "No notifications. A subscription that starts failing, is about to pause, pauses, resumes or recovers, and a rotated secret or signing key, are noted here." }
            } @else {
                ul.cards {
                    @for n in list {
                        li.card {
                            p { (time(n.created_at)) " " code { (n.kind.as_str()) } }
                            p { (n.message) }
                            @if let Some(id) = &n.subscription_id {
                                @if operator_ids.contains(id) {
                                    p { a href={ "/settings/operator-endpoints/" (id) } { "Open the operator endpoint" } }
                                } @else if subscription_ids.contains(id) {
                                    p { a href={ "/settings/webhooks/" (id) } { "Open the subscription" } }
                                } @else {
                                    p.muted.gone { "This endpoint has been deleted since. " a href="/settings/operator-endpoints" { "Operator endpoints" } " · " a href="/settings/" { "Subscriptions" } }
                                }
                            }
                        }
                    }
                }
            }
        },
    )
}

/// The fields of the operator endpoint form.
#[derive(Debug, Clone, Default)]
pub struct OperatorFormValues {
    /// Name.
    pub name: String,
    /// Endpoint URL.
    pub url: String,
}

/// The workspace's operator endpoints, their actions, and the form that adds one (with
/// the problems of a refused post).
pub fn operator_endpoints(
    session: &Session,
    list: &[SubscriptionRecord],
    v: &OperatorFormValues,
    problems: &[String],
    max: u64,
) -> Markup {
    layout(
        "Operator endpoints",
        Some(session),
        html! {
            p { "An operator endpoint is your own webhook endpoint for this workspace's operational notices: a subscription starts failing, is about to be paused, is paused, resumed or recovered, a secret or the signing key is rotated. Notices are signed webhooks like any delivery (retried, in order per subscription), each endpoint with its own signing secret. A notice about an operator endpoint goes to the others, never to itself. Every notice is also listed under " a href="/settings/notifications" { "Notifications" } "; the types and their bodies are documented in postwire's " code { "docs/events.md" } ". At most " (max) " per workspace." }
            @if list.is_empty() {
                p { "No operator endpoints yet: notices are only listed under " a href="/settings/notifications" { "Notifications" } "." }
            } @else {
                ul.cards {
                    @for r in list {
                        @let s = &r.subscription;
                        li.card #{ "op-" (s.id) } {
                            h2 { a href={ "/settings/operator-endpoints/" (s.id) } { (s.name) } }
                            p.url { code { (s.url) } }
                            dl {
                                dt { "State" } dd { (state_badge(&s.status)) }
                                dt { "Failing since" } dd {
                                    @match r.failing_since { Some(t) => (time(t)), None => "not failing" }
                                }
                                dt { "Failed deliveries in a row" } dd.failures { (failures_in_a_row(s.consecutive_failures)) }
                                dt { "Last success" } dd {
                                    @match s.last_success_at { Some(t) => (time(t)), None => "never" }
                                }
                            }
                            div.actions {
                                a.button href={ "/settings/operator-endpoints/" (s.id) } { "Deliveries" }
                                (action(session, &format!("/settings/operator-endpoints/{}/test", s.id), "Send test", ""))
                                @if s.status.is_paused() {
                                    (action(session, &format!("/settings/operator-endpoints/{}/resume", s.id), "Resume", ""))
                                } @else {
                                    (action(session, &format!("/settings/operator-endpoints/{}/pause", s.id), "Pause", ""))
                                }
                                (action(session, &format!("/settings/operator-endpoints/{}/rotate", s.id), "Rotate secret", ""))
                                a.button.danger href={ "/settings/operator-endpoints/" (s.id) "/delete" } { "Delete" }
                            }
                        }
                    }
                }
            }
            section.card aria-labelledby="add-op" {
                h2 #add-op { "Add an operator endpoint" }
                @if list.len() as u64 >= max {
                    p { "This workspace has " (max) " operator endpoints, its limit: delete one to add another." }
                } @else {
                    @if !problems.is_empty() {
                        div.notice.error role="alert" #problems {
                            p { "Please fix:" }
                            ul { @for p in problems { li { (p) } } }
                        }
                    }
                    form.stack method="post" action="/settings/operator-endpoints" {
                        (csrf(session))
                        label for="op-name" { "Name" }
                        input #op-name type="text" name="name" required maxlength="200" value=(v.name);
                        label for="op-url" { "Endpoint URL (https)" }
                        input #op-url type="url" name="url" required value=(v.url) placeholder="https://ops.example.com/postwire-notices";
                        div.actions { button type="submit" { "Create" } }
                    }
                }
            }
        },
    )
}

/// One operator endpoint: its state, a button that sends it a test notice, and its
/// delivery log (its notices and test notices, with the same filters, payloads, attempts
/// and resend as a subscription's log).
pub fn operator_detail(
    session: &Session,
    r: &SubscriptionRecord,
    filter: &DeliveryFilter,
    deliveries: &[DeliveryRecord],
    next: Option<DeliveryCursor>,
    f: &Flash,
) -> Markup {
    let s = &r.subscription;
    let base = format!("/settings/operator-endpoints/{}", s.id);
    layout(
        &s.name,
        Some(session),
        html! {
            (flash(f))
            p { a href="/settings/operator-endpoints" { "All operator endpoints" } }
            dl.facts {
                dt { "Kind" } dd { "Operator endpoint: receives this workspace's operational notices" }
                dt { "Endpoint" } dd { code { (s.url) } }
                dt { "State" } dd #state { (state_badge(&s.status)) }
                dt { "Failing since" } dd {
                    @match r.failing_since { Some(t) => (time(t)), None => "not failing" }
                }
                dt { "Failed deliveries in a row" } dd { (failures_in_a_row(s.consecutive_failures)) }
                dt { "Last success" } dd { @match s.last_success_at { Some(t) => (time(t)), None => "never" } }
                dt { "Created" } dd { (time(s.created_at)) }
                @if let Some(until) = r.previous_secret_valid_until {
                    dt { "Previous secret" } dd { "also signs until " (time(until)) }
                }
            }
            div.actions {
                (action(session, &format!("{base}/test"), "Send test", "primary"))
            }
            p.muted { "A test notice is a " code { "webhook.test" } " event, signed with this endpoint's secret and delivered like a notice: use it to check that your endpoint receives and verifies them. Pause, resume, rotate and delete are on the " a href="/settings/operator-endpoints" { "list" } "." }
            (delivery_log(session, &base, filter, &operator_types(), deliveries, next))
        },
    )
}

/// What the verify box shows: a sample delivery and the key that verifies it, or what a
/// user posted and the server's verdict on it.
#[derive(Debug, Clone, Default)]
pub struct VerifyBox {
    /// The headers, one `name: value` per line.
    pub headers: String,
    /// The body, exactly as received.
    pub body: String,
    /// The `whpk_` public key field.
    pub public_key: String,
    /// The verdict of a form posted to the server: `Ok(what verified)` or
    /// `Err(code: why)`. `None` before anything was checked.
    pub verdict: Option<Result<String, String>>,
}

impl VerifyBox {
    /// The box filled in with `sample`, signed by the workspace's current key, and that
    /// key's public half.
    pub fn sample(keys: &[postwire_sender::SigningKeyInfo], sample: &postwire_sender::SignedSample) -> Self {
        VerifyBox {
            headers: format!(
                "webhook-id: {}\nwebhook-timestamp: {}\nwebhook-signature: {}",
                sample.id, sample.timestamp, sample.signature
            ),
            body: sample.body.clone(),
            public_key: keys.first().map(|k| k.public_key.to_string()).unwrap_or_default(),
            verdict: None,
        }
    }
}

/// The event catalogue, the workspace's public keys, and the verify box. The box is a
/// form posted to this server (`POST /settings/events/verify`), which verifies with
/// postwire-core, so it works in every build and without JavaScript; when the npm
/// package's browser builds are embedded (`in_browser`), the page's script verifies in
/// the browser instead and nothing is sent.
pub fn events(
    session: &Session,
    keys: &[postwire_sender::SigningKeyInfo],
    verify: &VerifyBox,
    in_browser: bool,
) -> Markup {
    layout(
        "Event catalogue",
        Some(session),
        html! {
            p { "Every delivery is a signed POST with " code { "webhook-id" } ", " code { "webhook-timestamp" } " and " code { "webhook-signature" } " headers and one of these bodies. De-duplicate on " code { "id" } " (it equals " code { "webhook-id" } ")." }
            @for s in catalog::samples() {
                section.card id={ "type-" (s.event_type.as_str().replace('.', "-")) } {
                    h2 { code { (s.event_type.as_str()) } }
                    p { (s.about) }
                    details {
                        summary { "Fields" }
                        table.fields {
                            caption.visually-hidden { "Fields of " (s.event_type.as_str()) }
                            thead { tr { th scope="col" { "Field" } th scope="col" { "Type" } } }
                            tbody {
                                @for (path, kind) in &s.fields {
                                    tr { td { code { (path) } } td { (kind) } }
                                }
                            }
                        }
                    }
                    details {
                        summary { "Sample payload" }
                        pre.body { (s.body) }
                    }
                }
            }
            section.card #public-keys aria-labelledby="keys-h" {
                h2 #keys-h { "Public keys (v1a)" }
                p { "Subscriptions set to " code { "asymmetric" } " or " code { "both" } " signing carry " code { "v1a" } " (ed25519) signatures by this workspace's key pair. Receivers verify them with a public key: it cannot sign, so it may be shared freely (also at " code { "GET /public/v1/workspaces/{id}/signing-keys" } ")." }
                ul.keys {
                    @for k in keys {
                        li {
                            code.key { (k.public_key) }
                            " made " (time(k.created_at))
                            @if let Some(until) = k.expires_at { ", replaced; signs until " (time(until)) }
                        }
                    }
                }
            }
            section.card #verify aria-labelledby="verify-h" {
                h2 #verify-h { "Verify a delivery" }
                @if in_browser {
                    p { "It is checked here in your browser with the postwire npm package; nothing is sent to the server." }
                } @else {
                    p { "It is checked by this server with postwire-core, over your signed-in session (the server already holds your subscriptions' secrets); nothing is stored or logged." }
                }
                p { "The form holds a sample delivery signed just now by this workspace's key, and the public key that verifies it: press Verify. To check one of your deliveries, paste its headers and body, and for a " code { "v1" } " delivery your subscription's secret. Signatures older than 5 minutes are refused, as receivers refuse them." }
                form.stack #verify-form method="post" action="/settings/events/verify" data-in-browser=[in_browser.then_some("true")] {
                    (csrf(session))
                    label for="v-headers" { "Headers (one per line, name: value)" }
                    textarea #v-headers name="headers" rows="4" spellcheck="false" { (verify.headers) }
                    label for="v-body" { "Body (exactly as received)" }
                    textarea #v-body name="body" rows="6" spellcheck="false" { (verify.body) }
                    label for="v-public-key" { "Public key (whpk_…), for v1a signatures" }
                    input #v-public-key name="public_key" type="text" spellcheck="false" autocomplete="off" value=(verify.public_key);
                    label for="v-secret" { "Or your secret (whsec_…), for v1 signatures; used instead of the public key when given" }
                    input #v-secret name="secret" type="password" autocomplete="off";
                    button type="submit" { "Verify" }
                    @match &verify.verdict {
                        None => output #v-result aria-live="polite" {},
                        Some(Ok(what)) => output #v-result aria-live="polite" data-result="valid" { "Valid: " (what) },
                        Some(Err(why)) => output #v-result aria-live="polite" data-result="invalid" { "Not valid: " (why) },
                    }
                }
            }
        },
    )
}
