use super::{ids, ID, KEY_FLAGS};
use crate::commands::info::CommandInfo;
use crate::commands::registry::command;
use crate::permit_semaphore::{PermitSemaphore, Release};
use crate::store::{now_ms, RedisKeyspace};
use redis_module::{Context, NextArg, RedisResult, RedisString, RedisValue};

/// `RPSEM.RELEASE key id [id ...]`: one id: 1 released, 0 not held, -1
/// its lease had run out (returned now). Several: all or nothing, the
/// number released, or 0.
fn release(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut args = args.into_iter().skip(1);
    let name = args.next_arg()?;
    let given: Vec<RedisString> = args.collect();
    let semaphore = PermitSemaphore::new(name.as_slice());
    let mut keys = RedisKeyspace::open(ctx, &name);
    Ok(RedisValue::Integer(match &ids(&given)[..] {
        [id] => match semaphore.release(&mut keys, now_ms(), id)? {
            Release::Returned => 1,
            Release::NotHeld => 0,
            Release::Lapsed => -1,
        },
        many => semaphore.release_all(&mut keys, now_ms(), many)?,
    }))
}

command!(
    release,
    c"write",
    CommandInfo {
        name: c"rpsem.release",
        summary: c"Returns permits (id [id ...]) and publishes (one id: the new count if positive; several: how many): one id: 1, 0 not held, -1 its lease had run out (returned now); several: all or none, how many, else 0.",
        arity: -3,
        key_flags: KEY_FLAGS,
        args: &[ID],
    },
);
