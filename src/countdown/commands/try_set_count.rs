use super::latch;
use crate::commands::args::parse_non_negative;
use crate::commands::args::{take_channel, take_via, Args, CHANNEL, VIA};
use crate::commands::info::{Arg, ArgKind, CommandInfo};
use crate::commands::registry::command;
use crate::store::RedisKeyspace;
use redis_module::{raw, Context, NextArg, RedisResult, RedisValue};

/// `RLATCH.TRYSETCOUNT key count [VIA PUBLISH|SPUBLISH] [CHANNEL channel]`: sets a missing
/// latch to `count` (no TTL) and publishes `1`; 1, or 0 when the latch
/// exists (nothing changes). With `VIA` it is Redisson's script: any key
/// counts as the latch, and `1` is published with that command.
fn try_set_count(ctx: &Context, mut args: Args) -> RedisResult {
    let channel = take_channel(&mut args, 3);
    let via = take_via(&mut args, 3)?;
    let mut args = args.into_iter().skip(1);
    let name = args.next_arg()?;
    let count = parse_non_negative(&args.next_arg()?, "count")?;
    args.done()?;
    let mut keys = RedisKeyspace::open(ctx, &name).via(via).named_channel(channel.as_ref());
    let set = latch(&name, via, channel.as_ref())?.try_set_count(&mut keys, count)?;
    Ok(RedisValue::Integer(i64::from(set)))
}

command!(
    try_set_count,
    c"write deny-oom fast getchannels-api",
    CommandInfo {
        name: c"rlatch.trysetcount",
        summary: c"Sets a count-down latch that does not exist yet and publishes 1; replies 1, else 0.",
        arity: -3,
        complexity: c"O(1)",
        key_flags: raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_ACCESS | raw::REDISMODULE_CMD_KEY_INSERT,
        args: &[Arg { name: c"count", kind: ArgKind::Integer, optional: false, token: None }, VIA, CHANNEL],
    },
);
