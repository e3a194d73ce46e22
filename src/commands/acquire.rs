use super::args::{OwnerArgs, LEASE_MS, OWNER};
use super::info::CommandInfo;
use super::registry::command;
use crate::lock::{self, Acquire};
use crate::stats;
use crate::store::{now_ms, RedisLock};
use redis_module::raw;
use redis_module::{Context, RedisResult, RedisString, RedisValue};

/// `RLOCK.ACQUIRE key owner [lease_ms]`: nil when acquired or re-entered,
/// else the current holder's PTTL.
pub fn acquire(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let OwnerArgs { name, owner, lease_ms } = OwnerArgs::parse(args)?;
    let mut key = RedisLock::open(ctx, &name);
    let outcome = lock::acquire(&mut key, &owner, lease_ms, now_ms())?;
    stats::record_acquire(outcome);
    Ok(match outcome {
        Acquire::Acquired | Acquire::Reentered { .. } => RedisValue::Null,
        Acquire::Contended { pttl_ms } => RedisValue::Integer(pttl_ms),
    })
}

command!(
    acquire,
    c"write deny-oom fast",
    CommandInfo {
        name: c"rlock.acquire",
        summary: c"Takes the lock for owner, or re-enters it; replies nil when taken, else the holder's PTTL.",
        arity: -3,
        key_flags: raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_ACCESS | raw::REDISMODULE_CMD_KEY_UPDATE,
        args: &[OWNER, LEASE_MS],
    },
);
