use crate::commands::info::CommandInfo;
use crate::commands::registry::command;
use crate::semaphore::Semaphore;
use crate::store::RedisKeyspace;
use redis_module::{raw, Context, NextArg, RedisResult, RedisString, RedisValue};

/// `RSEM.DRAIN key`: takes every available permit, keeping the TTL; replies
/// the count taken as a bulk string (as Redisson's script), or 0 when the
/// semaphore is missing.
fn drain(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut args = args.into_iter().skip(1);
    let name = args.next_arg()?;
    args.done()?;
    let mut keys = RedisKeyspace::open(ctx, &name);
    Ok(match Semaphore::new(name.as_slice()).drain(&mut keys)? {
        None => RedisValue::Integer(0),
        Some(taken) => RedisValue::BulkString(taken.to_string()),
    })
}

command!(
    drain,
    c"write fast",
    CommandInfo {
        name: c"rsem.drain",
        summary: c"Takes every available permit of the semaphore, keeping its TTL; replies how many (bulk string), 0 when missing.",
        arity: 2,
        key_flags: raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_ACCESS | raw::REDISMODULE_CMD_KEY_UPDATE,
        args: &[],
    },
);
