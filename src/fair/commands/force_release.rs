use crate::commands::args::Args;
use crate::commands::info::CommandInfo;
use crate::commands::registry::command;
use crate::fair::handoff::{Change, Session};
use crate::fair::FairLock;
use crate::store::{now_ms, RedisKeyspace};
use redis_module::{raw, Context, NextArg, RedisResult, RedisValue};

/// `RFAIR.FORCERELEASE key`: deletes the lock whoever holds it and wakes
/// the head waiter; 1 when a lock was deleted, else 0.
fn force_release(ctx: &Context, args: Args) -> RedisResult {
    let mut args = args.into_iter().skip(1);
    let name = args.next_arg()?;
    args.done()?;
    let mut keys = RedisKeyspace::open(ctx, &name);
    let mut session = Session::open(ctx, name.as_slice());
    let released = FairLock::new(name.as_slice()).force_release(&mut keys, &mut session.waits, now_ms());
    let waiters_left = matches!(released, Ok((_, true)));
    drop(keys);
    session.close(ctx, &name, if waiters_left { Change::HeadTold } else { Change::None });
    Ok(RedisValue::Integer(i64::from(released?.0)))
}

command!(
    force_release,
    c"write",
    CommandInfo {
        name: c"rfair.forcerelease",
        summary:
            c"Deletes the fair lock whoever holds it and wakes the head waiter; replies 1, or 0 when there was none.",
        arity: 2,
        complexity: c"O(N) where N is the number of callers queued on the fair lock",
        key_flags: raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_DELETE,
        args: &[],
    },
);
