//! Redisson's permit-expirable semaphore (layout: docs/commands.md) as pure logic
//! over a [`Keyspace`]: the key is a string counting the available
//! permits, `{name}:timeout` a sorted set of the permits taken (id -> Unix
//! ms when its lease runs out, [`PERMIT_NEVER_EXPIRES`] for none), and
//! every change that may let a waiter in is published on
//! `redisson_sc:{name}`.
//!
//! Where it differs from Redisson's scripts: the clock is the server's;
//! every call first reclaims every expired permit (up to
//! [`RECLAIM_LIMIT`]; Redisson's acquire reclaims only as many as it asks
//! for, its release and setPermits none); releasing one permit whose lease
//! had run out says so (-1, where Redisson says 0 as for an unknown id);
//! adding permits keeps the TTL (#3224); releasing one permit publishes
//! the new count only when it is positive (Redisson's release(id) script
//! publishes it even when it is 0 or less, and its SemaphorePubSub turns a
//! negative message into `Semaphore.release(-1)`, which throws; a count of
//! 0 or less lets no waiter in anyway); an id given twice, or an acquire
//! of an id held already, is refused (Redisson takes n permits but records
//! fewer, leaking them).

#[cfg(test)]
mod tests;

mod inspect;
mod primitive;
mod redisson;
mod script;

#[cfg(not(test))]
mod commands;

use crate::delay::Delay;
use crate::error::LockError;
use crate::keyspace::{KeyType, Keyspace, Result};
use crate::lease::parse_lease_ms;
use crate::redisson::lua_number::percent_17g;
use crate::semaphore::{LuaNumberText, Semaphore};
use rlock_protocol::{permit_timeout_key, semaphore_channel, PERMIT_NEVER_EXPIRES};
use std::collections::HashSet;

/// At most this many expired permits are reclaimed by one call (an acquire
/// of more permits reclaims as many as it asks for, as Redisson's does).
pub const RECLAIM_LIMIT: usize = 1000;

/// How long a permit is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lease {
    Ms(i64),
    /// `-1`: until released.
    Never,
}

impl Lease {
    /// `lease_ms` (1 to the maximum lease) or `-1`.
    pub fn parse(arg: &[u8]) -> Result<Self> {
        if arg == b"-1" {
            return Ok(Self::Never);
        }
        match parse_lease_ms(arg) {
            Ok(ms) => Ok(Self::Ms(ms)),
            Err(LockError::LeaseTooLong) => Err(LockError::LeaseTooLong),
            Err(_) => Err(LockError::PermitLeaseInvalid),
        }
    }

    /// The permit's score: when the lease runs out.
    fn expiry(self, now_ms: i64) -> i64 {
        match self {
            Self::Ms(ms) => now_ms.saturating_add(ms),
            Self::Never => PERMIT_NEVER_EXPIRES,
        }
    }
}

/// What an acquire replies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TryAcquire {
    /// `OK`: every id is held.
    Granted,
    /// Not enough permits; the earliest lease ends then (Unix ms): Redisson's
    /// `:<ms>` hint.
    FirstExpiry(i64),
    /// Not enough permits, and none taken expires.
    NoExpiry,
}

/// What releasing one permit found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Release {
    Returned,
    /// Unknown, released already, or reclaimed already.
    NotHeld,
    /// Its lease had run out: the permit is returned now, but its holder was
    /// not protected all along.
    Lapsed,
}

/// The keys and channel of one permit-expirable semaphore.
pub struct PermitSemaphore {
    name: Vec<u8>,
    timeouts: Vec<u8>,
    channel: Vec<u8>,
    /// How `redis.call` writes a Lua number, for the scripts' forms.
    lua_number: LuaNumberText,
}

impl PermitSemaphore {
    pub fn new(name: &[u8]) -> Self {
        let (timeouts, channel) = (permit_timeout_key(name), semaphore_channel(name));
        Self { name: name.to_vec(), timeouts, channel, lua_number: percent_17g }
    }

    /// tryAcquire: takes one permit per id, held for `lease`, when that many
    /// are available. While `delay` lasts, none is taken, and the caller is
    /// told to try again at its end.
    pub fn try_acquire<K: Keyspace>(
        &self,
        keys: &mut K,
        (now_ms, delay): (i64, Delay),
        lease: Lease,
        ids: &[&[u8]],
    ) -> Result<TryAcquire> {
        check_ids(ids)?;
        let available = self.open(keys)?;
        for id in ids {
            if keys.zscore(&self.timeouts, id)?.is_some_and(|score| score > now_ms) {
                return Err(LockError::PermitIdHeld);
            }
        }
        let expire_at = keys.expire_at(&self.name)?;
        let available = self.reclaim(keys, now_ms, available, RECLAIM_LIMIT.max(ids.len()), &[])?;
        let wanted = ids.len() as i64;
        match available {
            Some(available) if available >= wanted && delay.refuses() => {
                Ok(TryAcquire::FirstExpiry(now_ms.saturating_add(delay.left_ms())))
            }
            Some(available) if available >= wanted => {
                keys.incr_by(&self.name, -wanted, available - wanted)?;
                let score = lease.expiry(now_ms);
                for id in ids {
                    keys.zadd(&self.timeouts, id, score)?;
                }
                if let Some(at) = expire_at {
                    keys.set_expire_at(&self.timeouts, at)?;
                }
                Ok(TryAcquire::Granted)
            }
            _ => self.first_expiry(keys, (now_ms, delay)),
        }
    }

    /// A refusal's retry time: the earliest expiry, unless the one of a
    /// permit that never expires, and not before a lock-delay's end. An
    /// expiry already past (a permit the limited reclaim left) is told as
    /// it is, as the script tells it, unless a delay lasts.
    fn first_expiry<K: Keyspace>(&self, keys: &mut K, (now_ms, delay): (i64, Delay)) -> Result<TryAcquire> {
        let delay_end = delay.lasts().then(|| now_ms.saturating_add(delay.left_ms()));
        Ok(match keys.zrange_to(&self.timeouts, i64::MAX, 1)?.first() {
            Some((_, score)) if *score != PERMIT_NEVER_EXPIRES => {
                TryAcquire::FirstExpiry(delay_end.map_or(*score, |end| (*score).max(end)))
            }
            _ => TryAcquire::NoExpiry,
        })
    }

    /// release(id): returns the permit and publishes the new count, as
    /// Redisson's script does, but only when it is positive (as its
    /// reclaim does): Redisson's SemaphorePubSub releases
    /// `min(waiting, message)` latch permits, and a negative message throws.
    pub fn release<K: Keyspace>(&self, keys: &mut K, now_ms: i64, id: &[u8]) -> Result<Release> {
        check_ids(&[id])?;
        let available = self.open(keys)?;
        match keys.zscore(&self.timeouts, id)? {
            None => {
                self.reclaim(keys, now_ms, available, RECLAIM_LIMIT, &[])?;
                Ok(Release::NotHeld)
            }
            Some(score) if score <= now_ms => {
                self.reclaim(keys, now_ms, available, RECLAIM_LIMIT, &[id])?;
                Ok(Release::Lapsed)
            }
            Some(_) => {
                let available = self.reclaim(keys, now_ms, available, RECLAIM_LIMIT, &[])?;
                let new = self.give_back(keys, available, &[id])?;
                if new > 0 {
                    keys.publish(&self.channel, new.to_string().as_bytes())?;
                }
                Ok(Release::Returned)
            }
        }
    }

    /// release(ids), Redisson 3.41+: all or nothing. Replies how many were
    /// returned (and publishes that number), or 0 when any id is not held
    /// or its lease had run out.
    pub fn release_all<K: Keyspace>(&self, keys: &mut K, now_ms: i64, ids: &[&[u8]]) -> Result<i64> {
        check_ids(ids)?;
        let available = self.open(keys)?;
        let mut all_held = true;
        for id in ids {
            all_held &= keys.zscore(&self.timeouts, id)?.is_some_and(|score| score > now_ms);
        }
        let available = self.reclaim(keys, now_ms, available, RECLAIM_LIMIT, &[])?;
        if !all_held {
            return Ok(0);
        }
        self.give_back(keys, available, ids)?;
        let returned = ids.len() as i64;
        keys.publish(&self.channel, returned.to_string().as_bytes())?;
        Ok(returned)
    }

    /// updateLeaseTime: a held permit's lease starts again from now.
    pub fn update_lease<K: Keyspace>(&self, keys: &mut K, now_ms: i64, id: &[u8], lease: Lease) -> Result<bool> {
        let Some(score) = self.held(keys, now_ms, id)? else { return Ok(false) };
        let new_score = lease.expiry(now_ms);
        if new_score != score {
            keys.zadd(&self.timeouts, id, new_score)?;
        }
        Ok(true)
    }

    /// getLeaseTime: -1 for a permit that never expires, the milliseconds
    /// left (at least 1), or 0 for a permit not held.
    pub fn lease<K: Keyspace>(&self, keys: &mut K, now_ms: i64, id: &[u8]) -> Result<i64> {
        Ok(match self.held(keys, now_ms, id)? {
            None => 0,
            Some(PERMIT_NEVER_EXPIRES) => -1,
            Some(score) => score - now_ms,
        })
    }

    /// availablePermits: 0 when the key is missing.
    pub fn available<K: Keyspace>(&self, keys: &mut K, now_ms: i64) -> Result<i64> {
        let available = self.open(keys)?;
        Ok(self.reclaim(keys, now_ms, available, RECLAIM_LIMIT, &[])?.unwrap_or(0))
    }

    /// getPermits: available plus taken.
    pub fn permits<K: Keyspace>(&self, keys: &mut K, now_ms: i64) -> Result<i64> {
        let available = self.available(keys, now_ms)?;
        self.add(available, keys.zcard(&self.timeouts)? as i64)
    }

    /// acquiredPermits: how many are taken.
    pub fn acquired<K: Keyspace>(&self, keys: &mut K, now_ms: i64) -> Result<i64> {
        self.available(keys, now_ms)?;
        Ok(keys.zcard(&self.timeouts)? as i64)
    }

    /// trySetPermits: as the semaphore's (only a missing key is set).
    pub fn try_set_permits<K: Keyspace>(
        &self,
        keys: &mut K,
        now_ms: i64,
        permits: i64,
        expire_at: Option<i64>,
    ) -> Result<bool> {
        self.available(keys, now_ms)?;
        Semaphore::new(&self.name).try_set_permits(keys, permits, expire_at)
    }

    /// setPermits: available plus taken becomes `permits` (the available
    /// count may go negative) and `permits` is published; nothing when it
    /// is so already.
    pub fn set_permits<K: Keyspace>(&self, keys: &mut K, now_ms: i64, permits: i64) -> Result<()> {
        let available = self.open(keys)?;
        let message = permits.to_string();
        match self.reclaim(keys, now_ms, available, RECLAIM_LIMIT, &[])? {
            None => keys.set(&self.name, message.as_bytes(), None)?,
            Some(available) => {
                let total = self.add(available, keys.zcard(&self.timeouts)? as i64)?;
                if total == permits {
                    return Ok(());
                }
                let by = permits.checked_sub(total).ok_or_else(|| LockError::CounterOverflow(self.name.clone()))?;
                keys.incr_by(&self.name, by, self.add(available, by)?)?;
            }
        }
        keys.publish(&self.channel, message.as_bytes())
    }

    /// addPermits: adds `delta` (which may be negative), keeping the TTL;
    /// publishes `delta` when it is positive, as Redisson does.
    pub fn add_permits<K: Keyspace>(&self, keys: &mut K, now_ms: i64, delta: i64) -> Result<()> {
        let available = self.open(keys)?;
        let expire_at = keys.expire_at(&self.name)?;
        let available = self.reclaim(keys, now_ms, available, RECLAIM_LIMIT, &[])?;
        if available.is_some() && delta == 0 {
            return Ok(());
        }
        let new = self.add(available.unwrap_or(0), delta)?;
        keys.set(&self.name, new.to_string().as_bytes(), expire_at)?;
        if delta > 0 {
            keys.publish(&self.channel, delta.to_string().as_bytes())?;
        }
        Ok(())
    }

    /// Reads the count and checks the permits' type before any write: the
    /// available count (`None`: missing).
    fn open<K: Keyspace>(&self, keys: &mut K) -> Result<Option<i64>> {
        let available = keys.read_counter(&self.name)?;
        match keys.key_type(&self.timeouts)? {
            KeyType::Missing | KeyType::Zset => {}
            _ => return Err(LockError::DerivedWrongType(self.timeouts.clone())),
        }
        Ok(available)
    }

    /// The score of `id` if it is held, after the reclaim (which returns
    /// `id` too if its lease has run out).
    fn held<K: Keyspace>(&self, keys: &mut K, now_ms: i64, id: &[u8]) -> Result<Option<i64>> {
        check_ids(&[id])?;
        let available = self.open(keys)?;
        let score = keys.zscore(&self.timeouts, id)?;
        let expired = score.is_some_and(|score| score <= now_ms);
        let also: &[&[u8]] = if expired { &[id] } else { &[] };
        self.reclaim(keys, now_ms, available, RECLAIM_LIMIT, also)?;
        Ok(score.filter(|_| !expired))
    }

    /// Returns the permits whose lease ran out at or before `now_ms` (the
    /// `limit` earliest, and `also`), in one ZREM and one INCRBY, and
    /// publishes the new count when it is positive. Writes nothing when
    /// none ran out. The available count after it.
    fn reclaim<K: Keyspace>(
        &self,
        keys: &mut K,
        now_ms: i64,
        available: Option<i64>,
        limit: usize,
        also: &[&[u8]],
    ) -> Result<Option<i64>> {
        let mut expired: Vec<Vec<u8>> =
            keys.zrange_to(&self.timeouts, now_ms, limit)?.into_iter().map(|(id, _)| id).collect();
        for id in also {
            if !expired.iter().any(|known| known == id) {
                expired.push(id.to_vec());
            }
        }
        if expired.is_empty() {
            return Ok(available);
        }
        let ids: Vec<&[u8]> = expired.iter().map(Vec::as_slice).collect();
        let new = self.give_back(keys, available, &ids)?;
        if new > 0 {
            keys.publish(&self.channel, new.to_string().as_bytes())?;
        }
        Ok(Some(new))
    }

    /// Removes `ids` from the permits taken and adds them to the count:
    /// the new count (each caller publishes its own message).
    fn give_back<K: Keyspace>(&self, keys: &mut K, available: Option<i64>, ids: &[&[u8]]) -> Result<i64> {
        let by = ids.len() as i64;
        let new = self.add(available.unwrap_or(0), by)?;
        keys.zrem(&self.timeouts, ids)?;
        keys.incr_by(&self.name, by, new)?;
        Ok(new)
    }

    fn add(&self, count: i64, by: i64) -> Result<i64> {
        count.checked_add(by).ok_or_else(|| LockError::CounterOverflow(self.name.clone()))
    }
}

/// Permit ids are non-empty and given once each.
fn check_ids(ids: &[&[u8]]) -> Result<()> {
    if ids.iter().any(|id| id.is_empty()) {
        return Err(LockError::PermitIdEmpty);
    }
    let mut seen = HashSet::with_capacity(ids.len());
    if !ids.iter().all(|id| seen.insert(*id)) {
        return Err(LockError::PermitIdRepeated);
    }
    Ok(())
}
