use crate::commands::args::{is_keyword, OwnerArgs, LEASE_MS, OWNER};
use crate::commands::info::{Arg, ArgKind, CommandInfo};
use crate::commands::registry::command;
use crate::error::LockError;
use crate::fenced::{self, FencedAcquire};
use crate::store::{now_ms, RedisKeyspace};
use redis_module::{raw, Context, RedisResult, RedisString, RedisValue};

/// How a `LIKESCRIPT` acquire replies: as Redisson's lockAndGetToken
/// script (a pair), or as its lock() script (RLock's replies).
#[derive(Clone, Copy, PartialEq, Eq)]
enum ScriptReply {
    Token,
    Lock,
}

/// `RFENCED.ACQUIRE key owner [lease_ms] [LIKESCRIPT TOKEN|LOCK]`:
/// `[-1, token]` when taken or re-entered (every grant takes the next
/// token), else `[pttl, -1]` with the holder's PTTL (the lease when the
/// lock has no TTL: never -1). With LIKESCRIPT it is Redisson's script, in
/// its order (the token first) and with PTTL's -1; `LOCK` replies as its
/// lock() script: nil when granted, else the PTTL.
fn acquire(ctx: &Context, mut args: Vec<RedisString>) -> RedisResult {
    let like_script = take_like_script(&mut args)?;
    let OwnerArgs { name, owner, lease_ms } = OwnerArgs::parse(args)?;
    let mut keys = RedisKeyspace::open(ctx, &name);
    let (name, owner) = (name.as_slice(), owner.as_slice());
    let outcome = match like_script {
        None => fenced::acquire(&mut keys, name, owner, lease_ms, now_ms())?,
        Some(_) => fenced::acquire_like_script(&mut keys, name, owner, lease_ms, now_ms())?,
    };
    Ok(match (outcome, like_script) {
        (FencedAcquire::Granted { .. }, Some(ScriptReply::Lock)) => RedisValue::Null,
        (FencedAcquire::Contended { pttl_ms }, Some(ScriptReply::Lock)) => RedisValue::Integer(pttl_ms),
        (FencedAcquire::Granted { token }, _) => pair(-1, token),
        (FencedAcquire::Contended { pttl_ms }, _) => pair(pttl_ms, -1),
    })
}

fn pair(ttl: i64, token: i64) -> RedisValue {
    RedisValue::Array(vec![RedisValue::Integer(ttl), RedisValue::Integer(token)])
}

/// Takes a trailing `LIKESCRIPT TOKEN|LOCK` off `args` (after the key and
/// owner at least).
fn take_like_script(args: &mut Vec<RedisString>) -> Result<Option<ScriptReply>, LockError> {
    let n = args.len();
    if n < 5 || !is_keyword(&args[n - 2], b"LIKESCRIPT") {
        return Ok(None);
    }
    let reply = match &args[n - 1] {
        arg if is_keyword(arg, b"TOKEN") => ScriptReply::Token,
        arg if is_keyword(arg, b"LOCK") => ScriptReply::Lock,
        _ => return Err(LockError::Syntax("LIKESCRIPT takes TOKEN or LOCK")),
    };
    args.truncate(n - 2);
    Ok(Some(reply))
}

command!(
    acquire,
    c"write deny-oom fast",
    CommandInfo {
        name: c"rfenced.acquire",
        summary: c"Takes or re-enters the fenced lock with the next token: [-1, token]; else [holder's PTTL, -1].",
        arity: -3,
        key_flags: raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_ACCESS | raw::REDISMODULE_CMD_KEY_UPDATE,
        args: &[
            OWNER,
            LEASE_MS,
            Arg { name: c"reply", kind: ArgKind::String, optional: true, token: Some(c"LIKESCRIPT") },
        ],
    },
);
