//! Bearer authentication of the public API, and the per-operation checks.
//!
//! A middleware in front of every authenticated public route reads
//! `Authorization: Bearer <API_TOKEN>`, looks the token up by its hash (401
//! `unauthorized` when missing, malformed, unknown or revoked), counts the call against
//! the token's hourly limit (429 `rate_limited`) and hands the token to the handler as a
//! [`Caller`]. Each handler then says what it needs with [`Caller::authorize`]: a scope
//! (403 `insufficient_scope`), a workspace in the token's selection (403 `forbidden`),
//! and a workspace that exists (404 `not_found`), checked in that order, so a token
//! never learns whether a workspace outside its selection exists.
//!
//! Every `401` also counts against the client's address; an address past its hourly
//! allowance of them gets `429 rate_limited` before its token is looked at
//! ([`crate::limits`]).

use std::net::{IpAddr, SocketAddr};

use axum::extract::{ConnectInfo, FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::errors::{ApiError, ApiResult};
use crate::rate_limit::Allowance;
use crate::state::AppState;
use crate::tokens::{ApiToken, Scope};

/// The authenticated token of the current request.
#[derive(Debug, Clone)]
pub struct Caller(pub ApiToken);

impl Caller {
    /// Checks that the token holds `scope` and may use `workspace_id`, and that the
    /// workspace exists.
    pub async fn authorize(&self, state: &AppState, scope: Scope, workspace_id: &str) -> ApiResult<()> {
        self.require_scope(scope)?;
        if !self.0.may_use(workspace_id) {
            let shown: String = workspace_id.chars().take(64).collect();
            return Err(ApiError::Forbidden(shown));
        }
        state.require_workspace(workspace_id).await?;
        Ok(())
    }

    /// Checks only the scope.
    pub fn require_scope(&self, scope: Scope) -> ApiResult<()> {
        if self.0.has_scope(scope) {
            Ok(())
        } else {
            Err(ApiError::InsufficientScope(scope))
        }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        parts
            .extensions
            .get::<Caller>()
            .cloned()
            .ok_or_else(|| ApiError::Internal("route is not behind the authentication middleware".into()))
    }
}

/// The token of an `Authorization: Bearer …` header, or why there is none.
pub fn bearer(headers: &HeaderMap) -> Result<&str, ApiError> {
    let value = headers.get(header::AUTHORIZATION).ok_or(ApiError::Unauthorized(
        "a bearer token is required: send `Authorization: Bearer <API_TOKEN>`",
    ))?;
    let value = value
        .to_str()
        .map_err(|_| ApiError::Unauthorized("the Authorization header must be `Bearer <API_TOKEN>`"))?;
    let (scheme, token) = value.split_once(' ').ok_or(ApiError::Unauthorized(
        "the Authorization header must be `Bearer <API_TOKEN>`",
    ))?;
    let token = token.trim();
    if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() {
        return Err(ApiError::Unauthorized(
            "the Authorization header must be `Bearer <API_TOKEN>`",
        ));
    }
    Ok(token)
}

fn rate_headers(response: &mut Response, a: &Allowance) {
    let h = response.headers_mut();
    h.insert("x-ratelimit-limit", HeaderValue::from(a.limit));
    h.insert("x-ratelimit-remaining", HeaderValue::from(a.remaining));
    h.insert("x-ratelimit-reset", HeaderValue::from(a.reset_unix_secs));
}

/// The client's address, when the request came over a connection the server accepted.
pub fn client_ip(request: &Request) -> Option<IpAddr> {
    request.extensions().get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip())
}

/// What unauthenticated requests are counted against: an IPv4 address, or an IPv6
/// address's /64 (one host usually has a whole /64, so counting single IPv6 addresses
/// would let it pick a fresh one per request).
pub fn address_key(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => {
                let s = v6.segments();
                format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
            }
        },
    }
}

/// `429 rate_limited` when `ip` has used up its hourly allowance of unauthenticated
/// requests (checked before any token look-up, so guessing costs the guesser).
pub fn refuse_address(state: &AppState, ip: Option<IpAddr>) -> Option<Response> {
    let allowance = state.unauthenticated.exhausted(&address_key(ip?))?;
    tracing::info!("unauthenticated request limit reached for a client address");
    let mut response = ApiError::RateLimited {
        limit: allowance.limit,
        retry_after_secs: allowance.retry_after_secs,
    }
    .into_response();
    rate_headers(&mut response, &allowance);
    Some(response)
}

/// Answers `error` (a `401`) and counts it against `ip`.
pub fn unauthenticated(state: &AppState, ip: Option<IpAddr>, error: ApiError) -> Response {
    if let Some(ip) = ip {
        let _ = state.unauthenticated.check(&address_key(ip));
    }
    error.into_response()
}

/// The middleware: authenticate, count, then run the handler with a [`Caller`].
pub async fn authenticate(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    let ip = client_ip(&request);
    if let Some(refused) = refuse_address(&state, ip) {
        return refused;
    }
    let token = match bearer(request.headers()) {
        Ok(t) => t.to_owned(),
        Err(e) => return unauthenticated(&state, ip, e),
    };
    let record = match state.tokens.authenticate(&token).await {
        Ok(Some(r)) => r,
        Ok(None) => {
            return unauthenticated(
                &state,
                ip,
                ApiError::Unauthorized("the bearer token is invalid or has been revoked"),
            );
        }
        Err(e) => return ApiError::from(e).into_response(),
    };
    let allowance = match state.limiter.count(&record.id).await {
        Ok(a) => a,
        Err(e) => return e.into_response(),
    };
    if !allowance.allowed {
        tracing::info!(token_id = %record.id, "hourly API limit exceeded");
        let mut response = ApiError::RateLimited {
            limit: allowance.limit,
            retry_after_secs: allowance.retry_after_secs,
        }
        .into_response();
        rate_headers(&mut response, &allowance);
        return response;
    }
    request.extensions_mut().insert(Caller(record));
    let mut response = next.run(request).await;
    rate_headers(&mut response, &allowance);
    response
}

#[cfg(test)]
mod tests {
    use super::address_key;

    #[test]
    fn ipv6_hosts_are_counted_by_their_64_prefix() {
        assert_eq!(address_key("203.0.113.7".parse().unwrap()), "203.0.113.7");
        assert_eq!(address_key("::ffff:203.0.113.7".parse().unwrap()), "203.0.113.7");
        assert_eq!(
            address_key("2001:db8:1:2:aaaa::1".parse().unwrap()),
            address_key("2001:db8:1:2:ffff:1:2:3".parse().unwrap())
        );
        assert_ne!(
            address_key("2001:db8:1:2::1".parse().unwrap()),
            address_key("2001:db8:1:3::1".parse().unwrap())
        );
    }
}
