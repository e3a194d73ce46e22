use crate::commands::args::{parse_optional_lease, parse_wait, LEASE_MS, OWNER, WAIT_MS};
use crate::commands::info::CommandInfo;
use crate::commands::registry::command;
use crate::fair::{Acquire, FairLock};
use crate::store::{now_ms, RedisKeyspace};
use redis_module::{raw, Context, NextArg, RedisResult, RedisString, RedisValue};

/// `RFAIR.ACQUIRE key owner [lease_ms] [WAIT wait_ms]`: nil when taken or
/// re-entered. Otherwise, without WAIT, 1; with WAIT, the caller is queued
/// and the reply is how many ms to wait before asking again (at least 1)
/// unless told sooner on `redisson_lock__channel:{key}:<owner>`.
fn acquire(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut args = args.into_iter().skip(1).peekable();
    let name = args.next_arg()?;
    let owner = args.next_arg()?;
    let lease_ms = parse_optional_lease(&mut args)?;
    let wait_ms = parse_wait(args)?;
    let mut keys = RedisKeyspace::open(ctx, &name);
    let lock = FairLock::new(name.as_slice());
    Ok(match lock.acquire(&mut keys, owner.as_slice(), lease_ms, wait_ms, now_ms())? {
        Acquire::Acquired | Acquire::Reentered { .. } => RedisValue::Null,
        Acquire::Refused => RedisValue::Integer(1),
        Acquire::Queued { hint_ms } => RedisValue::Integer(hint_ms),
    })
}

command!(
    acquire,
    c"write deny-oom fast",
    CommandInfo {
        name: c"rfair.acquire",
        summary: c"Takes the fair lock or re-enters it (nil); else 1, or with WAIT queues the caller and replies a wait hint in ms.",
        arity: -3,
        key_flags: raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_ACCESS | raw::REDISMODULE_CMD_KEY_UPDATE,
        args: &[OWNER, LEASE_MS, WAIT_MS],
    },
);
