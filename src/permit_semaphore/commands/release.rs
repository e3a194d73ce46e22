use super::{ids, script_clock, AT, IDS, KEY_FLAGS};
use crate::commands::args::{is_keyword, Args, VIA};
use crate::commands::info::{Arg, ArgKind, CommandInfo};
use crate::commands::registry::command;
use crate::permit_semaphore::{PermitSemaphore, Release};
use crate::store::{lua_number_text, now_ms, RedisKeyspace};
use redis_module::{Context, RedisResult, RedisValue};

/// `RPSEM.RELEASE key id [id ...] [[ALL|ANY] AT now_ms [VIA PUBLISH|SPUBLISH]]`:
/// one id: 1 released, 0 not held, -1 its lease had run out (returned
/// now). Several: all or nothing, the number released, or 0. With `AT` it
/// is Redisson's script on that clock (a rewritten call): release(id), or
/// with `ALL` (after two ids or more: `id ALL` is the id `ALL`) release(ids)
/// of 3.41.0 on (all or none), with `ANY` the one before (those held).
fn release(ctx: &Context, args: Args) -> RedisResult {
    let mut args = args;
    let (at, via) = script_clock(&mut args, 3)?;
    // Redisson's release(ids) texts, even of one id: `id [id ...] ALL|ANY`.
    let marked =
        |keyword: &[u8]| at.is_some() && args.len() > 3 && args.last().is_some_and(|arg| is_keyword(arg, keyword));
    let (all, any) = (marked(b"ALL"), marked(b"ANY"));
    if all || any {
        args.pop();
    }
    let name = &args[1];
    let given = ids(&args[2..]);
    let semaphore = PermitSemaphore::new(name.as_slice()).like_redissons_scripts(lua_number_text);
    let mut keys = RedisKeyspace::open(ctx, name).via(via);
    Ok(RedisValue::Integer(match (&given[..], at) {
        ([id], None) => match semaphore.release(&mut keys, now_ms(), id)? {
            Release::Returned => 1,
            Release::NotHeld => 0,
            Release::Lapsed => -1,
        },
        (many, None) => semaphore.release_all(&mut keys, now_ms(), many)?,
        (many, Some(now)) if any => semaphore.release_any_like_script(&mut keys, now, many)?,
        ([id], Some(now)) if !all => semaphore.release_like_script(&mut keys, now, id)?,
        (many, Some(now)) => semaphore.release_all_like_script(&mut keys, now, many)?,
    }))
}

/// `[ALL|ANY]`: with `AT`, Redisson's release(ids) texts.
const ALL_OR_ANY: Arg = Arg {
    name: c"together",
    kind: ArgKind::OneOf(&[Arg::keyword(c"all", c"ALL"), Arg::keyword(c"any", c"ANY")]),
    optional: true,
    token: None,
};

command!(
    release,
    c"write",
    CommandInfo {
        name: c"rpsem.release",
        summary: c"Returns permits (id [id ...]) and publishes (one id: the new count if positive; several: how many): one id: 1, 0 not held, -1 its lease had run out (returned now); several: all or none, how many, else 0.",
        arity: -3,
        complexity: c"O(log(N) + M) where N is the number of taken permits and M the number of expired permits reclaimed, plus the ids given",
        key_flags: KEY_FLAGS,
        args: &[IDS, Arg::block(c"script", &[ALL_OR_ANY, AT, VIA])],
    },
);
