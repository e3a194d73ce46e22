use crate::commands::info::{Arg, ArgKind, CommandInfo};
use crate::commands::registry::command;
use crate::rwlock::ReadWriteLock;
use crate::store::{now_ms, RedisKeyspace};
use redis_module::{raw, Context, NextArg, RedisResult, RedisString, RedisValue};

/// `RRW.STATUS key [owner]`: `mode` (nil, read or write), `ttl_ms`,
/// `readers`, and owner's `read_count` and `write_count` (nil without an
/// owner).
fn status(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut args = args.into_iter().skip(1);
    let name = args.next_arg()?;
    let owner = args.next();
    args.done()?;
    let mut keys = RedisKeyspace::open_readonly(ctx, &name);
    let lock = ReadWriteLock::new(name.as_slice());
    let status = lock.status(&mut keys, owner.as_ref().map(|o| o.as_slice()), now_ms())?;
    let (reads, writes) = match status.owner {
        Some((reads, writes)) => (RedisValue::Integer(reads), RedisValue::Integer(writes)),
        None => (RedisValue::Null, RedisValue::Null),
    };
    let field = |name: &str| RedisValue::BulkString(name.to_owned());
    Ok(RedisValue::Array(vec![
        field("mode"),
        status.mode.map_or(RedisValue::Null, &field),
        field("ttl_ms"),
        RedisValue::Integer(status.pttl_ms),
        field("readers"),
        RedisValue::Integer(status.readers),
        field("read_count"),
        reads,
        field("write_count"),
        writes,
    ]))
}

command!(
    status,
    c"readonly fast",
    CommandInfo {
        name: c"rrw.status",
        summary: c"Reports mode, ttl_ms, readers, and owner's read_count and write_count.",
        arity: -2,
        key_flags: raw::REDISMODULE_CMD_KEY_RO | raw::REDISMODULE_CMD_KEY_ACCESS,
        args: &[Arg { name: c"owner", kind: ArgKind::String, optional: true, token: None }],
    },
);
