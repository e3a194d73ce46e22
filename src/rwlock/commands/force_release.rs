use super::parse_side;
use crate::commands::args::{is_keyword, take_via, Args, VIA};
use crate::commands::info::{Arg, CommandInfo};
use crate::commands::registry::command;
use crate::rwlock::ReadWriteLock;
use crate::store::RedisKeyspace;
use redis_module::{raw, Context, NextArg, RedisResult, RedisValue};

/// `RRW.FORCERELEASE key [READ|WRITE] [VIA PUBLISH|SPUBLISH]`: deletes the
/// lock when it is held that way (either way without a mode); 1 when
/// deleted, else 0. `VIA` publishes with that one command, as Redisson's
/// script does.
fn force_release(ctx: &Context, mut args: Args) -> RedisResult {
    let via = take_via(&mut args, 2)?;
    let mut args = args.into_iter().skip(1).peekable();
    let name = args.next_arg()?;
    // A VIA left (without its value) is no side: a syntax error below.
    let side = args.next_if(|arg| !is_keyword(arg, b"VIA")).map(|arg| parse_side(&arg)).transpose()?;
    args.done()?;
    let mut keys = RedisKeyspace::open(ctx, &name).via(via);
    let released = ReadWriteLock::new(name.as_slice()).force_release(&mut keys, side)?;
    Ok(RedisValue::Integer(i64::from(released)))
}

command!(
    force_release,
    c"write",
    CommandInfo {
        name: c"rrw.forcerelease",
        summary:
            c"Deletes the read-write lock whoever holds it (only when held that way, given a mode); replies 1, or 0.",
        arity: -2,
        complexity: c"O(N) where N is the number of the lock's holders (its hash is deleted; read holds' timeout keys are left to expire)",
        key_flags: raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_DELETE,
        args: &[Arg { optional: true, ..super::MODE }, VIA],
    },
);
