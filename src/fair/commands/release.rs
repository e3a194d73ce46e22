use crate::commands::args::{is_keyword, parse_release_tail, take_trailing, Args, LATCH, LEASE_MS, OWNER};
use crate::commands::info::{Arg, ArgKind, CommandInfo};
use crate::commands::registry::command;
use crate::commands::reply;
use crate::error::LockError;
use crate::fair::handoff::{Change, Session};
use crate::fair::FairLock;
use crate::store::{now_ms, on_one_node, RedisKeyspace};
use redis_module::{raw, Context, NextArg, RedisResult};

/// `RFAIR.RELEASE key owner [lease_ms] [ID request_id [PX latch_ms]]
/// [MISSING NOTHELD]`: nil when owner does not hold the lock, 0 when one
/// reentry level was released, 1 when released (also when the lock was
/// already gone, as Redisson's script, which records 1 in the latch; with
/// `MISSING NOTHELD` that is nil, nothing recorded); the head waiter is
/// told on its own channel.
fn release(ctx: &Context, mut args: Args) -> RedisResult {
    let not_held = match take_trailing(&mut args, 3, b"MISSING") {
        None => false,
        Some(arg) if is_keyword(&arg, b"NOTHELD") => true,
        Some(_) => return Err(LockError::Syntax("MISSING takes NOTHELD").into()),
    };
    let mut args = args.into_iter().skip(1).peekable();
    let name = args.next_arg()?;
    let owner = args.next_arg()?;
    let now = now_ms();
    let (lease_ms, latch) = parse_release_tail(args, name.as_slice(), now, &[b"ID", b"PX"])?;
    if let Some(latch) = &latch {
        on_one_node(ctx, name.as_slice(), latch.key())?;
    }
    let mut keys = RedisKeyspace::open(ctx, &name);
    let mut session = Session::open(ctx, name.as_slice());
    let lock = FairLock::new(name.as_slice());
    let lock = if not_held { lock.missing_not_held() } else { lock };
    let released = lock.release(&mut keys, &mut session.waits, owner.as_slice(), (lease_ms, latch.as_ref()), now);
    let change = match released {
        Ok((released, waiters_left)) => Change::of_release(released, waiters_left),
        Err(_) => Change::None,
    };
    drop(keys);
    session.close(ctx, &name, change);
    Ok(reply::release(released?.0))
}

command!(
    release,
    c"write fast",
    CommandInfo {
        name: c"rfair.release",
        summary: c"Releases one hold of owner and wakes the head waiter; replies 1 when released, 0 when still held, nil when not held.",
        arity: -3,
        complexity: c"O(N) where N is the number of callers queued on the fair lock",
        key_flags: raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_DELETE,
        args: &[OWNER, LEASE_MS, LATCH, MISSING],
    },
);

/// `[MISSING NOTHELD]`
const MISSING: Arg = Arg {
    name: c"missing_reply",
    kind: ArgKind::OneOf(&[Arg::keyword(c"notheld", c"NOTHELD")]),
    optional: true,
    token: Some(c"MISSING"),
};
