//! What every primitive's command handlers share: argument parsing, the
//! command table's metadata, registration, and reply shapes. The handlers
//! live in each primitive's `commands` folder, one file per command.

pub mod args;
pub mod info;
pub mod registry;
pub mod reply;

pub use registry::register;
