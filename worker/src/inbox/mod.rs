//! Inbox mode (`DELIVERY_MODE = "inbox"`), the parts that are plain logic: when a failed
//! attempt is tried again ([`retry`]), how fast the origin may be called ([`pacing`]), which
//! deliveries wait for each other ([`ordering`]), and the admin API's routes and token
//! ([`admin`]). The Durable Object that stores, paces and delivers (`InboxObject`) lives in
//! the wasm-only `edge` module and calls these.

pub mod admin;
pub mod ordering;
pub mod pacing;
pub mod retry;
