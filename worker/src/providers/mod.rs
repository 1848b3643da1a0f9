//! Provider routes (`PROVIDER_ROUTES`): one Worker in front of several providers, each on
//! its own path with its own scheme and keys (Stripe, GitHub, Shopify, Slack, Twilio,
//! Paddle, Linear, SendGrid, Discord, Standard Webhooks, or a generic HMAC recipe), verified
//! by `postwire_core::providers`.
//!
//! [`routes`] reads the table; [`delivery`] verifies one request on its route and restates
//! it as a Standard Webhooks delivery (the provider's id, namespaced by route, as its
//! `webhook-id`), so forward, inbox and listen mode handle it as they handle any other, and
//! the origin verifies every provider's deliveries with one Standard Webhooks secret
//! (`ORIGIN_SECRET`). Handshakes a provider expects answered at once (Slack's
//! `url_verification`, Discord's `PING`) are answered here, in every mode, never forwarded.

pub mod delivery;
pub mod routes;

pub use delivery::{
    EVENT_TYPE_HEADER, Handshake, PROVIDER_HEADER, RouteOutcome, forwarded_from, kept_headers, namespaced_id,
    route_verifier, verify_on_route,
};
pub use routes::{ProviderRoute, ProviderRoutes, RoutesError, VAR_PROVIDER_ROUTES};
