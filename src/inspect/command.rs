use super::waiters::waiters_on;
use super::{inspect, Detail, Holder, Inspection};
use crate::commands::args::Args;
use crate::commands::info::CommandInfo;
use crate::commands::registry::command;
use crate::commands::reply::fields;
use crate::handoff::glue::lock_id;
use crate::primitive;
use crate::store::{now_ms, RedisKeyspace};
use redis_module::raw;
use redis_module::{Context, NextArg, RedisResult, RedisValue};

/// `RLOCK.INSPECT key`: a flat array of field/value pairs: `kind`,
/// `ttl_ms`, `holders` (each `owner`, `holds`, `lease_ms`, and a
/// read-write lock's `side`), then the kind's own (`token`, `queue`,
/// `mode`, `permits` and `taken`, `count`), and `waiters`, the callers
/// blocked on it on the server (as `RLOCK.WAITERS key`). Reads only.
fn inspect_key(ctx: &Context, args: Args) -> RedisResult {
    let mut args = args.into_iter().skip(1);
    let name = args.next_arg()?;
    args.done()?;
    let mut keys = RedisKeyspace::open_to_inspect(ctx, &name);
    let inspection = inspect(&mut keys, name.as_slice(), now_ms(), primitive::inspectors())?;
    drop(keys);
    let waiters = waiters_on(ctx, Some(&lock_id(ctx, name.as_slice())));
    Ok(value(inspection, waiters))
}

fn value(inspection: Inspection, waiters: RedisValue) -> RedisValue {
    let Inspection { kind, ttl_ms, holders, details } = inspection;
    let mut pairs = vec![
        ("kind", RedisValue::SimpleStringStatic(kind)),
        ("ttl_ms", RedisValue::Integer(ttl_ms)),
        ("holders", RedisValue::Array(holders.into_iter().map(holder).collect())),
    ];
    pairs.extend(details.into_iter().map(|(name, detail)| (name, detail_value(detail))));
    pairs.push(("waiters", waiters));
    fields(pairs)
}

fn holder(holder: Holder) -> RedisValue {
    let mut pairs = vec![
        ("owner", RedisValue::StringBuffer(holder.owner)),
        ("holds", RedisValue::Integer(holder.holds)),
        ("lease_ms", RedisValue::Integer(holder.lease_ms)),
    ];
    if let Some(side) = holder.side {
        pairs.push(("side", RedisValue::SimpleStringStatic(side)));
    }
    fields(pairs)
}

fn detail_value(detail: Detail) -> RedisValue {
    match detail {
        Detail::Integer(value) => RedisValue::Integer(value),
        Detail::Text(text) => RedisValue::SimpleStringStatic(text),
        Detail::Queue(waiters) => RedisValue::Array(
            waiters
                .into_iter()
                .map(|(owner, left_ms)| {
                    fields(vec![
                        ("owner", RedisValue::StringBuffer(owner)),
                        ("deadline_ms", RedisValue::Integer(left_ms)),
                    ])
                })
                .collect(),
        ),
    }
}

command!(
    inspect_key,
    c"readonly",
    CommandInfo {
        name: c"rlock.inspect",
        summary: c"Describes a lock-family key: kind, ttl_ms, holders (owner, holds, lease_ms, side), the kind's token, queue, mode, permits or count, and the waiters blocked on it.",
        arity: 2,
        complexity: c"O(N) where N is the number of the lock's holders and waiters",
        key_flags: raw::REDISMODULE_CMD_KEY_RO | raw::REDISMODULE_CMD_KEY_ACCESS,
        args: &[],
    },
);
