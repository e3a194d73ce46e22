use super::semaphore;
use crate::commands::args::{is_keyword, parse_integer, take_via, Args, LIKESCRIPT, VIA};
use crate::commands::info::{Arg, ArgKind, CommandInfo};
use crate::commands::registry::command;
use crate::semaphore::{Announce, Semaphore};
use crate::store::{lua_number_text, RedisKeyspace, Via};
use redis_module::{raw, Context, NextArg, RedisResult, RedisValue};

/// `RSEM.ADDPERMITS key delta [VIA PUBLISH|SPUBLISH | LIKESCRIPT]`: adds
/// `delta` (may be negative) to the permits, keeping the TTL, and
/// publishes the new count; nil. With `VIA` it is Redisson's script: the
/// sum in Lua's numbers (a count Lua reads, as `1.5`), SET without the
/// TTL, published with that command; LIKESCRIPT is its script before
/// 3.16.2, which publishes nothing.
fn add_permits(ctx: &Context, mut args: Args) -> RedisResult {
    let via = take_via(&mut args, 3)?;
    let unpublished = via == Via::Default && args.len() == 4 && is_keyword(&args[3], b"LIKESCRIPT");
    if unpublished {
        args.truncate(3);
    }
    let mut args = args.into_iter().skip(1);
    let name = args.next_arg()?;
    let delta = parse_integer(&args.next_arg()?, "delta")?;
    args.done()?;
    let mut keys = RedisKeyspace::open(ctx, &name).via(via);
    if unpublished {
        Semaphore::new(name.as_slice()).add_permits_like_script(
            &mut keys,
            delta,
            lua_number_text,
            Announce::Nothing,
        )?;
    } else {
        semaphore(&name, via).add_permits(&mut keys, delta)?;
    }
    Ok(RedisValue::Null)
}

command!(
    add_permits,
    c"write deny-oom fast",
    CommandInfo {
        name: c"rsem.addpermits",
        summary: c"Adds delta (may be negative) to the semaphore's permits, keeping its TTL, and publishes the new count; nil.",
        arity: -3,
        complexity: c"O(1)",
        key_flags: raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_ACCESS | raw::REDISMODULE_CMD_KEY_UPDATE,
        args: &[
            Arg { name: c"delta", kind: ArgKind::Integer, optional: false, token: None },
            // Redisson's script (VIA) or its older form (LIKESCRIPT), not both.
            Arg {
                name: c"form",
                kind: ArgKind::OneOf(&[Arg { optional: false, ..VIA }, Arg { optional: false, ..LIKESCRIPT }]),
                optional: true,
                token: None,
            },
        ],
    },
);
