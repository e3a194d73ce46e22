//! The `RFAIR.*` commands, one file each.

mod acquire;
mod cancel;
mod force_release;
mod release;
mod renew;
mod status;
