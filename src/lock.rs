//! Redisson's reentrant-lock protocol as a pure state machine.
//!
//! Each operation reads and writes the lock only through [`LockStore`] and
//! takes the clock as an argument, so the rules can be unit-tested without
//! Redis. The Redis side (`store.rs`) turns every write into the key-API
//! call, its replication and its keyspace notification.

use crate::delay::Delay;
use crate::error::LockError;
use crate::keyspace::KeyType;
use crate::lease::expiry;

pub mod acquire_holding;
pub mod acquire_once;
#[cfg(not(test))]
pub(crate) mod commands;
#[cfg(test)]
mod fixtures;
mod inspect;
pub mod latch;
mod primitive;
pub mod redisson;

/// RLock's view of its one key: a hash of `owner -> hold count` with an
/// absolute expiry, in the keyspace's terms ([`KeyType`]). Times are Unix
/// milliseconds. Two implementations: `store::RedisLock`, the key API on
/// the hot path, and `keyspace::lock::KeyspaceLock`, over any
/// [`crate::keyspace::Keyspace`] (the fenced lock's, and the unit tests').
pub trait LockStore {
    /// How an owner id is passed to the store.
    type Owner: ?Sized;

    fn kind(&self) -> KeyType;
    /// The owner's hold count; `None` when the owner has no field.
    /// Fails with [`LockError::NotALock`] when the field is not an integer.
    fn hold_count(&self, owner: &Self::Owner) -> Result<Option<i64>, LockError>;
    /// True when every field's value is an integer: the hash is a lock.
    fn holds_only_counts(&self) -> bool;
    /// Number of fields in the hash.
    fn holder_count(&self) -> i64;
    /// Absolute expiry; `None` when the key has none.
    fn expire_at(&self) -> Option<i64>;

    /// Sets the owner's count to `new_count`, which the caller computed as
    /// the old count plus `by` (so it can be replicated as HINCRBY by).
    fn increment(&mut self, owner: &Self::Owner, by: i64, new_count: i64);
    fn set_expire_at(&mut self, at_ms: i64);
    /// The owner's last hold ends: the key is deleted. (Redisson's script
    /// decrements the count to 0 first; a store may mirror that in its
    /// notifications, but need not write or replicate it.)
    fn remove_last_hold(&mut self, owner: &Self::Owner);
    fn delete(&mut self);
    /// Publishes Redisson's unlock message on the lock's release channel.
    fn publish_release(&mut self);
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acquire {
    /// The key did not exist; the owner now holds it once.
    Acquired,
    /// The owner already held it; its count went up to `count`.
    Reentered { count: i64 },
    /// Someone else holds it; `pttl_ms` is the key's PTTL (-1: no expiry).
    Contended { pttl_ms: i64 },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Renew {
    Renewed,
    NotHeld,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Release {
    NotHeld,
    /// One reentry level released; `count` levels remain.
    Decremented {
        count: i64,
    },
    /// The key was deleted and the release published.
    Released,
    /// A release with the same request id already ran and replied 1
    /// (`released`) or 0; nothing changed. See [`release_once`].
    Latched {
        released: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForceRelease {
    Released,
    NotLocked,
}

/// Everything Redisson's isLocked, isHeldByThread, getHoldCount and
/// remainTimeToLive report, read at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Status {
    pub locked: bool,
    /// PTTL semantics: -2 when not locked, -1 when there is no expiry.
    pub pttl_ms: i64,
    pub holders: i64,
    /// The asked-about owner's hold count (0 when it holds nothing);
    /// `None` when no owner was given.
    pub owner_hold_count: Option<i64>,
}

/// Redisson's acquire: take a free lock or re-enter an owned one, and set
/// the lease; otherwise report how long the current lease has left. While
/// `delay` lasts, nothing is granted, not even a re-entry: the server
/// cannot tell a hold from one whose release its old primary took.
pub fn acquire<S: LockStore>(
    store: &mut S,
    owner: &S::Owner,
    lease_ms: i64,
    (now_ms, delay): (i64, Delay),
) -> Result<Acquire, LockError> {
    let expire_at = expiry(now_ms, lease_ms)?;
    let outcome = match store.kind() {
        KeyType::Missing if delay.refuses() => return Ok(Acquire::Contended { pttl_ms: delay.left_ms() }),
        KeyType::Missing => {
            store.increment(owner, 1, 1);
            Acquire::Acquired
        }
        KeyType::Hash => match store.hold_count(owner)? {
            None => return Ok(Acquire::Contended { pttl_ms: delay.pttl(pttl(store, now_ms)) }),
            // Its own hold: it re-enters when the delay ends.
            Some(_) if delay.refuses() => return Ok(Acquire::Contended { pttl_ms: delay.left_ms() }),
            Some(count) => {
                let count = count.checked_add(1).ok_or(LockError::HoldCountOverflow)?;
                store.increment(owner, 1, count);
                Acquire::Reentered { count }
            }
        },
        _ => return Err(LockError::WrongType),
    };
    store.set_expire_at(expire_at);
    Ok(outcome)
}

/// Redisson's watchdog renewal: reset the lease if `owner` holds the lock.
pub fn renew<S: LockStore>(store: &mut S, owner: &S::Owner, lease_ms: i64, now_ms: i64) -> Result<Renew, LockError> {
    let expire_at = expiry(now_ms, lease_ms)?;
    if held_count(store, owner)?.is_none() {
        return Ok(Renew::NotHeld);
    }
    store.set_expire_at(expire_at);
    Ok(Renew::Renewed)
}

/// Whether `owner` holds the lock: what a batch renewal checks of every
/// lock before it renews any, so that a key of another type refuses the
/// batch with nothing renewed.
pub fn holds<S: LockStore>(store: &S, owner: &S::Owner) -> Result<bool, LockError> {
    Ok(held_count(store, owner)?.is_some())
}

/// Redisson's unlock: drop one reentry level; on the last one delete the
/// key and publish the release.
pub fn release<S: LockStore>(
    store: &mut S,
    owner: &S::Owner,
    lease_ms: i64,
    now_ms: i64,
) -> Result<Release, LockError> {
    let expire_at = expiry(now_ms, lease_ms)?;
    let Some(count) = held_count(store, owner)? else {
        return Ok(Release::NotHeld);
    };
    let count = count.checked_sub(1).ok_or(LockError::HoldCountOverflow)?;
    if count > 0 {
        store.increment(owner, -1, count);
        store.set_expire_at(expire_at);
        return Ok(Release::Decremented { count });
    }
    store.remove_last_hold(owner);
    store.publish_release();
    Ok(Release::Released)
}

/// Redisson's forceUnlock: delete the lock whoever holds it. Unlike a bare
/// DEL, it refuses to delete a key that is not a lock.
pub fn force_release<S: LockStore>(store: &mut S) -> Result<ForceRelease, LockError> {
    match store.kind() {
        KeyType::Missing => Ok(ForceRelease::NotLocked),
        KeyType::Hash if !store.holds_only_counts() => Err(LockError::NotALock),
        KeyType::Hash => {
            store.delete();
            store.publish_release();
            Ok(ForceRelease::Released)
        }
        _ => Err(LockError::WrongType),
    }
}

/// Reads the lock's state, and `owner`'s share of it when given.
pub fn status<S: LockStore>(store: &S, owner: Option<&S::Owner>, now_ms: i64) -> Result<Status, LockError> {
    let owner_hold_count = match owner {
        Some(owner) => Some(held_count(store, owner)?.unwrap_or(0)),
        None => None,
    };
    let locked = match store.kind() {
        KeyType::Missing => false,
        KeyType::Hash => true,
        _ => return Err(LockError::WrongType),
    };
    Ok(Status { locked, pttl_ms: pttl(store, now_ms), holders: store.holder_count(), owner_hold_count })
}

/// Parses a stored hold count the way HINCRBY does: canonical base-10
/// integers only ("7", "-3"; not "+7", "07", "-0", " 7" or "7.0").
pub fn parse_hold_count(value: &[u8]) -> Result<i64, LockError> {
    let (negative, digits) = match value {
        [b'-', rest @ ..] => (true, rest),
        _ => (false, value),
    };
    let canonical = match digits {
        [b'0'] => !negative,
        [b'1'..=b'9', rest @ ..] => rest.iter().all(u8::is_ascii_digit),
        _ => false,
    };
    if !canonical {
        return Err(LockError::NotALock);
    }
    // Accumulated as a negative number, so that i64::MIN fits.
    digits
        .iter()
        .try_fold(0i64, |n, digit| n.checked_mul(10)?.checked_sub(i64::from(digit - b'0')))
        .and_then(|n| if negative { Some(n) } else { n.checked_neg() })
        .ok_or(LockError::NotALock)
}

/// The owner's hold count, checking the key type first.
pub(crate) fn held_count<S: LockStore>(store: &S, owner: &S::Owner) -> Result<Option<i64>, LockError> {
    match store.kind() {
        KeyType::Missing => Ok(None),
        KeyType::Hash => store.hold_count(owner),
        _ => Err(LockError::WrongType),
    }
}

/// PTTL as Redis reports it ([`crate::keyspace::pttl_of`]).
pub fn pttl<S: LockStore>(store: &S, now_ms: i64) -> i64 {
    crate::keyspace::pttl_of(store.kind() == KeyType::Missing, store.expire_at(), now_ms)
}

#[cfg(test)]
mod tests;
