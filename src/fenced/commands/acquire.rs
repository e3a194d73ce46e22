use crate::commands::args::{OwnerArgs, LEASE_MS, OWNER};
use crate::commands::info::CommandInfo;
use crate::commands::registry::command;
use crate::fenced::{self, FencedAcquire};
use crate::store::{now_ms, RedisKeyspace};
use redis_module::{raw, Context, RedisResult, RedisString, RedisValue};

/// `RFENCED.ACQUIRE key owner [lease_ms]`: `[-1, token]` when taken or
/// re-entered (every grant takes the next token), else `[pttl, -1]` with
/// the holder's PTTL (the lease when the lock has no TTL: never -1).
fn acquire(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let OwnerArgs { name, owner, lease_ms } = OwnerArgs::parse(args)?;
    let mut keys = RedisKeyspace::open(ctx, &name);
    let (ttl, token) = match fenced::acquire(&mut keys, name.as_slice(), owner.as_slice(), lease_ms, now_ms())? {
        FencedAcquire::Granted { token } => (-1, token),
        FencedAcquire::Contended { pttl_ms } => (pttl_ms, -1),
    };
    Ok(RedisValue::Array(vec![RedisValue::Integer(ttl), RedisValue::Integer(token)]))
}

command!(
    acquire,
    c"write deny-oom fast",
    CommandInfo {
        name: c"rfenced.acquire",
        summary: c"Takes or re-enters the fenced lock with the next token: [-1, token]; else [holder's PTTL, -1].",
        arity: -3,
        key_flags: raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_ACCESS | raw::REDISMODULE_CMD_KEY_UPDATE,
        args: &[OWNER, LEASE_MS],
    },
);
