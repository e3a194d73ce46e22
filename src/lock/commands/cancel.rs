use crate::commands::args::{parse_cancel, Args, OWNER, REQUEST_ID};
use crate::commands::info::CommandInfo;
use crate::commands::registry::command;
use crate::error::LockError;
use crate::handoff::blocking;
use redis_module::{raw, Context, RedisResult, RedisValue};

/// `RLOCK.CANCEL key owner request_id`: ends the blocked `RLOCK.ACQUIRE …
/// WAIT … ID request_id` of `owner` on `key` while it still waits (it
/// replies an error, and nothing is granted to it); 1, or 0 when no such
/// call waits. `CLIENT UNBLOCK` is refused for these calls; this names the
/// wait from any connection.
fn cancel(ctx: &Context, args: Args) -> RedisResult {
    let [name, owner, request_id] = parse_cancel(args)?;
    let ended = blocking::withdraw(ctx, &name, &owner, request_id.as_slice(), LockError::WaitCancelled);
    Ok(RedisValue::Integer(i64::from(ended)))
}

command!(
    cancel,
    c"write fast",
    CommandInfo {
        name: c"rlock.cancel",
        summary: c"Ends the blocked RLOCK.ACQUIRE ... WAIT ... ID request_id of owner while it waits; replies 1, or 0 when none waits.",
        arity: 4,
        complexity: c"O(1)",
        key_flags: raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_ACCESS,
        args: &[OWNER, REQUEST_ID],
    },
);
