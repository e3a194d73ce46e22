use super::KEY_FLAGS;
use crate::commands::args::{parse_non_negative, parse_optional_ttl, Args};
use crate::commands::info::{Arg, ArgKind, CommandInfo};
use crate::commands::registry::command;
use crate::lease::expiry;
use crate::permit_semaphore::PermitSemaphore;
use crate::store::{now_ms, RedisKeyspace};
use redis_module::{Context, NextArg, RedisResult, RedisValue};

/// `RPSEM.TRYSETPERMITS key permits [PX ttl_ms]`: sets a missing semaphore
/// (expiring after `ttl_ms` if given) and publishes the permits; 1, or 0
/// when it exists.
fn try_set_permits(ctx: &Context, args: Args) -> RedisResult {
    let mut args = args.into_iter().skip(1);
    let name = args.next_arg()?;
    let permits = parse_non_negative(&args.next_arg()?, "permits")?;
    let ttl_ms = parse_optional_ttl(args)?;
    let now = now_ms();
    let expire_at = ttl_ms.map(|ttl_ms| expiry(now, ttl_ms)).transpose()?;
    let mut keys = RedisKeyspace::open(ctx, &name);
    let set = PermitSemaphore::new(name.as_slice()).try_set_permits(&mut keys, now, permits, expire_at)?;
    Ok(RedisValue::Integer(i64::from(set)))
}

command!(
    try_set_permits,
    c"write deny-oom fast",
    CommandInfo {
        name: c"rpsem.trysetpermits",
        summary: c"Sets the permits of a semaphore that does not exist yet, with an optional TTL, and publishes them; 1, else 0.",
        arity: -3,
        complexity: c"O(1)",
        key_flags: KEY_FLAGS,
        args: &[
            Arg { name: c"permits", kind: ArgKind::Integer, optional: false, token: None },
            Arg { name: c"ttl_ms", kind: ArgKind::Integer, optional: true, token: Some(c"PX") },
        ],
    },
);
