use super::{script_clock, ID, KEY_FLAGS, SCRIPT};
use crate::commands::args::Args;
use crate::commands::info::CommandInfo;
use crate::commands::registry::command;
use crate::permit_semaphore::PermitSemaphore;
use crate::store::{lua_number_text, now_ms, RedisKeyspace};
use redis_module::{Context, RedisError, RedisResult, RedisValue};

/// `RPSEM.LEASE key id [AT now_ms [VIA PUBLISH|SPUBLISH]]`: the
/// milliseconds left on a held permit, -1 when it never expires, 0 when it
/// is not held. With `AT` it is Redisson's script on that clock (a
/// rewritten call).
fn lease(ctx: &Context, args: Args) -> RedisResult {
    let mut args = args;
    let (at, via) = script_clock(&mut args, 3)?;
    let [_, name, id] = &args[..] else { return Err(RedisError::WrongArity) };
    let mut keys = RedisKeyspace::open(ctx, name).via(via);
    let semaphore = PermitSemaphore::new(name.as_slice()).like_redissons_scripts(lua_number_text);
    Ok(RedisValue::Integer(match at {
        None => semaphore.lease(&mut keys, now_ms(), id.as_slice())?,
        Some(now) => semaphore.lease_like_script(&mut keys, now, id.as_slice())?,
    }))
}

command!(
    lease,
    c"write fast",
    CommandInfo {
        name: c"rpsem.lease",
        summary: c"Replies the milliseconds left on a held permit, -1 when it never expires, 0 when it is not held.",
        arity: -3,
        complexity:
            c"O(log(N) + M) where N is the number of taken permits and M the number of expired permits reclaimed",
        key_flags: KEY_FLAGS,
        args: &[ID, SCRIPT],
    },
);
