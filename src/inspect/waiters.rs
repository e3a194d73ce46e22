use crate::commands::args::Args;
use crate::commands::info::{Arg, ArgKind, CommandInfo, KEYLESS};
use crate::commands::registry::command;
use crate::commands::reply::fields;
use crate::error::LockError;
use crate::handoff::blocking::listed;
use crate::handoff::glue::{lock_id, split_lock_id};
use crate::store::{now_ms, Caller};
use redis_module::{Context, NextArg, RedisError, RedisResult, RedisString, RedisValue};

/// `RLOCK.WAITERS [key]`: the callers blocked on this server
/// (`RLOCK.ACQUIRE … WAIT`, `RFAIR.ACQUIRE … BLOCK`) on the keys the
/// caller may read, or on `key` alone: each `db`, `key`, `kind` (`lock`
/// or `fair`), `owner`, `client_id`, `waited_ms` and `wait_left_ms`, in
/// arrival order per key. It declares no key (the list spans them): it
/// checks the caller's ACL itself, and in a cluster each node lists its
/// own (with a key too: it is not redirected).
fn waiters(ctx: &Context, args: Args) -> RedisResult {
    let mut args = args.into_iter().skip(1);
    let key = args.next();
    args.done()?;
    if let Some(key) = &key {
        let mut caller = Caller::new(ctx);
        if !caller.may_inspect(key) {
            caller.log_refused_key(key);
            return Err(RedisError::from(LockError::KeyArgumentPermission));
        }
    }
    Ok(waiters_on(ctx, key.map(|key| lock_id(ctx, key.as_slice())).as_deref()))
}

/// The waiters on the lock `only` (an id: database and name), or on every
/// key the caller may read.
pub(super) fn waiters_on(ctx: &Context, only: Option<&[u8]>) -> RedisValue {
    let now = now_ms();
    let mut caller = Caller::new(ctx);
    let mut waiters = listed();
    waiters.retain(|waiter| only.is_none_or(|id| waiter.lock == id));
    waiters.sort_by(|a, b| (&a.lock, a.since_ms).cmp(&(&b.lock, b.since_ms)));
    let readable = waiters.into_iter().filter_map(|waiter| {
        let (db, name) = split_lock_id(&waiter.lock);
        let key = RedisString::create_from_slice(ctx.get_raw(), name);
        let may_read = only.is_some() || caller.may_inspect(&key);
        may_read.then(|| {
            fields(vec![
                ("db", RedisValue::Integer(i64::from(db))),
                ("key", RedisValue::StringBuffer(name.to_vec())),
                ("kind", RedisValue::SimpleStringStatic(waiter.kind)),
                ("owner", RedisValue::StringBuffer(waiter.owner)),
                ("client_id", RedisValue::Integer(i64::try_from(waiter.client_id).unwrap_or(i64::MAX))),
                ("waited_ms", RedisValue::Integer(now.saturating_sub(waiter.since_ms).max(0))),
                ("wait_left_ms", RedisValue::Integer(waiter.ends_at_ms.saturating_sub(now).max(0))),
            ])
        })
    });
    RedisValue::Array(readable.collect())
}

command!(
    waiters,
    c"readonly",
    CommandInfo {
        name: c"rlock.waiters",
        summary: c"Lists the callers blocked on this server (RLOCK.ACQUIRE WAIT, RFAIR.ACQUIRE BLOCK) on the keys the caller may read, or on key: db, key, kind, owner, client_id, waited_ms, wait_left_ms.",
        arity: -1,
        complexity: c"O(N) where N is the number of blocked callers listed",
        key_flags: KEYLESS,
        args: &[Arg { name: c"key", kind: ArgKind::String, optional: true, token: None }],
    },
);
