use crate::commands::args::{
    is_keyword, parse_optional_lease, AcquireOptions, Args, Blocking, LEASE_MS, OWNER, REPLY_FULL, REQUEST,
};
use crate::commands::info::{Arg, ArgKind, CommandInfo};
use crate::commands::registry::command;
use crate::commands::reply::{integer_pair, AcquireReply};
use crate::error::LockError;
use crate::fenced::{self, FencedAcquire};
use crate::keyspace::{pttl, Keyspace};
use crate::lock::acquire_once::{once, Grant, Once, Requester};
use crate::store::{now_ms, RedisKeyspace, RedisLatch};
use crate::term;
use redis_module::{raw, Context, NextArg, RedisResult, RedisValue};

/// How a `LIKESCRIPT` acquire replies: as Redisson's lockAndGetToken
/// script (a pair), or as its lock() script (RLock's replies).
#[derive(Clone, Copy, PartialEq, Eq)]
enum ScriptReply {
    Token,
    Lock,
}

/// `RFENCED.ACQUIRE key owner [lease_ms] [ID request_id [PX window_ms]]
/// [REPLY FULL] [LIKESCRIPT TOKEN|LOCK]`: `[-1, token]` when taken or
/// re-entered (every grant takes the next token), else `[pttl, -1]` with
/// the holder's PTTL (the lease when the lock has no TTL: never -1).
/// - `ID` and `REPLY FULL` as `RLOCK.ACQUIRE`'s; the full reply ends with
///   `token` (-1 when refused), and a replayed grant replies its token.
/// - `LIKESCRIPT` (with neither): Redisson's script, in its order (the
///   token first) and with PTTL's -1; `LOCK` replies as its lock()
///   script: nil when granted, else the PTTL.
fn acquire(ctx: &Context, mut args: Args) -> RedisResult {
    let like_script = take_like_script(&mut args)?;
    let mut args = args.into_iter().skip(1).peekable();
    let (name, owner) = (args.next_arg()?, args.next_arg()?);
    let lease_ms = parse_optional_lease(&mut args, &[b"ID", b"PX", b"REPLY", b"LIKESCRIPT"])?;
    let AcquireOptions { request, full_reply, .. } = AcquireOptions::parse(args, Blocking::NotOffered)?;
    if like_script.is_some() && (request.is_some() || full_reply) {
        return Err(LockError::Syntax("LIKESCRIPT takes no ID or REPLY").into());
    }
    let now = now_ms();
    let mut keys = RedisKeyspace::open(ctx, &name);
    let (name, owner) = (name.as_slice(), owner.as_slice());
    let clock = (now, term::token_floor(), term::delay());
    let mut run = || match like_script {
        None => fenced::acquire(&mut keys, name, owner, lease_ms, clock),
        Some(_) => fenced::acquire_like_script(&mut keys, name, owner, lease_ms, clock),
    };
    let (outcome, replayed) = match &request {
        None => (run()?, false),
        Some(request) => {
            let mut record = RedisLatch::open_record(ctx, name, &request.id)?;
            let grant_of = |outcome: &FencedAcquire| match *outcome {
                FencedAcquire::Granted { token, count } => Some(Grant { count, token: Some(token) }),
                FencedAcquire::Contended { .. } => None,
            };
            match once((&mut record, Requester { name, owner }), (request.window_ms, now), run, grant_of)? {
                Once::Ran(outcome) => (outcome, false),
                Once::Replayed(Grant { count, token: Some(token) }) => (FencedAcquire::Granted { token, count }, true),
                // Recorded by another kind's acquire of this owner.
                Once::Replayed(Grant { token: None, .. }) => return Err(LockError::RequestIdTaken.into()),
            }
        }
    };
    if !replayed {
        super::STATS.acquire(matches!(outcome, FencedAcquire::Granted { .. }));
    }
    Ok(match (outcome, like_script) {
        (FencedAcquire::Granted { token, count }, _) if full_reply => {
            // A replayed grant whose hold is gone since (the key may not
            // even be a lock now): no lease left.
            let held = !replayed || matches!(keys.hget(name, owner), Ok(Some(_)));
            let lease_ms = if held { pttl(&mut keys, name, now).unwrap_or(0) } else { 0 };
            AcquireReply { granted: true, holds: count, lease_ms, waited_ms: 0 }.reply_with_token(ctx, token)
        }
        (FencedAcquire::Contended { pttl_ms }, _) if full_reply => {
            AcquireReply { granted: false, holds: 0, lease_ms: pttl_ms, waited_ms: 0 }.reply_with_token(ctx, -1)
        }
        (FencedAcquire::Granted { .. }, Some(ScriptReply::Lock)) => RedisValue::Null,
        (FencedAcquire::Contended { pttl_ms }, Some(ScriptReply::Lock)) => RedisValue::Integer(pttl_ms),
        (FencedAcquire::Granted { token, .. }, _) => integer_pair(ctx, -1, token),
        (FencedAcquire::Contended { pttl_ms }, _) => integer_pair(ctx, pttl_ms, -1),
    })
}

/// Takes a trailing `LIKESCRIPT TOKEN|LOCK` off `args` (after the key and
/// owner at least).
fn take_like_script(args: &mut Args) -> Result<Option<ScriptReply>, LockError> {
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
        summary: c"Takes or re-enters the fenced lock with the next token: [-1, token]; else [holder's PTTL, -1]. ID makes a resend reply the first grant; REPLY FULL replies granted, holds, lease_ms, waited_ms and token.",
        arity: -3,
        complexity: c"O(1)",
        key_flags: raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_ACCESS | raw::REDISMODULE_CMD_KEY_UPDATE,
        args: &[
            OWNER,
            LEASE_MS,
            REQUEST,
            REPLY_FULL,
            Arg {
                name: c"reply",
                kind: ArgKind::OneOf(&[Arg::keyword(c"token", c"TOKEN"), Arg::keyword(c"lock", c"LOCK")]),
                optional: true,
                token: Some(c"LIKESCRIPT"),
            },
        ],
    },
);
