//! Forward mode, the default (`DELIVERY_MODE = "forward"`): a verified, first-time delivery
//! is forwarded to the origin while the sender waits, and its id is recorded as delivered
//! only once the origin answered `2xx` ([`flow`]: claim, forward, then confirm or release).
//! The ids live in a de-duplication store ([`dedup`]): Workers KV (`DEDUP_STORE = "kv"`,
//! with the ids this isolate is forwarding held off in memory, [`in_flight`]), or one
//! `DedupObject` Durable Object per id (`DEDUP_STORE = "durable-object"`), which runs the
//! whole flow itself.
//!
//! The bindings (the KV store, the `DedupObject` and its storage, the origin over `fetch`)
//! are compiled only for `wasm32`.

pub mod dedup;
pub mod flow;
pub mod in_flight;

#[cfg(target_arch = "wasm32")]
mod dedup_object;
#[cfg(target_arch = "wasm32")]
mod do_store;
#[cfg(target_arch = "wasm32")]
mod fetch_origin;
#[cfg(target_arch = "wasm32")]
mod kv_store;

pub use dedup::{Claim, DedupRecord, DedupStore, StoreError};
pub use flow::deliver;
pub use in_flight::{InFlightSet, IsolateGuardedStore};

#[cfg(target_arch = "wasm32")]
pub(crate) use dedup_object::deliver_through_object;
#[cfg(target_arch = "wasm32")]
pub(crate) use fetch_origin::FetchOrigin;
#[cfg(target_arch = "wasm32")]
pub(crate) use kv_store::KvDedupStore;
