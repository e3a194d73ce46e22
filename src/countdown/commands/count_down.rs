use crate::commands::info::CommandInfo;
use crate::commands::registry::command;
use crate::countdown::CountDownLatch;
use crate::store::RedisKeyspace;
use redis_module::{raw, Context, NextArg, RedisResult, RedisString, RedisValue};

/// `RLATCH.COUNTDOWN key`: one less; at 0 the latch is deleted and `0` is
/// published (it opens). A missing latch is left alone. Replies nil.
fn count_down(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut args = args.into_iter().skip(1);
    let name = args.next_arg()?;
    args.done()?;
    let mut keys = RedisKeyspace::open(ctx, &name);
    CountDownLatch::new(name.as_slice()).count_down(&mut keys)?;
    Ok(RedisValue::Null)
}

command!(
    count_down,
    c"write fast",
    CommandInfo {
        name: c"rlatch.countdown",
        summary: c"Counts the latch down by one; at 0 deletes it and publishes 0 (open); replies nil.",
        arity: 2,
        // Updates or deletes: no single logical-operation flag applies.
        key_flags: raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_ACCESS,
        args: &[],
    },
);
