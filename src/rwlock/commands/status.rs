use crate::commands::args::Args;
use crate::commands::info::{Arg, ArgKind, CommandInfo};
use crate::commands::registry::command;
use crate::commands::reply;
use crate::rwlock::ReadWriteLock;
use crate::store::{now_ms, RedisKeyspace};
use redis_module::{raw, Context, NextArg, RedisResult, RedisValue};

/// `RRW.STATUS key [owner]`: `mode` (nil, read or write), `ttl_ms`,
/// `readers`, and owner's `read_count` and `write_count` (nil without an
/// owner).
fn status(ctx: &Context, args: Args) -> RedisResult {
    let mut args = args.into_iter().skip(1);
    let name = args.next_arg()?;
    let owner = args.next();
    args.done()?;
    let mut keys = RedisKeyspace::open_readonly(ctx, &name);
    let lock = ReadWriteLock::new(name.as_slice());
    let status = lock.status(&mut keys, owner.as_ref().map(|o| o.as_slice()), now_ms())?;
    let owner = status.owner;
    Ok(reply::fields(vec![
        ("mode", status.mode.map_or(RedisValue::Null, |mode| RedisValue::BulkString(mode.to_owned()))),
        ("ttl_ms", RedisValue::Integer(status.pttl_ms)),
        ("readers", RedisValue::Integer(status.readers)),
        ("read_count", reply::integer_or_nil(owner.map(|(reads, _)| reads))),
        ("write_count", reply::integer_or_nil(owner.map(|(_, writes)| writes))),
    ]))
}

command!(
    status,
    c"readonly fast",
    CommandInfo {
        name: c"rrw.status",
        summary: c"Reports mode, ttl_ms, readers, and owner's read_count and write_count.",
        arity: -2,
        complexity: c"O(N) where N is the number of the lock's holders (its hash is read whole)",
        key_flags: raw::REDISMODULE_CMD_KEY_RO | raw::REDISMODULE_CMD_KEY_ACCESS,
        args: &[Arg { name: c"owner", kind: ArgKind::String, optional: true, token: None }],
    },
);
