//! One timer per lock with blocked waiters, just after the lock's expiry
//! (and not before a lock-delay's end): a lease that runs out frees the
//! lock without an event the waiters would hear in time (Redis expires a
//! key when it is next touched, or in its expiry cycle). The timer goes
//! when the lock's last waiter does: a pending timer keeps `MODULE
//! UNLOAD` refused, for as long as the longest lease.

use super::blocking::schedule_grant;
use super::events::unsubscribe_if_idle;
use super::glue::{start_timer, stop_timer, timer_data};
use crate::lock;
use crate::store::{now_ms, RedisLock};
use crate::term;
use redis_module::{raw, Context, RedisString};
use std::collections::HashMap;
use std::os::raw::c_void;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Lock id and firing time: a timer's data.
type LeaseTimer = (Vec<u8>, i64);

/// Each lock's timer, and when it fires (made on first use).
type Timers = Option<HashMap<Vec<u8>, (raw::RedisModuleTimerID, i64)>>;

/// A kind's expiry timers: each lock's, and when it fires.
pub struct LeaseTimers {
    timers: Mutex<Timers>,
    /// What a timer does when it fires: a grant check of its lock.
    check: fn(&Context, &[u8]),
    /// Whether callers of this kind wait for a lock.
    waits_on: fn(&[u8]) -> bool,
    callback: raw::RedisModuleTimerProc,
}

impl LeaseTimers {
    /// `callback` must call [`LeaseTimers::fired`] on these timers.
    pub const fn new(
        check: fn(&Context, &[u8]),
        waits_on: fn(&[u8]) -> bool,
        callback: raw::RedisModuleTimerProc,
    ) -> Self {
        Self { timers: Mutex::new(None), check, waits_on, callback }
    }

    fn timers(&self) -> MutexGuard<'_, Timers> {
        self.timers.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Keeps lock `id`'s (`name`'s) timer just after its expiry while it
    /// has waiters: a timer set later (a longer lease before) moves
    /// earlier. A lock with no expiry gets none (only a release or a DEL
    /// frees it); a missing one gets a grant check now. Without waiters,
    /// the timer goes.
    pub fn follow(&self, ctx: &Context, id: &[u8], name: &RedisString) {
        if !(self.waits_on)(id) {
            return self.disarm(ctx, id);
        }
        let now = now_ms();
        let pttl = lock::pttl(&RedisLock::open_readonly(ctx, name), now);
        let fire_at = match (pttl, term::delay_ends_at()) {
            (-1, _) => return,
            (-2, None) => return schedule_grant(ctx, id, 0),
            (-2, Some(delay_end)) => delay_end + 1,
            (pttl, delay_end) => (now + pttl + 1).max(delay_end.map_or(0, |end| end + 1)),
        };
        let armed = self.timers().get_or_insert_default().get(id).copied();
        match armed {
            Some((_, at)) if at <= fire_at => return,
            Some((timer, _)) => stop_timer::<LeaseTimer>(ctx, timer),
            None => {}
        }
        let timer = start_timer(ctx, fire_at - now, self.callback, (id.to_vec(), fire_at));
        self.timers().get_or_insert_default().insert(id.to_vec(), (timer, fire_at));
    }

    /// A caller waiting for lock `id` left its queue (granted, refused,
    /// timed out or gone): with nobody left waiting for the lock, its timer
    /// goes, and the keyspace callback once nobody waits at all.
    pub fn waiter_left(&self, ctx: &Context, id: &[u8]) {
        if !(self.waits_on)(id) {
            self.disarm(ctx, id);
        }
        unsubscribe_if_idle(ctx);
    }

    fn disarm(&self, ctx: &Context, id: &[u8]) {
        let armed = self.timers().as_mut().and_then(|timers| timers.remove(id));
        if let Some((timer, _)) = armed {
            stop_timer::<LeaseTimer>(ctx, timer);
        }
    }

    /// A timer of these fired (`data`): forgotten, and its lock checked.
    ///
    /// # Safety
    /// `data` is the data of a timer started by [`LeaseTimers::follow`].
    pub unsafe fn fired(&self, ctx: *mut raw::RedisModuleCtx, data: *mut c_void) {
        let (id, fire_at) = unsafe { timer_data::<LeaseTimer>(data) };
        if let Some(timers) = self.timers().as_mut() {
            if timers.get(&id).is_some_and(|(_, at)| *at == fire_at) {
                timers.remove(&id);
            }
        }
        (self.check)(&Context::new(ctx), &id);
    }
}
