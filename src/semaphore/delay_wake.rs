//! Wakes the callers a lock-delay refused. Redisson's `acquire()` of a
//! semaphore waits for a release message with no timeout, so a refusal
//! with nothing released after it would leave it waiting for good: at the
//! delay's end, each refused semaphore's count is published, as a release
//! publishes it.

use super::Semaphore;
use crate::api::api;
use crate::handoff::glue::{lock_id, select_lock, start_timer, timer_data};
use crate::store::{now_ms, RedisKeyspace};
use crate::term;
use redis_module::{raw, Context, RedisString};
use std::collections::HashSet;
use std::os::raw::c_void;
use std::sync::{LazyLock, Mutex, MutexGuard, PoisonError};

/// The semaphores (database and name) with a wake armed.
static ARMED: LazyLock<Mutex<HashSet<Vec<u8>>>> = LazyLock::new(Mutex::default);

fn armed() -> MutexGuard<'static, HashSet<Vec<u8>>> {
    ARMED.lock().unwrap_or_else(PoisonError::into_inner)
}

/// After a refusal while the lock-delay lasts: a wake at its end, one per
/// semaphore.
pub fn wake_at_delay_end(ctx: &Context, name: &[u8]) {
    let Some(ends_at) = term::delay_ends_at() else { return };
    let id = lock_id(ctx, name);
    if armed().insert(id.clone()) {
        start_timer(ctx, ends_at + 1 - now_ms(), Some(delay_ended), id);
    }
}

unsafe extern "C" fn delay_ended(ctx: *mut raw::RedisModuleCtx, data: *mut c_void) {
    let id = unsafe { timer_data::<Vec<u8>>(data) };
    let ctx = Context::new(ctx);
    armed().remove(&id);
    // Lengthened by a CONFIG SET: again at the new end.
    if term::delay().lasts() {
        return wake_at_delay_end(&ctx, select_lock(&ctx, &id));
    }
    let flags = unsafe { api!(RedisModule_GetContextFlags)(ctx.get_raw()) } as u32;
    if flags & raw::REDISMODULE_CTX_FLAGS_SLAVE != 0 {
        return; // demoted since: its callers were sent elsewhere
    }
    let name = RedisString::create_from_slice(ctx.get_raw(), select_lock(&ctx, &id));
    let mut keys = RedisKeyspace::open_as_server(&ctx, &name);
    if let Err(err) = Semaphore::new(name.as_slice()).announce_available(&mut keys) {
        ctx.log_warning(&format!("rlock: the wake of a semaphore after the lock-delay failed: {err:?}"));
    }
}
