use crate::commands::args::Args;
use crate::commands::info::{Arg, ArgKind, CommandInfo};
use crate::commands::registry::command;
use crate::commands::reply;
use crate::fair::{handoff, FairLock};
use crate::store::{now_ms, RedisKeyspace};
use redis_module::{raw, Context, NextArg, RedisResult, RedisValue};

/// `RFAIR.STATUS key [owner]`: RLOCK.STATUS's fields (`locked`, `ttl_ms`,
/// `holders`, `held`, `hold_count`), then `queued` (live waiters) and
/// `position` (owner's place in the queue from 1; 0 when not queued). The
/// owner's fields are nil without an owner.
fn status(ctx: &Context, args: Args) -> RedisResult {
    let mut args = args.into_iter().skip(1);
    let name = args.next_arg()?;
    let owner = args.next();
    args.done()?;
    let mut keys = RedisKeyspace::open_readonly(ctx, &name);
    let waits = handoff::waits_of(ctx, name.as_slice());
    let status =
        FairLock::new(name.as_slice()).status(&mut keys, &waits, owner.as_ref().map(|o| o.as_slice()), now_ms())?;
    let owner = status.owner;
    Ok(reply::fields(vec![
        ("locked", RedisValue::Integer(i64::from(status.locked))),
        ("ttl_ms", RedisValue::Integer(status.pttl_ms)),
        ("holders", RedisValue::Integer(status.holders)),
        ("held", reply::integer_or_nil(owner.map(|(count, _)| i64::from(count > 0)))),
        ("hold_count", reply::integer_or_nil(owner.map(|(count, _)| count))),
        ("queued", RedisValue::Integer(status.queued)),
        ("position", reply::integer_or_nil(owner.map(|(_, position)| position))),
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
        complexity: c"O(N) where N is the number of callers queued on the fair lock",
        key_flags: raw::REDISMODULE_CMD_KEY_RO | raw::REDISMODULE_CMD_KEY_ACCESS,
        args: &[Arg { name: c"owner", kind: ArgKind::String, optional: true, token: None }],
    },
);
