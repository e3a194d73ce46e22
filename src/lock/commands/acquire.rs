use crate::commands::args::{parse_optional_lease, parse_wait, LEASE_MS, OWNER, WAIT_MS};
use crate::commands::info::CommandInfo;
use crate::commands::registry::command;
use crate::handoff::blocking;
use crate::lock::{self, Acquire};
use crate::stats;
use crate::store::{now_ms, RedisLock};
use redis_module::raw;
use redis_module::{Context, NextArg, RedisResult, RedisString, RedisValue};

/// `RLOCK.ACQUIRE key owner [lease_ms] [WAIT wait_ms]`: nil when acquired
/// or re-entered, else the current holder's PTTL. With WAIT, a refused
/// caller blocks until the lock is granted to it (nil), in arrival order,
/// or `wait_ms` passes (the PTTL); inside MULTI or a script, and on a
/// replica, it does not block.
pub fn acquire(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut args = args.into_iter().skip(1).peekable();
    let name = args.next_arg()?;
    let owner = args.next_arg()?;
    let lease_ms = parse_optional_lease(&mut args)?;
    let wait_ms = parse_wait(args)?;
    let mut key = RedisLock::open(ctx, &name);
    let outcome = lock::acquire(&mut key, &owner, lease_ms, now_ms())?;
    drop(key);
    stats::record_acquire(outcome);
    Ok(match (outcome, wait_ms) {
        (Acquire::Acquired | Acquire::Reentered { .. }, _) => RedisValue::Null,
        (Acquire::Contended { .. }, Some(wait_ms)) if blocking::may_block(ctx) => {
            blocking::block(ctx, &name, &owner, lease_ms, wait_ms)
        }
        (Acquire::Contended { pttl_ms }, _) => RedisValue::Integer(pttl_ms),
    })
}

command!(
    acquire,
    c"write deny-oom fast",
    CommandInfo {
        name: c"rlock.acquire",
        summary: c"Takes the lock for owner, or re-enters it (nil); else the holder's PTTL, or with WAIT blocks until granted in arrival order (nil) or wait_ms passes.",
        arity: -3,
        key_flags: raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_ACCESS | raw::REDISMODULE_CMD_KEY_UPDATE,
        args: &[OWNER, LEASE_MS, WAIT_MS],
    },
);
