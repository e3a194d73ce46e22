use super::KEY_FLAGS;
use crate::commands::args::parse_integer;
use crate::commands::info::{Arg, ArgKind, CommandInfo};
use crate::commands::registry::command;
use crate::permit_semaphore::PermitSemaphore;
use crate::store::{now_ms, RedisKeyspace};
use redis_module::{Context, NextArg, RedisResult, RedisString, RedisValue};

/// `RPSEM.ADDPERMITS key delta`: adds `delta` (may be negative) to the
/// available permits, keeping the TTL; publishes `delta` when positive; nil.
fn add_permits(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut args = args.into_iter().skip(1);
    let name = args.next_arg()?;
    let delta = parse_integer(&args.next_arg()?, "delta")?;
    args.done()?;
    let mut keys = RedisKeyspace::open(ctx, &name);
    PermitSemaphore::new(name.as_slice()).add_permits(&mut keys, now_ms(), delta)?;
    Ok(RedisValue::Null)
}

command!(
    add_permits,
    c"write deny-oom fast",
    CommandInfo {
        name: c"rpsem.addpermits",
        summary: c"Adds delta (may be negative) to the available permits, keeping the TTL, and publishes delta when positive; nil.",
        arity: 3,
        key_flags: KEY_FLAGS,
        args: &[Arg { name: c"delta", kind: ArgKind::Integer, optional: false, token: None }],
    },
);
