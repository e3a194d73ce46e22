use super::PERMITS;
use crate::commands::args::parse_non_negative;
use crate::commands::info::CommandInfo;
use crate::commands::registry::command;
use crate::semaphore::Semaphore;
use crate::store::RedisKeyspace;
use redis_module::{raw, Context, NextArg, RedisResult, RedisString, RedisValue};

/// `RSEM.TRYACQUIRE key [permits]`: 1 when `permits` (default 1) were
/// taken, else 0 (a missing key has no permits).
fn try_acquire(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut args = args.into_iter().skip(1);
    let name = args.next_arg()?;
    let permits = args.next().map_or(Ok(1), |arg| parse_non_negative(&arg, "permits"))?;
    args.done()?;
    let mut keys = RedisKeyspace::open(ctx, &name);
    let acquired = Semaphore::new(name.as_slice()).try_acquire(&mut keys, permits)?;
    Ok(RedisValue::Integer(i64::from(acquired)))
}

command!(
    try_acquire,
    c"write fast",
    CommandInfo {
        name: c"rsem.tryacquire",
        summary: c"Takes permits (default 1) from the semaphore when that many are available; replies 1, else 0.",
        arity: -2,
        key_flags: raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_ACCESS | raw::REDISMODULE_CMD_KEY_UPDATE,
        args: &[PERMITS],
    },
);
