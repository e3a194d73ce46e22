//! The `RSEM.*` commands, one file each.

mod add_permits;
mod available;
mod drain;
mod release;
mod try_acquire;
mod try_set_permits;

use crate::commands::info::{Arg, ArgKind};

const PERMITS: Arg = Arg { name: c"permits", kind: ArgKind::Integer, optional: true, token: None };
