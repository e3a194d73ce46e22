use crate::lock::{self, ForceRelease};
use crate::stats;
use crate::store::RedisLock;
use redis_module::{Context, NextArg, RedisResult, RedisString, RedisValue};

/// `RLOCK.FORCERELEASE key`: 1 when a lock was deleted, 0 when there was none.
pub fn force_release(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut args = args.into_iter().skip(1);
    let name = args.next_arg()?;
    args.done()?;

    let mut key = RedisLock::open_writable(ctx, &name);
    let outcome = lock::force_release(&mut key)?;
    stats::record_force_release(outcome);
    Ok(RedisValue::Integer(i64::from(outcome == ForceRelease::Released)))
}
