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
//! The crate is split so that almost everything is plain Rust with native unit tests:
//!
//! | module | what |
//! | --- | --- |
//! | [`config`] | the Worker's settings, parsed and checked from its environment |
//! | [`reply`] | every answer the Worker gives: status, stable code, JSON body |
//! | [`inspect`] | the checks of one request: method, headers, size, signature, timestamp |
//! | [`payload`] | which verified bodies may be forwarded (a JSON object by default) |
//! | [`dedup`] | the de-duplication interface ([`dedup::DedupStore`]) and its record format |
//! | [`in_flight`] | the ids this isolate is forwarding now, held off in memory (KV mode) |
//! | [`forward`] | what is sent to the origin, including the origin signature |
//! | [`flow`] | claim, forward, then confirm or release: the order that loses nothing |
//! | [`inbox`] | inbox mode's logic: retry schedule, pacing, ordering keys, the admin API's routes |
//! | [`listen`] | listen mode: deliveries relayed over a WebSocket to `postwire listen` |
//!
//! The Workers bindings (KV, the `DedupObject` Durable Object, `fetch`, the `fetch` event)
//! live in the `edge` module, which exists only when compiling for `wasm32`; they are tested
//! in workerd through Miniflare (`worker/test.sh`).

#![forbid(unsafe_code)]
// Peer input never panics this crate: no unwrap, expect, panic! or unchecked indexing
// outside tests (the workspace forbids `unsafe` everywhere).
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)
)]
#![deny(missing_docs)]

pub mod config;
pub mod dedup;
pub mod flow;
pub mod forward;
pub mod in_flight;
pub mod inbox;
pub mod inspect;
pub mod listen;
pub mod payload;
pub mod reply;

#[cfg(target_arch = "wasm32")]
mod edge;

pub use config::{AdminToken, Config, ConfigError, DedupBackend, DeliveryMode, InboxSettings, Ordering};
pub use dedup::{Claim, DedupRecord, DedupStore, StoreError};
pub use flow::deliver;
pub use forward::{ForwardRequest, Origin, OriginOutcome};
pub use in_flight::{InFlightSet, IsolateGuardedStore};
pub use inspect::{DeliveryHeaders, VerifiedDelivery};
pub use payload::{PayloadPolicy, check_payload};
pub use reply::{Reply, ReplyCode};
