//! The Settings screen: server-rendered pages under `/settings/` where a workspace's
//! admin manages its webhook subscriptions and operator endpoints, logged in by a magic
//! link ([`crate::portal`]). Every page of a session shows a banner while one of the
//! workspace's endpoints is paused or failing ([`Attention`]).
//!
//! Why this shape: HTML rendered on the server with `maud` (templates are Rust, checked
//! at compile time, no template files to ship or find at run time, and every
//! interpolated value is escaped, where names, URLs and receiver bodies are untrusted; it
//! adds one small crate and no build step). askama would add template files and a
//! derive for the same result; a JavaScript front end would add a bundler, a second
//! language's state and an API for the browser to call. A little progressive
//! JavaScript (copy buttons, a delivery log that refreshes itself while a delivery is
//! pending, the verify box) and one stylesheet, all embedded in the binary ([`assets`]). Every page works without
//! JavaScript. The handlers call the same [`Sender`](postwire_sender::Sender) methods
//! as the API's handlers, after the same ownership check
//! (`routes::endpoints::load`): there is no second path to the data. What both kinds of
//! endpoint have is written once over the kind ([`endpoints`]).
//!
//! Security:
//! * the session is a `Secure; HttpOnly; SameSite=Strict` cookie ([`COOKIE`]) bound
//!   to one workspace; anything of another workspace is `not_found`;
//! * every state-changing request is a `POST` that must carry the session's CSRF token
//!   in a hidden field (compared in constant time) **and** come from this origin
//!   (`Origin`, or `Sec-Fetch-Site: same-origin` when a browser sends no `Origin` or
//!   `Origin: null`);
//! * every response carries a strict Content-Security-Policy (no inline script or
//!   style; `'wasm-unsafe-eval'` only for the verifier's WebAssembly), `nosniff`,
//!   `frame-ancestors 'none'` and `Referrer-Policy: same-origin` (the login URL holds a
//!   link token, which must not reach another site; `no-referrer` would make browsers
//!   send `Origin: null` on the screen's own form posts);
//! * receiver response bodies are shown as text (escaped, in `<pre>`); secrets appear
//!   only in the one response that creates or rotates them.

pub mod assets;
mod catalog;
mod endpoints;
mod forms;
mod handlers;
mod operator;
mod pages;

use axum::Router;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};

use crate::errors::ApiError;
use crate::portal::PortalSession;
use crate::routes::endpoints::{OperatorEndpoints, Subscriptions};
use crate::state::AppState;

/// The session cookie's name.
pub const COOKIE: &str = "pw_settings";

/// The Content-Security-Policy of every Settings response.
pub const CSP: &str = "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; \
     img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// The routes under `/settings`.
pub fn router(state: AppState) -> Router<AppState> {
    Router::new()
        .route("/settings", get(handlers::home))
        .route("/settings/", get(handlers::home))
        .route("/settings/login", get(handlers::login_page).post(handlers::login))
        .route("/settings/logout", post(handlers::logout))
        .route("/settings/new", get(handlers::new_form))
        .route("/settings/webhooks", post(handlers::create))
        .route(
            "/settings/webhooks/{id}/edit",
            get(handlers::edit_form).post(handlers::edit),
        )
        .route("/settings/webhooks/{id}/recover", post(handlers::recover))
        .merge(endpoints::routes::<Subscriptions>())
        .route(
            "/settings/operator-endpoints",
            get(operator::list).post(operator::create),
        )
        .merge(endpoints::routes::<OperatorEndpoints>())
        .route("/settings/notifications", get(handlers::notifications))
        .route("/settings/events", get(handlers::events))
        .route("/settings/events/verify", post(handlers::verify))
        .route("/settings/assets/{name}", get(assets::serve))
        .route("/favicon.ico", get(assets::favicon))
        .layer(middleware::from_fn(security_headers))
        .with_state(state)
}

/// Adds the security headers to every Settings response.
async fn security_headers(request: axum::extract::Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let h = response.headers_mut();
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    h.insert("cross-origin-opener-policy", HeaderValue::from_static("same-origin"));
    response
}

/// A page that could not be shown, rendered as HTML with its status.
#[derive(Debug)]
pub enum PageError {
    /// The API's error (the same checks as the API's handlers).
    Api(ApiError),
    /// A form post refused by the CSRF checks (403 `forbidden`).
    Refused(&'static str),
}

impl From<ApiError> for PageError {
    fn from(e: ApiError) -> Self {
        PageError::Api(e)
    }
}

impl From<postwire_sender::SenderError> for PageError {
    fn from(e: postwire_sender::SenderError) -> Self {
        PageError::Api(e.into())
    }
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        let api = match self {
            PageError::Refused(why) => {
                let page = pages::error_page(StatusCode::FORBIDDEN, "forbidden", &[why.to_owned()]);
                return (StatusCode::FORBIDDEN, Html(page.into_string())).into_response();
            }
            PageError::Api(e) => e,
        };
        let status = api.status();
        let messages: Vec<String> = match &api {
            ApiError::Invalid(m) => m.clone(),
            ApiError::Internal(detail) => {
                tracing::error!(detail = %detail, "settings page failed");
                vec!["Something went wrong on the server; its log has the details.".to_owned()]
            }
            ApiError::Unauthorized(why) => vec![(*why).to_owned()],
            other => vec![other.to_string()],
        };
        (
            status,
            Html(pages::error_page(status, api.code(), &messages).into_string()),
        )
            .into_response()
    }
}

/// The result of a page handler.
pub type PageResult = Result<Response, PageError>;

/// The logged-in session of a request, with its workspace's name and how its endpoints
/// are doing (for the banner every page shows while one needs attention).
#[derive(Debug, Clone)]
pub struct Session {
    /// The portal session.
    pub portal: PortalSession,
    /// The workspace's display name.
    pub workspace_name: String,
    /// The workspace's endpoints that are paused or failing.
    pub attention: Attention,
}

/// How many of a workspace's endpoints (its subscriptions and its operator endpoints)
/// need attention: paused, or failing (a failed attempt since the last success).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Attention {
    /// Paused, by request or by the sender after failures.
    pub paused: usize,
    /// Not paused, but failing.
    pub failing: usize,
}

impl Attention {
    /// Counts `endpoints`.
    pub fn of<'r>(endpoints: impl IntoIterator<Item = &'r postwire_sender::SubscriptionRecord>) -> Self {
        let mut a = Attention::default();
        for r in endpoints {
            if r.subscription.status.is_paused() {
                a.paused += 1;
            } else if r.failing_since.is_some() || r.subscription.consecutive_failures > 0 {
                a.failing += 1;
            }
        }
        a
    }

    /// True when nothing is paused or failing.
    pub fn is_clear(&self) -> bool {
        self.paused == 0 && self.failing == 0
    }
}

/// The value of cookie `name` in `headers`, if any.
pub fn cookie<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

impl FromRequestParts<AppState> for Session {
    type Rejection = PageError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        let token = cookie(&parts.headers, COOKIE).ok_or(PageError::Api(ApiError::Unauthorized(
            "You are not signed in: open a new link to the Settings screen.",
        )))?;
        let portal = state
            .portal
            .session(token, state.clock.now())
            .await?
            .ok_or(PageError::Api(ApiError::Unauthorized(
                "Your session has ended or was revoked: open a new link to the Settings screen.",
            )))?;
        let workspace = state.require_workspace(&portal.workspace_id).await?;
        let endpoints = state.sender.list_all_endpoints(&portal.workspace_id).await?;
        Ok(Session {
            portal,
            workspace_name: workspace.name,
            attention: Attention::of(endpoints.iter()),
        })
    }
}

/// A redirect after a successful form post (303, so the browser follows with `GET`).
pub fn see_other(location: &str) -> Response {
    let mut r = StatusCode::SEE_OTHER.into_response();
    if let Ok(v) = HeaderValue::from_str(location) {
        r.headers_mut().insert(header::LOCATION, v);
    }
    r
}
