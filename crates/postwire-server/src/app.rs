//! The whole application router: the public API ([`crate::routes`]), the internal ingest
//! API ([`crate::ingest`]), the Settings screen ([`crate::settings`]) and `GET /healthz`,
//! under one set of layers. It sits above those modules, so none of them depends on
//! another to be mounted.

use axum::Router;
use axum::middleware;
use axum::routing::get;

use crate::routes::{
    authenticated_routes, healthz, log_and_no_store, method_not_allowed, open_routes, panic_response,
    refuse_oversized_bodies, route_not_found,
};
use crate::state::AppState;

/// The whole application: the public API (authenticated and open routes), the internal
/// ingest API, `GET /healthz`, JSON errors for unknown routes and methods, request
/// logging and panic containment.
pub fn app(state: AppState) -> Router {
    let (authenticated, _) = authenticated_routes().split_for_parts();
    let authenticated =
        authenticated.route_layer(middleware::from_fn_with_state(state.clone(), crate::auth::authenticate));
    let (open, _) = open_routes().split_for_parts();
    Router::new()
        .merge(authenticated)
        .merge(open)
        .merge(crate::ingest::router(state.clone()))
        .merge(crate::settings::router(state.clone()))
        .route("/healthz", get(healthz))
        .fallback(route_not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(middleware::from_fn_with_state(state.clone(), refuse_oversized_bodies))
        .layer(middleware::from_fn_with_state(state.clone(), log_and_no_store))
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(panic_response))
        .with_state(state)
}
