//! The `RFAIR.*` commands, one file each.

mod acquire;
mod cancel;
mod force_release;
mod release;
mod renew;
mod status;

crate::stats::kind_stats!(STATS, "fair");
