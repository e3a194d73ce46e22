use crate::commands::args::{Args, LOCK_OWNERS, REQUIRED_LEASE_MS};
use crate::commands::info::{CommandInfo, Keys};
use crate::commands::registry::command;
use crate::error::LockError;
use crate::lease::parse_lease_ms;
use crate::lock::{self, Renew};
use crate::stats;
use crate::store::{now_ms, RedisLock};
use redis_module::raw;
use redis_module::{Context, NextArg, RedisResult, RedisValue};

/// `RLOCK.RENEWALL lease_ms key owner [key owner ...]`: the watchdog's
/// renewal of several locks at once (Redisson 3.44+'s `LockTask`), in
/// order: per lock 1 when `owner` holds it and its lease was reset, else
/// 0. A key of another type (or a hash that is no lock) refuses the whole
/// call, with nothing renewed.
pub(crate) fn renew_all(ctx: &Context, args: Args) -> RedisResult {
    let mut args = args.into_iter().skip(1);
    let lease_ms = parse_lease_ms(args.next_arg()?.as_slice())?;
    let rest: Vec<_> = args.collect();
    if rest.len() % 2 != 0 {
        return Err(LockError::Syntax("after lease_ms, key owner pairs").into());
    }
    let pairs: Vec<_> = rest.chunks_exact(2).map(|pair| (&pair[0], &pair[1])).collect();
    for &(name, owner) in &pairs {
        lock::holds(&RedisLock::open_readonly(ctx, name), owner)?;
    }
    let now = now_ms();
    let mut renewed = Vec::with_capacity(pairs.len());
    for (name, owner) in pairs {
        let outcome = lock::renew(&mut RedisLock::open(ctx, name), owner, lease_ms, now)?;
        stats::record_renew(outcome);
        if outcome == Renew::NotHeld {
            super::STATS.renew_refused();
        }
        renewed.push(RedisValue::Integer(i64::from(outcome == Renew::Renewed)));
    }
    Ok(RedisValue::Array(renewed))
}

command!(
    renew_all,
    c"write fast",
    CommandInfo {
        name: c"rlock.renewall",
        summary: c"Resets the lease of each lock its owner holds; replies 1 or 0 per lock, in order.",
        arity: -4,
        complexity: c"O(N) where N is the number of locks named",
        key_flags: raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_UPDATE,
        args: &[REQUIRED_LEASE_MS, LOCK_OWNERS],
    },
    Keys::Pairs,
);
