use crate::commands::args::{is_keyword, parse_non_negative};
use crate::commands::info::{Arg, ArgKind, CommandInfo};
use crate::commands::registry::command;
use crate::error::LockError;
use crate::lease::{expiry, parse_ttl_ms};
use crate::semaphore::Semaphore;
use crate::store::{now_ms, RedisKeyspace};
use redis_module::{raw, Context, NextArg, RedisError, RedisResult, RedisString, RedisValue};

/// `RSEM.TRYSETPERMITS key permits [PX ttl_ms]`: sets a missing semaphore
/// (expiring after `ttl_ms` if given) and publishes the permits; 1, or 0
/// when the semaphore exists (nothing changes).
fn try_set_permits(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut args = args.into_iter().skip(1);
    let name = args.next_arg()?;
    let permits = parse_non_negative(&args.next_arg()?, "permits")?;
    let ttl_ms = match args.next() {
        None => None,
        Some(arg) if is_keyword(&arg, b"PX") => {
            Some(parse_ttl_ms(args.next().ok_or(LockError::Syntax("PX needs ttl_ms"))?.as_slice())?)
        }
        Some(_) => return Err(RedisError::from(LockError::Syntax("after permits, only PX ttl_ms"))),
    };
    if args.next().is_some() {
        return Err(RedisError::from(LockError::Syntax("after permits, only PX ttl_ms")));
    }
    let expire_at = ttl_ms.map(|ttl_ms| expiry(now_ms(), ttl_ms)).transpose()?;
    let mut keys = RedisKeyspace::open(ctx, &name);
    let set = Semaphore::new(name.as_slice()).try_set_permits(&mut keys, permits, expire_at)?;
    Ok(RedisValue::Integer(i64::from(set)))
}

command!(
    try_set_permits,
    c"write deny-oom fast",
    CommandInfo {
        name: c"rsem.trysetpermits",
        summary: c"Sets the permits of a semaphore that does not exist yet, with an optional TTL, and publishes them; 1, else 0.",
        arity: -3,
        key_flags: raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_ACCESS | raw::REDISMODULE_CMD_KEY_INSERT,
        args: &[
            Arg { name: c"permits", kind: ArgKind::Integer, optional: false, token: None },
            Arg { name: c"ttl_ms", kind: ArgKind::Integer, optional: true, token: Some(c"PX") },
        ],
    },
);
