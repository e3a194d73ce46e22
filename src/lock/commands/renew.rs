use crate::commands::args::{Args, OwnerArgs, LEASE_MS, OWNER};
use crate::commands::info::CommandInfo;
use crate::commands::registry::command;
use crate::lock::{self, Renew};
use crate::stats;
use crate::store::{now_ms, RedisLock};
use redis_module::raw;
use redis_module::{Context, RedisResult, RedisValue};

/// `RLOCK.RENEW key owner [lease_ms]`: 1 when `owner` holds the lock and
/// its lease was reset, else 0.
pub(crate) fn renew(ctx: &Context, args: Args) -> RedisResult {
    let OwnerArgs { name, owner, lease_ms } = OwnerArgs::parse(args)?;
    let mut key = RedisLock::open(ctx, &name);
    let outcome = lock::renew(&mut key, &owner, lease_ms, now_ms())?;
    stats::record_renew(outcome);
    if outcome == Renew::NotHeld {
        super::STATS.renew_refused();
    }
    Ok(RedisValue::Integer(i64::from(outcome == Renew::Renewed)))
}

command!(
    renew,
    c"write fast",
    CommandInfo {
        name: c"rlock.renew",
        summary: c"Resets the lease when owner holds the lock; replies 1, or 0 when it does not.",
        arity: -3,
        complexity: c"O(1)",
        key_flags: raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_UPDATE,
        args: &[OWNER, LEASE_MS],
    },
);
