use crate::commands::args::Args;
use crate::commands::info::CommandInfo;
use crate::commands::registry::command;
use crate::countdown::CountDownLatch;
use crate::store::RedisKeyspace;
use redis_module::{raw, Context, NextArg, RedisResult, RedisValue};

/// `RLATCH.COUNT key`: the remaining count, 0 when missing.
fn count(ctx: &Context, args: Args) -> RedisResult {
    let mut args = args.into_iter().skip(1);
    let name = args.next_arg()?;
    args.done()?;
    let mut keys = RedisKeyspace::open_readonly(ctx, &name);
    Ok(RedisValue::Integer(CountDownLatch::new(name.as_slice()).count(&mut keys)?))
}

command!(
    count,
    c"readonly fast",
    CommandInfo {
        name: c"rlatch.count",
        summary: c"Replies the latch's remaining count (0 when it does not exist).",
        arity: 2,
        complexity: c"O(1)",
        key_flags: raw::REDISMODULE_CMD_KEY_RO | raw::REDISMODULE_CMD_KEY_ACCESS,
        args: &[],
    },
);
