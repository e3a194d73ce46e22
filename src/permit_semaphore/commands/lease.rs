use super::{ID, KEY_FLAGS};
use crate::commands::info::CommandInfo;
use crate::commands::registry::command;
use crate::permit_semaphore::PermitSemaphore;
use crate::store::{now_ms, RedisKeyspace};
use redis_module::{Context, NextArg, RedisResult, RedisString, RedisValue};

/// `RPSEM.LEASE key id`: the milliseconds left on a held permit, -1 when
/// it never expires, 0 when it is not held.
fn lease(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut args = args.into_iter().skip(1);
    let name = args.next_arg()?;
    let id = args.next_arg()?;
    args.done()?;
    let mut keys = RedisKeyspace::open(ctx, &name);
    Ok(RedisValue::Integer(PermitSemaphore::new(name.as_slice()).lease(&mut keys, now_ms(), id.as_slice())?))
}

command!(
    lease,
    c"write fast",
    CommandInfo {
        name: c"rpsem.lease",
        summary: c"Replies the milliseconds left on a held permit, -1 when it never expires, 0 when it is not held.",
        arity: 3,
        key_flags: KEY_FLAGS,
        args: &[ID],
    },
);
