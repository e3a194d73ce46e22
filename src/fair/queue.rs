//! The fair lock's waiters: the queue (a list of owners, FIFO) and their
//! deadlines (a sorted set, owner -> Unix ms), read together and purged of
//! dead entries.

use crate::error::LockError;
use crate::keyspace::{KeyType, Keyspace, Result};
use std::collections::{HashMap, HashSet};

/// The live waiters, read at `now`, and the dead entries a purge removes.
#[derive(Debug, Default)]
pub struct Waiters {
    /// Live owners, head first, with their deadlines.
    pub live: Vec<(Vec<u8>, i64)>,
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

impl Waiters {
    /// Reads the queue and the deadlines. Redisson purges only a dead head;
    /// here every dead entry goes (#1353, #3730, #4153): an entry whose
    /// deadline is at or before `now`, a queued owner without a deadline,
    /// a deadline without a queued owner. A native waiter's deadline is at
    /// least the one the server last gave it (`waits`): Redisson's scripts
    /// take waits off the deadlines of everyone behind them, and would
    /// otherwise purge live native waiters.
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
            let score = match (stored, waits.deadline(&owner, now_ms)) {
                _ if waits.is_gone(&owner) => None,
                (stored, Some(given)) if stored.is_none_or(|stored| stored < given) => {
                    if !live.contains(&owner) {
                        waiters.repaired.push((owner.clone(), given));
                    }
                    Some(given)
                }
                (stored, _) => stored,
            };
            match score {
                Some(score) if score > now_ms => {
                    if live.insert(owner.clone()) {
                        waiters.live.push((owner, score));
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
        self.live.first().map(|(owner, _)| owner.as_slice())
    }

    /// The owner's 0-based place in the queue.
    pub fn position(&self, owner: &[u8]) -> Option<usize> {
        self.live.iter().position(|(live, _)| live == owner)
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
        self.live.iter().find(|(live, _)| live == owner).map(|(_, deadline)| *deadline)
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

    /// The head takes the lock until `lease_end`: it leaves the queue.
    /// The deadlines of the native waiters (their waits in `waits`) move by
    /// its lease end less its deadline when that is later, so that they stay
    /// chained after the new lease (never earlier: the taker's deadline may
    /// have been kept up past its turn). A script waiter's deadline follows
    /// Redisson's arithmetic, the taker's wait (`taker_wait_ms`) off, so
    /// that a dead one holds the queue up no longer than under Redisson;
    /// live native waiters are kept alive by their own calls, which
    /// Redisson's never refresh (#3004).
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
        for (waiter, score) in &mut self.live {
            let moved = match waits.get(waiter) {
                Some(_) => score.saturating_add(later),
                None => score.saturating_sub(taker_wait_ms),
            };
            if moved != *score {
                *score = moved;
                keys.zadd(timeouts, waiter, moved)?;
            }
        }
        Ok(())
    }

    /// The head's turn starts now: its deadline becomes `deadline`.
    pub fn set_head_deadline<K: Keyspace>(&mut self, keys: &mut K, timeouts: &[u8], deadline: i64) -> Result<()> {
        match self.live.first_mut() {
            Some((head, score)) if *score != deadline => {
                *score = deadline;
                keys.zadd(timeouts, head, deadline)
            }
            _ => Ok(()),
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
        for (later, score) in &mut self.live[position..] {
            *score = score.saturating_sub(wait_ms);
            keys.zadd(timeouts, later, *score)?;
        }
        Ok(())
    }

    /// A queued waiter asked again: it is alive, so its deadline is at
    /// least `wait_ms` after its turn can come (after the lease's end for
    /// the head, after the deadline of the waiter ahead for the others).
    /// Redisson never refreshes it, and purges live waiters whose wait
    /// was shorter than the time ahead of them (#3004).
    pub fn heartbeat<K: Keyspace>(
        &mut self,
        keys: &mut K,
        timeouts: &[u8],
        position: usize,
        lease_end: i64,
        wait_ms: i64,
    ) -> Result<()> {
        let turn = if position == 0 { lease_end } else { self.live[position - 1].1 };
        let fresh = turn.saturating_add(wait_ms);
        let (owner, score) = &mut self.live[position];
        if fresh > *score {
            *score = fresh;
            keys.zadd(timeouts, owner, fresh)?;
        }
        Ok(())
    }

    /// Appends `owner` with Redisson's deadline: `wait_ms` after the last
    /// waiter's deadline, or after the lock's PTTL (`pttl_ms`) when the
    /// queue is empty. Returns Redisson's reply, that base.
    pub fn enqueue<K: Keyspace>(
        &mut self,
        keys: &mut K,
        queue: &[u8],
        timeouts: &[u8],
        owner: &[u8],
        (pttl_ms, wait_ms, now_ms): (i64, i64, i64),
    ) -> Result<i64> {
        let base = self.live.last().map_or(pttl_ms, |(_, tail)| tail - now_ms);
        let deadline = base.saturating_add(wait_ms).saturating_add(now_ms);
        keys.zadd(timeouts, owner, deadline)?;
        keys.rpush(queue, owner)?;
        self.live.push((owner.to_vec(), deadline));
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

/// What the server knows of its own waiters beyond the keys: the `WAIT`
/// each native waiter last sent, so that a woken head gets exactly its
/// wait from its turn, and the deadline the server last gave it, which a
/// script may lower but not below that. The server never sees the wait of
/// a waiter queued by Redisson's script, nor keeps these across a restart
/// or failover (memory, not data): such a head keeps the deadline
/// Redisson's release leaves it.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Waits(HashMap<Vec<u8>, Known>);

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Known {
    wait_ms: i64,
    /// The deadline the server last gave it (0: none yet).
    deadline: i64,
    /// Blocked on the server: alive whatever its deadline says (a stall
    /// may have kept the server from keeping it up).
    blocked: bool,
    /// Told by the server that its acquire failed (the key stopped being
    /// a fair lock): it is not coming back, so it is dead whatever its
    /// deadline says, until it asks again.
    gone: bool,
}

impl Waits {
    pub fn record(&mut self, owner: &[u8], wait_ms: i64) {
        let known = self.0.entry(owner.to_vec()).or_default();
        known.wait_ms = wait_ms;
        known.gone = false;
    }

    pub fn get(&self, owner: &[u8]) -> Option<i64> {
        self.0.get(owner).map(|known| known.wait_ms)
    }

    /// The deadline a live native waiter has at least at `now`: the one
    /// the server gave it, and a blocked one's wait from now.
    fn deadline(&self, owner: &[u8], now_ms: i64) -> Option<i64> {
        let known = self.0.get(owner).filter(|known| !known.gone)?;
        let alive = if known.blocked { now_ms.saturating_add(known.wait_ms) } else { 0 };
        Some(known.deadline.max(alive)).filter(|deadline| *deadline > now_ms)
    }

    /// Marks `owner`, of wait `wait_ms`, blocked on the server.
    pub fn set_blocked(&mut self, owner: &[u8], wait_ms: i64) {
        let known = self.0.entry(owner.to_vec()).or_default();
        known.wait_ms = wait_ms;
        known.blocked = true;
        known.gone = false;
    }

    /// `owner`'s blocked call was told its acquire failed: its place is
    /// purged by the next command on the lock, as a dead waiter's.
    pub fn set_gone(&mut self, owner: &[u8]) {
        if let Some(known) = self.0.get_mut(owner) {
            known.blocked = false;
            known.gone = true;
        }
    }

    /// Whether `owner` was told its acquire failed and has not asked since.
    fn is_gone(&self, owner: &[u8]) -> bool {
        self.0.get(owner).is_some_and(|known| known.gone)
    }

    /// `owner` no longer blocks (it may still poll).
    pub fn clear_blocked(&mut self, owner: &[u8]) {
        if let Some(known) = self.0.get_mut(owner) {
            known.blocked = false;
        }
    }

    /// Forgets the owners that are no longer queued, and remembers the
    /// deadlines of the others as a command leaves them.
    pub fn sync(&mut self, waiters: &Waiters) {
        if self.0.is_empty() {
            return;
        }
        self.0.retain(|owner, known| match waiters.deadline(owner) {
            Some(deadline) => {
                known.deadline = deadline;
                true
            }
            None => false,
        });
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}
