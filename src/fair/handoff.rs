//! The fair lock's Redis side beyond the keys: the waits native waiters
//! asked for, callers blocked on the server (`RFAIR.ACQUIRE … BLOCK`), and
//! one timer per lock that keeps the queue moving ([`FairLock::tick`]):
//! a free lock goes to a blocked head at once, a head that does not come
//! back within its wait loses its turn and the next is told, and blocked
//! waiters keep their deadlines up while they block.
//!
//! Redisson's script waiters in the same queue are told on their own
//! channels, as before. Like the RLock hand-off, a wait ends in exactly one
//! way (a grant, its own timer, or the client leaving), timers never write
//! while writes are paused, and the state's mutex is never held across a
//! call into Redis.

use super::waiter::{BlockedCall, Waiter};
pub use super::Change;
use super::{Blocked, FairLock, Tick, Told, Waits};
use crate::api::api;
use crate::error::LockError;
use crate::handoff::events::{subscribe, unsubscribe_if_idle};
use crate::handoff::glue::{
    block_client, error_text, lock_id, remember_grant, select_lock, start_timer, stop_timer, timer_data,
    unblock_client, Client, MayWrite, Outcome,
};
use crate::handoff::owner_waits::OwnerWaits;
use crate::handoff::{Listed, WaiterKind};
use crate::lock::acquire_once::Grant;
use crate::store::{now_ms, RedisKeyspace};
use crate::term;
use redis_module::{raw, Context, RedisString, RedisValue};
use std::collections::HashMap;
use std::os::raw::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{LazyLock, Mutex, MutexGuard, PoisonError};

/// What the server keeps of one fair lock.
#[derive(Default)]
pub(super) struct Lock {
    pub(super) waits: Waits,
    pub(super) blocked: Vec<Waiter>,
    /// The lock's timer, and when it fires.
    timer: Option<(raw::RedisModuleTimerID, i64)>,
    /// The head the server last told its turn (while the lock was free).
    told: Option<Vec<u8>>,
    /// A command just told the head.
    head_told: bool,
}

impl Lock {
    fn idle(&self) -> bool {
        self.waits.is_empty() && self.blocked.is_empty() && self.timer.is_none() && self.told.is_none()
    }
}

static LOCKS: LazyLock<Mutex<HashMap<Vec<u8>, Lock>>> = LazyLock::new(Mutex::default);

/// Callers blocked now, over all fair locks: read on every keyspace event
/// while anyone waits, so kept apart from the map.
static BLOCKED: AtomicUsize = AtomicUsize::new(0);

/// The locks each owner's blocked callers wait for (the deadlock check).
static OWNER_WAITS: LazyLock<Mutex<OwnerWaits>> = LazyLock::new(Mutex::default);

fn owner_waits() -> MutexGuard<'static, OwnerWaits> {
    OWNER_WAITS.lock().unwrap_or_else(PoisonError::into_inner)
}

pub(super) fn locks() -> MutexGuard<'static, HashMap<Vec<u8>, Lock>> {
    LOCKS.lock().unwrap_or_else(PoisonError::into_inner)
}

pub(super) static FAIR_WAITERS: WaiterKind = WaiterKind {
    anyone_waits: || waiting() > 0,
    waiting,
    // Also the locks with native waiters that poll: a DEL or an expiry
    // starts their head's turn.
    waits_on: |id| locks().contains_key(id),
    locks: || locks().iter().filter(|(_, lock)| !lock.blocked.is_empty()).map(|(id, _)| id.clone()).collect(),
    listed: || {
        let locks = locks();
        let blocked = locks.iter().flat_map(|(id, lock)| lock.blocked.iter().map(move |waiter| (id, waiter)));
        blocked
            .map(|(id, waiter)| Listed {
                lock: id.clone(),
                kind: "fair",
                owner: waiter.owner.clone(),
                client_id: waiter.client_id,
                since_ms: waiter.blocked_at_ms,
                ends_at_ms: waiter.blocked_at_ms.saturating_add(waiter.call.block_ms),
            })
            .collect()
    },
    waits_of: |owner| owner_waits().locks_of(owner),
    freed: look,
    flushed: forget_unblocked,
};

/// After a FLUSH or SWAPDB: the memory of locks nobody blocks on goes
/// (their keys may be gone; waiters that poll are remembered again when
/// they next ask).
fn forget_unblocked(ctx: &Context) {
    let timers: Vec<raw::RedisModuleTimerID> = {
        let mut locks = locks();
        let forgotten: Vec<Vec<u8>> =
            locks.iter().filter(|(_, lock)| lock.blocked.is_empty()).map(|(id, _)| id.clone()).collect();
        forgotten.iter().filter_map(|id| locks.remove(id).and_then(|lock| lock.timer)).map(|(timer, _)| timer).collect()
    };
    timers.into_iter().for_each(|timer| stop_timer::<LockTimer>(ctx, timer));
}

/// Callers blocked now, over all fair locks.
pub fn waiting() -> usize {
    BLOCKED.load(Ordering::Relaxed)
}

/// The server's memory of lock `name`'s waiters, for a read-only command.
pub fn waits_of(ctx: &Context, name: &[u8]) -> Waits {
    let locks = locks();
    if locks.is_empty() {
        return Waits::default();
    }
    locks.get(&lock_id(ctx, name)).map(|lock| lock.waits.clone()).unwrap_or_default()
}

/// A fair-lock command's view of the server's memory of the lock: taken
/// by [`Session::open`], handed back (and acted on) by [`Session::close`].
pub struct Session {
    pub(super) id: Option<Vec<u8>>,
    pub waits: Waits,
}

impl Session {
    /// Cheap when no fair lock has native waiters (the uncontended path).
    pub fn open(ctx: &Context, name: &[u8]) -> Self {
        let mut locks = locks();
        if locks.is_empty() {
            return Self { id: None, waits: Waits::default() };
        }
        let id = lock_id(ctx, name);
        let waits = locks.get_mut(&id).map(|lock| std::mem::take(&mut lock.waits)).unwrap_or_default();
        Self { id: Some(id), waits }
    }

    /// No lock's memory: a give-up whose lock the state does not tell
    /// (`RFAIR.CANCEL … OR`); closed with no change, it leaves none.
    pub fn unremembered() -> Self {
        Self { id: None, waits: Waits::default() }
    }

    /// Hands the waits back, once the command's keys are closed. When the
    /// command changed what the server watches (a lease set on a lock it
    /// watches: its timer must follow the new lease's end), or the lock has
    /// blocked waiters, the server looks at the queue at once, as itself
    /// (another user's ACL never decides what happens to the waiters).
    pub fn close(self, ctx: &Context, name: &RedisString, change: Change) {
        // A lease set on a lock the server does not watch concerns nobody.
        let unwatched = matches!(change, Change::None | Change::Lease);
        if self.id.is_none() && unwatched && self.waits.is_empty() {
            return; // nothing was kept, nothing is to be
        }
        let id = self.id.unwrap_or_else(|| lock_id(ctx, name.as_slice()));
        let blocked = {
            let mut locks = locks();
            let has_blocked = locks.get(&id).is_some_and(|lock| !lock.blocked.is_empty());
            if unwatched && !has_blocked && self.waits.is_empty() && !locks.contains_key(&id) {
                return;
            }
            let lock = locks.entry(id.clone()).or_default();
            lock.waits = self.waits;
            lock.head_told = change == Change::HeadTold;
            has_blocked
        };
        if change != Change::None || blocked {
            look_as_server(ctx, &id, name);
        } else {
            forget_if_idle(&id);
        }
    }
}

/// Blocks the caller, queued for `name`, until the lock is granted to it
/// (reply nil) or `block_ms` passes (reply 1: still queued); with
/// `full_reply`, both reply an `AcquireReply`.
pub fn block(ctx: &Context, name: &RedisString, owner: &[u8], call: BlockedCall) -> RedisValue {
    // No Redis timeout and no timeout callback: the wait's own timer ends it.
    let client = block_client(ctx, super::left::left);
    let id = lock_id(ctx, name.as_slice());
    let timer = start_timer(ctx, call.block_ms, Some(wait_ran_out), (id.clone(), client));
    let wait_ms = call.wait_ms;
    let client_id = unsafe { api!(RedisModule_GetClientId)(ctx.get_raw()) };
    let waiter = Waiter { client, client_id, owner: owner.to_vec(), timer, call, blocked_at_ms: now_ms() };
    {
        let mut locks = locks();
        let lock = locks.entry(id.clone()).or_default();
        lock.waits.set_blocked(owner, wait_ms);
        lock.blocked.push(waiter);
    }
    owner_waits().add(owner, &id);
    BLOCKED.fetch_add(1, Ordering::Relaxed);
    subscribe(ctx);
    look_as_server(ctx, &id, name);
    RedisValue::NoReply
}

/// Ends the blocked call of `owner` sent with `request_id`, if one waits
/// for `name`: a resend of that request goes on in the owner's place.
pub fn withdraw(ctx: &Context, name: &RedisString, owner: &[u8], request_id: &[u8]) {
    let id = lock_id(ctx, name.as_slice());
    let text = error_text(LockError::WaitTakenOver.into());
    for waiter in take_blocked(&id, |waiter| waiter.owner == owner && waiter.has_request(request_id)) {
        unblock(ctx, waiter, Outcome::Failed(text.clone()));
    }
}

fn look_as_server(ctx: &Context, id: &[u8], name: &RedisString) {
    let mut keys = RedisKeyspace::open_as_server(ctx, name);
    look_with(ctx, id, name, &mut keys);
}

/// Looks at lock `id` from a timer or an event: opens its keys as the
/// server and runs [`look_with`], when the server may write them (see
/// [`super::moved::may_write`]).
fn look(ctx: &Context, id: &[u8]) {
    let name = select_lock(ctx, id);
    match super::moved::may_write(ctx, name) {
        MayWrite::Now => look_as_server(ctx, id, &RedisString::create_from_slice(ctx.get_raw(), name)),
        MayWrite::Later(ms) => arm(ctx, id, now_ms() + ms),
        MayWrite::Never => {}
        MayWrite::Left => super::moved::slot_left(ctx, id),
    }
}

/// Runs [`FairLock::tick`] on open keys: unblocks a granted waiter and the
/// waiters a script dropped from the queue, arms the lock's timer for the
/// next look, and forgets a lock with nothing left to watch.
fn look_with(ctx: &Context, id: &[u8], name: &RedisString, keys: &mut RedisKeyspace) {
    let (mut waits, blocked, told, head_told) = {
        let mut locks = locks();
        let Some(lock) = locks.get_mut(id) else { return };
        let blocked: Vec<(Vec<u8>, i64, i64)> = lock
            .blocked
            .iter()
            .map(|waiter| (waiter.owner.clone(), waiter.call.lease_ms, waiter.call.wait_ms))
            .collect();
        (std::mem::take(&mut lock.waits), blocked, lock.told.take(), std::mem::take(&mut lock.head_told))
    };
    let told = if head_told { Told::Head } else { Told::Owner(told.as_deref()) };
    let views: Vec<Blocked<'_>> = blocked
        .iter()
        .map(|(owner, lease_ms, wait_ms)| Blocked { owner, lease_ms: *lease_ms, wait_ms: *wait_ms })
        .collect();
    let ticked = FairLock::new(name.as_slice()).tick(keys, &mut waits, (&views, told), (now_ms(), term::delay()));
    if let Some(lock) = locks().get_mut(id) {
        lock.waits = waits;
        lock.told = ticked.as_ref().ok().and_then(|tick| tick.told.clone());
    }
    match ticked {
        Ok(tick) => settle(ctx, id, name.as_slice(), tick),
        Err(err) => {
            // Not a fair lock any more (the server itself may touch every
            // key): every blocked caller gets the error an acquire would.
            let text = error_text(err.into());
            for waiter in take_blocked(id, |_| true) {
                // Not coming back: the next command on the lock purges its place.
                if let Some(lock) = locks().get_mut(id) {
                    lock.waits.set_gone(&waiter.owner);
                }
                unblock(ctx, waiter, Outcome::Failed(text.clone()));
            }
            forget_if_idle(id);
        }
    }
}

fn settle(ctx: &Context, id: &[u8], name: &[u8], tick: Tick) {
    if let Some(granted) = &tick.granted {
        // One grant, to the first caller blocked for the owner; another of
        // the same owner waits on (its next call re-enters).
        let first =
            locks().get(id).and_then(|lock| lock.blocked.iter().find(|w| &w.owner == granted).map(|w| w.client));
        for waiter in take_blocked(id, |waiter| Some(waiter.client) == first) {
            super::commands::STATS.waiter_granted(now_ms().saturating_sub(waiter.blocked_at_ms));
            if let Some(request) = &waiter.call.request {
                remember_grant(ctx, name, &waiter.owner, request, Grant::count(1));
            }
            let granted = waiter.granted();
            unblock(ctx, waiter, granted);
        }
    }
    for waiter in take_blocked(id, |waiter| tick.unqueued.contains(&waiter.owner)) {
        let unqueued = waiter.ask_again();
        unblock(ctx, waiter, unqueued);
    }
    match tick.next_at {
        Some(at) => arm(ctx, id, at),
        None => disarm(ctx, id),
    }
    if !tick.queued {
        if let Some(lock) = locks().get_mut(id) {
            lock.waits = Waits::default();
        }
    }
    forget_if_idle(id);
    unsubscribe_if_idle(ctx);
}

/// Takes the blocked waiters of lock `id` that `which` picks.
pub(super) fn take_blocked(id: &[u8], which: impl Fn(&Waiter) -> bool) -> Vec<Waiter> {
    let mut locks = locks();
    let Some(lock) = locks.get_mut(id) else { return Vec::new() };
    let (taken, kept): (Vec<Waiter>, Vec<Waiter>) = std::mem::take(&mut lock.blocked).into_iter().partition(which);
    lock.blocked = kept;
    for waiter in &taken {
        if !lock.blocked.iter().any(|other| other.owner == waiter.owner) {
            lock.waits.clear_blocked(&waiter.owner);
        }
    }
    drop(locks);
    let mut owner_waits = owner_waits();
    taken.iter().for_each(|waiter| owner_waits.remove(&waiter.owner, id));
    BLOCKED.fetch_sub(taken.len(), Ordering::Relaxed);
    taken
}

fn forget_if_idle(id: &[u8]) {
    let mut locks = locks();
    if locks.get(id).is_some_and(Lock::idle) {
        locks.remove(id);
    }
}

/// Keeps the lock's timer at `at`: an earlier one stays, a later one moves.
fn arm(ctx: &Context, id: &[u8], at: i64) {
    let armed = locks().get(id).and_then(|lock| lock.timer);
    match armed {
        Some((_, armed_at)) if armed_at <= at => return,
        Some((timer, _)) => stop_timer::<LockTimer>(ctx, timer),
        None => {}
    }
    let timer = start_timer(ctx, (at - now_ms()).max(0), Some(timer_fired), (id.to_vec(), at));
    locks().entry(id.to_vec()).or_default().timer = Some((timer, at));
}

pub(super) fn disarm(ctx: &Context, id: &[u8]) {
    let armed = locks().get_mut(id).and_then(|lock| lock.timer.take());
    if let Some((timer, _)) = armed {
        stop_timer::<LockTimer>(ctx, timer);
    }
}

/// Lock id and firing time.
type LockTimer = (Vec<u8>, i64);

unsafe extern "C" fn timer_fired(ctx: *mut raw::RedisModuleCtx, data: *mut c_void) {
    let (id, at) = unsafe { timer_data::<LockTimer>(data) };
    if let Some(lock) = locks().get_mut(&id) {
        if lock.timer.is_some_and(|(_, armed_at)| armed_at == at) {
            lock.timer = None;
        }
    }
    look(&Context::new(ctx), &id);
}

/// A blocked wait that ran out: the queue gets a look first (the lock may
/// be this waiter's now), then the caller, still queued, gets its hint.
unsafe extern "C" fn wait_ran_out(ctx: *mut raw::RedisModuleCtx, data: *mut c_void) {
    let (id, client) = unsafe { timer_data::<(Vec<u8>, Client)>(data) };
    let ctx = Context::new(ctx);
    if let Some(waiter) = locks().get_mut(&id).and_then(|lock| lock.blocked.iter_mut().find(|w| w.client == client)) {
        waiter.timer = 0; // fired: nothing to stop
    }
    look(&ctx, &id);
    for waiter in take_blocked(&id, |waiter| waiter.client == client) {
        super::commands::STATS.wait_timeout();
        let ran_out = waiter.ask_again();
        unblock(&ctx, waiter, ran_out);
    }
    forget_if_idle(&id);
    unsubscribe_if_idle(&ctx);
}

/// Ends a blocked call with `outcome`.
pub(super) fn unblock(ctx: &Context, waiter: Waiter, outcome: Outcome) {
    if waiter.timer != 0 {
        stop_timer::<(Vec<u8>, Client)>(ctx, waiter.timer);
    }
    unblock_client(waiter.client, outcome);
}
