//! Redisson's fair lock (protocol page §2) as pure logic over a
//! [`Keyspace`]: the lock hash of RLock, plus a FIFO queue of waiters with
//! deadlines. A release wakes only the head waiter, on its own channel.
//!
//! Where Redisson trusts the caller's clock, the server's is used; dead
//! waiters are purged wherever they are in the queue; a wait hint is never
//! below 1 ms, so no waiter spins.

mod queue;
#[cfg(test)]
mod tests;

#[cfg(not(test))]
mod commands;

use crate::error::LockError;
use crate::keyspace::latch::UnlockLatch;
use crate::keyspace::{parse_count, pttl, KeyType, Keyspace, Moot, Result};
use crate::lease::expiry;
pub use crate::lock::Release;
use queue::{expect_type, Waiters};
use rlock_protocol::{fair_queue_key, fair_timeout_key, fair_waiter_channel};

/// Redisson's `fairLockWaitTimeout` default: how long a waiter keeps its
/// place once its turn has come; also the wait of the no-wait form.
pub use rlock_protocol::DEFAULT_FAIR_WAIT_MS as DEFAULT_WAIT_MS;

/// The keys of one fair lock.
pub struct FairLock {
    pub name: Vec<u8>,
    queue: Vec<u8>,
    timeouts: Vec<u8>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acquire {
    Acquired,
    Reentered {
        count: i64,
    },
    /// No-wait form: someone else holds it or is ahead; nothing was queued.
    Refused,
    /// Waiting form: the caller is queued; poll again after `hint_ms`
    /// unless woken on its channel first.
    Queued {
        hint_ms: i64,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Status {
    pub locked: bool,
    pub pttl_ms: i64,
    pub holders: i64,
    /// The owner's hold count and 1-based queue position (0: not queued).
    pub owner: Option<(i64, i64)>,
    pub queued: i64,
}

impl FairLock {
    pub fn new(name: &[u8]) -> Self {
        Self { name: name.to_vec(), queue: fair_queue_key(name), timeouts: fair_timeout_key(name) }
    }

    /// Reads the lock's type and the owner's count, then the waiters.
    fn read<K: Keyspace>(&self, keys: &mut K, owner: Option<&[u8]>, now_ms: i64) -> Result<(Option<i64>, Waiters)> {
        expect_type(keys, &self.name, KeyType::Hash)?;
        let count = match owner {
            Some(owner) => parse_count(keys.hget(&self.name, owner)?)?,
            None => None,
        };
        Ok((count, Waiters::read(keys, &self.queue, &self.timeouts, now_ms)?))
    }

    fn purge<K: Keyspace>(&self, keys: &mut K, waiters: &mut Waiters) -> Result<()> {
        waiters.purge(keys, &self.queue, &self.timeouts)
    }

    /// Touches the channel of the head waiter, before any write: the
    /// caller may publish on it.
    fn touch_head<K: Keyspace>(&self, keys: &mut K, waiters: &Waiters) -> Result<()> {
        match waiters.head() {
            Some(head) => keys.touch_channel(&fair_waiter_channel(&self.name, head)),
            None => Ok(()),
        }
    }

    /// The lock freed before its lease ended: the waiters' deadlines, which
    /// counted the lease to its end, move up by what is left of it, so a
    /// head that never comes holds the queue up at most its wait from now.
    fn freed_early<K: Keyspace>(&self, keys: &mut K, waiters: &mut Waiters, now_ms: i64) -> Result<()> {
        match keys.expire_at(&self.name)? {
            Some(at) if at > now_ms => waiters.move_up(keys, &self.timeouts, at - now_ms),
            _ => Ok(()),
        }
    }

    /// Tells the head waiter, if any, that the lock is free.
    fn wake_head<K: Keyspace>(&self, keys: &mut K, waiters: &Waiters) -> Result<()> {
        match waiters.head() {
            Some(head) => keys.publish(&fair_waiter_channel(&self.name, head), rlock_protocol::UNLOCK_MESSAGE),
            None => Ok(()),
        }
    }

    /// The wait hint of a queued owner: the head waits for the holder's
    /// lease (it is told on its channel at the release); the others until
    /// the head's deadline, when a dead head is purged, but at most their
    /// own wait: each poll keeps them alive, and a release that comes early
    /// brings the head's deadline forward without telling them.
    fn hint<K: Keyspace>(
        &self,
        keys: &mut K,
        waiters: &Waiters,
        owner: &[u8],
        wait_ms: i64,
        now_ms: i64,
    ) -> Result<i64> {
        let hint = match waiters.position(owner) {
            Some(0) | None => match pttl(keys, &self.name, now_ms)? {
                -1 => wait_ms,
                pttl_ms => pttl_ms,
            },
            Some(_) => (waiters.live[0].1 - now_ms).min(wait_ms),
        };
        Ok(hint.max(1))
    }

    /// `RFAIR.ACQUIRE`: with `wait_ms`, the waiting form (the caller is
    /// queued when it cannot take the lock); without, the no-wait form.
    pub fn acquire<K: Keyspace>(
        &self,
        keys: &mut K,
        owner: &[u8],
        lease_ms: i64,
        wait_ms: Option<i64>,
        now_ms: i64,
    ) -> Result<Acquire> {
        let expire_at = expiry(now_ms, lease_ms)?;
        let (count, mut waiters) = self.read(keys, Some(owner), now_ms)?;
        let free = keys.key_type(&self.name)? == KeyType::Missing;
        self.purge(keys, &mut waiters)?;
        let wait = wait_ms.unwrap_or(DEFAULT_WAIT_MS);
        let outcome = if free && waiters.head().is_none_or(|head| head == owner) {
            waiters.remove(keys, &self.queue, &self.timeouts, owner, wait)?;
            keys.hset(&self.name, &[(owner, b"1")])?;
            Acquire::Acquired
        } else if let Some(count) = count {
            let count = count.checked_add(1).ok_or(LockError::HoldCountOverflow)?;
            keys.hincr_by(&self.name, owner, 1, count)?;
            Acquire::Reentered { count }
        } else if wait_ms.is_none() {
            return Ok(Acquire::Refused);
        } else {
            match waiters.position(owner) {
                None => {
                    let pttl_ms = pttl(keys, &self.name, now_ms)?;
                    waiters.enqueue(keys, &self.queue, &self.timeouts, owner, (pttl_ms, wait, now_ms))?;
                }
                Some(position) => {
                    let lease_end = keys.expire_at(&self.name)?.unwrap_or(now_ms).max(now_ms);
                    waiters.heartbeat(keys, &self.timeouts, position, lease_end, wait)?;
                }
            }
            return Ok(Acquire::Queued { hint_ms: self.hint(keys, &waiters, owner, wait, now_ms)? });
        };
        keys.set_expire_at(&self.name, expire_at)?;
        Ok(outcome)
    }

    /// `RFAIR.CANCEL`: Redisson's give-up. Waiters after the owner move up
    /// by `wait_ms`; when the owner was the head of a free lock, the new
    /// head is told (Redisson leaves it to find out at its next poll).
    pub fn cancel<K: Keyspace>(&self, keys: &mut K, owner: &[u8], wait_ms: i64, now_ms: i64) -> Result<()> {
        let (_, mut waiters) = self.read(keys, None, now_ms)?;
        let was_head = waiters.head() == Some(owner);
        let next = waiters.live.get(1).map(|(next, _)| next.clone());
        let free = keys.key_type(&self.name)? == KeyType::Missing;
        if let (true, true, Some(next)) = (was_head, free, &next) {
            keys.touch_channel(&fair_waiter_channel(&self.name, next))?;
        }
        self.purge(keys, &mut waiters)?;
        waiters.remove(keys, &self.queue, &self.timeouts, owner, wait_ms)?;
        if was_head && free {
            self.wake_head(keys, &waiters)?;
        }
        Ok(())
    }

    /// `RFAIR.RELEASE`: drop one hold; on the last, delete the lock and wake
    /// the head waiter. A missing lock also wakes the head and replies 1,
    /// as Redisson's script does.
    pub fn release<K: Keyspace>(
        &self,
        keys: &mut K,
        owner: &[u8],
        lease_ms: i64,
        latch: Option<&UnlockLatch>,
        now_ms: i64,
    ) -> Result<Release> {
        let expire_at = expiry(now_ms, lease_ms)?;
        if let Some(latch) = latch {
            if let Some(released) = latch.recorded(keys)? {
                return Ok(Release::Latched { released });
            }
        }
        let (count, mut waiters) = self.read(keys, Some(owner), now_ms)?;
        let free = keys.key_type(&self.name)? == KeyType::Missing;
        self.touch_head(keys, &waiters)?;
        self.purge(keys, &mut waiters)?;
        let outcome = match count {
            _ if free => {
                self.wake_head(keys, &waiters)?;
                Release::Released
            }
            None => return Ok(Release::NotHeld),
            Some(count) if count > 1 => {
                keys.hincr_by(&self.name, owner, -1, count - 1)?;
                keys.set_expire_at(&self.name, expire_at)?;
                Release::Decremented { count: count - 1 }
            }
            Some(_) => {
                self.freed_early(keys, &mut waiters, now_ms)?;
                keys.announce(&self.name, Moot::HashIncrement)?;
                keys.delete(&self.name)?;
                self.wake_head(keys, &waiters)?;
                Release::Released
            }
        };
        if let Some(latch) = latch {
            latch.record(keys, outcome == Release::Released)?;
        }
        Ok(outcome)
    }

    /// `RFAIR.FORCERELEASE`: delete the lock whoever holds it and wake the
    /// head waiter. Refuses a hash that is not a lock.
    pub fn force_release<K: Keyspace>(&self, keys: &mut K, now_ms: i64) -> Result<bool> {
        let (_, mut waiters) = self.read(keys, None, now_ms)?;
        let fields = keys.hgetall(&self.name)?;
        if fields.iter().any(|(_, value)| parse_count(Some(value.clone())).is_err()) {
            return Err(LockError::NotALock);
        }
        self.touch_head(keys, &waiters)?;
        self.purge(keys, &mut waiters)?;
        if fields.is_empty() {
            return Ok(false);
        }
        self.freed_early(keys, &mut waiters, now_ms)?;
        keys.delete(&self.name)?;
        self.wake_head(keys, &waiters)?;
        Ok(true)
    }

    /// `RFAIR.STATUS`: read only, so dead waiters are left for the next
    /// command to purge, but not counted.
    pub fn status<K: Keyspace>(&self, keys: &mut K, owner: Option<&[u8]>, now_ms: i64) -> Result<Status> {
        let (count, waiters) = self.read(keys, owner, now_ms)?;
        Ok(Status {
            locked: keys.key_type(&self.name)? == KeyType::Hash,
            pttl_ms: pttl(keys, &self.name, now_ms)?,
            holders: keys.hgetall(&self.name)?.len() as i64,
            owner: owner
                .map(|owner| (count.unwrap_or(0), waiters.position(owner).map_or(0, |position| position as i64 + 1))),
            queued: waiters.live.len() as i64,
        })
    }
}
