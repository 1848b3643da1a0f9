//! Shared by the three modes: what makes a request a verified delivery. The checks of one
//! request, from its method to its signature and timestamp ([`inspect`]), which verified
//! bodies may be handed on ([`payload`]), and the bearer tokens of the admin paths with the
//! `404` a refused request gets ([`bearer`]).

pub mod bearer;
pub mod inspect;
pub mod key_set;
#[cfg(target_arch = "wasm32")]
pub(crate) mod key_set_fetch;
pub mod payload;

pub use bearer::{AdminToken, authorized, not_found};
pub use inspect::{DeliveryHeaders, VerifiedDelivery};
pub use payload::{PayloadPolicy, check_payload};
