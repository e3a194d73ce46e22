//! Wakes the callers a lock-delay refused. Redisson's `acquire()` of a
//! semaphore waits for a release message with no timeout, so a refusal
//! with nothing released after it would leave it waiting for good: at the
//! delay's end, each refused semaphore's count is published, as a release
//! publishes it.

use super::Semaphore;
use crate::api::api;
use crate::handoff::glue::{lock_id, select_lock, start_timer, stop_timer, timer_data};
use crate::store::{now_ms, RedisKeyspace};
use crate::term;
use redis_module::{raw, Context, RedisString};
use std::collections::HashMap;
use std::os::raw::c_void;
use std::sync::{LazyLock, Mutex, MutexGuard, PoisonError};

/// A wake's timer data: the semaphore (database and name), and when it fires.
type Wake = (Vec<u8>, i64);

/// The semaphores with a wake armed: its timer, and when it fires.
type Armed = HashMap<Vec<u8>, (raw::RedisModuleTimerID, i64)>;

static ARMED: LazyLock<Mutex<Armed>> = LazyLock::new(Mutex::default);

fn armed() -> MutexGuard<'static, Armed> {
    ARMED.lock().unwrap_or_else(PoisonError::into_inner)
}

/// After a refusal by the lock-delay: a wake of `name`'s callers at its
/// end (at once if it ended since), one per semaphore.
pub fn wake_at_delay_end(ctx: &Context, name: &[u8]) {
    arm(ctx, &lock_id(ctx, name));
}

/// Keeps the wake of semaphore `id` at the delay's end: an earlier one
/// stays, a later one (the delay was shortened) moves.
fn arm(ctx: &Context, id: &[u8]) {
    let now = now_ms();
    let fire_at = term::delay_ends_at().map_or(now, |ends_at| ends_at + 1);
    let current = armed().get(id).copied();
    match current {
        Some((_, at)) if at <= fire_at => return,
        Some((timer, _)) => stop_timer::<Wake>(ctx, timer),
        None => {}
    }
    let timer = start_timer(ctx, fire_at - now, Some(delay_ended), (id.to_vec(), fire_at));
    armed().insert(id.to_vec(), (timer, fire_at));
}

/// The delay's end moved: every wake follows it.
pub(super) fn delay_moved(ctx: &Context) {
    let ids: Vec<Vec<u8>> = armed().keys().cloned().collect();
    ids.iter().for_each(|id| arm(ctx, id));
}

unsafe extern "C" fn delay_ended(ctx: *mut raw::RedisModuleCtx, data: *mut c_void) {
    let (id, fire_at) = unsafe { timer_data::<Wake>(data) };
    let ctx = Context::new(ctx);
    {
        let mut armed = armed();
        if armed.get(&id).is_some_and(|(_, at)| *at == fire_at) {
            armed.remove(&id);
        }
    }
    // Lengthened by a CONFIG SET: again at the new end.
    if term::delay().lasts() {
        return arm(&ctx, &id);
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
