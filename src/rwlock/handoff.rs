//! Callers blocked on a read-write lock (`RRW.ACQUIRE … WAIT`): a queue
//! per lock in arrival order, as RLock's. When the lock may have freed,
//! its head is granted its side, and the waiters behind it as long as
//! each is granted too (readers after a reader); a waiter refused stops
//! the grants, so a writer at the head is not overtaken by later readers.
//! The hand-off's keyspace callback tells of deletes and expiries, a
//! release tells of itself (it may change the mode without a delete), and
//! a timer at the lock's expiry catches a lease that runs out unseen.

use super::{Acquire, ReadWriteLock, Side};
use crate::commands::reply::AcquireReply;
use crate::error::LockError;
use crate::handoff::blocking::{may_grant_now, nobody_waits, schedule_grant, BlockedAcquire};
use crate::handoff::events::{subscribe, unsubscribe_if_idle};
use crate::handoff::glue::{
    error_text, lock_id, refused_pttl, remember_grant, select_lock, start_timer, stop_timer, timer_data,
    unblock_client, Client, Outcome,
};
use crate::handoff::lease_timers::LeaseTimers;
use crate::handoff::{Listed, Queues, Waiter, WaiterKind};
use crate::lock::acquire_once::Grant;
use crate::store::{now_ms, RedisKeyspace};
use crate::term;
use redis_module::{raw, Context, RedisString, RedisValue};
use rlock_protocol::rwlock_write_field;
use std::collections::HashMap;
use std::os::raw::c_void;
use std::sync::{LazyLock, Mutex, MutexGuard, PoisonError};

#[derive(Default)]
struct State {
    queues: Queues<Client>,
    /// The side each blocked caller asked for.
    sides: HashMap<Client, Side>,
    wait_timers: HashMap<Client, raw::RedisModuleTimerID>,
}

static STATE: LazyLock<Mutex<State>> = LazyLock::new(Mutex::default);

fn state() -> MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(PoisonError::into_inner)
}

pub(super) static READ_WRITE_WAITERS: WaiterKind = WaiterKind {
    anyone_waits: || !state().queues.is_empty(),
    waiting: || state().queues.waiting(),
    waits_on: |id| state().queues.has_waiters(id),
    locks: || state().queues.locks(),
    listed: || state().queues.listed().into_iter().map(|listed| Listed { kind: "read-write", ..listed }).collect(),
    waits_of: |owner| state().queues.waits_of(owner),
    freed: grant_waiting,
    flushed: |_| {},
};

/// Blocks the caller, refused `side` of `name`, until it is granted (nil)
/// or `wait_ms` passes (the lock's PTTL); with `full_reply`, both reply
/// [`AcquireReply`]. A resend of a queued request takes over its place.
pub fn block(ctx: &Context, name: &RedisString, side: Side, acquire: BlockedAcquire) -> RedisValue {
    let waiter = acquire.block_caller(ctx, left);
    let (client, ends_at_ms, wait_ms) = (waiter.client, waiter.ends_at_ms, acquire.wait_ms);
    let id = lock_id(ctx, name.as_slice());
    let taken_over = {
        let mut state = state();
        state.sides.insert(client, side);
        state.queues.queue(&id, waiter)
    };
    if let Some(first) = taken_over {
        unblock(ctx, first, Outcome::Failed(error_text(LockError::WaitTakenOver.into())));
    }
    let timer = start_timer(ctx, wait_ms, Some(wait_ran_out), (client, ends_at_ms));
    state().wait_timers.insert(client, timer);
    subscribe(ctx);
    LEASE_TIMERS.follow(ctx, &id, name);
    RedisValue::NoReply
}

/// The side a call of `owner`'s acquire `request_id` waits for on
/// `name`, if one waits.
pub fn queued_side(ctx: &Context, name: &RedisString, owner: &[u8], request_id: &[u8]) -> Option<Side> {
    let state = state();
    let waiter = state.queues.queued_request(&lock_id(ctx, name.as_slice()), owner, request_id)?;
    state.sides.get(&waiter.client).copied()
}

/// Ends the waiting call of that acquire with `why` (its resend will not
/// wait, or `RRW.CANCEL`); false when none waits.
pub fn withdraw(ctx: &Context, name: &RedisString, owner: &[u8], request_id: &[u8], why: LockError) -> bool {
    let id = lock_id(ctx, name.as_slice());
    let withdrawn = state().queues.remove_request(&id, owner, request_id);
    let Some(waiter) = withdrawn else { return false };
    unblock(ctx, waiter.client, Outcome::Failed(error_text(why.into())));
    LEASE_TIMERS.waiter_left(ctx, &id);
    true
}

/// A release of `name`: its waiters get a grant check (no lock id made,
/// an allocation, when no caller waits at all).
pub fn released(ctx: &Context, name: &RedisString) {
    if !nobody_waits() {
        schedule_grant(ctx, &lock_id(ctx, name.as_slice()), 0);
    }
}

/// Grants lock `id` to its waiters in order while each may have it (a
/// timer's work, when `may_grant_now` allows).
fn grant_waiting(ctx: &Context, id: &[u8]) {
    if !state().queues.has_waiters(id) || !may_grant_now(ctx, id, end_waits) {
        return;
    }
    let name = RedisString::create_from_slice(ctx.get_raw(), select_lock(ctx, id));
    let lock = ReadWriteLock::new(name.as_slice());
    let mut keys = RedisKeyspace::open_as_server(ctx, &name);
    // The server's own attempts: refusals by the lock-delay not counted.
    let delay = term::delay().quiet();
    while let Some((waiter, side)) = pop_front(id) {
        let now = now_ms();
        match lock.acquire(&mut keys, &waiter.owner, side, waiter.lease_ms, (now, delay)) {
            Ok(Acquire::Contended { .. }) => {
                let mut state = state();
                state.sides.insert(waiter.client, side);
                state.queues.push_front(id, waiter);
                break;
            }
            Ok(Acquire::Acquired { count }) => {
                super::commands::STATS.waiter_granted(now.saturating_sub(waiter.queued_at_ms));
                if let Some(request) = &waiter.request {
                    let field = match side {
                        Side::Read => waiter.owner.clone(),
                        Side::Write => rwlock_write_field(&waiter.owner),
                    };
                    remember_grant(ctx, name.as_slice(), &field, request, Grant::count(count));
                }
                let reply = match waiter.full_reply {
                    false => Outcome::Granted,
                    true => {
                        let lease_ms = lock.status(&mut keys, None, now).map_or(0, |status| status.pttl_ms);
                        let waited_ms = now.saturating_sub(waiter.queued_at_ms);
                        Outcome::Value(AcquireReply { granted: true, holds: count, lease_ms, waited_ms }.value())
                    }
                };
                unblock(ctx, waiter.client, reply);
            }
            Err(err) => unblock(ctx, waiter.client, Outcome::Failed(error_text(err.into()))),
        }
    }
    drop(keys);
    LEASE_TIMERS.follow(ctx, id, &name);
    unsubscribe_if_idle(ctx);
}

/// Ends every wait for lock `id` with `why`.
fn end_waits(ctx: &Context, id: &[u8], why: LockError) {
    let text = error_text(why.into());
    while let Some((waiter, _)) = pop_front(id) {
        unblock(ctx, waiter.client, Outcome::Failed(text.clone()));
    }
    LEASE_TIMERS.waiter_left(ctx, id);
}

fn pop_front(id: &[u8]) -> Option<(Waiter<Client>, Side)> {
    let mut state = state();
    let waiter = state.queues.pop_front(id)?;
    let side = state.sides.remove(&waiter.client).unwrap_or(Side::Write);
    Some((waiter, side))
}

fn unblock(ctx: &Context, client: Client, outcome: Outcome) {
    let timer = {
        let mut state = state();
        state.sides.remove(&client);
        state.wait_timers.remove(&client)
    };
    if let Some(timer) = timer {
        stop_timer::<(Client, i64)>(ctx, timer);
    }
    unblock_client(client, outcome);
}

/// A wait that ran out: a timer on time first checks the lock (an event
/// freeing it may have been missed), then the caller, if still queued, is
/// told the lock's PTTL.
unsafe extern "C" fn wait_ran_out(ctx: *mut raw::RedisModuleCtx, data: *mut c_void) {
    let (client, ends_at) = unsafe { timer_data::<(Client, i64)>(data) };
    let ctx = Context::new(ctx);
    let lock = {
        let mut state = state();
        state.wait_timers.remove(&client);
        state.queues.lock_of(&client)
    };
    if let (true, Some(lock)) = (now_ms() <= ends_at.saturating_add(1), &lock) {
        grant_waiting(&ctx, lock);
    }
    let removed = state().queues.remove(&client);
    let Some((id, waiter)) = removed else { return };
    super::commands::STATS.wait_timeout();
    let outcome = match waiter.full_reply {
        false => Outcome::HolderPttl,
        true => {
            let name = RedisString::create_from_slice(ctx.get_raw(), select_lock(&ctx, &id));
            let pttl = refused_pttl(&ctx, &name);
            let waited_ms = now_ms().saturating_sub(waiter.queued_at_ms);
            Outcome::Value(AcquireReply { granted: false, holds: 0, lease_ms: pttl, waited_ms }.value())
        }
    };
    unblock(&ctx, client, outcome);
    LEASE_TIMERS.waiter_left(&ctx, &id);
}

/// A blocked caller that disconnected (or was killed) leaves the queue.
unsafe extern "C" fn left(ctx: *mut raw::RedisModuleCtx, client: *mut raw::RedisModuleBlockedClient) {
    let ctx = Context::new(ctx);
    let client = client as Client;
    let removed = state().queues.remove(&client);
    if let Some((id, _)) = removed {
        unblock(&ctx, client, Outcome::Granted);
        LEASE_TIMERS.waiter_left(&ctx, &id);
    }
}

/// The timers at the expiries of locks with waiters.
static LEASE_TIMERS: LeaseTimers =
    LeaseTimers::new(grant_waiting, |id| state().queues.has_waiters(id), Some(lease_ended));

unsafe extern "C" fn lease_ended(ctx: *mut raw::RedisModuleCtx, data: *mut c_void) {
    unsafe { LEASE_TIMERS.fired(ctx, data) };
}
