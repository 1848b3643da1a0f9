//! One module per subcommand.

pub mod demo;
pub mod edge;
pub mod keys;
pub mod listen;
pub mod openapi;
pub mod portal;
pub mod secret;
pub mod serve;
pub mod sign;
pub mod signing_keys;
pub mod token;
pub mod verify;
