use super::{parse_side, MODE};
use crate::commands::args::{parse_optional_lease, AcquireOptions, Blocking, LEASE_MS, OWNER, REPLY_FULL, REQUEST};
use crate::commands::info::CommandInfo;
use crate::commands::registry::command;
use crate::commands::reply::AcquireReply;
use crate::lock::acquire_once::{once, Grant, Once, Requester};
use crate::rwlock::{check_owner, Acquire, ReadWriteLock, Side};
use crate::store::{now_ms, RedisKeyspace, RedisLatch};
use crate::term;
use redis_module::{raw, Context, NextArg, RedisResult, RedisString, RedisValue};
use rlock_protocol::rwlock_write_field;

/// `RRW.ACQUIRE key owner READ|WRITE [lease_ms] [ID request_id [PX
/// window_ms]] [REPLY FULL]`: nil when taken or re-entered, else the
/// lock's PTTL. `ID` and `REPLY FULL` as `RLOCK.ACQUIRE`'s (`holds`: the
/// owner's holds of that side; `lease_ms`: the lock's PTTL).
fn acquire(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut args = args.into_iter().skip(1).peekable();
    let name = args.next_arg()?;
    let owner = args.next_arg()?;
    let side = parse_side(&args.next_arg()?)?;
    let lease_ms = parse_optional_lease(&mut args)?;
    let AcquireOptions { request, full_reply, .. } = AcquireOptions::parse(args, Blocking::NotOffered)?;
    let now = now_ms();
    let lock = ReadWriteLock::new(name.as_slice());
    let owner = owner.as_slice();
    // Before a record is read: a replay must not serve a reserved owner.
    check_owner(owner)?;
    let mut keys = RedisKeyspace::open(ctx, &name);
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
    let holds = match (once, full_reply) {
        (Once::Ran(Acquire::Contended { pttl_ms }), false) => return Ok(RedisValue::Integer(pttl_ms)),
        (Once::Ran(Acquire::Contended { pttl_ms }), true) => {
            return Ok(AcquireReply { granted: false, holds: 0, lease_ms: pttl_ms, waited_ms: 0 }.value())
        }
        (_, false) => return Ok(RedisValue::Null),
        (Once::Ran(Acquire::Acquired { count }), true) => count,
        (Once::Replayed(grant), true) => grant.count,
    };
    // A replayed grant whose holds are gone since (the key may not even be
    // a lock now): no lease left.
    let lease_ms = match lock.status(&mut keys, Some(owner), now) {
        Ok(status)
            if status.owner.is_some_and(|(reads, writes)| if side == Side::Read { reads } else { writes } > 0) =>
        {
            status.pttl_ms
        }
        _ => 0,
    };
    Ok(AcquireReply { granted: true, holds, lease_ms, waited_ms: 0 }.value())
}

command!(
    acquire,
    c"write deny-oom fast",
    CommandInfo {
        name: c"rrw.acquire",
        summary: c"Takes the read or write side for owner, or re-enters it; replies nil when taken, else the lock's PTTL. ID makes a resend reply the first grant; REPLY FULL replies granted, holds, lease_ms and waited_ms.",
        arity: -4,
        key_flags: raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_ACCESS | raw::REDISMODULE_CMD_KEY_UPDATE,
        args: &[OWNER, MODE, LEASE_MS, REQUEST, REPLY_FULL],
    },
);
