use super::latch;
use crate::commands::args::{take_channel, take_via, Args, CHANNEL, VIA};
use crate::commands::info::CommandInfo;
use crate::commands::registry::command;
use crate::store::RedisKeyspace;
use redis_module::{raw, Context, NextArg, RedisResult, RedisValue};

/// `RLATCH.DELETE key [VIA PUBLISH|SPUBLISH] [CHANNEL channel]`: deletes the latch and
/// publishes `0`, so waiters see it open; 1, or 0 when there was none. With
/// `VIA` it is Redisson's script: any key is deleted, and `1` is published
/// with that command.
fn delete(ctx: &Context, mut args: Args) -> RedisResult {
    let channel = take_channel(&mut args, 2);
    let via = take_via(&mut args, 2)?;
    let mut args = args.into_iter().skip(1);
    let name = args.next_arg()?;
    args.done()?;
    let mut keys = RedisKeyspace::open(ctx, &name).via(via).named_channel(channel.as_ref());
    let deleted = latch(&name, via, channel.as_ref())?.delete(&mut keys)?;
    Ok(RedisValue::Integer(i64::from(deleted)))
}

command!(
    delete,
    c"write fast getchannels-api",
    CommandInfo {
        name: c"rlatch.delete",
        summary: c"Deletes the count-down latch and publishes 0 (open); replies 1, or 0 when there was none.",
        arity: -2,
        complexity: c"O(1)",
        key_flags: raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_DELETE,
        args: &[VIA, CHANNEL],
    },
);
