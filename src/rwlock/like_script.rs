//! What the read-write lock does when it acts like Redisson's scripts
//! (the commands' `LIKESCRIPT`), where `RRW.*` deliberately differs.

use super::hash::RwHash;
use super::{check_owner, ReadWriteLock, MAX_READ_HOLDS};
use crate::error::LockError;
use crate::keyspace::{pttl, KeyType, Keyspace, Result};
use crate::lease::expiry;
use crate::semaphore::LuaNumberText;
use rlock_protocol::Joined;

impl ReadWriteLock<'_> {
    /// The expiry `pexpire(name, pttl + lease)` sets, as the script runs
    /// it: the sum is a Lua number (a double) that `redis.call` writes as
    /// text and PEXPIRE reads back; `None` when that time is already past
    /// (PEXPIRE deletes the key: a hash without expiry has PTTL -1). A sum
    /// PEXPIRE refuses (a TTL set by hand beyond 10^17 ms) is refused
    /// before anything is written (the script fails after its HINCRBY).
    pub(super) fn grown_expiry<K: Keyspace>(
        &self,
        keys: &mut K,
        lease_ms: i64,
        now_ms: i64,
        lua_number: LuaNumberText,
    ) -> Result<Option<i64>> {
        let sum = pttl(keys, self.name, now_ms)? as f64 + lease_ms as f64;
        let ttl_ms = crate::lock::parse_hold_count(&lua_number(sum)).map_err(|_| LockError::ExpiryOverflow)?;
        match ttl_ms {
            ..=0 => Ok(None),
            _ => expiry(now_ms, ttl_ms).map(Some),
        }
    }

    /// RedissonReadLock.isLocked (8ad44f1b): the mode is `read`, or `write`
    /// beside more fields than the writer's (its reads). Reads only the
    /// mode and the number of fields, as the script: a hash that is no
    /// read-write lock is answered too.
    pub fn read_locked<K: Keyspace>(&self, keys: &mut K) -> Result<bool> {
        match keys.key_type(self.name)? {
            KeyType::Missing => return Ok(false),
            KeyType::Hash => {}
            _ => return Err(LockError::WrongType),
        }
        Ok(match keys.hget(self.name, b"mode")?.as_deref() {
            Some(b"read") => true,
            Some(b"write") => {
                let mut fields = 0;
                keys.hash_visit(self.name, &mut |_, _| fields += 1)?;
                fields > 2
            }
            _ => false,
        })
    }

    /// RedissonReadLock.renewExpirationAsync (6563941f, 3.10.0 .. 3.43.0):
    /// when `owner` holds anything, the hash's TTL becomes the lease
    /// (shorter too), then every field's timeout keys, every owner's
    /// (Redisson's #7098), from the highest, in the hash's order.
    pub fn renew_all_like_script<K: Keyspace>(
        &self,
        keys: &mut K,
        owner: &[u8],
        lease_ms: i64,
        now_ms: i64,
    ) -> Result<bool> {
        check_owner(owner)?;
        let expire_at = expiry(now_ms, lease_ms)?;
        let hash = RwHash::read(keys, self.name)?;
        if hash.count(owner) == 0 {
            return Ok(false);
        }
        let fields: Vec<&[u8]> = hash.holds.iter().map(|(field, _)| field.as_slice()).collect();
        let timeouts = self.existing_timeouts(keys, &hash, &fields)?;
        keys.set_expire_at(self.name, expire_at)?;
        for key in timeouts {
            keys.set_expire_at(&key, expire_at)?;
        }
        Ok(true)
    }

    /// ReadLockTask's renewal of one lock (38d2b478, 4.4.0 .. 4.7.0): the
    /// timeout keys of each of `owners` that holds, from the highest, then
    /// the hash's TTL becomes the lease (shorter too) when any held.
    /// Checked before anything is written; see [`Self::renew_owners`].
    pub fn check_owners<K: Keyspace>(&self, keys: &mut K, owners: &[&[u8]]) -> Result<RenewPlan> {
        owners.iter().try_for_each(|owner| check_owner(owner))?;
        let hash = RwHash::read(keys, self.name)?;
        let holding: Vec<&[u8]> = owners.iter().copied().filter(|owner| hash.count(owner) > 0).collect();
        let timeouts = self.existing_timeouts(keys, &hash, &holding)?;
        Ok(RenewPlan { any_held: !holding.is_empty(), timeouts })
    }

    /// Writes what [`Self::check_owners`] planned; whether any owner held.
    pub fn renew_owners<K: Keyspace>(&self, keys: &mut K, plan: RenewPlan, expire_at: i64) -> Result<bool> {
        for key in &plan.timeouts {
            keys.set_expire_at(key, expire_at)?;
        }
        if plan.any_held {
            keys.set_expire_at(self.name, expire_at)?;
        }
        Ok(plan.any_held)
    }

    /// The timeout keys of `fields`' holds that exist (of any type: the
    /// script's PEXPIRE takes any), each field's from its count down to 1.
    /// At most [`MAX_READ_HOLDS`] are looked at, all fields together.
    fn existing_timeouts<K: Keyspace>(&self, keys: &mut K, hash: &RwHash, fields: &[&[u8]]) -> Result<Vec<Joined>> {
        let total = fields.iter().try_fold(0i64, |total, field| total.checked_add(hash.count(field)));
        if total.is_none_or(|total| total > MAX_READ_HOLDS) {
            return Err(LockError::TooManyReadHolds);
        }
        let mut timeouts = Vec::new();
        for field in fields {
            for n in (1..=hash.count(field)).rev() {
                let key = self.timeout_key(field, n);
                if keys.key_type(&key)? != KeyType::Missing {
                    timeouts.push(key);
                }
            }
        }
        Ok(timeouts)
    }
}

/// A count in a batch renewal (`RRW.RENEWREADS`: keys, owners): 1 or more,
/// no sign, no leading zero.
pub fn positive_count(count: &[u8]) -> Option<usize> {
    let canonical =
        count.first().is_some_and(|digit| (b'1'..=b'9').contains(digit)) && count.iter().all(u8::is_ascii_digit);
    canonical.then(|| std::str::from_utf8(count).ok()?.parse().ok()).flatten()
}

/// What one lock's batch renewal will write.
pub struct RenewPlan {
    any_held: bool,
    timeouts: Vec<Joined>,
}
