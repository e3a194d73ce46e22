//! The server's own look at a fair lock's queue ([`FairLock::tick`]), from
//! its timer, a keyspace event or after a command: what keeps the queue
//! moving when no waiter calls.

use super::queue::Waiters;
use super::{Acquire, FairLock, Release, Waits};
use crate::delay::Delay;
use crate::keyspace::{KeyType, Keyspace, Result};
use crate::lease::expiry;

/// A caller blocked on the server for the lock (`RFAIR.ACQUIRE … BLOCK`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Blocked<'a> {
    pub owner: &'a [u8],
    pub lease_ms: i64,
    pub wait_ms: i64,
}

/// Whom the server last told its turn, so that a look tells each new
/// head of a free lock once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Told<'a> {
    /// The head as it is now: a command just told it.
    Head,
    /// This owner, or nobody (the lock was held at the last look).
    Owner(Option<&'a [u8]>),
}

/// What a command did that the server's look at the queue must follow:
/// after any but `None`, the glue looks at a lock it watches at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Nothing the queue waits on (a refusal, a release nobody waits for).
    None,
    /// The lease was set (a grant, a re-entry, a release of one level):
    /// the next head's turn comes at its end, wherever the timer was.
    Lease,
    /// It queued a waiter, one asked again, or one gave up.
    Queued,
    /// It freed the lock, or took its head out, and told the next head.
    HeadTold,
}

impl Change {
    pub fn of_acquire(acquired: &Acquire) -> Self {
        match acquired {
            Acquire::Acquired | Acquire::Reentered { .. } => Self::Lease,
            Acquire::Queued { .. } => Self::Queued,
            Acquire::Refused | Acquire::Deferred { .. } => Self::None,
        }
    }

    /// A release, and whether anyone is left queued (then the head was
    /// told: a release that freed the lock, or found it missing).
    pub fn of_release(released: Release, waiters_left: bool) -> Self {
        match released {
            Release::Released | Release::NotHeld if waiters_left => Self::HeadTold,
            Release::Decremented { .. } => Self::Lease,
            _ => Self::None,
        }
    }
}

/// What [`FairLock::tick`] found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Tick {
    /// The blocked owner the lock was granted to.
    pub granted: Option<Vec<u8>>,
    /// Blocked owners no longer queued.
    pub unqueued: Vec<Vec<u8>>,
    /// Whether anyone is queued.
    pub queued: bool,
    /// The head told its turn, while the lock is free (for the next look).
    pub told: Option<Vec<u8>>,
    /// When to look again (server time, ms).
    pub next_at: Option<i64>,
}

impl FairLock {
    /// The server's own look at the queue, from a timer, an event or after
    /// a command. It drops the dead; a free lock goes to a blocked head, or
    /// a head not told yet (`told`: its lease ran out, a dead head was
    /// dropped, a script released the lock or gave up) is told and its
    /// turn starts; blocked waiters, alive while they block, have their
    /// deadlines kept up. Replies who was granted, the blocked owners no
    /// longer queued (a script dropped them), whom it told, and when to
    /// look again. While `delay` lasts, the lock is as if held until its
    /// end.
    pub fn tick<K: Keyspace>(
        &self,
        keys: &mut K,
        waits: &mut Waits,
        (blocked, told): (&[Blocked<'_>], Told<'_>),
        (now_ms, delay): (i64, Delay),
    ) -> Result<Tick> {
        let (_, mut waiters) = self.read(keys, None, waits, now_ms)?;
        let free = keys.key_type(self.name())? == KeyType::Missing && !delay.lasts();
        self.purge(keys, &mut waiters)?;
        let find = |owner: &[u8]| blocked.iter().find(|waiter| waiter.owner == owner);
        let mut tick = Tick {
            unqueued: blocked
                .iter()
                .filter(|waiter| waiters.position(waiter.owner).is_none())
                .map(|w| w.owner.to_vec())
                .collect(),
            ..Tick::default()
        };
        match waiters.head().and_then(find) {
            Some(head) if free => {
                let lease_end = expiry(now_ms, head.lease_ms)?;
                self.grant(keys, (&mut waiters, waits), head.owner, (lease_end, head.wait_ms))?;
                tick.granted = Some(head.owner.to_vec());
            }
            None if free && told != Told::Head && told != Told::Owner(waiters.head()) => {
                self.turn_starts(keys, &mut waiters, waits, now_ms)?;
                self.wake_head(keys, &waiters)?;
            }
            _ => {}
        }
        let delay_end = delay.lasts().then(|| now_ms.saturating_add(delay.left_ms()));
        let lease_end = match (keys.key_type(self.name())?, keys.expire_at(self.name())?, delay_end) {
            (KeyType::Missing, _, delay_end) => delay_end,
            (_, Some(lease_end), Some(delay_end)) => Some(lease_end.max(delay_end)),
            (_, lease_end, _) => lease_end,
        };
        for waiter in blocked {
            if let Some(position) = waiters.position(waiter.owner) {
                let turn = lease_end.unwrap_or(now_ms).max(now_ms);
                waiters.heartbeat(keys, self.timeouts(), (position, turn, waiter.wait_ms), waits)?;
            }
        }
        waits.sync(&waiters);
        tick.queued = waiters.head().is_some();
        let free = keys.key_type(self.name())? == KeyType::Missing && !delay.lasts();
        tick.told = waiters.head().filter(|_| free).map(<[u8]>::to_vec);
        tick.next_at = next_look(&waiters, blocked, free, lease_end).map(|at| at.max(now_ms + 1));
        Ok(tick)
    }
}

/// When the server must look at the queue again: a free lock's head that
/// is not blocked loses its turn at its deadline; a held lock's head gets
/// its turn at the lease's end (granted, or told); a blocked waiter's
/// deadline is kept up when half its wait is left.
fn next_look(waiters: &Waiters, blocked: &[Blocked<'_>], free: bool, lease_end: Option<i64>) -> Option<i64> {
    let is_blocked = |owner: &[u8]| blocked.iter().any(|waiter| waiter.owner == owner);
    let head = waiters.live.first()?;
    let turn = match (free, is_blocked(&head.owner), lease_end) {
        (true, false, _) => Some(head.deadline.saturating_add(1)),
        (false, _, Some(end)) => Some(end.saturating_add(1)),
        _ => None,
    };
    let refreshes = blocked
        .iter()
        .filter_map(|waiter| waiters.deadline(waiter.owner).map(|deadline| deadline - (waiter.wait_ms / 2).max(1)));
    turn.into_iter().chain(refreshes).min()
}
