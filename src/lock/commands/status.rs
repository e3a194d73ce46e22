use crate::commands::args::Args;
use crate::commands::info::{Arg, ArgKind, CommandInfo};
use crate::commands::registry::command;
use crate::commands::reply;
use crate::lock;
use crate::store::{now_ms, RedisLock};
use redis_module::raw;
use redis_module::{Context, NextArg, RedisResult, RedisValue};

/// `RLOCK.STATUS key [owner]`: a flat array of field/value pairs,
/// `locked`, `ttl_ms`, `holders`, `held`, `hold_count`. The last two are
/// nil when no owner is given.
pub fn status(ctx: &Context, args: Args) -> RedisResult {
    let mut args = args.into_iter().skip(1);
    let name = args.next_arg()?;
    let owner = args.next();
    args.done()?;

    let key = RedisLock::open_readonly(ctx, &name);
    let status = lock::status(&key, owner.as_ref(), now_ms())?;
    let count = status.owner_hold_count;
    Ok(reply::fields(vec![
        ("locked", RedisValue::Integer(i64::from(status.locked))),
        ("ttl_ms", RedisValue::Integer(status.pttl_ms)),
        ("holders", RedisValue::Integer(status.holders)),
        ("held", reply::integer_or_nil(count.map(|count| i64::from(count > 0)))),
        ("hold_count", reply::integer_or_nil(count)),
    ]))
}

command!(
    status,
    c"readonly fast",
    CommandInfo {
        name: c"rlock.status",
        summary: c"Reports locked, ttl_ms, holders, and owner's held and hold_count.",
        arity: -2,
        complexity: c"O(1)",
        key_flags: raw::REDISMODULE_CMD_KEY_RO | raw::REDISMODULE_CMD_KEY_ACCESS,
        args: &[Arg { name: c"owner", kind: ArgKind::String, optional: true, token: None }],
    },
);
