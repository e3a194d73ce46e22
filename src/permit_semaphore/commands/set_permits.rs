use super::KEY_FLAGS;
use crate::commands::args::{is_keyword, parse_non_negative, take_via, Args, VIA};
use crate::commands::info::{Arg, ArgKind, CommandInfo};
use crate::commands::registry::command;
use crate::permit_semaphore::PermitSemaphore;
use crate::store::{lua_number_text, now_ms, RedisKeyspace, Via};
use redis_module::{Context, NextArg, RedisResult, RedisValue};

/// `RPSEM.SETPERMITS key permits [[ALWAYS] VIA PUBLISH|SPUBLISH]`:
/// available plus taken becomes `permits` (the available count may go
/// negative), published; nil. With `VIA` it is Redisson's script (a
/// rewritten call): no reclaim, the count read as Lua's `tonumber`,
/// published with that command; with `ALWAYS` too, its text of 3.19.1 ..
/// 3.23.3, which writes (INCRBY 0) even when the count is right.
fn set_permits(ctx: &Context, mut args: Args) -> RedisResult {
    let via = take_via(&mut args, 3)?;
    let always = via != Via::Default && args.len() == 4 && is_keyword(&args[3], b"ALWAYS");
    if always {
        args.truncate(3);
    }
    let mut args = args.into_iter().skip(1);
    let name = args.next_arg()?;
    let permits = parse_non_negative(&args.next_arg()?, "permits")?;
    args.done()?;
    let mut keys = RedisKeyspace::open(ctx, &name).via(via);
    let semaphore = PermitSemaphore::new(name.as_slice()).like_redissons_scripts(lua_number_text);
    if via == Via::Default {
        semaphore.set_permits(&mut keys, now_ms(), permits)?;
    } else {
        semaphore.set_permits_like_script(&mut keys, permits, always)?;
    }
    Ok(RedisValue::Null)
}

command!(
    set_permits,
    c"write deny-oom fast",
    CommandInfo {
        name: c"rpsem.setpermits",
        summary: c"Makes the permits in all (available plus taken) this many and publishes it; nil.",
        arity: -3,
        complexity:
            c"O(log(N) + M) where N is the number of taken permits and M the number of expired permits reclaimed",
        key_flags: KEY_FLAGS,
        args: &[
            Arg { name: c"permits", kind: ArgKind::Integer, optional: false, token: None },
            Arg::block(
                c"script",
                &[
                    Arg { name: c"always", kind: ArgKind::PureToken, optional: true, token: Some(c"ALWAYS") },
                    Arg { optional: false, ..VIA },
                ],
            ),
        ],
    },
);
