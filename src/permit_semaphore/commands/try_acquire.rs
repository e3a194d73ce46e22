use super::{ids, script_clock, AT, IDS, KEY_FLAGS, LEASE};
use crate::commands::args::{is_keyword, parse_non_negative, Args, VIA};
use crate::commands::info::{Arg, ArgKind, CommandInfo};
use crate::commands::registry::command;
use crate::permit_semaphore::{Lease, PermitSemaphore, TryAcquire};
use crate::store::{lua_number_text, now_ms, RedisKeyspace};
use crate::term;
use redis_module::{Context, RedisError, RedisResult, RedisValue};

/// `RPSEM.TRYACQUIRE key lease_ms|-1 id [id ...] [[REPLYID] AT now_ms [VIA PUBLISH|SPUBLISH]]`:
/// takes one permit per id when that many are available: `OK`; else the
/// earliest expiry of a taken permit as the bulk `:<unix ms>`, or nil when
/// none expires (Redisson's replies, as bulk strings). With `AT` it is
/// Redisson's script on that clock (a rewritten call), and the lease is
/// its absolute end (the permits' score, Unix ms); `REPLYID` after the one
/// id (`id REPLYID`: `REPLYID` alone is an id) is its text of 3.12.0 ..
/// 3.21.3, which replies the id instead of `OK`.
fn try_acquire(ctx: &Context, args: Args) -> RedisResult {
    let mut args = args;
    let (at, via) = script_clock(&mut args, 4)?;
    // Redisson's text of 3.12.0 .. 3.21.3 replies the id it took.
    let replies_id = at.is_some() && args.len() > 4 && args.last().is_some_and(|arg| is_keyword(arg, b"REPLYID"));
    if replies_id {
        args.pop();
    }
    let [_, name, lease, given @ ..] = &args[..] else { return Err(RedisError::WrongArity) };
    let mut keys = RedisKeyspace::open(ctx, name).via(via);
    let semaphore = PermitSemaphore::new(name.as_slice()).like_redissons_scripts(lua_number_text);
    let acquired = match at {
        None => {
            semaphore.try_acquire(&mut keys, (now_ms(), term::delay()), Lease::parse(lease.as_slice())?, &ids(given))?
        }
        Some(now) => {
            let until = parse_non_negative(lease, "lease end")?;
            semaphore.try_acquire_like_script(&mut keys, (now, term::delay()), until, &ids(given))?
        }
    };
    super::STATS.acquire(acquired == TryAcquire::Granted);
    Ok(match acquired {
        TryAcquire::Granted if replies_id => RedisValue::StringBuffer(given[0].as_slice().to_vec()),
        TryAcquire::Granted => RedisValue::BulkString("OK".to_owned()),
        TryAcquire::FirstExpiry(at) => RedisValue::BulkString(format!(":{at}")),
        TryAcquire::NoExpiry => RedisValue::Null,
    })
}

command!(
    try_acquire,
    c"write deny-oom",
    CommandInfo {
        name: c"rpsem.tryacquire",
        summary: c"Takes one permit per id (id [id ...]), held for lease_ms or until released (-1), when that many are available: OK; else ':<unix ms>' of the earliest expiry, or nil.",
        arity: -4,
        complexity: c"O(log(N) + M) where N is the number of taken permits and M the number of expired permits reclaimed, plus the ids given",
        key_flags: KEY_FLAGS,
        args: &[
            LEASE,
            IDS,
            Arg::block(
                c"script",
                &[Arg { name: c"replyid", kind: ArgKind::PureToken, optional: true, token: Some(c"REPLYID") }, AT, VIA],
            ),
        ],
    },
);
