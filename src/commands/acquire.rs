use super::OwnerArgs;
use crate::lock::{self, Acquire};
use crate::stats;
use crate::store::{now_ms, RedisLock};
use redis_module::{Context, RedisResult, RedisString, RedisValue};

/// `RLOCK.ACQUIRE key owner [lease_ms]`: nil when acquired or re-entered,
/// else the current holder's PTTL.
pub fn acquire(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let OwnerArgs { name, owner, lease_ms } = OwnerArgs::parse(args)?;
    let mut key = RedisLock::open_writable(ctx, &name);
    let outcome = lock::acquire(&mut key, &owner, lease_ms, now_ms())?;
    stats::record_acquire(outcome);
    Ok(match outcome {
        Acquire::Acquired | Acquire::Reentered { .. } => RedisValue::Null,
        Acquire::Contended { pttl_ms } => RedisValue::Integer(pttl_ms),
    })
}
