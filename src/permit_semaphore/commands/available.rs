use super::{key_only, script_clock, KEY_FLAGS, SCRIPT};
use crate::commands::args::Args;
use crate::commands::info::CommandInfo;
use crate::commands::registry::command;
use crate::permit_semaphore::script::ScriptCount;
use crate::permit_semaphore::PermitSemaphore;
use crate::store::{lua_number_text, now_ms, RedisKeyspace};
use redis_module::{Context, RedisResult, RedisValue};

/// `RPSEM.AVAILABLE key [AT now_ms [VIA PUBLISH|SPUBLISH]]`: the available permits (0 when the semaphore does not exist), once the expired permits are reclaimed.
/// With `AT` it is Redisson's script on that clock (a rewritten call).
fn available(ctx: &Context, args: Args) -> RedisResult {
    let mut args = args;
    let (at, via) = script_clock(&mut args, 2)?;
    key_only(&args)?;
    let name = &args[1];
    let mut keys = RedisKeyspace::open(ctx, name).via(via);
    let semaphore = PermitSemaphore::new(name.as_slice()).like_redissons_scripts(lua_number_text);
    Ok(match at {
        None => RedisValue::Integer(semaphore.available(&mut keys, now_ms())?),
        Some(now) => match semaphore.available_like_script(&mut keys, now)? {
            ScriptCount::Integer(count) => RedisValue::Integer(count),
            ScriptCount::Stored(stored) => RedisValue::StringBuffer(stored),
        },
    })
}

command!(
    available,
    c"write fast",
    CommandInfo {
        name: c"rpsem.available",
        summary:
            c"Reclaims the expired permits, then replies the available permits (0 when the semaphore does not exist).",
        arity: -2,
        complexity:
            c"O(log(N) + M) where N is the number of taken permits and M the number of expired permits reclaimed",
        key_flags: KEY_FLAGS,
        args: &[SCRIPT],
    },
);
