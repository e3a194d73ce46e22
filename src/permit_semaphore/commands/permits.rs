use super::{key_only, script_clock, KEY_FLAGS, SCRIPT};
use crate::commands::args::Args;
use crate::commands::info::CommandInfo;
use crate::commands::registry::command;
use crate::permit_semaphore::PermitSemaphore;
use crate::store::{lua_number_text, now_ms, RedisKeyspace};
use redis_module::{Context, RedisResult, RedisValue};

/// `RPSEM.PERMITS key [AT now_ms [VIA PUBLISH|SPUBLISH]]`: the permits in all: available plus taken, once the expired permits are reclaimed.
/// With `AT` it is Redisson's script on that clock (a rewritten call).
fn permits(ctx: &Context, args: Args) -> RedisResult {
    let mut args = args;
    let (at, via) = script_clock(&mut args, 2)?;
    key_only(&args)?;
    let name = &args[1];
    let mut keys = RedisKeyspace::open(ctx, name).via(via);
    let semaphore = PermitSemaphore::new(name.as_slice()).like_redissons_scripts(lua_number_text);
    Ok(RedisValue::Integer(match at {
        None => semaphore.permits(&mut keys, now_ms())?,
        Some(now) => semaphore.permits_like_script(&mut keys, now)?,
    }))
}

command!(
    permits,
    c"write fast",
    CommandInfo {
        name: c"rpsem.permits",
        summary: c"Reclaims the expired permits, then replies the permits in all: available plus taken.",
        arity: -2,
        complexity:
            c"O(log(N) + M) where N is the number of taken permits and M the number of expired permits reclaimed",
        key_flags: KEY_FLAGS,
        args: &[SCRIPT],
    },
);
