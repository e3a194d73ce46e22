//! The events that may free a lock with waiters, for every waiter kind:
//! keyspace events (deletes, expiries, overwrites: a grant check on a
//! 0 ms timer, since the callback may not write on 7.0), FLUSHALL/FLUSHDB
//! and SWAPDB (a check of every lock with waiters).

use super::blocking::{count_lapse, locks_with_waiters, nobody_waits, schedule_grant};
use super::glue::lock_id;
use crate::api::{api, string_bytes, subscribe_to_server_event};
use crate::primitive::glue::waiter_kinds;
use redis_module::{raw, Context};
use std::ffi::CStr;
use std::os::raw::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};

/// Events after which a lock with waiters may be free or gone, or its
/// lease end earlier (`expire`): deletes, expiries, overwrites. Rarer
/// overwrites (`SORT … STORE`, the set and sorted-set `*STORE` commands)
/// reach the waiters at their wait's end: listening to those classes
/// would cost every list, set and sorted-set write on the server a call,
/// for good on 7.0.
const FREEING_EVENTS: [&CStr; 9] =
    [c"del", c"expired", c"evicted", c"expire", c"set", c"rename_from", c"rename_to", c"restore", c"copy_to"];

/// Keyspace events: a lock with waiters deleted, expired, evicted or
/// overwritten gets a grant scheduled (this callback may not write; it
/// never unregisters itself either).
unsafe extern "C" fn key_event(
    ctx: *mut raw::RedisModuleCtx,
    _class: c_int,
    event: *const c_char,
    key: *mut raw::RedisModuleString,
) -> c_int {
    // Cheap for the many events that cannot concern a waiter.
    let event = unsafe { CStr::from_ptr(event) };
    if nobody_waits() || !FREEING_EVENTS.contains(&event) {
        return raw::REDISMODULE_OK as c_int;
    }
    let name = unsafe { string_bytes(key) };
    let ctx = Context::new(ctx);
    let id = lock_id(&ctx, name);
    if event == c"expired" {
        count_lapse(&id);
    }
    schedule_grant(&ctx, &id, 0);
    raw::REDISMODULE_OK as c_int
}

/// A FLUSHALL or FLUSHDB deletes keys without a `del` event each: every
/// lock with waiters gets a grant check.
#[linkme::distributed_slice(redis_module::server_events::FLUSH_SERVER_EVENTS_LIST)]
fn flushed(ctx: &Context, subevent: redis_module::server_events::FlushSubevent) {
    if subevent == redis_module::server_events::FlushSubevent::Ended {
        check_every_lock(ctx);
    }
}

/// After a FLUSH or SWAPDB: what each kind remembers of keys may be gone,
/// and every lock with waiters gets a grant check.
fn check_every_lock(ctx: &Context) {
    waiter_kinds().for_each(|kind| (kind.flushed)(ctx));
    recheck_every_lock(ctx);
}

/// Schedules a grant check of every lock with waiters. Also when the
/// lock-delay's end moved (RLock's hook): each check arms its lock's
/// timer anew.
pub(crate) fn recheck_every_lock(ctx: &Context) {
    let mut locks = locks_with_waiters();
    locks.extend(waiter_kinds().flat_map(|kind| (kind.locks)()));
    locks.iter().for_each(|id| schedule_grant(ctx, id, 0));
}

/// Subscribes to SWAPDB, which swaps whole databases without a keyspace
/// event: every lock with waiters gets a grant check.
pub fn subscribe_to_swapdb(ctx: &Context) -> bool {
    subscribe_to_server_event(ctx, raw::REDISMODULE_EVENT_SWAPDB, swapped)
}

unsafe extern "C" fn swapped(
    ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    _sub: u64,
    _data: *mut c_void,
) {
    check_every_lock(&Context::new(ctx));
}

/// The event classes of [`FREEING_EVENTS`]: generic (del, expire, rename,
/// restore, copy), expired, evicted, and a SET over the lock.
const FREEING_CLASSES: c_int = raw::REDISMODULE_NOTIFY_GENERIC
    | raw::REDISMODULE_NOTIFY_EXPIRED
    | raw::REDISMODULE_NOTIFY_EVICTED
    | raw::REDISMODULE_NOTIFY_STRING;

/// Whether the keyspace-event callback is registered.
static SUBSCRIBED: AtomicBool = AtomicBool::new(false);

/// Registers the keyspace-event callback when the first caller waits. It
/// costs every write on the server a call (a context and a callback), so
/// it is not registered at load, and where the server can unregister it
/// (Redis 7.2+, Valkey) [`unsubscribe_if_idle`] does so once nobody waits.
pub(crate) fn subscribe(ctx: &Context) {
    if SUBSCRIBED.swap(true, Ordering::Relaxed) {
        return;
    }
    let status =
        unsafe { api!(RedisModule_SubscribeToKeyspaceEvents)(ctx.get_raw(), FREEING_CLASSES, Some(key_event)) };
    if status != raw::REDISMODULE_OK as c_int {
        SUBSCRIBED.store(false, Ordering::Relaxed);
        ctx.log_warning("rlock: cannot subscribe to keyspace events: waiters learn of DELs at their lock's expiry");
    }
}

/// Unregisters the callback when nobody waits, where the server allows it.
pub(crate) fn unsubscribe_if_idle(ctx: &Context) {
    let Some(unsubscribe) = (unsafe { raw::RedisModule_UnsubscribeFromKeyspaceEvents }) else { return };
    if !nobody_waits() || !SUBSCRIBED.swap(false, Ordering::Relaxed) {
        return;
    }
    unsafe { unsubscribe(ctx.get_raw(), FREEING_CLASSES, Some(key_event)) };
}
