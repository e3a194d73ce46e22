use super::{semaphore, PERMITS};
use crate::commands::args::{is_keyword, parse_non_negative, take_via, Args, VIA};
use crate::commands::info::{Arg, ArgKind, CommandInfo};
use crate::commands::registry::command;
use crate::error::LockError;
use crate::store::RedisKeyspace;
use redis_module::{raw, Context, NextArg, RedisError, RedisResult, RedisValue};

/// `RSEM.RELEASE key [permits] [IFEXISTS] [VIA PUBLISH|SPUBLISH]`: adds
/// `permits` (default 1) and publishes the new count on `redisson_sc:{key}`;
/// replies nil. With IFEXISTS, a missing key is left alone: 0, else 1. With
/// `VIA` it is Redisson's script: the count is published with that command,
/// written as Lua writes a number.
fn release(ctx: &Context, mut args: Args) -> RedisResult {
    let via = take_via(&mut args, 2)?;
    let mut args = args.into_iter().skip(1).peekable();
    let name = args.next_arg()?;
    let permits = match args.next_if(|arg| !is_keyword(arg, b"IFEXISTS") && !is_keyword(arg, b"VIA")) {
        None => 1,
        Some(arg) => parse_non_negative(&arg, "permits")?,
    };
    let if_exists = args.next_if(|arg| is_keyword(arg, b"IFEXISTS")).is_some();
    if args.next().is_some() {
        return Err(RedisError::from(LockError::Syntax("after permits, only IFEXISTS")));
    }
    let mut keys = RedisKeyspace::open(ctx, &name).via(via);
    let released = semaphore(&name, via).release(&mut keys, permits, if_exists)?;
    Ok(if if_exists { RedisValue::Integer(i64::from(released)) } else { RedisValue::Null })
}

command!(
    release,
    c"write deny-oom fast",
    CommandInfo {
        name: c"rsem.release",
        summary: c"Adds permits (default 1) to the semaphore and publishes the new count; nil, or with IFEXISTS 1, or 0 when there is no semaphore.",
        arity: -2,
        complexity: c"O(1)",
        key_flags: raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_ACCESS | raw::REDISMODULE_CMD_KEY_UPDATE,
        args: &[PERMITS, Arg { name: c"ifexists", kind: ArgKind::PureToken, optional: true, token: Some(c"IFEXISTS") }, VIA],
    },
);
