use crate::commands::args::{take_release_via, Args, RELEASE_VIA};
use crate::commands::info::CommandInfo;
use crate::commands::registry::command;
use crate::handoff::blocking;
use crate::keyspace::KeyType;
use crate::lock::{self, ForceRelease, LockStore};
use crate::stats;
use crate::store::{RedisLock, Via};
use redis_module::raw;
use redis_module::{Context, NextArg, RedisResult, RedisValue};

/// `RLOCK.FORCERELEASE key [VIA PUBLISH|SPUBLISH|NONE]`: 1 when a lock was
/// deleted, 0 when there was none. With `VIA` it is Redisson's script:
/// whatever the key holds is deleted, and announced with that command
/// (`NONE`: with nothing, as the spin lock's script).
pub fn force_release(ctx: &Context, mut args: Args) -> RedisResult {
    let via = take_release_via(&mut args, 2)?;
    let mut args = args.into_iter().skip(1);
    let name = args.next_arg()?;
    args.done()?;

    let mut key = RedisLock::open(ctx, &name).via(via);
    let outcome = match key.kind() {
        kind if kind != KeyType::Missing && via != Via::Default => {
            key.delete();
            key.publish_release();
            ForceRelease::Released
        }
        _ => lock::force_release(&mut key)?,
    };
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
        arity: -2,
        complexity: c"O(N) where N is the number of the lock's holders (fields deleted)",
        key_flags: raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_DELETE,
        args: &[RELEASE_VIA],
    },
);
