//! The `RFAIR.*` commands, one file each.

mod acquire;
mod cancel;
mod force_release;
mod release;
mod renew;
mod status;

/// This kind's `INFO` counters.
pub static STATS: crate::stats::KindStats = crate::stats::KindStats::new("fair");
