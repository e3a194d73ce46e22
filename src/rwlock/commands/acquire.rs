use super::{parse_side, take_like_script, LIKESCRIPT, MODE};
use crate::commands::args::{
    parse_optional_lease, AcquireOptions, Args, Blocking, LEASE_MS, OWNER, REPLY_FULL, REQUEST, WAIT_MS,
};
use crate::commands::info::CommandInfo;
use crate::commands::registry::command;
use crate::commands::reply::AcquireReply;
use crate::error::LockError;
use crate::handoff::blocking::{self, BlockedAcquire};
use crate::handoff::deadlock_check;
use crate::lock::acquire_once::{once, vouch, Grant, Once, Requester};
use crate::rwlock::{check_owner, handoff, Acquire, ReadWriteLock, Side, Status};
use crate::store::{lua_number_text, now_ms, RedisKeyspace, RedisLatch};
use crate::term;
use redis_module::{raw, Context, NextArg, RedisError, RedisResult, RedisString, RedisValue};
use rlock_protocol::rwlock_write_field;

/// `RRW.ACQUIRE key owner READ|WRITE [lease_ms] [WAIT wait_ms] [ID
/// request_id [PX window_ms]] [REPLY FULL]`: nil when taken or re-entered,
/// else the lock's PTTL. `WAIT`, `ID` and `REPLY FULL` as
/// `RLOCK.ACQUIRE`'s (`holds`: the owner's holds of that side;
/// `lease_ms`: the lock's PTTL): a refused caller that holds neither side
/// blocks in arrival order until granted or `wait_ms` passes.
/// `LIKESCRIPT` (last, with none of those): a write re-entry sets the TTL
/// to the PTTL plus the lease, a read one to the lease, as Redisson's
/// scripts do (the read's before 3.11.1).
fn acquire(ctx: &Context, args: Args) -> RedisResult {
    let AcquireArgs { name, owner: owner_arg, side, lease_ms, like_script, options } = AcquireArgs::parse(args)?;
    let AcquireOptions { wait_ms, request, full_reply } = options;
    let now = now_ms();
    let may_block = wait_ms.is_some() && blocking::may_block(ctx);
    let lock = match like_script {
        false => ReadWriteLock::new(name.as_slice()),
        true => ReadWriteLock::new(name.as_slice()).like_redissons_script(lua_number_text),
    };
    let owner = owner_arg.as_slice();
    // Before a record is read: a replay must not serve a reserved owner.
    check_owner(owner)?;
    let mut keys = RedisKeyspace::open(ctx, &name);
    let blocked = |wait_ms, request| BlockedAcquire { owner: &owner_arg, lease_ms, wait_ms, request, full_reply };
    let mut run = || lock.acquire(&mut keys, owner, side, lease_ms, (now, term::delay()));
    let once = match &request {
        None => Once::Ran(run()?),
        Some(request) => {
            let mut record = RedisLatch::open_record(ctx, name.as_slice(), &request.id)?;
            // One id serves one side: the writer is recorded by its field.
            let field = match side {
                Side::Read => owner.to_vec(),
                Side::Write => rwlock_write_field(owner),
            };
            let requester = Requester { name: name.as_slice(), owner: &field };
            // The first call of this request still waits: it is granted
            // once, to the call that waits now.
            if let Some(queued) = handoff::queued_side(ctx, &name, owner, &request.id) {
                // One id serves one side, waiting or granted.
                if queued != side {
                    return Err(LockError::RequestIdTaken.into());
                }
                vouch(&mut record, requester)?;
                if let (true, Some(wait_ms)) = (may_block, wait_ms) {
                    drop((keys, record));
                    return Ok(handoff::block(ctx, &name, side, blocked(wait_ms, Some(request.clone()))));
                }
                handoff::withdraw(ctx, &name, owner, &request.id, LockError::WaitTakenOver);
            }
            let grant_of = |outcome: &Acquire| match outcome {
                Acquire::Acquired { count } => Some(Grant::count(*count)),
                Acquire::Contended { .. } => None,
            };
            once((&mut record, requester), (request.window_ms, now), run, grant_of)?
        }
    };
    if let Once::Ran(ran) = &once {
        super::STATS.acquire(matches!(ran, Acquire::Acquired { .. }));
    }
    // Read only where the reply or a refused caller's wait needs it: the
    // plain grant (Redisson's call) replies nil.
    let mut status = || lock.status(&mut keys, Some(owner), now);
    let holds = match (once, full_reply) {
        (Once::Ran(Acquire::Contended { pttl_ms }), _) => {
            // A holder refused (an upgrade, a lock-delay) is not queued
            // behind the waiters its own holds keep out.
            if let (Some(wait_ms), true) = (wait_ms, may_block) {
                let holder =
                    status().is_ok_and(|status| status.owner.is_some_and(|(reads, writes)| reads + writes > 0));
                if !holder {
                    drop(keys);
                    return block_unless_deadlocked(ctx, (&name, side), blocked(wait_ms, request));
                }
            }
            return Ok(contended_reply(ctx, pttl_ms, full_reply));
        }
        (_, false) => return Ok(RedisValue::Null),
        (Once::Ran(Acquire::Acquired { count }), true) => count,
        (Once::Replayed(grant), true) => grant.count,
    };
    // A replayed grant whose holds are gone since (the key may not even be
    // a lock now): no lease left.
    let lease_ms = match status() {
        Ok(status) if holds_of(&status, side) > 0 => status.pttl_ms,
        _ => 0,
    };
    Ok(AcquireReply { granted: true, holds, lease_ms, waited_ms: 0 }.reply(ctx))
}

/// `RRW.ACQUIRE`'s arguments, the combinations it refuses refused.
struct AcquireArgs {
    name: RedisString,
    owner: RedisString,
    side: Side,
    lease_ms: i64,
    like_script: bool,
    options: AcquireOptions,
}

impl AcquireArgs {
    fn parse(mut args: Args) -> Result<Self, RedisError> {
        let like_script = take_like_script(&mut args, 5);
        let mut args = args.into_iter().skip(1).peekable();
        let name = args.next_arg()?;
        let owner = args.next_arg()?;
        let side = parse_side(&args.next_arg()?)?;
        let lease_ms = parse_optional_lease(&mut args, &[b"WAIT", b"ID", b"PX", b"REPLY", b"LIKESCRIPT"])?;
        let options = AcquireOptions::parse(args, Blocking::Allowed)?;
        if like_script && (options.wait_ms.is_some() || options.request.is_some() || options.full_reply) {
            return Err(LockError::Syntax("LIKESCRIPT takes no WAIT, ID or REPLY").into());
        }
        Ok(Self { name, owner, side, lease_ms, like_script, options })
    }
}

/// The owner's holds of `side`.
fn holds_of(status: &Status, side: Side) -> i64 {
    match (status.owner, side) {
        (Some((reads, _)), Side::Read) => reads,
        (Some((_, writes)), Side::Write) => writes,
        (None, _) => 0,
    }
}

/// Blocks a refused caller of `side` until granted or its wait ends,
/// unless its wait would close a cycle of waits (a deadlock).
fn block_unless_deadlocked(ctx: &Context, (name, side): (&RedisString, Side), acquire: BlockedAcquire) -> RedisResult {
    if let Some(cycle) = deadlock_check::cycle_closed_by(ctx, name.as_slice(), acquire.owner.as_slice()) {
        super::STATS.deadlock();
        return Err(LockError::Deadlock(cycle).into());
    }
    Ok(handoff::block(ctx, name, side, acquire))
}

/// A refused caller's reply: the lock's PTTL.
fn contended_reply(ctx: &Context, pttl_ms: i64, full_reply: bool) -> RedisValue {
    AcquireReply { granted: false, holds: 0, lease_ms: pttl_ms, waited_ms: 0 }.short_or_full(ctx, full_reply)
}

command!(
    acquire,
    c"write deny-oom fast",
    CommandInfo {
        name: c"rrw.acquire",
        summary: c"Takes the read or write side for owner, or re-enters it; replies nil when taken, else the lock's PTTL, or with WAIT blocks until granted in arrival order (nil) or wait_ms passes. ID makes a resend reply the first grant; REPLY FULL replies granted, holds, lease_ms and waited_ms. LIKESCRIPT: a write re-entry adds the lease to the PTTL, a read one sets it, as Redisson's scripts.",
        arity: -4,
        complexity: c"O(N) where N is the number of the lock's holders (its hash is read whole); with WAIT, plus the waits the deadlock check follows",
        key_flags: raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_ACCESS | raw::REDISMODULE_CMD_KEY_UPDATE,
        args: &[
            OWNER,
            MODE,
            LEASE_MS,
            WAIT_MS,
            REQUEST,
            REPLY_FULL,
            LIKESCRIPT,
        ],
    },
);
