//! Redisson's fair lock (layout: docs/commands.md) as pure logic over a
//! [`Keyspace`]: the lock hash of RLock, plus a FIFO queue of waiters with
//! deadlines. A release wakes only the head waiter, on its own channel.
//!
//! Where Redisson trusts the caller's clock, the server's is used; dead
//! waiters are purged wherever they are in the queue; a wait hint is never
//! below 1 ms, so no waiter spins.

#[cfg(test)]
mod hint_tests;
mod inspect;
#[cfg(test)]
mod model_tests;
mod primitive;
mod queue;
mod redisson;
#[cfg(test)]
mod tests;
mod tick;
#[cfg(test)]
mod turn_tests;
mod waits;

#[cfg(not(test))]
mod commands;
#[cfg(not(test))]
pub mod handoff;
#[cfg(not(test))]
mod left;
#[cfg(not(test))]
mod moved;
#[cfg(not(test))]
mod waiter;

use crate::delay::Delay;
use crate::error::LockError;
use crate::keyspace::latch::UnlockLatch;
use crate::keyspace::{parse_count, pttl, KeyType, Keyspace, Moot, Result};
use crate::lease::expiry;
pub use crate::lock::Release;
use queue::{expect_type, Waiters};
use rlock_protocol::{fair_queue_key_parts, fair_timeout_key_parts, fair_waiter_channel};
pub use tick::{Blocked, Change, Tick, Told};
pub use waits::{AskedAgain, Hints, Wait, Waits};

/// The keys of one fair lock: its name, queue and deadlines, one after
/// the other in one buffer (one allocation per command, not three).
pub struct FairLock {
    names: Vec<u8>,
    /// Where the name ends and the queue's name begins, and where that ends.
    name_end: usize,
    queue_end: usize,
    /// A release of a missing lock is "not held" (nil, no latch recorded),
    /// not Redisson's "released": see [`FairLock::missing_not_held`].
    missing_not_held: bool,
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
    /// (at least 1) unless woken on its channel first.
    Queued {
        hint_ms: i64,
    },
    /// Waiting form, a holder's re-entry while a lock-delay lasts: poll
    /// again after `pttl_ms`; nothing was queued.
    Deferred {
        pttl_ms: i64,
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
        let (queue, timeouts) = (fair_queue_key_parts(name), fair_timeout_key_parts(name));
        let len = |parts: &[&[u8]]| parts.iter().map(|part| part.len()).sum::<usize>();
        let mut names = Vec::with_capacity(name.len() + len(&queue) + len(&timeouts));
        names.extend_from_slice(name);
        let name_end = names.len();
        queue.iter().for_each(|part| names.extend_from_slice(part));
        let queue_end = names.len();
        timeouts.iter().for_each(|part| names.extend_from_slice(part));
        Self { names, name_end, queue_end, missing_not_held: false }
    }

    /// Releases of a missing lock reply "not held" and record no latch
    /// (`MISSING NOTHELD`), as `RLOCK.RELEASE`'s do: Redisson's "released",
    /// recorded, tells a holder whose hold ended unseen that it released
    /// it, and a resend after a lost reply replays that too.
    pub fn missing_not_held(self) -> Self {
        Self { missing_not_held: true, ..self }
    }

    pub fn name(&self) -> &[u8] {
        &self.names[..self.name_end]
    }

    fn queue(&self) -> &[u8] {
        &self.names[self.name_end..self.queue_end]
    }

    fn timeouts(&self) -> &[u8] {
        &self.names[self.queue_end..]
    }

    /// Reads the lock's type and the owner's count, then the waiters.
    fn read<K: Keyspace>(
        &self,
        keys: &mut K,
        owner: Option<&[u8]>,
        waits: &Waits,
        now_ms: i64,
    ) -> Result<(Option<i64>, Waiters)> {
        expect_type(keys, self.name(), KeyType::Hash)?;
        let count = match owner {
            Some(owner) => parse_count(keys.hget(self.name(), owner)?)?,
            None => None,
        };
        Ok((count, Waiters::read(keys, (self.queue(), self.timeouts()), waits, now_ms)?))
    }

    fn purge<K: Keyspace>(&self, keys: &mut K, waiters: &mut Waiters) -> Result<()> {
        waiters.purge(keys, self.queue(), self.timeouts())
    }

    /// The head was told its turn came: its deadline becomes now plus its
    /// own wait when the server knows it. (An unknown wait, a waiter of
    /// Redisson's script, keeps Redisson's deadline; the others keep
    /// theirs, which never come before the head's turn ends.)
    fn turn_starts<K: Keyspace>(&self, keys: &mut K, waiters: &mut Waiters, waits: &Waits, now_ms: i64) -> Result<()> {
        match waiters.head().and_then(|head| waits.get(head)) {
            Some(wait_ms) => waiters.set_head_deadline(keys, self.timeouts(), now_ms.saturating_add(wait_ms), waits),
            None => Ok(()),
        }
    }

    /// Tells the head waiter, if any, that the lock is free.
    fn wake_head<K: Keyspace>(&self, keys: &mut K, waiters: &Waiters) -> Result<()> {
        match waiters.head() {
            Some(head) => keys.publish(&fair_waiter_channel(self.name(), head), rlock_protocol::UNLOCK_MESSAGE),
            None => Ok(()),
        }
    }

    /// The wait hint of a queued owner. Redisson's waiters get what
    /// Redisson's script replies (`redissons`) when it is positive: the
    /// time to the tail's deadline for a newcomer, the lock's PTTL for a
    /// waiter that asks again. Otherwise the head waits for the holder's
    /// lease (it is told on its channel at the release); the others until
    /// the head's deadline (a dead head's successor is told then too), and
    /// at most half their own wait: each poll keeps them alive.
    fn hint(waiters: &Waiters, owner: &[u8], (lock_pttl, wait): (i64, Wait), redissons: i64, now_ms: i64) -> i64 {
        if matches!(wait.hints, Hints::Redisson(_)) && redissons > 0 {
            return redissons;
        }
        let hint = match waiters.position(owner) {
            Some(0) | None if lock_pttl >= 0 => lock_pttl,
            Some(0) | None => wait.ms / 2,
            Some(_) => (waiters.live[0].deadline - now_ms).min(wait.ms / 2),
        };
        hint.max(1)
    }

    /// A free lock goes to `owner` (nobody waits, or it is the head): it
    /// takes its turn, and the others' deadlines follow its lease.
    fn grant<K: Keyspace>(
        &self,
        keys: &mut K,
        (waiters, waits): (&mut Waiters, &Waits),
        owner: &[u8],
        (expire_at, wait_ms): (i64, i64),
    ) -> Result<()> {
        waiters.take_turn(keys, (self.queue(), self.timeouts()), owner, (expire_at, wait_ms), waits)?;
        keys.hset(self.name(), &[(owner, b"1")])?;
        keys.set_expire_at(self.name(), expire_at)
    }

    /// [`Self::acquire_shifting`] by `wait_ms`, else Redisson's default.
    #[cfg(test)]
    pub fn acquire<K: Keyspace>(
        &self,
        keys: &mut K,
        waits: &mut Waits,
        owner: &[u8],
        (lease_ms, wait): (i64, Option<Wait>),
        (now_ms, delay): (i64, Delay),
    ) -> Result<Acquire> {
        let taker_wait = wait.map_or(rlock_protocol::DEFAULT_FAIR_WAIT_MS, |wait| wait.ms);
        self.acquire_shifting(keys, waits, owner, (lease_ms, wait, taker_wait), (now_ms, delay))
    }

    /// `RFAIR.ACQUIRE`: with `wait_ms`, the waiting form (the caller is
    /// queued when it cannot take the lock, and its wait remembered in
    /// `waits`); without, the no-wait form. While `delay` lasts, the lock
    /// is as if held until the delay's end, for its holder too (as in
    /// [`crate::lock::acquire`]), who is refused unqueued. The script
    /// waiters behind move up by `taker_wait` when the caller takes its
    /// turn (Redisson's no-wait tryLock() passes its lock's wait: `SHIFT`).
    pub fn acquire_shifting<K: Keyspace>(
        &self,
        keys: &mut K,
        waits: &mut Waits,
        owner: &[u8],
        (lease_ms, wait, taker_wait): (i64, Option<Wait>, i64),
        (now_ms, delay): (i64, Delay),
    ) -> Result<Acquire> {
        let expire_at = expiry(now_ms, lease_ms)?;
        let (count, mut waiters) = self.read(keys, Some(owner), waits, now_ms)?;
        let free = keys.key_type(self.name())? == KeyType::Missing;
        self.purge(keys, &mut waiters)?;
        let turn = free && waiters.head().is_none_or(|head| head == owner);
        let outcome = if turn && !delay.refuses() {
            self.grant(keys, (&mut waiters, waits), owner, (expire_at, taker_wait))?;
            Acquire::Acquired
        } else if count.is_some() && delay.refuses() {
            match wait {
                Some(_) => Acquire::Deferred { pttl_ms: delay.left_ms() },
                None => Acquire::Refused,
            }
        } else if let Some(count) = count {
            let count = count.checked_add(1).ok_or(LockError::HoldCountOverflow)?;
            keys.hincr_by(self.name(), owner, 1, count)?;
            keys.set_expire_at(self.name(), expire_at)?;
            Acquire::Reentered { count }
        } else if let Some(wait) = wait {
            let pttl_ms = delay.pttl(pttl(keys, self.name(), now_ms)?);
            waits.record(owner, wait);
            let keys_of_queue = (self.queue(), self.timeouts());
            // What Redisson's script replies: a newcomer's base; to one that
            // asks again, the PTTL, or before 3.32 its deadline less its wait.
            let redissons = match waiters.position(owner) {
                None => waiters.enqueue(keys, keys_of_queue, owner, (pttl_ms, wait.ms, wait.hints), now_ms)?,
                Some(position) => {
                    let ahead = waiters.live[position].score.saturating_sub(wait.ms).saturating_sub(now_ms);
                    let lease_end = keys.expire_at(self.name())?.unwrap_or(now_ms).max(now_ms);
                    let turn = lease_end.max(now_ms.saturating_add(delay.left_ms()));
                    waiters.heartbeat(keys, self.timeouts(), (position, turn, wait.ms), waits)?;
                    match wait.hints {
                        Hints::Redisson(AskedAgain::Ahead) => ahead,
                        _ => pttl_ms,
                    }
                }
            };
            Acquire::Queued { hint_ms: Self::hint(&waiters, owner, (pttl_ms, wait), redissons, now_ms) }
        } else {
            Acquire::Refused
        };
        waits.sync(&waiters);
        Ok(outcome)
    }

    /// `RFAIR.CANCEL`: Redisson's give-up. Waiters after the owner move up
    /// by `wait_ms`; when the owner was the head of a free lock, the new
    /// head is told, and its turn starts now (Redisson leaves it to find
    /// out at its next poll). Replies what the server's look must follow
    /// (`HeadTold` only when it told a head).
    pub fn cancel<K: Keyspace>(
        &self,
        keys: &mut K,
        waits: &mut Waits,
        owner: &[u8],
        wait_ms: i64,
        now_ms: i64,
    ) -> Result<Change> {
        let (_, mut waiters) = self.read(keys, None, waits, now_ms)?;
        let was_head = waiters.head() == Some(owner);
        let free = keys.key_type(self.name())? == KeyType::Missing;
        self.purge(keys, &mut waiters)?;
        waiters.give_up(keys, self.queue(), self.timeouts(), owner, wait_ms)?;
        let told = was_head && free && waiters.head().is_some();
        if told {
            self.turn_starts(keys, &mut waiters, waits, now_ms)?;
            self.wake_head(keys, &waiters)?;
        }
        waits.sync(&waiters);
        Ok(if told { Change::HeadTold } else { Change::Queued })
    }

    /// `RFAIR.RELEASE`: drop one hold; on the last, delete the lock and wake
    /// the head waiter, whose turn starts now. A missing lock also wakes
    /// the head and replies 1, as Redisson's script does. Also tells
    /// whether anyone is left queued.
    pub fn release<K: Keyspace>(
        &self,
        keys: &mut K,
        waits: &mut Waits,
        owner: &[u8],
        (lease_ms, latch): (i64, Option<&UnlockLatch>),
        now_ms: i64,
    ) -> Result<(Release, bool)> {
        let expire_at = expiry(now_ms, lease_ms)?;
        if let Some(latch) = latch {
            if let Some(released) = latch.recorded(keys)? {
                return Ok((Release::Latched { released }, false));
            }
        }
        let (count, mut waiters) = self.read(keys, Some(owner), waits, now_ms)?;
        let free = keys.key_type(self.name())? == KeyType::Missing;
        self.purge(keys, &mut waiters)?;
        let outcome = match count {
            _ if free => {
                self.wake_head(keys, &waiters)?;
                Release::Released
            }
            None => return Ok((Release::NotHeld, false)),
            Some(count) if count > 1 => {
                keys.hincr_by(self.name(), owner, -1, count - 1)?;
                keys.set_expire_at(self.name(), expire_at)?;
                Release::Decremented { count: count - 1 }
            }
            Some(_) => {
                self.turn_starts(keys, &mut waiters, waits, now_ms)?;
                keys.announce(self.name(), Moot::HashIncrement)?;
                keys.delete(self.name())?;
                self.wake_head(keys, &waiters)?;
                Release::Released
            }
        };
        // The head was told all the same: only the reply and the latch differ.
        let not_held = free && self.missing_not_held;
        if let Some(latch) = latch.filter(|_| !not_held) {
            latch.record(keys, outcome == Release::Released)?;
        }
        waits.sync(&waiters);
        let head_told = outcome == Release::Released && waiters.head().is_some();
        Ok((if not_held { Release::NotHeld } else { outcome }, head_told))
    }

    /// `RFAIR.FORCERELEASE`: delete the lock whoever holds it and wake the
    /// head waiter. Refuses a hash that is not a lock. Also tells whether
    /// anyone is left queued.
    pub fn force_release<K: Keyspace>(&self, keys: &mut K, waits: &mut Waits, now_ms: i64) -> Result<(bool, bool)> {
        let (_, mut waiters) = self.read(keys, None, waits, now_ms)?;
        let fields = keys.hgetall(self.name())?;
        if fields.iter().any(|(_, value)| parse_count(Some(value.clone())).is_err()) {
            return Err(LockError::NotALock);
        }
        self.purge(keys, &mut waiters)?;
        if fields.is_empty() {
            return Ok((false, false));
        }
        self.turn_starts(keys, &mut waiters, waits, now_ms)?;
        keys.delete(self.name())?;
        self.wake_head(keys, &waiters)?;
        waits.sync(&waiters);
        Ok((true, waiters.head().is_some()))
    }

    /// `RFAIR.STATUS`: read only, so dead waiters are left for the next
    /// command to purge, but not counted.
    pub fn status<K: Keyspace>(
        &self,
        keys: &mut K,
        waits: &Waits,
        owner: Option<&[u8]>,
        now_ms: i64,
    ) -> Result<Status> {
        let (count, waiters) = self.read(keys, owner, waits, now_ms)?;
        Ok(Status {
            locked: keys.key_type(self.name())? == KeyType::Hash,
            pttl_ms: pttl(keys, self.name(), now_ms)?,
            holders: keys.hgetall(self.name())?.len() as i64,
            owner: owner
                .map(|owner| (count.unwrap_or(0), waiters.position(owner).map_or(0, |position| position as i64 + 1))),
            queued: waiters.live.len() as i64,
        })
    }
}
