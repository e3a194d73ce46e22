use crate::commands::args::parse_integer;
use crate::commands::info::{Arg, ArgKind, CommandInfo};
use crate::commands::registry::command;
use crate::semaphore::Semaphore;
use crate::store::RedisKeyspace;
use redis_module::{raw, Context, NextArg, RedisResult, RedisString, RedisValue};

/// `RSEM.ADDPERMITS key delta`: adds `delta` (may be negative) to the
/// permits, keeping the TTL, and publishes the new count; nil.
fn add_permits(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut args = args.into_iter().skip(1);
    let name = args.next_arg()?;
    let delta = parse_integer(&args.next_arg()?, "delta")?;
    args.done()?;
    let mut keys = RedisKeyspace::open(ctx, &name);
    Semaphore::new(name.as_slice()).add_permits(&mut keys, delta)?;
    Ok(RedisValue::Null)
}

command!(
    add_permits,
    c"write deny-oom fast",
    CommandInfo {
        name: c"rsem.addpermits",
        summary: c"Adds delta (may be negative) to the semaphore's permits, keeping its TTL, and publishes the new count; nil.",
        arity: 3,
        key_flags: raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_ACCESS | raw::REDISMODULE_CMD_KEY_UPDATE,
        args: &[Arg { name: c"delta", kind: ArgKind::Integer, optional: false, token: None }],
    },
);
