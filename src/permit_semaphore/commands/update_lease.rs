use super::{ID, KEY_FLAGS, LEASE};
use crate::commands::info::CommandInfo;
use crate::commands::registry::command;
use crate::permit_semaphore::{Lease, PermitSemaphore};
use crate::store::{now_ms, RedisKeyspace};
use redis_module::{Context, NextArg, RedisResult, RedisString, RedisValue};

/// `RPSEM.UPDATELEASE key id lease_ms|-1`: a held permit's lease starts
/// again from now: 1, or 0 when the permit is not held.
fn update_lease(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut args = args.into_iter().skip(1);
    let name = args.next_arg()?;
    let id = args.next_arg()?;
    let lease = Lease::parse(args.next_arg()?.as_slice())?;
    args.done()?;
    let mut keys = RedisKeyspace::open(ctx, &name);
    let updated = PermitSemaphore::new(name.as_slice()).update_lease(&mut keys, now_ms(), id.as_slice(), lease)?;
    Ok(RedisValue::Integer(i64::from(updated)))
}

command!(
    update_lease,
    c"write fast",
    CommandInfo {
        name: c"rpsem.updatelease",
        summary: c"Starts a held permit's lease again from now (-1: never expires): 1, or 0 when it is not held.",
        arity: 4,
        key_flags: KEY_FLAGS,
        args: &[ID, LEASE],
    },
);
