use super::semaphore;
use crate::commands::args::{parse_non_negative, parse_optional_ttl, take_via, Args, VIA};
use crate::commands::info::{Arg, ArgKind, CommandInfo};
use crate::commands::registry::command;
use crate::lease::expiry;
use crate::store::{now_ms, RedisKeyspace};
use redis_module::{raw, Context, NextArg, RedisResult, RedisValue};

/// `RSEM.TRYSETPERMITS key permits [PX ttl_ms] [VIA PUBLISH|SPUBLISH]`:
/// sets a missing semaphore (expiring after `ttl_ms` if given) and
/// publishes the permits; 1, or 0 when the semaphore exists (nothing
/// changes). With `VIA` it is Redisson's script: any string is the
/// semaphore, and the permits are published with that command.
fn try_set_permits(ctx: &Context, mut args: Args) -> RedisResult {
    let via = take_via(&mut args, 3)?;
    let mut args = args.into_iter().skip(1);
    let name = args.next_arg()?;
    let permits = parse_non_negative(&args.next_arg()?, "permits")?;
    let ttl_ms = parse_optional_ttl(args)?;
    let expire_at = ttl_ms.map(|ttl_ms| expiry(now_ms(), ttl_ms)).transpose()?;
    let mut keys = RedisKeyspace::open(ctx, &name).via(via);
    let set = semaphore(&name, via).try_set_permits(&mut keys, permits, expire_at)?;
    Ok(RedisValue::Integer(i64::from(set)))
}

command!(
    try_set_permits,
    c"write deny-oom fast",
    CommandInfo {
        name: c"rsem.trysetpermits",
        summary: c"Sets the permits of a semaphore that does not exist yet, with an optional TTL, and publishes them; 1, else 0.",
        arity: -3,
        complexity: c"O(1)",
        key_flags: raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_ACCESS | raw::REDISMODULE_CMD_KEY_INSERT,
        args: &[
            Arg { name: c"permits", kind: ArgKind::Integer, optional: false, token: None },
            Arg { name: c"ttl_ms", kind: ArgKind::Integer, optional: true, token: Some(c"PX") },
            VIA,
        ],
    },
);
