//! The `RLATCH.*` commands, one file each.

mod count;
mod count_down;
mod delete;
mod try_set_count;
