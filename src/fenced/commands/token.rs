use crate::commands::args::Args;
use crate::commands::info::CommandInfo;
use crate::commands::registry::command;
use crate::fenced;
use crate::store::RedisKeyspace;
use redis_module::{raw, Context, NextArg, RedisResult, RedisValue};

/// `RFENCED.TOKEN key`: the last token given for the lock, 0 when none.
fn token(ctx: &Context, args: Args) -> RedisResult {
    let mut args = args.into_iter().skip(1);
    let name = args.next_arg()?;
    args.done()?;
    let mut keys = RedisKeyspace::open_readonly(ctx, &name);
    Ok(RedisValue::Integer(fenced::token(&mut keys, name.as_slice())?))
}

command!(
    token,
    c"readonly fast",
    CommandInfo {
        name: c"rfenced.token",
        summary: c"Replies the last fencing token given for the lock (0 when none).",
        arity: 2,
        complexity: c"O(1)",
        key_flags: raw::REDISMODULE_CMD_KEY_RO | raw::REDISMODULE_CMD_KEY_ACCESS,
        args: &[],
    },
);
