use super::latch;
use crate::commands::args::{take_channel, take_via, Args, CHANNEL, VIA};
use crate::commands::info::CommandInfo;
use crate::commands::registry::command;
use crate::store::RedisKeyspace;
use redis_module::{raw, Context, NextArg, RedisResult, RedisValue};

/// `RLATCH.COUNTDOWN key [VIA PUBLISH|SPUBLISH] [CHANNEL channel]`: one less; at 0 the latch
/// is deleted and `0` is published (it opens). A missing latch is left
/// alone; with `VIA` it is Redisson's script: DECR to -1 and DEL, and `0`
/// is published with that command.
fn count_down(ctx: &Context, mut args: Args) -> RedisResult {
    let channel = take_channel(&mut args, 2);
    let via = take_via(&mut args, 2)?;
    let mut args = args.into_iter().skip(1);
    let name = args.next_arg()?;
    args.done()?;
    let mut keys = RedisKeyspace::open(ctx, &name).via(via).named_channel(channel.as_ref());
    latch(&name, via, channel.as_ref())?.count_down(&mut keys)?;
    Ok(RedisValue::Null)
}

command!(
    count_down,
    c"write fast getchannels-api",
    CommandInfo {
        name: c"rlatch.countdown",
        summary: c"Counts the latch down by one; at 0 deletes it and publishes 0 (open); replies nil.",
        arity: -2,
        complexity: c"O(1)",
        // Updates or deletes: no single logical-operation flag applies.
        key_flags: raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_ACCESS,
        args: &[VIA, CHANNEL],
    },
);
