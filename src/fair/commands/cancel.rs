use crate::commands::args::OWNER;
use crate::commands::args::{parse_wait, Args, WAIT_MS};
use crate::commands::info::CommandInfo;
use crate::commands::registry::command;
use crate::fair::handoff::{Change, Session};
use crate::fair::FairLock;
use crate::store::{now_ms, RedisKeyspace};
use redis_module::{raw, Context, NextArg, RedisResult, RedisValue};
use rlock_protocol::DEFAULT_FAIR_WAIT_MS;

/// `RFAIR.CANCEL key owner [WAIT wait_ms]`: Redisson's give-up: owner
/// leaves the queue. Replies nil, as Redisson's script.
fn cancel(ctx: &Context, args: Args) -> RedisResult {
    let mut args = args.into_iter().skip(1);
    let name = args.next_arg()?;
    let owner = args.next_arg()?;
    let wait_ms = parse_wait(args)?.unwrap_or(DEFAULT_FAIR_WAIT_MS);
    let mut keys = RedisKeyspace::open(ctx, &name);
    let mut session = Session::open(ctx, name.as_slice());
    let cancelled =
        FairLock::new(name.as_slice()).cancel(&mut keys, &mut session.waits, owner.as_slice(), wait_ms, now_ms());
    drop(keys);
    session.close(ctx, &name, *cancelled.as_ref().unwrap_or(&Change::None));
    cancelled?;
    Ok(RedisValue::Null)
}

command!(
    cancel,
    c"write fast",
    CommandInfo {
        name: c"rfair.cancel",
        summary: c"Takes owner out of the fair lock's queue (Redisson's give-up); replies nil.",
        arity: -3,
        key_flags: raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_ACCESS,
        args: &[OWNER, WAIT_MS],
    },
);
