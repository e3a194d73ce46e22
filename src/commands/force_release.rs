use super::info::CommandInfo;
use super::registry::command;
use crate::handoff::blocking;
use crate::lock::{self, ForceRelease};
use crate::stats;
use crate::store::RedisLock;
use redis_module::raw;
use redis_module::{Context, NextArg, RedisResult, RedisString, RedisValue};

/// `RLOCK.FORCERELEASE key`: 1 when a lock was deleted, 0 when there was none.
pub fn force_release(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut args = args.into_iter().skip(1);
    let name = args.next_arg()?;
    args.done()?;

    let mut key = RedisLock::open(ctx, &name);
    let outcome = lock::force_release(&mut key)?;
    if outcome == ForceRelease::Released {
        blocking::grant_next(ctx, &name, &mut key);
    }
    stats::record_force_release(outcome);
    Ok(RedisValue::Integer(i64::from(outcome == ForceRelease::Released)))
}

command!(
    force_release,
    c"write",
    CommandInfo {
        name: c"rlock.forcerelease",
        summary: c"Deletes the lock whoever holds it; replies 1, or 0 when there was none.",
        arity: 2,
        key_flags: raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_DELETE,
        args: &[],
    },
);
