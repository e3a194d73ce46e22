//! The `RPSEM.*` commands, one file each.
