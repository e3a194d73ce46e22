use crate::commands::args::{parse_release_tail, Args, LATCH, LEASE_MS, OWNER};
use crate::commands::info::CommandInfo;
use crate::commands::registry::command;
use crate::commands::reply;
use crate::fair::handoff::{Change, Session};
use crate::fair::FairLock;
use crate::store::{now_ms, on_one_node, RedisKeyspace};
use redis_module::{raw, Context, NextArg, RedisResult};

/// `RFAIR.RELEASE key owner [lease_ms] [ID request_id [PX latch_ms]]`: nil
/// when owner does not hold the lock, 0 when one reentry level was
/// released, 1 when released (also when the lock was already gone, as
/// Redisson's script); the head waiter is told on its own channel.
fn release(ctx: &Context, args: Args) -> RedisResult {
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
        args: &[OWNER, LEASE_MS, LATCH],
    },
);
