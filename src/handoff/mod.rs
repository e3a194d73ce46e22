//! Server-side FIFO hand-off for `RLOCK.ACQUIRE … WAIT`: callers refused a
//! lock wait in a queue per lock, and the lock is granted to the head of
//! its queue at the moment it frees. This part is the queues (pure, unit
//! tested); `blocking` blocks the clients and grants.

#[cfg(not(test))]
pub mod blocking;
pub mod deadlock;
#[cfg(not(test))]
pub mod deadlock_check;
#[cfg(not(test))]
pub mod events;
#[cfg(not(test))]
pub mod glue;
#[cfg(not(test))]
pub mod lease_timers;
pub mod owner_waits;
#[cfg(test)]
mod tests;

use owner_waits::OwnerWaits;
use std::collections::{HashMap, VecDeque};

/// Another kind of blocked waiter (the fair lock's, the read-write
/// lock's), named by its primitive's descriptor (`primitive`): the events
/// that may free a lock (deletes, expiries, overwrites) reach it through
/// the hand-off's keyspace callback.
#[cfg(not(test))]
pub struct WaiterKind {
    /// Whether any caller of this kind is blocked.
    pub anyone_waits: fn() -> bool,
    /// How many callers of this kind are blocked.
    pub waiting: fn() -> usize,
    /// Whether a caller of this kind is blocked on lock `id`.
    pub waits_on: fn(&[u8]) -> bool,
    /// The locks callers of this kind are blocked on (a FLUSH or SWAPDB
    /// checks them all).
    pub locks: fn() -> Vec<Vec<u8>>,
    /// Every caller of this kind blocked now (`RLOCK.WAITERS`).
    pub listed: fn() -> Vec<Listed>,
    /// The locks (ids) an owner's callers of this kind are blocked on.
    pub waits_of: fn(&[u8]) -> Vec<Vec<u8>>,
    /// Lock `id` may have freed (a timer: it may write).
    pub freed: fn(&redis_module::Context, &[u8]),
    /// A FLUSH or SWAPDB ran: what the kind remembers of keys may be gone.
    pub flushed: fn(&redis_module::Context),
}

/// A caller blocked on the server, as `RLOCK.WAITERS` tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// The lock's id: its database and name.
    pub lock: Vec<u8>,
    /// `lock` (`RLOCK.ACQUIRE … WAIT`) or `fair` (`RFAIR.ACQUIRE … BLOCK`).
    pub kind: &'static str,
    pub owner: Vec<u8>,
    /// The caller's connection (`CLIENT ID`).
    pub client_id: u64,
    /// When it blocked, and when its wait ends (server time, ms).
    pub since_ms: i64,
    pub ends_at_ms: i64,
}

/// One blocked caller: `client` identifies it (the blocked-client handle).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiter<C> {
    pub client: C,
    /// The caller's connection (`CLIENT ID`).
    pub client_id: u64,
    /// When its wait ends (server time, ms).
    pub ends_at_ms: i64,
    pub owner: Vec<u8>,
    pub lease_ms: i64,
    /// The acquire's request id (`ID`), whose grant is recorded.
    pub request: Option<Request>,
    /// Whether the caller asked for the full reply (`REPLY FULL`).
    pub full_reply: bool,
    /// When it queued (server time, ms): the full reply's time waited.
    pub queued_at_ms: i64,
}

/// An acquire's request id, and how long the record of its grant lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub id: Vec<u8>,
    pub window_ms: i64,
}

/// Every lock's waiters, in arrival order. A lock without waiters has no
/// queue.
#[derive(Debug)]
pub struct Queues<C> {
    by_lock: HashMap<Vec<u8>, VecDeque<Waiter<C>>>,
    by_owner: OwnerWaits,
}

impl<C> Default for Queues<C> {
    fn default() -> Self {
        Self { by_lock: HashMap::new(), by_owner: OwnerWaits::default() }
    }
}

impl<C: PartialEq> Queues<C> {
    /// Queues `waiter` behind the lock's others.
    pub fn push(&mut self, lock: &[u8], waiter: Waiter<C>) {
        self.by_owner.add(&waiter.owner, lock);
        self.by_lock.entry(lock.to_vec()).or_default().push_back(waiter);
    }

    /// Takes the lock's first waiter.
    pub fn pop_front(&mut self, lock: &[u8]) -> Option<Waiter<C>> {
        let queue = self.by_lock.get_mut(lock)?;
        let waiter = queue.pop_front();
        if queue.is_empty() {
            self.by_lock.remove(lock);
        }
        self.left(lock, waiter)
    }

    /// Unindexes a waiter taken out of `lock`'s queue.
    fn left(&mut self, lock: &[u8], waiter: Option<Waiter<C>>) -> Option<Waiter<C>> {
        if let Some(waiter) = &waiter {
            self.by_owner.remove(&waiter.owner, lock);
        }
        waiter
    }

    /// Puts a waiter taken with [`Queues::pop_front`] back at the front.
    pub fn push_front(&mut self, lock: &[u8], waiter: Waiter<C>) {
        self.by_owner.add(&waiter.owner, lock);
        self.by_lock.entry(lock.to_vec()).or_default().push_front(waiter);
    }

    /// Takes `client` out of whichever queue holds it: the lock's name and
    /// the waiter, or `None` when it is in none (granted already).
    pub fn remove(&mut self, client: &C) -> Option<(Vec<u8>, Waiter<C>)> {
        let (lock, queue, position) = self.by_lock.iter_mut().find_map(|(lock, queue)| {
            let position = queue.iter().position(|waiter| &waiter.client == client)?;
            Some((lock.clone(), queue, position))
        })?;
        let waiter = queue.remove(position);
        if queue.is_empty() {
            self.by_lock.remove(&lock);
        }
        let waiter = self.left(&lock, waiter)?;
        Some((lock, waiter))
    }

    /// Queues `waiter` behind the lock's others; but a resend of a queued
    /// acquire (the same owner and request id on `lock`) takes over its
    /// place, keeping the time it queued, and the replaced client is
    /// returned (its call is to be ended).
    pub fn queue(&mut self, lock: &[u8], waiter: Waiter<C>) -> Option<C> {
        let queued = waiter.request.as_ref().and_then(|request| self.position_of(lock, &waiter.owner, &request.id));
        let Some(at) = queued else {
            self.push(lock, waiter);
            return None;
        };
        let queued = &mut self.by_lock.get_mut(lock)?[at];
        let queued_at_ms = queued.queued_at_ms;
        Some(std::mem::replace(queued, Waiter { queued_at_ms, ..waiter }).client)
    }

    /// Whether an acquire of `owner` with `request_id` waits for `lock`.
    pub fn has_request(&self, lock: &[u8], owner: &[u8], request_id: &[u8]) -> bool {
        self.queued_request(lock, owner, request_id).is_some()
    }

    /// The waiting acquire of `owner` with `request_id` on `lock`.
    pub fn queued_request(&self, lock: &[u8], owner: &[u8], request_id: &[u8]) -> Option<&Waiter<C>> {
        self.by_lock.get(lock)?.get(self.position_of(lock, owner, request_id)?)
    }

    /// Takes that acquire out of the queue (a resend that will not wait
    /// runs instead).
    pub fn remove_request(&mut self, lock: &[u8], owner: &[u8], request_id: &[u8]) -> Option<Waiter<C>> {
        let at = self.position_of(lock, owner, request_id)?;
        let queue = self.by_lock.get_mut(lock)?;
        let waiter = queue.remove(at);
        if queue.is_empty() {
            self.by_lock.remove(lock);
        }
        self.left(lock, waiter)
    }

    fn position_of(&self, lock: &[u8], owner: &[u8], request_id: &[u8]) -> Option<usize> {
        self.by_lock.get(lock)?.iter().position(|queued| {
            queued.owner == owner && queued.request.as_ref().is_some_and(|request| request.id == request_id)
        })
    }

    /// The lock `client` waits for, if it waits.
    pub fn lock_of(&self, client: &C) -> Option<Vec<u8>> {
        self.by_lock
            .iter()
            .find(|(_, queue)| queue.iter().any(|waiter| &waiter.client == client))
            .map(|(lock, _)| lock.clone())
    }

    /// Every waiter, with its lock, as `RLOCK.WAITERS` tells it.
    pub fn listed(&self) -> Vec<Listed> {
        let waiters = self.by_lock.iter().flat_map(|(lock, queue)| queue.iter().map(move |waiter| (lock, waiter)));
        waiters
            .map(|(lock, waiter)| Listed {
                lock: lock.clone(),
                kind: "lock",
                owner: waiter.owner.clone(),
                client_id: waiter.client_id,
                since_ms: waiter.queued_at_ms,
                ends_at_ms: waiter.ends_at_ms,
            })
            .collect()
    }

    /// The locks `owner`'s callers wait for.
    pub fn waits_of(&self, owner: &[u8]) -> Vec<Vec<u8>> {
        self.by_owner.locks_of(owner)
    }

    /// Whether anyone waits for `lock`.
    pub fn has_waiters(&self, lock: &[u8]) -> bool {
        self.by_lock.contains_key(lock)
    }

    /// The locks with waiters.
    pub fn locks(&self) -> Vec<Vec<u8>> {
        self.by_lock.keys().cloned().collect()
    }

    /// Waiters over all locks.
    pub fn waiting(&self) -> usize {
        self.by_lock.values().map(VecDeque::len).sum()
    }

    /// Whether nobody waits for any lock.
    pub fn is_empty(&self) -> bool {
        self.by_lock.is_empty()
    }
}
