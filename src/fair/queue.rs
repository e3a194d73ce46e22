//! The fair lock's waiters: the queue (a list of owners, FIFO) and their
//! deadlines (a sorted set, owner -> Unix ms), read together and purged of
//! dead entries.

use super::waits::{Hints, Waits};
use crate::error::LockError;
use crate::keyspace::{KeyType, Keyspace, Result};
use std::collections::{HashMap, HashSet};

/// One live waiter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Live {
    pub owner: Vec<u8>,
    /// Until when it is alive: its score, or later where the server keeps
    /// it alive ([`Waits`]).
    pub deadline: i64,
    /// Its score in the deadlines' sorted set: Redisson's arithmetic for
    /// Redisson's waiters and script waiters, the deadline for the others.
    pub score: i64,
}

/// The live waiters, read at `now`, and the dead entries a purge removes.
#[derive(Debug, Default)]
pub struct Waiters {
    /// Live owners, head first.
    pub live: Vec<Live>,
    /// Queue entries whose deadline passed or that have none.
    dead_queued: Vec<Vec<u8>>,
    /// How many of those lead the queue: popped, not searched for.
    dead_at_head: usize,
    /// Deadlines of owners that are dead or not in the queue.
    dead_scored: Vec<Vec<u8>>,
    /// Native waiters whose deadline a script lowered below the one the
    /// server last gave them: written back by the purge.
    repaired: Vec<(Vec<u8>, i64)>,
}

/// Whether the server writes `owner`'s deadline into its score: not for
/// Redisson's waiters, whose scores follow Redisson's arithmetic.
fn scores_deadline(waits: &Waits, owner: &[u8]) -> bool {
    waits.hints(owner) == Some(Hints::Native)
}

impl Waiters {
    /// Reads the queue and the deadlines. Redisson purges only a dead head;
    /// here every dead entry goes (#1353, #3730, #4153): an entry whose
    /// deadline is at or before `now`, a queued owner without a deadline,
    /// a deadline without a queued owner. A native waiter is alive at
    /// least until the deadline the server last gave it (`waits`):
    /// Redisson's scripts take waits off the deadlines of everyone behind
    /// them, and would otherwise purge live waiters; its score is written
    /// back. Redisson's waiters are alive until the deadline the server
    /// keeps for them, their scores Redisson's arithmetic (only once the
    /// server forgot them, after a restart or failover, do the scores
    /// decide, as under Redisson).
    pub fn read<K: Keyspace>(
        keys: &mut K,
        (queue, timeouts): (&[u8], &[u8]),
        waits: &Waits,
        now_ms: i64,
    ) -> Result<Self> {
        expect_type(keys, queue, KeyType::List)?;
        expect_type(keys, timeouts, KeyType::Zset)?;
        let queued = keys.lrange(queue)?;
        let scores = keys.zrange(timeouts)?;
        // By member, so that a long queue costs one pass, not one per waiter.
        let by_owner: HashMap<&[u8], i64> = scores.iter().map(|(member, score)| (member.as_slice(), *score)).collect();
        let mut live: HashSet<Vec<u8>> = HashSet::new();
        let mut waiters = Self::default();
        for owner in queued {
            let stored = by_owner.get(owner.as_slice()).copied();
            let found = match (stored, waits.deadline(&owner, now_ms)) {
                _ if waits.is_gone(&owner) => None,
                // Alive while the server keeps it alive; its score keeps Redisson's arithmetic.
                (Some(stored), given) if waits.keeps_alive(&owner) => given.map(|given| (given, stored)),
                (stored, Some(given)) if stored.is_none_or(|stored| stored < given) => {
                    if !live.contains(&owner) {
                        waiters.repaired.push((owner.clone(), given));
                    }
                    Some((given, given))
                }
                (stored, _) => stored.map(|stored| (stored, stored)),
            };
            match found {
                Some((deadline, score)) if deadline > now_ms => {
                    if live.insert(owner.clone()) {
                        waiters.live.push(Live { owner, deadline, score });
                    }
                }
                _ if waiters.live.is_empty() && waiters.dead_queued.len() == waiters.dead_at_head => {
                    waiters.dead_at_head += 1;
                    waiters.dead_queued.push(owner);
                }
                _ => waiters.dead_queued.push(owner),
            }
        }
        waiters.dead_scored =
            scores.into_iter().filter(|(member, _)| !live.contains(member)).map(|(member, _)| member).collect();
        Ok(waiters)
    }

    pub fn head(&self) -> Option<&[u8]> {
        self.live.first().map(|live| live.owner.as_slice())
    }

    /// The owner's 0-based place in the queue.
    pub fn position(&self, owner: &[u8]) -> Option<usize> {
        self.live.iter().position(|live| live.owner == owner)
    }

    /// Removes the dead entries.
    pub fn purge<K: Keyspace>(&mut self, keys: &mut K, queue: &[u8], timeouts: &[u8]) -> Result<()> {
        let mut elsewhere: Vec<&[u8]> = Vec::new();
        let mut seen: HashSet<&[u8]> = HashSet::new();
        for (at, owner) in self.dead_queued.iter().enumerate() {
            if at < self.dead_at_head {
                keys.lpop(queue)?;
            } else if seen.insert(owner) {
                elsewhere.push(owner);
            }
        }
        if !elsewhere.is_empty() {
            keys.lrem(queue, &elsewhere)?;
        }
        self.dead_queued.clear();
        self.dead_at_head = 0;
        for owner in self.dead_scored.drain(..) {
            keys.zrem(timeouts, &[&owner])?;
        }
        for (owner, deadline) in self.repaired.drain(..) {
            keys.zadd(timeouts, &owner, deadline)?;
        }
        Ok(())
    }

    /// The deadline of a live `owner`.
    pub fn deadline(&self, owner: &[u8]) -> Option<i64> {
        self.live.iter().find(|live| live.owner == owner).map(|live| live.deadline)
    }

    /// Takes `owner` out of the queue, leaving the others' deadlines as
    /// they are; returns its place, or `None` when it was not queued.
    fn take<K: Keyspace>(
        &mut self,
        keys: &mut K,
        queue: &[u8],
        timeouts: &[u8],
        owner: &[u8],
    ) -> Result<Option<usize>> {
        let Some(position) = self.position(owner) else { return Ok(None) };
        if position == 0 {
            keys.lpop(queue)?;
        } else {
            keys.lrem(queue, &[owner])?;
        }
        keys.zrem(timeouts, &[owner])?;
        self.live.remove(position);
        Ok(Some(position))
    }

    /// Sets a live waiter's score, written when it changed.
    fn set_score<K: Keyspace>(keys: &mut K, timeouts: &[u8], live: &mut Live, score: i64) -> Result<()> {
        if live.score == score {
            return Ok(());
        }
        live.score = score;
        keys.zadd(timeouts, &live.owner, score)
    }

    /// The head takes the lock until `lease_end`: it leaves the queue.
    /// The deadlines of the waiters the server knows (their waits in
    /// `waits`) move by its lease end less its deadline when that is later,
    /// so that they stay chained after the new lease (never earlier: the
    /// taker's deadline may have been kept up past its turn). The scores
    /// of the others and of Redisson's waiters follow Redisson's
    /// arithmetic, the taker's wait (`taker_wait_ms`) off, so that a dead
    /// one holds the queue up no longer than under Redisson; live ones are
    /// kept alive by their own calls, which Redisson's never refresh (#3004).
    pub fn take_turn<K: Keyspace>(
        &mut self,
        keys: &mut K,
        (queue, timeouts): (&[u8], &[u8]),
        owner: &[u8],
        (lease_end, taker_wait_ms): (i64, i64),
        waits: &Waits,
    ) -> Result<()> {
        let Some(deadline) = self.deadline(owner) else { return Ok(()) };
        self.take(keys, queue, timeouts, owner)?;
        let later = lease_end.saturating_sub(deadline).max(0);
        for live in &mut self.live {
            let redissons = live.score.saturating_sub(taker_wait_ms);
            let (deadline, score) = match waits.hints(&live.owner) {
                Some(Hints::Native) => (live.deadline.saturating_add(later), live.deadline.saturating_add(later)),
                Some(Hints::Redisson(_)) => (live.deadline.saturating_add(later), redissons),
                None => (redissons, redissons),
            };
            live.deadline = deadline;
            Self::set_score(keys, timeouts, live, score)?;
        }
        Ok(())
    }

    /// The head's turn starts now: it is alive until `deadline` (its score
    /// too, but for Redisson's waiters).
    pub fn set_head_deadline<K: Keyspace>(
        &mut self,
        keys: &mut K,
        timeouts: &[u8],
        deadline: i64,
        waits: &Waits,
    ) -> Result<()> {
        let Some(head) = self.live.first_mut() else { return Ok(()) };
        head.deadline = deadline;
        match scores_deadline(waits, &head.owner) {
            true => Self::set_score(keys, timeouts, head, deadline),
            false => Ok(()),
        }
    }

    /// `owner` gives up its place, with Redisson's deadline arithmetic:
    /// every waiter after it gets `wait_ms` less.
    pub fn give_up<K: Keyspace>(
        &mut self,
        keys: &mut K,
        queue: &[u8],
        timeouts: &[u8],
        owner: &[u8],
        wait_ms: i64,
    ) -> Result<()> {
        let Some(position) = self.take(keys, queue, timeouts, owner)? else { return Ok(()) };
        for live in &mut self.live[position..] {
            live.deadline = live.deadline.saturating_sub(wait_ms);
            live.score = live.score.saturating_sub(wait_ms);
            keys.zadd(timeouts, &live.owner, live.score)?;
        }
        Ok(())
    }

    /// A queued waiter asked again: it is alive, so its deadline is at
    /// least `wait_ms` after its turn can come (after the lease's end for
    /// the head, after the deadline of the waiter ahead for the others);
    /// its score too, but for Redisson's waiters. Redisson never refreshes
    /// it, and purges live waiters whose wait was shorter than the time
    /// ahead of them (#3004).
    pub fn heartbeat<K: Keyspace>(
        &mut self,
        keys: &mut K,
        timeouts: &[u8],
        (position, lease_end, wait_ms): (usize, i64, i64),
        waits: &Waits,
    ) -> Result<()> {
        let turn = if position == 0 { lease_end } else { self.live[position - 1].deadline };
        let fresh = turn.saturating_add(wait_ms);
        let live = &mut self.live[position];
        if fresh <= live.deadline {
            return Ok(());
        }
        live.deadline = fresh;
        match scores_deadline(waits, &live.owner) {
            true => Self::set_score(keys, timeouts, live, fresh),
            false => Ok(()),
        }
    }

    /// Appends `owner` with Redisson's deadline: `wait_ms` after the last
    /// waiter's score (its deadline for a native caller, `hints`), or after
    /// the lock's PTTL (`pttl_ms`) when the queue is empty. Returns
    /// Redisson's reply, that base. The server keeps it alive at least
    /// `wait_ms` past the last waiter's deadline.
    pub fn enqueue<K: Keyspace>(
        &mut self,
        keys: &mut K,
        (queue, timeouts): (&[u8], &[u8]),
        owner: &[u8],
        (pttl_ms, wait_ms, hints): (i64, i64, Hints),
        now_ms: i64,
    ) -> Result<i64> {
        let tail = self.live.last().map(|last| match hints {
            Hints::Native => last.deadline,
            Hints::Redisson(_) => last.score,
        });
        let base = tail.map_or(pttl_ms, |tail| tail - now_ms);
        let score = base.saturating_add(wait_ms).saturating_add(now_ms);
        // Alive at least `wait_ms` past the last one (which the server may
        // keep alive past its score).
        let chained = self.live.last().map_or(score, |last| last.deadline.saturating_add(wait_ms));
        keys.zadd(timeouts, owner, score)?;
        keys.rpush(queue, owner)?;
        self.live.push(Live { owner: owner.to_vec(), deadline: score.max(chained), score });
        Ok(base)
    }
}

/// Refuses a key holding another type than `expected` (a missing key is fine).
pub fn expect_type<K: Keyspace>(keys: &mut K, key: &[u8], expected: KeyType) -> Result<()> {
    match keys.key_type(key)? {
        KeyType::Missing => Ok(()),
        found if found == expected => Ok(()),
        _ => Err(LockError::WrongType),
    }
}
