use crate::commands::args::{is_keyword, parse_optional_lease, parse_reply_full, LEASE_MS, OWNER, REPLY_FULL, WAIT_MS};
use crate::commands::info::{Arg, ArgKind, CommandInfo};
use crate::commands::registry::command;
use crate::commands::reply::AcquireReply;
use crate::error::LockError;
use crate::handoff::blocking::{self, BlockedAcquire};
use crate::handoff::Request;
use crate::lease;
use crate::lock::acquire_once::{self, Once, Requester};
use crate::lock::{self, Acquire, LockStore};
use crate::stats;
use crate::store::{now_ms, RedisLatch, RedisLock};
use redis_module::raw;
use redis_module::{Context, NextArg, RedisError, RedisResult, RedisString, RedisValue};
use rlock_protocol::DEFAULT_LATCH_MS;

/// `RLOCK.ACQUIRE key owner [lease_ms] [WAIT wait_ms] [ID request_id [PX
/// window_ms]] [REPLY FULL]`: nil when acquired or re-entered, else the
/// current holder's PTTL.
/// - `WAIT`: a refused caller blocks until the lock is granted to it
///   (nil), in arrival order, or `wait_ms` passes (the PTTL); inside MULTI
///   or a script, and on a replica, it does not block.
/// - `ID`: a grant is recorded for `window_ms` (default 20000); a resend
///   with the same id replies that grant again and adds no level. A resend
///   while the first call is still blocked ends it: with `WAIT` it takes
///   over its place, without it runs now.
/// - `REPLY FULL`: the reply is [`AcquireReply`].
pub fn acquire(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut args = args.into_iter().skip(1).peekable();
    let name = args.next_arg()?;
    let owner = args.next_arg()?;
    let lease_ms = parse_optional_lease(&mut args)?;
    let Options { wait_ms, request, full_reply } = Options::parse(args)?;
    let now = now_ms();
    let may_block = wait_ms.is_some() && blocking::may_block(ctx);
    let mut key = RedisLock::open(ctx, &name);
    let once = match &request {
        None => Once::Ran(lock::acquire(&mut key, &owner, lease_ms, now)?),
        Some(request) => {
            let mut record = RedisLatch::open_record(ctx, name.as_slice(), &request.id)?;
            // The first call of this request still waits: one call of a
            // request at a time, so that it is granted once.
            if blocking::is_queued(ctx, &name, &owner, &request.id) {
                if let (true, Some(wait_ms)) = (may_block, wait_ms) {
                    drop((key, record));
                    let acquire =
                        BlockedAcquire { owner: &owner, lease_ms, wait_ms, request: Some(request.clone()), full_reply };
                    return Ok(blocking::block(ctx, &name, acquire));
                }
                blocking::withdraw(ctx, &name, &owner, &request.id, LockError::WaitTakenOver);
            }
            let requester = Requester { name: name.as_slice(), owner: owner.as_slice() };
            acquire_once::acquire_once(&mut key, (&mut record, requester), &owner, lease_ms, request.window_ms, now)?
        }
    };
    // A replayed grant whose hold is gone since: no lease left.
    let still_held = !matches!(once, Once::Replayed { .. }) || matches!(key.hold_count(&owner), Ok(Some(_)));
    let pttl = if still_held { lock::pttl(&key, now) } else { 0 };
    drop(key);
    let (holds, refused_pttl) = match once {
        Once::Ran(outcome @ Acquire::Contended { pttl_ms }) => {
            stats::record_acquire(outcome);
            (0, Some(pttl_ms))
        }
        Once::Ran(outcome) => {
            stats::record_acquire(outcome);
            (acquire_once::granted_count(outcome).unwrap_or_default(), None)
        }
        Once::Replayed { count } => (count, None),
    };
    let reply = |granted, lease_ms| match full_reply {
        true => AcquireReply { granted, holds, lease_ms, waited_ms: 0 }.value(),
        false if granted => RedisValue::Null,
        false => RedisValue::Integer(lease_ms),
    };
    Ok(match (refused_pttl, wait_ms) {
        (None, _) => reply(true, pttl),
        (Some(_), Some(wait_ms)) if may_block => {
            let acquire = BlockedAcquire { owner: &owner, lease_ms, wait_ms, request, full_reply };
            blocking::block(ctx, &name, acquire)
        }
        (Some(pttl_ms), _) => reply(false, pttl_ms),
    })
}

/// The keywords after the lease, in any order, each at most once.
struct Options {
    wait_ms: Option<i64>,
    request: Option<Request>,
    full_reply: bool,
}

impl Options {
    fn parse(mut args: impl Iterator<Item = RedisString>) -> Result<Self, RedisError> {
        let mut options = Self { wait_ms: None, request: None, full_reply: false };
        let mut args = args.by_ref().peekable();
        let mut seen = Vec::new();
        while let Some(keyword) = args.next() {
            let keyword = keyword.as_slice().to_ascii_uppercase();
            if seen.contains(&keyword) {
                return Err(LockError::Syntax(SYNTAX).into());
            }
            match keyword.as_slice() {
                b"WAIT" => {
                    let wait_ms = args.next().ok_or(LockError::WaitSyntax)?;
                    options.wait_ms = Some(lease::parse_wait_ms(wait_ms.as_slice())?);
                }
                b"ID" => {
                    let id = args.next().filter(|id| !id.as_slice().is_empty()).ok_or(LockError::RequestIdMissing)?;
                    let window_ms = match args.next_if(|arg| is_keyword(arg, b"PX")) {
                        None => DEFAULT_LATCH_MS,
                        Some(_) => parse_window_ms(args.next().ok_or(LockError::Syntax("PX needs window_ms"))?)?,
                    };
                    options.request = Some(Request { id: id.as_slice().to_vec(), window_ms });
                }
                b"REPLY" => options.full_reply = parse_reply_full(args.next())?,
                _ => return Err(LockError::Syntax(SYNTAX).into()),
            }
            seen.push(keyword);
        }
        Ok(options)
    }
}

const SYNTAX: &str =
    "after owner and lease_ms, only WAIT wait_ms, ID request_id [PX window_ms] and REPLY FULL, each once";

/// `PX window_ms`, bounded as a lease.
fn parse_window_ms(arg: RedisString) -> Result<i64, LockError> {
    lease::parse_lease_ms(arg.as_slice())
        .map_err(|_| LockError::Syntax("window_ms must be a positive integer of at most 31536000000 (365 days)"))
}

/// `[ID request_id [PX window_ms]]`
const REQUEST: Arg = Arg::block(
    c"request",
    &[
        Arg { name: c"request_id", kind: ArgKind::String, optional: false, token: Some(c"ID") },
        Arg { name: c"window_ms", kind: ArgKind::Integer, optional: true, token: Some(c"PX") },
    ],
);

command!(
    acquire,
    c"write deny-oom fast",
    CommandInfo {
        name: c"rlock.acquire",
        summary: c"Takes the lock for owner, or re-enters it (nil); else the holder's PTTL, or with WAIT blocks until granted in arrival order (nil) or wait_ms passes. ID makes a resend reply the first grant; REPLY FULL replies granted, holds, lease_ms and waited_ms.",
        arity: -3,
        key_flags: raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_ACCESS | raw::REDISMODULE_CMD_KEY_UPDATE,
        args: &[OWNER, LEASE_MS, WAIT_MS, REQUEST, REPLY_FULL],
    },
);
