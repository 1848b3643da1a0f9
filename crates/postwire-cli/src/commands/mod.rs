//! One module per subcommand.

pub mod api_client;
pub mod deliveries;
pub mod demo;
pub mod edge;
pub mod keys;
pub mod listen;
pub mod openapi;
pub mod operator_webhooks;
pub mod portal;
pub mod secret;
pub mod serve;
pub mod sign;
pub mod signing_keys;
pub mod token;
pub mod trigger;
pub mod verify;
pub mod webhooks;
