//! The `RFENCED.*` commands, one file each. Release, renewal, force release
//! and status of a fenced lock are the `RLOCK.*` commands.

mod acquire;
mod token;

/// This kind's `INFO` counters.
pub static STATS: crate::stats::KindStats = crate::stats::KindStats::new("fenced");
