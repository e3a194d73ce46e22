use super::{parse_side, MODE};
use crate::commands::args::{LEASE_MS, OWNER};
use crate::commands::info::CommandInfo;
use crate::commands::registry::command;
use crate::rwlock::{Acquire, ReadWriteLock};
use crate::store::{now_ms, RedisKeyspace};
use crate::{config, lease};
use redis_module::{raw, Context, NextArg, RedisResult, RedisString, RedisValue};

/// `RRW.ACQUIRE key owner READ|WRITE [lease_ms]`: nil when taken or
/// re-entered, else the lock's PTTL.
fn acquire(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut args = args.into_iter().skip(1);
    let name = args.next_arg()?;
    let owner = args.next_arg()?;
    let side = parse_side(&args.next_arg()?)?;
    let lease_ms = match args.next() {
        None => config::default_lease_ms(),
        Some(arg) => lease::parse_lease_ms(arg.as_slice())?,
    };
    args.done()?;
    let mut keys = RedisKeyspace::open(ctx, &name);
    let lock = ReadWriteLock::new(name.as_slice());
    Ok(match lock.acquire(&mut keys, owner.as_slice(), side, lease_ms, now_ms())? {
        Acquire::Acquired => RedisValue::Null,
        Acquire::Contended { pttl_ms } => RedisValue::Integer(pttl_ms),
    })
}

command!(
    acquire,
    c"write deny-oom fast",
    CommandInfo {
        name: c"rrw.acquire",
        summary:
            c"Takes the read or write side for owner, or re-enters it; replies nil when taken, else the lock's PTTL.",
        arity: -4,
        key_flags: raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_ACCESS | raw::REDISMODULE_CMD_KEY_UPDATE,
        args: &[OWNER, MODE, LEASE_MS],
    },
);
