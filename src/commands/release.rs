use super::info::{CommandInfo, COMMAND_INFO};
use super::OwnerArgs;
use super::{LEASE_MS, OWNER};
use crate::lock::{self, Release};
use crate::stats;
use crate::store::{now_ms, RedisLock};
use linkme::distributed_slice;
use redis_module::raw;
use redis_module::{Context, RedisResult, RedisString, RedisValue};

/// `RLOCK.RELEASE key owner [lease_ms]`: nil when `owner` does not hold
/// the lock, 0 when one reentry level was released, 1 when fully released.
pub fn release(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let OwnerArgs { name, owner, lease_ms } = OwnerArgs::parse(args)?;
    let mut key = RedisLock::open_writable(ctx, &name);
    let outcome = lock::release(&mut key, &owner, lease_ms, now_ms())?;
    stats::record_release(outcome);
    Ok(match outcome {
        Release::NotHeld => RedisValue::Null,
        Release::Decremented { .. } => RedisValue::Integer(0),
        Release::Released => RedisValue::Integer(1),
    })
}

#[distributed_slice(COMMAND_INFO)]
static INFO: CommandInfo = CommandInfo {
    name: c"rlock.release",
    summary: c"Releases one hold of owner; replies 1 when released, 0 when still held, nil when not held.",
    arity: -3,
    key_flags: raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_DELETE,
    args: &[OWNER, LEASE_MS],
};
