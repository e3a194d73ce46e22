use super::{script_clock, ID, KEY_FLAGS, LEASE, SCRIPT};
use crate::commands::args::{parse_non_negative, Args};
use crate::commands::info::CommandInfo;
use crate::commands::registry::command;
use crate::permit_semaphore::{Lease, PermitSemaphore};
use crate::store::{lua_number_text, now_ms, RedisKeyspace};
use redis_module::{Context, RedisError, RedisResult, RedisValue};

/// `RPSEM.UPDATELEASE key id lease_ms|-1 [AT now_ms [VIA PUBLISH|SPUBLISH]]`:
/// a held permit's lease starts again from now: 1, or 0 when the permit is
/// not held. With `AT` it is Redisson's script on that clock (a rewritten
/// call), and the lease is its absolute end (the permit's score, Unix ms).
fn update_lease(ctx: &Context, args: Args) -> RedisResult {
    let mut args = args;
    let (at, via) = script_clock(&mut args, 4)?;
    let [_, name, id, lease] = &args[..] else { return Err(RedisError::WrongArity) };
    let mut keys = RedisKeyspace::open(ctx, name).via(via);
    let semaphore = PermitSemaphore::new(name.as_slice()).like_redissons_scripts(lua_number_text);
    let updated = match at {
        None => semaphore.update_lease(&mut keys, now_ms(), id.as_slice(), Lease::parse(lease.as_slice())?)?,
        Some(now) => {
            let until = parse_non_negative(lease, "lease end")?;
            semaphore.update_lease_like_script(&mut keys, now, id.as_slice(), until)?
        }
    };
    Ok(RedisValue::Integer(i64::from(updated)))
}

command!(
    update_lease,
    c"write fast",
    CommandInfo {
        name: c"rpsem.updatelease",
        summary: c"Starts a held permit's lease again from now (-1: never expires): 1, or 0 when it is not held.",
        arity: -4,
        complexity:
            c"O(log(N) + M) where N is the number of taken permits and M the number of expired permits reclaimed",
        key_flags: KEY_FLAGS,
        args: &[ID, LEASE, SCRIPT],
    },
);
