use super::{parse_side, MODE};
use crate::commands::args::{
    is_keyword, parse_release_tail, take_trailing, take_via, Args, LATCH, LEASE_MS, OWNER, VIA,
};
use crate::commands::info::{Arg, ArgKind, CommandInfo};
use crate::commands::registry::command;
use crate::error::LockError;
use crate::rwlock::{handoff, ReadWriteLock, Release};
use crate::store::{now_ms, on_one_node, RedisKeyspace};
use redis_module::{raw, Context, NextArg, RedisResult, RedisValue};

/// `RRW.RELEASE key owner READ|WRITE [lease_ms] [ID request_id [PX latch_ms]]
/// [MISSING NIL|1|NOTHELD] [VIA PUBLISH|SPUBLISH]`: Redisson's read or write unlock:
/// nil when owner holds nothing that way, 0 when the lock is still held (by
/// owner or others), 1 when released. The lease applies to a write release
/// that leaves the writer holding. A missing lock is announced all the
/// same, and replies what `MISSING` says (nil; Redisson before 3.44 replies
/// 1); its latch records 1, as Redisson's script does, but with `NOTHELD`
/// (nil, nothing recorded: a resend answers "not held" too).
/// `VIA` publishes with that one command, as Redisson's script does.
fn release(ctx: &Context, mut args: Args) -> RedisResult {
    let via = take_via(&mut args, 4)?;
    let (missing, not_held) = take_missing_reply(&mut args)?;
    let mut args = args.into_iter().skip(1).peekable();
    let name = args.next_arg()?;
    let owner = args.next_arg()?;
    let side = parse_side(&args.next_arg()?)?;
    let now = now_ms();
    let (lease_ms, latch) = parse_release_tail(args, name.as_slice(), now, &[b"ID", b"PX", b"MISSING", b"VIA"])?;
    if let Some(latch) = &latch {
        on_one_node(ctx, name.as_slice(), latch.key())?;
    }
    let mut keys = RedisKeyspace::open(ctx, &name).via(via);
    let lock = ReadWriteLock::new(name.as_slice());
    let lock = if not_held { lock.missing_not_held() } else { lock };
    let released = lock.release(&mut keys, owner.as_slice(), side, lease_ms, latch.as_ref(), now)?;
    drop(keys);
    // A release may let a waiter in without deleting the key (a writer
    // keeping its reads): the waiters look.
    handoff::released(ctx, &name);
    Ok(match released {
        Release::NotHeld { published: true } => missing,
        Release::NotHeld { published: false } => RedisValue::Null,
        Release::StillHeld => RedisValue::Integer(0),
        Release::Released => RedisValue::Integer(1),
        Release::Latched { released } => RedisValue::Integer(i64::from(released)),
    })
}

/// A trailing `MISSING NIL|1|NOTHELD` (before `VIA`): the reply for a
/// missing lock, and whether it is "not held" (no latch recorded).
fn take_missing_reply(args: &mut Args) -> Result<(RedisValue, bool), LockError> {
    match take_trailing(args, 4, b"MISSING") {
        None => Ok((RedisValue::Null, false)),
        Some(arg) if is_keyword(&arg, b"NIL") => Ok((RedisValue::Null, false)),
        Some(arg) if is_keyword(&arg, b"NOTHELD") => Ok((RedisValue::Null, true)),
        Some(arg) if arg.as_slice() == b"1" => Ok((RedisValue::Integer(1), false)),
        Some(_) => Err(LockError::Syntax("MISSING takes NIL, 1 or NOTHELD")),
    }
}

/// `[MISSING NIL|1|NOTHELD]`
const MISSING: Arg = Arg {
    name: c"missing_reply",
    kind: ArgKind::OneOf(&[
        Arg::keyword(c"nil", c"NIL"),
        Arg::keyword(c"one", c"1"),
        Arg::keyword(c"notheld", c"NOTHELD"),
    ]),
    optional: true,
    token: Some(c"MISSING"),
};

command!(
    release,
    c"write fast",
    CommandInfo {
        name: c"rrw.release",
        summary: c"Releases one read or write hold of owner; replies 1 when released, 0 when the lock is still held, nil when not held.",
        arity: -4,
        complexity: c"O(N) where N is the number of the lock's holders (its hash is read whole); a READ release also visits each read hold's timeout key",
        key_flags: raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_DELETE,
        args: &[OWNER, MODE, LEASE_MS, LATCH, MISSING, VIA],
    },
);
