//! Command handlers: parse arguments, run the lock logic on the key, reply.
//! One file per command.

mod acquire;
pub mod args;
mod force_release;
pub mod info;
pub mod registry;
mod release;
pub(crate) mod renew;
pub mod reply;
mod status;

pub use registry::register;
