use super::PERMITS;
use crate::commands::args::{is_keyword, parse_non_negative, Args, LIKESCRIPT};
use crate::commands::info::{Arg, CommandInfo};
use crate::commands::registry::command;
use crate::error::LockError;
use crate::semaphore::delay_wake::wake_at_delay_end;
use crate::semaphore::Semaphore;
use crate::store::RedisKeyspace;
use crate::term;
use redis_module::{raw, Context, NextArg, RedisError, RedisResult, RedisValue};

/// `RSEM.TRYACQUIRE key [permits [LIKESCRIPT]]`: 1 when `permits`
/// (default 1) were taken, else 0 (a missing key has no permits). With
/// LIKESCRIPT it is Redisson's script: the count is compared as Lua's
/// `tonumber` reads it (a string that is no integer may give 0).
fn try_acquire(ctx: &Context, args: Args) -> RedisResult {
    let mut args = args.into_iter().skip(1);
    let name = args.next_arg()?;
    let permits = args.next().map_or(Ok(1), |arg| parse_non_negative(&arg, "permits"))?;
    let like_script = match args.next() {
        None => false,
        Some(arg) if is_keyword(&arg, b"LIKESCRIPT") => true,
        Some(_) => return Err(RedisError::from(LockError::Syntax("after permits, only LIKESCRIPT"))),
    };
    args.done()?;
    let mut keys = RedisKeyspace::open(ctx, &name);
    let semaphore = Semaphore::new(name.as_slice());
    let delay = term::delay();
    let acquired = if like_script {
        semaphore.try_acquire_like_script(&mut keys, permits, delay)?
    } else {
        semaphore.try_acquire(&mut keys, permits, delay)?
    };
    super::STATS.acquire(acquired);
    if !acquired && delay.lasts() {
        drop(keys);
        wake_at_delay_end(ctx, name.as_slice());
    }
    Ok(RedisValue::Integer(i64::from(acquired)))
}

command!(
    try_acquire,
    c"write fast",
    CommandInfo {
        name: c"rsem.tryacquire",
        summary: c"Takes permits (default 1) from the semaphore when that many are available; replies 1, else 0.",
        arity: -2,
        complexity: c"O(1)",
        key_flags: raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_ACCESS | raw::REDISMODULE_CMD_KEY_UPDATE,
        args: &[Arg::block(c"amount", &[Arg { optional: false, ..PERMITS }, LIKESCRIPT])],
    },
);
