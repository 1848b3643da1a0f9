//! Inbox mode (`DELIVERY_MODE = "inbox"`): a verified, first-time delivery is stored in one
//! `InboxObject` Durable Object (SQLite storage) and answered `202`; the object delivers it
//! to the origin afterwards, paced, in order per ordering key, with retries until a
//! horizon, and serves an admin API under `/_postwire/`.
//!
//! The parts that are plain logic: when a failed attempt is tried again ([`retry`]), how
//! fast the origin may be called ([`pacing`]), which deliveries wait for each other
//! ([`ordering`]), and the admin API's routes ([`admin`]). The `InboxObject` that stores,
//! paces and delivers, and its request to the origin, are compiled only for `wasm32`.

pub mod admin;
pub mod ordering;
pub mod pacing;
pub mod retry;

#[cfg(target_arch = "wasm32")]
mod inbox_object;
#[cfg(target_arch = "wasm32")]
mod inbox_origin;

pub use admin::ADMIN_PREFIX;
pub use ordering::ordering_key;

#[cfg(target_arch = "wasm32")]
pub(crate) use inbox_object::{accept_through_inbox, admin_through_inbox};
