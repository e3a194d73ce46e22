use crate::commands::args::Args;
use crate::commands::info::CommandInfo;
use crate::commands::registry::command;
use crate::semaphore::Semaphore;
use crate::store::RedisKeyspace;
use redis_module::{raw, Context, NextArg, RedisResult, RedisValue};

/// `RSEM.AVAILABLE key`: the available permits, 0 when missing.
fn available(ctx: &Context, args: Args) -> RedisResult {
    let mut args = args.into_iter().skip(1);
    let name = args.next_arg()?;
    args.done()?;
    let mut keys = RedisKeyspace::open_readonly(ctx, &name);
    Ok(RedisValue::Integer(Semaphore::new(name.as_slice()).available(&mut keys)?))
}

command!(
    available,
    c"readonly fast",
    CommandInfo {
        name: c"rsem.available",
        summary: c"Replies the semaphore's available permits (0 when it does not exist).",
        arity: 2,
        complexity: c"O(1)",
        key_flags: raw::REDISMODULE_CMD_KEY_RO | raw::REDISMODULE_CMD_KEY_ACCESS,
        args: &[],
    },
);
