//! # postwire-edge-wire: what the edge Worker and the `postwire` command say to each other
//!
//! The Worker (`worker/`, wasm32) and the CLI (`postwire listen`, `postwire edge`, native)
//! are built from this one crate's types, so a change to a frame, a path or an answer on
//! one side fails to compile on the other instead of failing a user at run time.
//!
//! | module | what |
//! | --- | --- |
//! | [`admin`] | the inbox admin API: its paths, the delivery states, the JSON answers |
//! | [`listen`] | listen mode: the WebSocket path, the frames each way, the close code of a replaced listener, and how long the listener may wait for its local endpoint |
//!
//! Only data and the rules of the formats: no I/O, no clock, nothing of the Workers
//! runtime or of Tokio.

#![forbid(unsafe_code)]
// Peer input never panics this crate: no unwrap, expect, panic! or unchecked indexing
// outside tests.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)
)]
#![deny(missing_docs)]

pub mod admin;
pub mod listen;
