use crate::commands::args::{
    is_keyword, parse_optional_lease, AcquireOptions, Args, Blocking, HOLDS, HOLDS_ARG, LEASE_MS, NO_REENTRY,
    NO_REENTRY_ARG, OWNER, REPLY_FULL, REQUEST, WAIT_MS,
};
use crate::commands::info::CommandInfo;
use crate::commands::registry::command;
use crate::commands::reply::AcquireReply;
use crate::error::LockError;
use crate::handoff::blocking::{self, BlockedAcquire};
use crate::handoff::deadlock_check;
use crate::lock::acquire_holding::acquire_holding;
use crate::lock::acquire_once::{self, Once, Requester};
use crate::lock::{self, Acquire, LockStore};
use crate::stats;
use crate::store::{now_ms, RedisLatch, RedisLock};
use crate::term;
use redis_module::raw;
use redis_module::{Context, NextArg, RedisError, RedisResult, RedisString};

/// `RLOCK.ACQUIRE key owner [lease_ms] [NOREENTRY] [HOLDS n] [WAIT wait_ms]
/// [ID request_id [PX window_ms]] [REPLY FULL]`: nil when acquired or
/// re-entered, else the current holder's PTTL.
/// - `NOREENTRY`: an owner that holds the lock already is refused with an
///   error (Redisson's non-reentrant lock); not with `ID`, whose resend
///   must reply its grant again.
/// - `WAIT`: a refused caller blocks until the lock is granted to it
///   (nil), in arrival order, or `wait_ms` passes (the PTTL); inside MULTI
///   or a script, and on a replica, it does not block.
/// - `ID`: a grant is recorded for `window_ms` (default 20000); a resend
///   with the same id replies that grant again and adds no level. A resend
///   while the first call is still blocked ends it: with `WAIT` it takes
///   over its place, without it runs now.
/// - `HOLDS n`: the owner's levels as the caller counts them; a resend
///   replies the first send's grant, with no record (see
///   `lock::acquire_holding`), always as `REPLY FULL` would: the lease
///   left is an earlier grant's. Not with `NOREENTRY`, `WAIT` or `ID`.
/// - `REPLY FULL`: the reply is [`AcquireReply`].
pub fn acquire(ctx: &Context, args: Args) -> RedisResult {
    let AcquireArgs { name, owner, lease_ms, no_reentry, holding, options } = AcquireArgs::parse(args)?;
    let AcquireOptions { wait_ms, request, full_reply } = options;
    let now = now_ms();
    let clock = (now, term::delay());
    let may_block = wait_ms.is_some() && blocking::may_block(ctx);
    let mut key = RedisLock::open(ctx, &name);
    if no_reentry && lock::holds(&key, &owner)? {
        return Err(LockError::NonReentrant.into());
    }
    let once = match (&request, holding) {
        (None, None) => Once::Ran(lock::acquire(&mut key, &owner, lease_ms, clock)?),
        (None, Some(expected)) => acquire_holding(&mut key, &owner, lease_ms, expected, clock)?,
        (Some(request), _) => {
            let mut record = RedisLatch::open_record(ctx, name.as_slice(), &request.id)?;
            let requester = Requester { name: name.as_slice(), owner: owner.as_slice() };
            // The first call of this request still waits: one call of a
            // request at a time, so that it is granted once (a record of
            // another request is refused before that call is touched).
            if blocking::is_queued(ctx, &name, &owner, &request.id) {
                acquire_once::vouch(&mut record, requester)?;
                if let (true, Some(wait_ms)) = (may_block, wait_ms) {
                    drop((key, record));
                    let acquire =
                        BlockedAcquire { owner: &owner, lease_ms, wait_ms, request: Some(request.clone()), full_reply };
                    return Ok(blocking::block(ctx, &name, acquire));
                }
                blocking::withdraw(ctx, &name, &owner, &request.id, LockError::WaitTakenOver);
            }
            acquire_once::acquire_once(&mut key, (&mut record, requester), &owner, lease_ms, request.window_ms, clock)?
        }
    };
    // A HOLDS call that replays replies in full: its lease is an earlier
    // grant's (or a level its caller gave up), not the one asked for.
    let full_reply = full_reply || (holding.is_some() && matches!(once, Once::Replayed(_)));
    // Only a full reply tells a grant's lease; a bare grant replies nil.
    let pttl = if full_reply { lease_left(&key, &owner, &once, now) } else { 0 };
    // A holder refused (its re-entry, by a lock-delay) is not queued behind
    // the waiters its own hold keeps out: it is told when to ask again.
    let blocks = matches!(once, Once::Ran(Acquire::Contended { .. }))
        && wait_ms.is_some()
        && may_block
        && !is_holder(&key, &owner);
    drop(key);
    if blocks {
        if let Some(cycle) = deadlock_check::cycle_closed_by(ctx, name.as_slice(), owner.as_slice()) {
            super::STATS.deadlock();
            return Err(LockError::Deadlock(cycle).into());
        }
    }
    let (holds, refused_pttl) = match once {
        Once::Ran(outcome @ Acquire::Contended { pttl_ms }) => {
            stats::record_acquire(outcome);
            super::STATS.acquire(false);
            (0, Some(pttl_ms))
        }
        Once::Ran(outcome) => {
            stats::record_acquire(outcome);
            super::STATS.acquire(true);
            (acquire_once::granted_count(outcome).unwrap_or_default(), None)
        }
        Once::Replayed(grant) => (grant.count, None),
    };
    let reply =
        |granted, lease_ms| AcquireReply { granted, holds, lease_ms, waited_ms: 0 }.short_or_full(ctx, full_reply);
    Ok(match (refused_pttl, wait_ms) {
        (None, _) => reply(true, pttl),
        (Some(_), Some(wait_ms)) if blocks => {
            let acquire = BlockedAcquire { owner: &owner, lease_ms, wait_ms, request, full_reply };
            blocking::block(ctx, &name, acquire)
        }
        (Some(pttl_ms), _) => reply(false, pttl_ms),
    })
}

/// `RLOCK.ACQUIRE`'s arguments, the combinations it refuses refused.
struct AcquireArgs {
    name: RedisString,
    owner: RedisString,
    lease_ms: i64,
    no_reentry: bool,
    /// `HOLDS n`: the owner's levels as the caller counts them.
    holding: Option<i64>,
    options: AcquireOptions,
}

impl AcquireArgs {
    fn parse(args: Args) -> Result<Self, RedisError> {
        let mut args = args.into_iter().skip(1).peekable();
        let name = args.next_arg()?;
        let owner = args.next_arg()?;
        let lease_ms = parse_optional_lease(&mut args, &[NO_REENTRY, HOLDS, b"WAIT", b"ID", b"PX", b"REPLY"])?;
        let no_reentry = args.next_if(|arg| is_keyword(arg, NO_REENTRY)).is_some();
        let holding = match args.next_if(|arg| is_keyword(arg, HOLDS)) {
            None => None,
            Some(_) => Some(parse_holds(args.next())?),
        };
        let options = AcquireOptions::parse(args, Blocking::Allowed)?;
        if no_reentry && options.request.is_some() {
            return Err(LockError::Syntax("NOREENTRY takes no ID").into());
        }
        if holding.is_some() && (no_reentry || options.request.is_some() || options.wait_ms.is_some()) {
            return Err(LockError::Syntax("HOLDS takes no NOREENTRY, WAIT or ID").into());
        }
        Ok(Self { name, owner, lease_ms, no_reentry, holding, options })
    }
}

/// `n` of `HOLDS n`: a count of levels, 0 or more, written as Redis
/// writes integers (no sign, no leading zero).
fn parse_holds(arg: Option<RedisString>) -> Result<i64, LockError> {
    let count = arg.and_then(|arg| lock::parse_hold_count(arg.as_slice()).ok());
    count.filter(|count: &i64| *count >= 0).ok_or(LockError::ArgumentNegative("n"))
}

/// What is left of the lease after a grant: 0 for a replayed grant whose
/// hold is gone since.
fn lease_left(key: &RedisLock, owner: &RedisString, once: &Once<Acquire>, now: i64) -> i64 {
    let still_held = !matches!(once, Once::Replayed { .. }) || is_holder(key, owner);
    if still_held {
        lock::pttl(key, now)
    } else {
        0
    }
}

fn is_holder(key: &RedisLock, owner: &RedisString) -> bool {
    matches!(key.hold_count(owner), Ok(Some(_)))
}

command!(
    acquire,
    c"write deny-oom fast",
    CommandInfo {
        name: c"rlock.acquire",
        summary: c"Takes the lock for owner, or re-enters it (nil); else the holder's PTTL, or with WAIT blocks until granted in arrival order (nil) or wait_ms passes. NOREENTRY refuses the owner's re-entry with an error; ID, or HOLDS with the owner's levels as the caller counts them, makes a resend reply the first grant; REPLY FULL replies granted, holds, lease_ms and waited_ms.",
        arity: -3,
        complexity: c"O(1); with WAIT, O(N) where N is the number of waits the deadlock check follows",
        key_flags: raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_ACCESS | raw::REDISMODULE_CMD_KEY_UPDATE,
        args: &[OWNER, LEASE_MS, NO_REENTRY_ARG, HOLDS_ARG, WAIT_MS, REQUEST, REPLY_FULL],
    },
);
