//! The `RFENCED.*` commands, one file each. Release, renewal, force release
//! and status of a fenced lock are the `RLOCK.*` commands.

mod acquire;
mod token;

crate::stats::kind_stats!(STATS, "fenced");
