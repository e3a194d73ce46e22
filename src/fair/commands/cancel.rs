use crate::commands::args::{parse_wait, take_trailing, Args, OWNER, WAIT_MS};
use crate::commands::info::{Arg, ArgKind, CommandInfo};
use crate::commands::registry::command;
use crate::fair::handoff::{waits_of, Change, Session};
use crate::fair::FairLock;
use crate::keyspace::{KeyType, Keyspace};
use crate::store::{now_ms, RedisKeyspace};
use redis_module::{raw, Context, NextArg, RedisResult, RedisString, RedisValue};
use rlock_protocol::DEFAULT_FAIR_WAIT_MS;

/// `RFAIR.CANCEL key owner [WAIT wait_ms] [OR other]`: Redisson's give-up:
/// owner leaves the queue. Replies nil, as Redisson's script. `OR other`:
/// the queue may be `other`'s (`n` and `{n}` share their queue keys, and
/// Redisson's give-up names only those): the lock is the one whose hash
/// exists, else the one whose waiters the server remembers, when only one
/// is; else (the state does not tell) the waiter leaves with no lock's
/// memory, the same for either name, counted in `INFO`
/// (`rlock_redisson_fair_unnamed`).
fn cancel(ctx: &Context, mut args: Args) -> RedisResult {
    // `OR other` after the command, key and owner.
    let other = take_trailing(&mut args, 3, b"OR");
    let mut args = args.into_iter().skip(1);
    let name = args.next_arg()?;
    let owner = args.next_arg()?;
    let wait_ms = parse_wait(args)?.unwrap_or(DEFAULT_FAIR_WAIT_MS);
    let name = match other {
        None => Named::Lock(name),
        Some(other) => resolve(ctx, name, other)?,
    };
    let (name, remembered) = match name {
        Named::Lock(name) => (name, true),
        Named::Either(name) => (name, false),
    };
    let mut keys = RedisKeyspace::open(ctx, &name);
    let mut session = match remembered {
        true => Session::open(ctx, name.as_slice()),
        false => Session::unremembered(),
    };
    let cancelled =
        FairLock::new(name.as_slice()).cancel(&mut keys, &mut session.waits, owner.as_slice(), wait_ms, now_ms());
    drop(keys);
    // A waiter of no remembered lock tells no head: nothing to look at.
    let change = match (remembered, &cancelled) {
        (true, Ok(change)) => *change,
        _ => Change::None,
    };
    session.close(ctx, &name, change);
    cancelled?;
    Ok(RedisValue::Null)
}

/// Which lock a give-up is of.
enum Named {
    Lock(RedisString),
    /// Either of two names the state does not tell apart.
    Either(RedisString),
}

/// Of `name` and `other`, the lock whose hash exists, else the one whose
/// waiters the server remembers, when only one is.
fn resolve(ctx: &Context, name: RedisString, other: RedisString) -> Result<Named, redis_module::RedisError> {
    let hashes = {
        let mut keys = RedisKeyspace::open_readonly(ctx, &name);
        [keys.key_type(name.as_slice())?, keys.key_type(other.as_slice())?].map(|kind| kind != KeyType::Missing)
    };
    let remembered = [&name, &other].map(|lock| !waits_of(ctx, lock.as_slice()).is_empty());
    let named = match (hashes, remembered) {
        ([true, false], _) | ([false, false], [true, false]) => Named::Lock(name),
        ([false, true], _) | ([false, false], [false, true]) => Named::Lock(other),
        _ => {
            crate::stats::record_redisson_fair_unnamed();
            Named::Either(name)
        }
    };
    Ok(named)
}

command!(
    cancel,
    c"write fast",
    CommandInfo {
        name: c"rfair.cancel",
        summary: c"Takes owner out of the fair lock's queue (Redisson's give-up); replies nil. OR other: the queue may be other's, told apart by the state.",
        arity: -3,
        complexity: c"O(N) where N is the number of callers queued on the fair lock",
        key_flags: raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_ACCESS,
        args: &[OWNER, WAIT_MS, Arg { name: c"other", kind: ArgKind::String, optional: true, token: Some(c"OR") }],
    },
);
