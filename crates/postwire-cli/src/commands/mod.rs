//! One module per subcommand.

pub mod secret;
pub mod sign;
pub mod verify;
