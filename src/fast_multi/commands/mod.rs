//! The `RFASTMULTI.*` commands, one file each.

mod renew;
