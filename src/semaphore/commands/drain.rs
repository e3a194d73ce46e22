use crate::commands::args::{is_keyword, Args, LIKESCRIPT};
use crate::commands::info::CommandInfo;
use crate::commands::registry::command;
use crate::error::LockError;
use crate::semaphore::Semaphore;
use crate::store::RedisKeyspace;
use crate::term;
use redis_module::{raw, Context, NextArg, RedisError, RedisResult, RedisValue};

/// `RSEM.DRAIN key [LIKESCRIPT]`: takes every available permit, keeping the
/// TTL; replies the count taken as a bulk string (as Redisson's script), or
/// 0 when the semaphore is missing. With LIKESCRIPT it is Redisson's
/// script: any string is replied as it is and set to 0, dropping the TTL.
/// While a lock-delay lasts, no permit is taken (0).
fn drain(ctx: &Context, args: Args) -> RedisResult {
    let mut args = args.into_iter().skip(1);
    let name = args.next_arg()?;
    let like_script = match args.next() {
        None => false,
        Some(arg) if is_keyword(&arg, b"LIKESCRIPT") => true,
        Some(_) => return Err(RedisError::from(LockError::Syntax("after the key, only LIKESCRIPT"))),
    };
    args.done()?;
    let mut keys = RedisKeyspace::open(ctx, &name);
    let semaphore = Semaphore::new(name.as_slice());
    let delay = term::delay();
    if like_script {
        return Ok(semaphore
            .drain_like_script(&mut keys, delay)?
            .map_or(RedisValue::Integer(0), RedisValue::StringBuffer));
    }
    Ok(match semaphore.drain(&mut keys, delay)? {
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
        arity: -2,
        complexity: c"O(1)",
        key_flags: raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_ACCESS | raw::REDISMODULE_CMD_KEY_UPDATE,
        args: &[LIKESCRIPT],
    },
);
