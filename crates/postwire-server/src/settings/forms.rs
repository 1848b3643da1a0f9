//! Form posts of the Settings screen: reading `application/x-www-form-urlencoded`
//! bodies, and the two CSRF checks every one of them passes before anything changes
//! (same origin, and the session's token in the `csrf` field).

use axum::body::Body;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::{HeaderMap, header};

use crate::portal::csrf_matches;
use crate::settings::{PageError, Session};
use crate::state::AppState;
use crate::validation::read_body;

/// The name of the hidden field that carries the CSRF token.
pub const CSRF_FIELD: &str = "csrf";

/// A parsed form: its fields in order (a name may repeat, e.g. check boxes).
#[derive(Debug, Default)]
pub struct Form(Vec<(String, String)>);

impl Form {
    /// The first value of `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// Every value of `name`.
    pub fn all(&self, name: &str) -> Vec<String> {
        self.0
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .collect()
    }
}

/// Whether the request comes from this server's own pages: its `Origin` names this
/// host (or the configured public URL), or, when a browser sends no `Origin` (or the
/// opaque `null`), `Sec-Fetch-Site` says `same-origin`. A request with neither is
/// refused.
pub fn same_origin(state: &AppState, headers: &HeaderMap) -> bool {
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    let origin = headers
        .get(header::ORIGIN)
        .and_then(|o| o.to_str().ok())
        .filter(|o| *o != "null");
    match origin {
        Some(origin) => {
            if let Some(public) = state.portal.public_url()
                && origin.eq_ignore_ascii_case(public.trim_end_matches('/'))
            {
                return true;
            }
            let Some(host) = host else { return false };
            let without_scheme = origin
                .strip_prefix("http://")
                .or_else(|| origin.strip_prefix("https://"));
            without_scheme.is_some_and(|o| o.eq_ignore_ascii_case(host))
        }
        None => headers
            .get("sec-fetch-site")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v == "same-origin"),
    }
}

/// Reads a form post of `session`: refuses (403 `forbidden`) a request from another
/// origin or without the session's CSRF token.
pub async fn read(state: &AppState, session: &Session, headers: &HeaderMap, body: Body) -> Result<Form, PageError> {
    if !same_origin(state, headers) {
        tracing::warn!(portal_session = %session.portal.id, "settings form post from another origin refused");
        return Err(PageError::Refused(
            "This form must be sent from the Settings screen itself.",
        ));
    }
    let bytes = read_body(body, state.max_body_bytes).await?;
    let form = Form(
        url::form_urlencoded::parse(&bytes)
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect(),
    );
    match form.get(CSRF_FIELD) {
        Some(token) if csrf_matches(&session.portal, token) => Ok(form),
        _ => {
            tracing::warn!(portal_session = %session.portal.id, "settings form post without a valid CSRF token refused");
            Err(PageError::Refused(
                "This form is out of date or not from this session; reload the page and try again.",
            ))
        }
    }
}

/// A form posted by a signed-in session that passed both checks of [`read`]: the
/// extractor of every handler that changes something, so none can forget a check.
#[derive(Debug)]
pub struct Posted {
    /// The session that posted it.
    pub session: Session,
    /// Its fields.
    pub form: Form,
}

impl FromRequest<AppState> for Posted {
    type Rejection = PageError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        let (mut parts, body) = request.into_parts();
        let session = Session::from_request_parts(&mut parts, state).await?;
        let form = read(state, &session, &parts.headers, body).await?;
        Ok(Posted { session, form })
    }
}
