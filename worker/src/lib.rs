//! # postwire-worker: the edge verifier
//!
//! A Cloudflare Worker that sits in front of a webhook endpoint (the *origin*). For each
//! incoming delivery it checks the Standard Webhooks signature and timestamp with
//! postwire-core, checks that the body is a JSON object, looks the `webhook-id` up in a
//! de-duplication store (Workers KV, or a Durable Object per id), forwards first-time
//! deliveries to the origin with the raw body and the original `webhook-*` headers, and records the id as delivered only once the origin answered `2xx`. So the
//! origin sees only verified, first-time deliveries, and the sender is never told "done"
//! for an event the origin did not accept.
//!
//! That is forward mode, the default. In inbox mode (`DELIVERY_MODE = "inbox"`) a verified,
//! first-time delivery is instead stored in one Durable Object (SQLite storage) and answered
//! `202`; the object delivers it to the origin afterwards, paced, in order per ordering key,
//! with retries until a horizon, and serves an admin API under `/_postwire/` ([`inbox`]).
//!
//! The crate is laid out by mode, each with its own Durable Object, on a shared
//! verification and hand-off; almost everything is plain Rust with native unit tests:
//!
//! | module | what |
//! | --- | --- |
//! | [`config`] | the Worker's settings, parsed and checked from its environment |
//! | [`reply`] | every answer the Worker gives: status, stable code, JSON body |
//! | [`verify`] | shared: the checks of one request ([`verify::inspect`]), which verified bodies pass ([`verify::payload`]), the admin paths' bearer tokens ([`verify::bearer`]) |
//! | [`handoff`] | shared: what is sent to the origin (including the origin signature), and how its answer is classified |
//! | [`forward`] | forward mode: de-duplication (KV or the `DedupObject`), claim → forward → confirm or release |
//! | [`inbox`] | inbox mode: the `InboxObject`'s logic: retry schedule, pacing, ordering keys, the admin API's routes |
//! | [`listen`] | listen mode: deliveries relayed over a WebSocket to `postwire listen` (the `ListenObject`) |
//! | [`providers`] | `PROVIDER_ROUTES`: other providers' webhooks by path (Stripe, GitHub, Slack, …), restated as Standard Webhooks deliveries; their handshakes |
//!
//! The Workers bindings (KV, the Durable Objects, `fetch`) sit in their mode behind
//! `#[cfg(target_arch = "wasm32")]`, with the runtime they share in the `edge` module and the
//! `fetch` event handler, which dispatches to the modes, in `handler`; they are tested in
//! workerd through Miniflare (`worker/test.sh`).

#![forbid(unsafe_code)]
// Peer input never panics this crate: no unwrap, expect, panic! or unchecked indexing
// outside tests (the workspace forbids `unsafe` everywhere).
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)
)]
#![deny(missing_docs)]

pub mod config;
pub mod forward;
pub mod handoff;
pub mod inbox;
pub mod listen;
pub mod providers;
pub mod reply;
pub mod verify;

#[cfg(target_arch = "wasm32")]
mod edge;
#[cfg(target_arch = "wasm32")]
mod handler;

pub use config::{AdminToken, Config, ConfigError, DedupBackend, DeliveryMode, InboxSettings, Ordering};
pub use forward::{Claim, DedupRecord, DedupStore, InFlightSet, IsolateGuardedStore, StoreError, deliver};
pub use handoff::{ForwardRequest, Origin, OriginOutcome};
pub use reply::{Reply, ReplyCode};
pub use verify::{DeliveryHeaders, PayloadPolicy, VerifiedDelivery, check_payload};
