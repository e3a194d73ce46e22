use super::OwnerArgs;
use crate::lock::{self, Renew};
use crate::stats;
use crate::store::{now_ms, RedisLock};
use redis_module::{Context, RedisResult, RedisString, RedisValue};

/// `RLOCK.RENEW key owner [lease_ms]`: 1 when `owner` holds the lock and
/// its lease was reset, else 0.
pub fn renew(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let OwnerArgs { name, owner, lease_ms } = OwnerArgs::parse(args)?;
    let mut key = RedisLock::open_writable(ctx, &name);
    let outcome = lock::renew(&mut key, &owner, lease_ms, now_ms())?;
    stats::record_renew(outcome);
    Ok(RedisValue::Integer(i64::from(outcome == Renew::Renewed)))
}
