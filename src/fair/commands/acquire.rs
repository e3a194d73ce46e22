use crate::commands::args::{
    is_keyword, parse_optional_lease, parse_reply_full, parse_request, Args, LEASE_MS, OWNER, REPLY_FULL, REQUEST,
    WAIT_MS,
};
use crate::commands::info::{Arg, ArgKind, CommandInfo};
use crate::commands::registry::command;
use crate::commands::reply::AcquireReply;
use crate::error::LockError;
use crate::fair::handoff::{self, Change, Session};
use crate::fair::waiter::BlockedCall;
use crate::fair::{Acquire, AskedAgain, FairLock, Hints, Wait};
use crate::handoff::blocking::may_block;
use crate::handoff::deadlock_check;
use crate::handoff::Request;
use crate::keyspace::latch::RequestKey;
use crate::keyspace::{pttl, Keyspace};
use crate::lease;
use crate::lock::acquire_once::{once, vouch, Grant, Once, Requester};
use crate::store::{now_ms, RedisKeyspace, RedisLatch};
use crate::term;
use redis_module::{raw, Context, NextArg, RedisError, RedisResult, RedisString};
use rlock_protocol::DEFAULT_FAIR_WAIT_MS;

const SYNTAX: LockError = LockError::Syntax(
    "after owner and lease_ms, only WAIT wait_ms [BLOCK block_ms] [REDISSON PTTL|AHEAD] or SHIFT shift_ms, then ID request_id [PX window_ms], then REPLY FULL",
);

/// `RFAIR.ACQUIRE key owner [lease_ms] [WAIT wait_ms [BLOCK block_ms]
/// [REDISSON PTTL|AHEAD] | SHIFT shift_ms] [ID request_id [PX window_ms]]
/// [REPLY FULL]`: nil when taken or re-entered.
/// Otherwise, without WAIT, 1; with WAIT, the caller is queued and the
/// reply is how many ms to wait before asking again (at least 1) unless
/// told sooner on `redisson_lock__channel:{key}:<owner>`. With BLOCK, a
/// queued caller blocks until the lock is granted to it in queue order
/// (nil) or `block_ms` passes (1: still queued, ask again); inside MULTI or
/// a script, and on a replica, it does not block.
/// - `ID`: as `RLOCK.ACQUIRE`'s. A grant (a blocked caller's too) is
///   recorded, and a resend replays it; a resend while the first call is
///   blocked ends that call, and goes on in the owner's place in the queue.
/// - `REDISSON PTTL|AHEAD`: the caller is Redisson's waiting script (the
///   filter's rewrite): its deadline and hint follow Redisson's arithmetic
///   ([`crate::fair::Hints::Redisson`]); asking again, it is told the
///   lock's PTTL (3.32+) or the time to the deadline ahead (before).
/// - `REPLY FULL`: the reply is an [`AcquireReply`]; when not granted, its
///   `lease_ms` is the number Redisson's reply would give (1, or the hint).
/// - `SHIFT` (without WAIT): when the caller takes its turn, the waiters of
///   Redisson's scripts behind it move up by `shift_ms` (default: WAIT's,
///   else 300000), as Redisson's no-wait tryLock() moves them by its wait.
fn acquire(ctx: &Context, args: Args) -> RedisResult {
    let mut args = args.into_iter().skip(1).peekable();
    let name = args.next_arg()?;
    let owner = args.next_arg()?;
    let lease_ms = parse_optional_lease(&mut args, &[b"WAIT", b"SHIFT", b"ID", b"PX", b"REPLY"])?;
    let Options { wait, block_ms, shift_ms, request, full_reply } = Options::parse(args)?;
    let wait_ms = wait.map(|wait| wait.ms);
    let taker_wait = shift_ms.or(wait_ms).unwrap_or(DEFAULT_FAIR_WAIT_MS);
    let (name_bytes, owner_bytes) = (name.as_slice(), owner.as_slice());
    let mut record =
        request.as_ref().map(|request| RedisLatch::open_record(ctx, name_bytes, &request.id)).transpose()?;
    // A caller that would block and so close a cycle of waits is told so
    // before anything is written or ended (a resend whose grant is
    // recorded replays it instead).
    let replays = match record.as_mut() {
        Some(record) => record.text()?.is_some(),
        None => false,
    };
    if block_ms.is_some() && may_block(ctx) && !replays {
        if let Some(cycle) = deadlock_check::cycle_closed_by(ctx, name_bytes, owner_bytes) {
            super::STATS.deadlock();
            return Err(LockError::Deadlock(cycle).into());
        }
    }
    let requester = Requester { name: name_bytes, owner: owner_bytes };
    // A blocked call of this request ends (a record of another request is
    // refused before that).
    if let (Some(record), Some(request), true) = (&mut record, &request, handoff::waiting() > 0) {
        vouch(record, requester)?;
        handoff::withdraw(ctx, &name, owner_bytes, &request.id);
    }
    let now = now_ms();
    let mut keys = RedisKeyspace::open(ctx, &name);
    let mut session = Session::open(ctx, name_bytes);
    let lock = FairLock::new(name_bytes);
    let mut run = || {
        let (times, clock) = ((lease_ms, wait, taker_wait), (now, term::delay()));
        lock.acquire_shifting(&mut keys, &mut session.waits, owner_bytes, times, clock)
    };
    let outcome = match (record.as_mut(), &request) {
        (Some(record), Some(request)) => once((record, requester), (request.window_ms, now), run, grant_of),
        _ => run().map(Once::Ran),
    };
    // A replayed grant whose hold is gone since (the key may not even be
    // a lock now): no lease left. No early return before the session closes.
    let replayed_lease_ms = match &outcome {
        Ok(Once::Replayed(_)) if matches!(keys.hget(name_bytes, owner_bytes), Ok(Some(_))) => {
            pttl(&mut keys, name_bytes, now).unwrap_or(0)
        }
        _ => 0,
    };
    drop(keys);
    // A queued caller: the server watches its turn (at the lease's end); a
    // grant: the next head's turn comes at the new lease's end.
    let change = match &outcome {
        Ok(Once::Ran(ran)) => Change::of_acquire(ran),
        _ => Change::None,
    };
    session.close(ctx, &name, change);
    // A grant sets the lease: a re-entry's too, as Redisson's script.
    let reply = |granted, holds, lease_ms| {
        AcquireReply { granted, holds, lease_ms, waited_ms: 0 }.short_or_full(ctx, full_reply)
    };
    let outcome = outcome?;
    if let Once::Ran(ran) = &outcome {
        super::STATS.acquire(grant_of(ran).is_some());
    }
    Ok(match (outcome, wait_ms, block_ms) {
        (Once::Replayed(grant), ..) => reply(true, grant.count, replayed_lease_ms),
        (Once::Ran(Acquire::Acquired), ..) => reply(true, 1, lease_ms),
        (Once::Ran(Acquire::Reentered { count }), ..) => reply(true, count, lease_ms),
        (Once::Ran(Acquire::Refused), ..) => reply(false, 0, 1),
        (Once::Ran(Acquire::Queued { .. }), Some(wait_ms), Some(block_ms)) if may_block(ctx) => {
            let call = BlockedCall { lease_ms, wait_ms, block_ms, request, full_reply };
            handoff::block(ctx, &name, owner_bytes, call)
        }
        (Once::Ran(Acquire::Queued { hint_ms }), ..) => reply(false, 0, hint_ms),
        (Once::Ran(Acquire::Deferred { pttl_ms }), ..) => reply(false, 0, pttl_ms),
    })
}

/// What a fair grant is recorded as.
fn grant_of(outcome: &Acquire) -> Option<Grant> {
    match *outcome {
        Acquire::Acquired => Some(Grant::count(1)),
        Acquire::Reentered { count } => Some(Grant::count(count)),
        Acquire::Refused | Acquire::Queued { .. } | Acquire::Deferred { .. } => None,
    }
}

/// `[WAIT wait_ms [BLOCK block_ms] [REDISSON PTTL|AHEAD] | SHIFT shift_ms]
/// [ID request_id [PX window_ms]] [REPLY FULL]`
struct Options {
    wait: Option<Wait>,
    block_ms: Option<i64>,
    shift_ms: Option<i64>,
    request: Option<Request>,
    full_reply: bool,
}

impl Options {
    fn parse(args: impl Iterator<Item = RedisString>) -> Result<Self, RedisError> {
        let mut args = args.peekable();
        let mut option = |keyword: &[u8], parse: fn(&[u8]) -> Result<i64, LockError>| match args
            .next_if(|arg| is_keyword(arg, keyword))
        {
            None => Ok::<_, LockError>(None),
            Some(_) => Ok(Some(parse(args.next().ok_or(SYNTAX)?.as_slice())?)),
        };
        let wait_ms = option(b"WAIT", lease::parse_wait_ms)?;
        let (block_ms, shift_ms) = match wait_ms {
            Some(_) => (option(b"BLOCK", lease::parse_block_ms)?, None),
            None => (None, option(b"SHIFT", lease::parse_wait_ms)?),
        };
        let hints = match wait_ms.is_some() && args.next_if(|arg| is_keyword(arg, b"REDISSON")).is_some() {
            false => Hints::Native,
            true => match args.next() {
                Some(arg) if is_keyword(&arg, b"PTTL") => Hints::Redisson(AskedAgain::Pttl),
                Some(arg) if is_keyword(&arg, b"AHEAD") => Hints::Redisson(AskedAgain::Ahead),
                _ => return Err(SYNTAX.into()),
            },
        };
        let wait = wait_ms.map(|ms| Wait { ms, hints });
        let request = match args.next_if(|arg| is_keyword(arg, b"ID")) {
            None => None,
            Some(_) => Some(parse_request(&mut args)?),
        };
        let full_reply = match args.next_if(|arg| is_keyword(arg, b"REPLY")) {
            None => false,
            Some(_) => parse_reply_full(args.next())?,
        };
        match args.next() {
            Some(_) => Err(SYNTAX.into()),
            None => Ok(Self { wait, block_ms, shift_ms, request, full_reply }),
        }
    }
}

command!(
    acquire,
    c"write deny-oom fast",
    CommandInfo {
        name: c"rfair.acquire",
        summary: c"Takes the fair lock or re-enters it (nil); else 1, or with WAIT queues the caller and replies a wait hint in ms, or with BLOCK waits for its turn on the server. ID makes a resend reply the first grant; REPLY FULL replies granted, holds, lease_ms and waited_ms.",
        arity: -3,
        complexity: c"O(N) where N is the number of callers queued on the fair lock",
        key_flags: raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_ACCESS | raw::REDISMODULE_CMD_KEY_UPDATE,
        args: &[OWNER, LEASE_MS, WAIT_OR_SHIFT, REQUEST, REPLY_FULL],
    },
);

/// `[SHIFT shift_ms]`, instead of `WAIT wait_ms`.
const SHIFT_MS: Arg = Arg { name: c"shift_ms", kind: ArgKind::Integer, optional: true, token: Some(c"SHIFT") };

/// `[BLOCK block_ms]`, after `WAIT wait_ms`.
const BLOCK_MS: Arg = Arg { name: c"block_ms", kind: ArgKind::Integer, optional: true, token: Some(c"BLOCK") };

/// `[REDISSON PTTL|AHEAD]`, after `WAIT wait_ms [BLOCK block_ms]`.
const REDISSON: Arg = Arg {
    name: c"asked_again",
    kind: ArgKind::OneOf(&[Arg::keyword(c"pttl", c"PTTL"), Arg::keyword(c"ahead", c"AHEAD")]),
    optional: true,
    token: Some(c"REDISSON"),
};

/// `[WAIT wait_ms [BLOCK block_ms] [REDISSON PTTL|AHEAD]|SHIFT shift_ms]`
const WAIT_OR_SHIFT: Arg = Arg {
    name: c"wait",
    kind: ArgKind::OneOf(&[
        Arg { optional: false, ..Arg::block(c"wait", &[Arg { optional: false, ..WAIT_MS }, BLOCK_MS, REDISSON]) },
        Arg { optional: false, ..SHIFT_MS },
    ]),
    optional: true,
    token: None,
};
