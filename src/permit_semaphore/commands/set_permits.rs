use super::KEY_FLAGS;
use crate::commands::args::parse_non_negative;
use crate::commands::info::{Arg, ArgKind, CommandInfo};
use crate::commands::registry::command;
use crate::permit_semaphore::PermitSemaphore;
use crate::store::{now_ms, RedisKeyspace};
use redis_module::{Context, NextArg, RedisResult, RedisString, RedisValue};

/// `RPSEM.SETPERMITS key permits`: available plus taken becomes `permits`
/// (the available count may go negative), published; nil.
fn set_permits(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut args = args.into_iter().skip(1);
    let name = args.next_arg()?;
    let permits = parse_non_negative(&args.next_arg()?, "permits")?;
    args.done()?;
    let mut keys = RedisKeyspace::open(ctx, &name);
    PermitSemaphore::new(name.as_slice()).set_permits(&mut keys, now_ms(), permits)?;
    Ok(RedisValue::Null)
}

command!(
    set_permits,
    c"write deny-oom fast",
    CommandInfo {
        name: c"rpsem.setpermits",
        summary: c"Makes the permits in all (available plus taken) this many and publishes it; nil.",
        arity: 3,
        key_flags: KEY_FLAGS,
        args: &[Arg { name: c"permits", kind: ArgKind::Integer, optional: false, token: None }],
    },
);
