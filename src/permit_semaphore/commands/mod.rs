//! The `RPSEM.*` commands, one file each. Every one first reclaims the
//! expired permits, so each may write.

mod acquired;
mod add_permits;
mod available;
mod lease;
mod permits;
mod release;
mod set_permits;
mod try_acquire;
mod try_set_permits;
mod update_lease;

use crate::commands::info::{Arg, ArgKind};
use redis_module::{raw, RedisString};

/// `lease_ms`, or `-1` for a permit that never expires.
const LEASE: Arg = Arg { name: c"lease_ms", kind: ArgKind::Integer, optional: false, token: None };
/// One permit id; the commands taking several say so in their summary.
const ID: Arg = Arg { name: c"id", kind: ArgKind::String, optional: false, token: None };
/// Each command may reclaim expired permits: a read-write update.
const KEY_FLAGS: u32 = raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_ACCESS | raw::REDISMODULE_CMD_KEY_UPDATE;

/// The permit ids, as given (binary).
fn ids(args: &[RedisString]) -> Vec<&[u8]> {
    args.iter().map(RedisString::as_slice).collect()
}
