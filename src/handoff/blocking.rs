//! The Redis side of the hand-off: blocking `RLOCK.ACQUIRE … WAIT`
//! callers, and granting the lock to the head waiter when it frees.
//!
//! A lock frees in four ways, each handled here (the events are listened
//! to in `events`):
//! - RLOCK.RELEASE / FORCERELEASE: [`grant_next`] runs inside the command,
//!   so the grant's effects replicate with the release's;
//! - a DEL, UNLINK, overwrite, eviction by anyone, and an expiry Redis
//!   noticed: a keyspace-event callback, which on 7.0 must not write,
//!   schedules a grant on a 0 ms timer (registered while callers wait);
//! - a FLUSHDB/FLUSHALL or SWAPDB: a server-event callback does the same
//!   for all;
//! - a lease running out unnoticed (Redis expires keys lazily or by
//!   sampling): every lock with waiters has a timer at its expiry (moved
//!   earlier when an `expire` event shortens the lease), which opens the
//!   key (expiring it) and grants;
//! - anything missed: a wait that runs out first checks whether its lock
//!   is free.
//!
//! Timers never write while the server pauses writes (`CLIENT PAUSE`, a
//! failover): keys do not expire then, and a write into an expired key
//! that is still there crashes Redis 7.0. The check is retried until the
//! pause ends. In cluster mode they never write a key this node does not
//! serve (a `MIGRATE` deletes the keys it moves: its callers are told
//! `TRYAGAIN`), nor while the cluster is down (retried).
//!
//! A wait ends in exactly one way, decided here: a grant, its own timer
//! running out, or the client leaving. Redis's blocked-client timeout is
//! not used, and no timeout callback is registered (so `CLIENT UNBLOCK`
//! refuses these clients): on 7.0 and Valkey 8.1 a timeout or an unblock
//! that Redis processes after a grant's `RM_UnblockClient`, in the same
//! event-loop turn, calls neither callback, and the granted caller would
//! get no reply at all while holding the lock.
//!
//! All of it runs on Redis's main thread; the state's mutex is never held
//! across a call into Redis (a write's notification calls back in here).

use super::events::{subscribe, unsubscribe_if_idle};
use super::glue::{
    block_client, error_text, lock_id, may_write, remember_grant, select_lock, start_timer, stop_timer, timer_data,
    unblock_client, Client, Disconnected, MayWrite, Outcome,
};
use super::lease_timers::LeaseTimers;
use super::{Listed, Queues, Request, Waiter};
use crate::api::api;
use crate::commands::reply::AcquireReply;
use crate::delay::Delay;
use crate::error::LockError;
use crate::keyspace::KeyType;
use crate::lock::acquire_once::{self, Grant};
use crate::lock::{self, Acquire, LockStore};
use crate::primitive::glue::waiter_kinds;
use crate::primitive::{self, Primitive};
use crate::stats::{self, KindStats};
use crate::store::{now_ms, RedisLock};
use crate::term;
use redis_module::{raw, Context, RedisString, RedisValue};
use std::collections::{HashMap, HashSet};
use std::os::raw::c_void;
use std::ptr;
use std::sync::{LazyLock, Mutex, MutexGuard, PoisonError};

#[derive(Default)]
struct State {
    queues: Queues<Client>,
    /// Locks with a grant scheduled on a 0 ms timer.
    scheduled: HashSet<Vec<u8>>,
    /// Each blocked client's timer at the end of its wait.
    wait_timers: HashMap<Client, raw::RedisModuleTimerID>,
}

static STATE: LazyLock<Mutex<State>> = LazyLock::new(Mutex::default);

fn state() -> MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The locks RLock waiters wait for.
pub(super) fn locks_with_waiters() -> Vec<Vec<u8>> {
    state().queues.locks()
}

/// Callers blocked now, over all locks and kinds.
pub fn waiting() -> usize {
    state().queues.waiting() + waiter_kinds().map(|kind| (kind.waiting)()).sum::<usize>()
}

pub(crate) fn nobody_waits() -> bool {
    state().queues.is_empty() && waiter_kinds().all(|kind| !(kind.anyone_waits)())
}

/// Whether this call may block: not inside MULTI or a script (or where
/// Redis denies blocking otherwise), and never on a replica.
pub fn may_block(ctx: &Context) -> bool {
    let flags = unsafe { api!(RedisModule_GetContextFlags)(ctx.get_raw()) } as u32;
    let refused = raw::REDISMODULE_CTX_FLAGS_MULTI
        | raw::REDISMODULE_CTX_FLAGS_LUA
        | raw::REDISMODULE_CTX_FLAGS_DENY_BLOCKING
        | raw::REDISMODULE_CTX_FLAGS_SLAVE;
    flags & refused == 0
}

/// What a blocked acquire asked for.
pub struct BlockedAcquire<'a> {
    pub owner: &'a RedisString,
    pub lease_ms: i64,
    pub wait_ms: i64,
    pub request: Option<Request>,
    pub full_reply: bool,
}

impl BlockedAcquire<'_> {
    /// Blocks the caller (`left` runs if it disconnects): its waiter. No
    /// Redis timeout and no timeout callback: the wait's own timer ends it.
    pub fn block_caller(&self, ctx: &Context, left: Disconnected) -> Waiter<Client> {
        let client = block_client(ctx, left);
        let now = now_ms();
        Waiter {
            client,
            client_id: unsafe { api!(RedisModule_GetClientId)(ctx.get_raw()) },
            ends_at_ms: now.saturating_add(self.wait_ms),
            owner: self.owner.as_slice().to_vec(),
            lease_ms: self.lease_ms,
            request: self.request.clone(),
            full_reply: self.full_reply,
            queued_at_ms: now,
        }
    }
}

/// Blocks the caller, who was refused `name`, until the lock is granted to
/// it (reply nil) or `wait_ms` passes (reply the holder's PTTL); with
/// `full_reply`, both reply [`AcquireReply`]. A resend of a queued
/// request (the same owner and request id) takes over its place, and
/// the first call ends with an error.
pub fn block(ctx: &Context, name: &RedisString, acquire: BlockedAcquire) -> RedisValue {
    let waiter = acquire.block_caller(ctx, left);
    let (client, ends_at_ms, wait_ms) = (waiter.client, waiter.ends_at_ms, acquire.wait_ms);
    let taken_over = state().queues.queue(&lock_id(ctx, name.as_slice()), waiter);
    if let Some(first) = taken_over {
        unblock(ctx, first, Outcome::Failed(error_text(LockError::WaitTakenOver.into())));
    }
    let timer = start_timer(ctx, wait_ms, Some(wait_ran_out), (client, ends_at_ms));
    state().wait_timers.insert(client, timer);
    subscribe(ctx);
    arm_expiry_timer(ctx, name);
    RedisValue::NoReply
}

/// Every caller blocked on the server now, of every kind.
pub fn listed() -> Vec<Listed> {
    let mut listed = state().queues.listed();
    waiter_kinds().for_each(|kind| listed.extend((kind.listed)()));
    listed
}

/// The locks (ids) `owner`'s callers are blocked on, of every kind.
pub(super) fn waits_of(owner: &[u8]) -> Vec<Vec<u8>> {
    let mut locks = state().queues.waits_of(owner);
    waiter_kinds().for_each(|kind| locks.extend((kind.waits_of)(owner)));
    locks
}

/// Whether a call of `owner`'s acquire `request_id` waits for `name`.
pub fn is_queued(ctx: &Context, name: &RedisString, owner: &RedisString, request_id: &[u8]) -> bool {
    state().queues.has_request(&lock_id(ctx, name.as_slice()), owner.as_slice(), request_id)
}

/// Ends the waiting call of that acquire with `why` (its resend, which
/// will not wait, runs instead; or `RLOCK.CANCEL`); false when none waits.
pub fn withdraw(ctx: &Context, name: &RedisString, owner: &RedisString, request_id: &[u8], why: LockError) -> bool {
    let lock = lock_id(ctx, name.as_slice());
    let withdrawn = state().queues.remove_request(&lock, owner.as_slice(), request_id);
    let Some(waiter) = withdrawn else { return false };
    unblock(ctx, waiter.client, Outcome::Failed(error_text(why.into())));
    LEASE_TIMERS.waiter_left(ctx, &lock);
    true
}

/// Grants the lock `key` (open for writing) to its first waiter if it is
/// free, replicating the grant as an acquire; a waiter that cannot have it
/// (the key is not a lock any more) gets the error an acquire would.
pub fn grant_next(ctx: &Context, name: &RedisString, key: &mut RedisLock) {
    // Nobody waits for any lock, the usual case: no lock id to make.
    if state().queues.is_empty() {
        return;
    }
    let lock = lock_id(ctx, name.as_slice());
    // The server's own attempts: refusals by the lock-delay not counted.
    let delay = term::delay().quiet();
    loop {
        let popped = state().queues.pop_front(&lock);
        let Some(waiter) = popped else { return LEASE_TIMERS.waiter_left(ctx, &lock) };
        let owner = RedisString::create_from_slice(ctx.get_raw(), &waiter.owner);
        match lock::acquire(key, &owner, waiter.lease_ms, (now_ms(), delay)) {
            Ok(Acquire::Contended { .. }) => {
                state().queues.push_front(&lock, waiter);
                // A lock freed during a lock-delay goes at the delay's end.
                if delay.lasts() {
                    arm_expiry_timer(ctx, name);
                }
                return;
            }
            Ok(outcome) => {
                stats::record_acquire(outcome);
                let now = now_ms();
                crate::lock::commands::STATS.waiter_granted(now.saturating_sub(waiter.queued_at_ms));
                let count = acquire_once::granted_count(outcome).unwrap_or_default();
                if let Some(request) = &waiter.request {
                    remember_grant(ctx, name.as_slice(), &waiter.owner, request, Grant::count(count));
                }
                let reply = match waiter.full_reply {
                    false => Outcome::Granted,
                    true => Outcome::Value(
                        AcquireReply {
                            granted: true,
                            holds: count,
                            lease_ms: lock::pttl(key, now),
                            waited_ms: now.saturating_sub(waiter.queued_at_ms),
                        }
                        .value(),
                    ),
                };
                unblock(ctx, waiter.client, reply);
                // The new holder's lease may end before the armed timer.
                arm_expiry_timer(ctx, name);
                unsubscribe_if_idle(ctx);
                return;
            }
            Err(err) => unblock(ctx, waiter.client, Outcome::Failed(error_text(err.into()))),
        }
    }
}

/// Ends the wait of `client`, taken out of its queue, with `outcome`.
fn unblock(ctx: &Context, client: Client, outcome: Outcome) {
    stop_wait_timer(ctx, client);
    unblock_client(client, outcome);
}

fn stop_wait_timer(ctx: &Context, client: Client) {
    if let Some(timer) = state().wait_timers.remove(&client) {
        stop_timer::<(Client, i64)>(ctx, timer);
    }
}

/// A wait that ran out: out of the queue, unless granted or gone already.
/// A timer on time first checks its lock, in case an event freeing it was
/// missed; a late one (after a stall) does not: the lock may have freed
/// only after the wait's end.
unsafe extern "C" fn wait_ran_out(ctx: *mut raw::RedisModuleCtx, data: *mut c_void) {
    let (client, ends_at) = unsafe { timer_data::<(Client, i64)>(data) };
    let ctx = Context::new(ctx);
    state().wait_timers.remove(&client);
    let lock = state().queues.lock_of(&client); // the state unlocked before the grant
    if let (true, Some(lock)) = (now_ms() <= ends_at.saturating_add(1), &lock) {
        grant_if_free(&ctx, lock);
    }
    // Bound first: the state's guard must not live into the block below.
    let removed = state().queues.remove(&client);
    if let Some((lock, waiter)) = removed {
        crate::lock::commands::STATS.wait_timeout();
        // A key that is no lock any more (a *STORE overwrote it: no event
        // this module listens to) gets the acquire's error, late or not.
        let pttl = holder_pttl(&ctx, &lock, term::delay());
        let outcome = match pttl {
            None => Outcome::Failed(error_text(LockError::WrongType.into())),
            Some(pttl) if waiter.full_reply => {
                let waited_ms = now_ms().saturating_sub(waiter.queued_at_ms);
                Outcome::Value(AcquireReply { granted: false, holds: 0, lease_ms: pttl, waited_ms }.value())
            }
            Some(_) => Outcome::HolderPttl,
        };
        unblock(&ctx, client, outcome);
        LEASE_TIMERS.waiter_left(&ctx, &lock);
    }
}

/// The PTTL a caller whose wait ran out is told, as a refused acquire
/// is: the holder's or, while `delay` lasts, its rest if longer (-1: no
/// expiry; 0 when it is missing); `None` when the key is another type.
fn holder_pttl(ctx: &Context, id: &[u8], delay: Delay) -> Option<i64> {
    let name = RedisString::create_from_slice(ctx.get_raw(), select_lock(ctx, id));
    let key = RedisLock::open_readonly(ctx, &name);
    let pttl = lock::pttl(&key, now_ms());
    matches!(key.kind(), KeyType::Missing | KeyType::Hash).then(|| delay.pttl(pttl))
}

/// Whether a timer may grant lock `id` now (see [`may_write`]); a check
/// put off runs again later, and the waits of a lock whose slot left end
/// with `end_waits`.
pub(crate) fn may_grant_now(ctx: &Context, id: &[u8], end_waits: fn(&Context, &[u8], LockError)) -> bool {
    match may_write(ctx, &[select_lock(ctx, id)]) {
        MayWrite::Now => true,
        MayWrite::Later(ms) => {
            schedule_grant(ctx, id, ms);
            false
        }
        MayWrite::Never => false,
        MayWrite::Left => {
            end_waits(ctx, id, LockError::SlotNotServed);
            false
        }
    }
}

/// Opens lock `id` (in a timer) and grants it if it freed, when
/// [`may_grant_now`] allows.
fn grant_if_free(ctx: &Context, id: &[u8]) {
    if !state().queues.has_waiters(id) || !may_grant_now(ctx, id, end_waits) {
        return;
    }
    let name = RedisString::create_from_slice(ctx.get_raw(), select_lock(ctx, id));
    // Opening the key expires it if its lease has run out.
    let mut key = RedisLock::open(ctx, &name);
    grant_next(ctx, &name, &mut key);
    drop(key);
    arm_expiry_timer(ctx, &name); // still held by another: at its expiry
}

/// Ends every wait for lock `id` with `why`.
fn end_waits(ctx: &Context, id: &[u8], why: LockError) {
    let text = error_text(why.into());
    loop {
        // Bound first: the state's guard must not live into the unblock.
        let popped = state().queues.pop_front(id);
        let Some(waiter) = popped else { break };
        unblock(ctx, waiter.client, Outcome::Failed(text.clone()));
    }
    LEASE_TIMERS.waiter_left(ctx, id);
}

/// The RLock waiters' timers at their locks' expiries.
static LEASE_TIMERS: LeaseTimers =
    LeaseTimers::new(grant_if_free, |id| state().queues.has_waiters(id), Some(lease_ended));

/// Keeps a timer at the expiry of `name` while it has waiters, none after.
fn arm_expiry_timer(ctx: &Context, name: &RedisString) {
    LEASE_TIMERS.follow(ctx, &lock_id(ctx, name.as_slice()), name);
}

unsafe extern "C" fn lease_ended(ctx: *mut raw::RedisModuleCtx, data: *mut c_void) {
    unsafe { LEASE_TIMERS.fired(ctx, data) };
}

unsafe extern "C" fn freed_elsewhere(ctx: *mut raw::RedisModuleCtx, data: *mut c_void) {
    let (lock, _) = unsafe { timer_data::<(Vec<u8>, i64)>(data) };
    state().scheduled.remove(&lock);
    let ctx = Context::new(ctx);
    grant_if_free(&ctx, &lock);
    for kind in waiter_kinds().filter(|kind| (kind.waits_on)(&lock)) {
        (kind.freed)(&ctx, &lock);
    }
}

/// Lock `id` expired: counted, per kind, when callers waited for it.
pub(super) fn count_lapse(id: &[u8]) {
    if state().queues.has_waiters(id) {
        crate::lock::commands::STATS.lapsed_with_waiters();
    }
    let waited = |primitive: &&Primitive| primitive.glue.waiters.is_some_and(|kind| (kind.waits_on)(id));
    primitive::all()
        .filter(waited)
        .filter_map(|primitive| primitive.glue.stats)
        .for_each(KindStats::lapsed_with_waiters);
}

/// Schedules a grant check of lock `id` on a timer in `after_ms`, once.
pub(crate) fn schedule_grant(ctx: &Context, id: &[u8], after_ms: i64) {
    let schedule = {
        let mut state = state();
        (state.queues.has_waiters(id) || waiter_kinds().any(|kind| (kind.waits_on)(id)))
            && state.scheduled.insert(id.to_vec())
    };
    if schedule {
        start_timer(ctx, after_ms, Some(freed_elsewhere), (id.to_vec(), 0_i64));
    }
}

/// A blocked client that disconnected (or was killed) leaves the queue.
unsafe extern "C" fn left(ctx: *mut raw::RedisModuleCtx, client: *mut raw::RedisModuleBlockedClient) {
    let ctx = Context::new(ctx);
    stop_wait_timer(&ctx, client as Client);
    let removed = state().queues.remove(&(client as Client));
    if let Some((lock, _)) = removed {
        unsafe { api!(RedisModule_UnblockClient)(client, ptr::null_mut()) };
        LEASE_TIMERS.waiter_left(&ctx, &lock);
    }
}
