//! The `RLOCK.*` commands, one file each. The fenced lock's release,
//! renewal, force release and status are these too.

mod acquire;
mod cancel;
mod force_release;
mod release;
pub(crate) mod renew;
mod renew_all;
mod status;

/// This kind's `INFO` counters.
pub static STATS: crate::stats::KindStats = crate::stats::KindStats::new("plain");
