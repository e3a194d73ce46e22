use crate::commands::args::{parse_cancel, Args, OWNER, REQUEST_ID};
use crate::commands::info::CommandInfo;
use crate::commands::registry::command;
use crate::error::LockError;
use crate::rwlock::handoff;
use redis_module::{raw, Context, RedisResult, RedisValue};

/// `RRW.CANCEL key owner request_id`: ends owner's blocked `RRW.ACQUIRE …
/// WAIT … ID request_id` while it waits (the call replies an error);
/// 1, or 0 when none waits.
fn cancel(ctx: &Context, args: Args) -> RedisResult {
    let [name, owner, request_id] = parse_cancel(args)?;
    let ended = handoff::withdraw(ctx, &name, owner.as_slice(), request_id.as_slice(), LockError::WaitCancelled);
    Ok(RedisValue::Integer(i64::from(ended)))
}

command!(
    cancel,
    c"write fast",
    CommandInfo {
        name: c"rrw.cancel",
        summary: c"Ends the blocked RRW.ACQUIRE ... WAIT ... ID request_id of owner while it waits; replies 1, or 0 when none waits.",
        arity: 4,
        complexity: c"O(1)",
        key_flags: raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_ACCESS,
        args: &[OWNER, REQUEST_ID],
    },
);
