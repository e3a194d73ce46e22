//! The `RRW.*` commands, one file each.

mod acquire;
mod cancel;
mod force_release;
mod release;
mod renew;
mod status;

crate::stats::kind_stats!(STATS, "read_write");

use super::Side;
use crate::commands::args::is_keyword;
use crate::commands::info::{Arg, ArgKind};
use crate::error::LockError;
use redis_module::RedisString;

/// `READ` or `WRITE`, case-insensitive.
fn parse_side(arg: &RedisString) -> Result<Side, LockError> {
    if is_keyword(arg, b"READ") {
        Ok(Side::Read)
    } else if is_keyword(arg, b"WRITE") {
        Ok(Side::Write)
    } else {
        Err(LockError::ModeInvalid)
    }
}

const MODE: Arg = Arg { name: c"mode", kind: ArgKind::String, optional: false, token: None };
