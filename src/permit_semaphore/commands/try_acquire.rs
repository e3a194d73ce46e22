use super::{ids, ID, KEY_FLAGS, LEASE};
use crate::commands::info::CommandInfo;
use crate::commands::registry::command;
use crate::permit_semaphore::{Lease, PermitSemaphore, TryAcquire};
use crate::store::{now_ms, RedisKeyspace};
use redis_module::{Context, NextArg, RedisResult, RedisString, RedisValue};

/// `RPSEM.TRYACQUIRE key lease_ms|-1 id [id ...]`: takes one permit per id
/// when that many are available: `OK`; else the earliest expiry of a taken
/// permit as the bulk `:<unix ms>`, or nil when none expires (Redisson's
/// replies, as bulk strings).
fn try_acquire(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut args = args.into_iter().skip(1);
    let name = args.next_arg()?;
    let lease = Lease::parse(args.next_arg()?.as_slice())?;
    let given: Vec<RedisString> = args.collect();
    let mut keys = RedisKeyspace::open(ctx, &name);
    let acquired = PermitSemaphore::new(name.as_slice()).try_acquire(&mut keys, now_ms(), lease, &ids(&given))?;
    Ok(match acquired {
        TryAcquire::Granted => RedisValue::BulkString("OK".to_owned()),
        TryAcquire::FirstExpiry(at) => RedisValue::BulkString(format!(":{at}")),
        TryAcquire::NoExpiry => RedisValue::Null,
    })
}

command!(
    try_acquire,
    c"write deny-oom",
    CommandInfo {
        name: c"rpsem.tryacquire",
        summary: c"Takes one permit per id (id [id ...]), held for lease_ms or until released (-1), when that many are available: OK; else ':<unix ms>' of the earliest expiry, or nil.",
        arity: -4,
        key_flags: KEY_FLAGS,
        args: &[LEASE, ID],
    },
);
