use crate::commands::info::{Arg, ArgKind, CommandInfo};
use crate::commands::registry::command;
use crate::fair::FairLock;
use crate::store::{now_ms, RedisKeyspace};
use redis_module::{raw, Context, NextArg, RedisResult, RedisString, RedisValue};

/// `RFAIR.STATUS key [owner]`: RLOCK.STATUS's fields (`locked`, `ttl_ms`,
/// `holders`, `held`, `hold_count`), then `queued` (live waiters) and
/// `position` (owner's place in the queue from 1; 0 when not queued). The
/// owner's fields are nil without an owner.
fn status(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut args = args.into_iter().skip(1);
    let name = args.next_arg()?;
    let owner = args.next();
    args.done()?;
    let mut keys = RedisKeyspace::open_readonly(ctx, &name);
    let status = FairLock::new(name.as_slice()).status(&mut keys, owner.as_ref().map(|o| o.as_slice()), now_ms())?;
    let integer = RedisValue::Integer;
    let (held, hold_count, position) = match status.owner {
        Some((count, position)) => (integer(i64::from(count > 0)), integer(count), integer(position)),
        None => (RedisValue::Null, RedisValue::Null, RedisValue::Null),
    };
    let field = |name: &str| RedisValue::BulkString(name.to_owned());
    Ok(RedisValue::Array(vec![
        field("locked"),
        integer(i64::from(status.locked)),
        field("ttl_ms"),
        integer(status.pttl_ms),
        field("holders"),
        integer(status.holders),
        field("held"),
        held,
        field("hold_count"),
        hold_count,
        field("queued"),
        integer(status.queued),
        field("position"),
        position,
    ]))
}

command!(
    status,
    c"readonly fast",
    CommandInfo {
        name: c"rfair.status",
        summary:
            c"Reports locked, ttl_ms, holders, owner's held and hold_count, queued waiters and owner's queue position.",
        arity: -2,
        key_flags: raw::REDISMODULE_CMD_KEY_RO | raw::REDISMODULE_CMD_KEY_ACCESS,
        args: &[Arg { name: c"owner", kind: ArgKind::String, optional: true, token: None }],
    },
);
