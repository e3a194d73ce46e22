use super::KEY_FLAGS;
use crate::commands::info::CommandInfo;
use crate::commands::registry::command;
use crate::permit_semaphore::PermitSemaphore;
use crate::store::{now_ms, RedisKeyspace};
use redis_module::{Context, NextArg, RedisResult, RedisString, RedisValue};

/// `RPSEM.ACQUIRED key`: how many permits are taken, once the expired permits are reclaimed.
fn acquired(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut args = args.into_iter().skip(1);
    let name = args.next_arg()?;
    args.done()?;
    let mut keys = RedisKeyspace::open(ctx, &name);
    Ok(RedisValue::Integer(PermitSemaphore::new(name.as_slice()).acquired(&mut keys, now_ms())?))
}

command!(
    acquired,
    c"write fast",
    CommandInfo {
        name: c"rpsem.acquired",
        summary: c"Reclaims the expired permits, then replies how many permits are taken.",
        arity: 2,
        key_flags: KEY_FLAGS,
        args: &[],
    },
);
