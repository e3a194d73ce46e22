use crate::commands::args::Args;
use crate::commands::info::CommandInfo;
use crate::commands::registry::command;
use crate::rwlock::ReadWriteLock;
use crate::store::RedisKeyspace;
use redis_module::{raw, Context, NextArg, RedisResult, RedisValue};

/// `RRW.READLOCKED key`: 1 when the read lock is held as Redisson's
/// `RReadLock.isLocked` sees it (mode `read`, or `write` with the writer's
/// reads), else 0.
fn read_locked(ctx: &Context, args: Args) -> RedisResult {
    let mut args = args.into_iter().skip(1);
    let name = args.next_arg()?;
    args.done()?;
    let mut keys = RedisKeyspace::open_readonly(ctx, &name);
    let locked = ReadWriteLock::new(name.as_slice()).read_locked(&mut keys)?;
    Ok(RedisValue::Integer(i64::from(locked)))
}

command!(
    read_locked,
    c"readonly fast",
    CommandInfo {
        name: c"rrw.readlocked",
        summary: c"Replies 1 when the lock is read-locked as Redisson's RReadLock.isLocked sees it (mode read, or write beside the writer's reads), else 0.",
        arity: 2,
        complexity: c"O(1)",
        key_flags: raw::REDISMODULE_CMD_KEY_RO | raw::REDISMODULE_CMD_KEY_ACCESS,
        args: &[],
    },
);
