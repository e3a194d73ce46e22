use super::KEY_FLAGS;
use crate::commands::args::{parse_integer, take_via, Args, VIA};
use crate::commands::info::{Arg, ArgKind, CommandInfo};
use crate::commands::registry::command;
use crate::permit_semaphore::PermitSemaphore;
use crate::semaphore::{Announce, Semaphore};
use crate::store::{lua_number_text, now_ms, RedisKeyspace, Via};
use redis_module::{Context, NextArg, RedisResult, RedisValue};

/// `RPSEM.ADDPERMITS key delta [VIA PUBLISH|SPUBLISH]`: adds `delta` (may
/// be negative) to the available permits, keeping the TTL; publishes
/// `delta` when positive; nil. With `VIA` it is Redisson's script (a
/// rewritten call): no reclaim, the sum in Lua's numbers, SET without the
/// TTL, `delta` published with that command when positive.
fn add_permits(ctx: &Context, mut args: Args) -> RedisResult {
    let via = take_via(&mut args, 3)?;
    let mut args = args.into_iter().skip(1);
    let name = args.next_arg()?;
    let delta = parse_integer(&args.next_arg()?, "delta")?;
    args.done()?;
    let mut keys = RedisKeyspace::open(ctx, &name).via(via);
    if via == Via::Default {
        PermitSemaphore::new(name.as_slice()).add_permits(&mut keys, now_ms(), delta)?;
    } else {
        let semaphore = Semaphore::new(name.as_slice());
        semaphore.add_permits_like_script(&mut keys, delta, lua_number_text, Announce::PositiveDelta)?;
    }
    Ok(RedisValue::Null)
}

command!(
    add_permits,
    c"write deny-oom fast",
    CommandInfo {
        name: c"rpsem.addpermits",
        summary: c"Adds delta (may be negative) to the available permits, keeping the TTL, and publishes delta when positive; nil.",
        arity: -3,
        complexity: c"O(log(N) + M) where N is the number of taken permits and M the number of expired permits reclaimed",
        key_flags: KEY_FLAGS,
        args: &[Arg { name: c"delta", kind: ArgKind::Integer, optional: false, token: None }, VIA],
    },
);
