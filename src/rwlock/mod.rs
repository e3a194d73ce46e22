//! Redisson's read-write lock (layout: docs/commands.md) as pure logic over a
//! [`Keyspace`]: one hash with a `mode` (`read` or `write`), a hold count
//! per reader and one for the writer (`<owner>:write`), and a string key
//! per read hold carrying that hold's own lease. Readers share; a writer
//! excludes everyone but itself, and may take reads too.

mod hash;
mod inspect;
mod like_script;
pub use like_script::positive_count;
#[cfg(test)]
mod like_script_tests;
mod primitive;
mod redisson;
#[cfg(test)]
mod tests;

#[cfg(not(test))]
mod commands;
#[cfg(not(test))]
pub(crate) mod handoff;

use crate::delay::Delay;
use crate::error::LockError;
use crate::keyspace::latch::UnlockLatch;
use crate::keyspace::{pttl, KeyType, Keyspace, Moot, Result};
use crate::lease::expiry;
use crate::semaphore::LuaNumberText;
use hash::{is_write_field, Mode, RwHash};
use rlock_protocol::{decimal, rwlock_channel_parts, rwlock_timeout_key_parts, rwlock_write_field, with_joined};
use rlock_protocol::{DecimalBuffer, Joined};

/// Which side of the lock a command is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Read,
    Write,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acquire {
    /// Taken or re-entered: the owner's holds of that side now.
    Acquired { count: i64 },
    /// Someone else holds it the other way; the lock's PTTL.
    Contended { pttl_ms: i64 },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Release {
    /// Redisson's nil. `published`: the lock was missing, so the release
    /// message went out anyway (and a latch records 1), as the script does.
    NotHeld {
        published: bool,
    },
    /// Redisson's 0: the lock is still held (maybe by others only).
    StillHeld,
    /// Redisson's 1.
    Released,
    Latched {
        released: bool,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub mode: Option<&'static str>,
    pub pttl_ms: i64,
    pub readers: i64,
    /// The owner's read and write hold counts, when an owner was given.
    pub owner: Option<(i64, i64)>,
}

/// The keys of one read-write lock.
pub struct ReadWriteLock<'a> {
    pub name: &'a [u8],
    /// Set when acquires act as Redisson's scripts (`LIKESCRIPT`): a write
    /// re-entry grows the TTL, a read one sets it to the lease.
    like_script: Option<LuaNumberText>,
    /// A release of a missing lock records no latch (`MISSING NOTHELD`).
    missing_not_held: bool,
}

/// Most read holds one lock takes, all readers together: each is a key
/// that a read release visits (Redisson's script has no limit, but a
/// script can be killed when it runs too long; a command cannot).
pub const MAX_READ_HOLDS: i64 = 10_000;

/// Refuses an empty owner (as every command does: it tells no holder
/// apart; `RRW.RENEWREADS`'s counted groups are checked here), and one
/// whose field would be the lock's `mode`, or look like another owner's
/// write hold. The filter leaves a script call naming one to Lua.
fn check_owner(owner: &[u8]) -> Result<()> {
    if owner.is_empty() {
        return Err(LockError::OwnerEmpty);
    }
    if owner == b"mode" || is_write_field(owner) {
        return Err(LockError::OwnerReserved);
    }
    Ok(())
}

/// Redisson's messages: a read release wakes one waiter, a write release all.
const READ_RELEASED: &[u8] = b"0";
const WRITE_RELEASED: &[u8] = b"1";

impl<'a> ReadWriteLock<'a> {
    pub fn new(name: &'a [u8]) -> Self {
        Self { name, like_script: None, missing_not_held: false }
    }

    /// Releases of a missing lock record no latch (`MISSING NOTHELD`), as
    /// `RLOCK.RELEASE`'s do: Redisson's script records 1 while it replies
    /// nil, so a resend after a lost reply would answer "released" to a
    /// holder whose hold had ended unseen.
    pub fn missing_not_held(self) -> Self {
        Self { missing_not_held: true, ..self }
    }

    /// Redisson's acquires (`LIKESCRIPT`): a write re-entry sets the TTL to
    /// the PTTL plus the lease, written as `redis.call` writes that Lua
    /// number on this server (see [`Self::grown_expiry`]); a read one (its
    /// text before 3.11.1) sets it to the lease.
    pub fn like_redissons_script(self, lua_number: LuaNumberText) -> Self {
        Self { like_script: Some(lua_number), ..self }
    }

    /// Publishes `message` on the lock's channel, its name joined on the
    /// stack: most commands publish nothing.
    fn publish<K: Keyspace>(&self, keys: &mut K, message: &[u8]) -> Result<()> {
        with_joined(&rwlock_channel_parts(self.name), |channel| keys.publish(channel, message))
    }

    /// A read hold's timeout key, joined on the stack (a read acquire and
    /// release each make one).
    fn timeout_key(&self, field: &[u8], n: i64) -> Joined {
        Joined::new(&rwlock_timeout_key_parts(self.name, field, decimal(n, &mut DecimalBuffer::new())))
    }

    /// Touches a read hold's timeout key; refuses one that is not a string.
    fn touch_timeout<K: Keyspace>(&self, keys: &mut K, key: &[u8]) -> Result<()> {
        match keys.key_type(key)? {
            KeyType::Missing | KeyType::String => Ok(()),
            _ => Err(LockError::WrongType),
        }
    }

    /// The expiry for a hold of `lease_ms` that must not cut another's short.
    fn extended_expiry<K: Keyspace>(&self, keys: &mut K, at_ms: i64) -> Result<i64> {
        Ok(keys.expire_at(self.name)?.map_or(at_ms, |current| current.max(at_ms)))
    }

    /// Takes or re-enters a side. While `delay` lasts, nothing is granted,
    /// as in [`crate::lock::acquire`].
    pub fn acquire<K: Keyspace>(
        &self,
        keys: &mut K,
        owner: &[u8],
        side: Side,
        lease_ms: i64,
        (now_ms, delay): (i64, Delay),
    ) -> Result<Acquire> {
        check_owner(owner)?;
        let expire_at = expiry(now_ms, lease_ms)?;
        let hash = RwHash::read(keys, self.name)?;
        let writer_holds = hash.write_count(owner) > 0;
        let grantable = match (side, hash.mode) {
            (_, None) | (Side::Read, Some(Mode::Read)) => true,
            (Side::Read, Some(Mode::Write)) | (Side::Write, Some(Mode::Write)) => writer_holds,
            (Side::Write, Some(Mode::Read)) => false,
        };
        let count = match (side, hash.mode) {
            _ if grantable && delay.refuses() => return Ok(Acquire::Contended { pttl_ms: delay.left_ms() }),
            (Side::Read, None) => {
                let timeout = self.timeout_key(owner, 1);
                self.touch_timeout(keys, &timeout)?;
                keys.hset(self.name, &[(b"mode", b"read"), (owner, b"1")])?;
                keys.set(&timeout, b"1", Some(expire_at))?;
                keys.set_expire_at(self.name, expire_at)?;
                1
            }
            (Side::Read, Some(mode)) if mode == Mode::Read || writer_holds => {
                hash.check_read_holds(1)?;
                let count = hash.count(owner) + 1;
                let timeout = self.timeout_key(owner, count);
                self.touch_timeout(keys, &timeout)?;
                // Redisson before 3.11.1 sets the lease, shorter too.
                let extended = match self.like_script {
                    None => self.extended_expiry(keys, expire_at)?,
                    Some(_) => expire_at,
                };
                keys.hincr_by(self.name, owner, 1, count)?;
                keys.set(&timeout, b"1", Some(expire_at))?;
                keys.set_expire_at(self.name, extended)?;
                count
            }
            (Side::Write, None) => {
                keys.hset(self.name, &[(b"mode", b"write"), (&rwlock_write_field(owner), b"1")])?;
                keys.set_expire_at(self.name, expire_at)?;
                1
            }
            (Side::Write, Some(Mode::Write)) if writer_holds => {
                let write_field = rwlock_write_field(owner);
                let count = hash.count(&write_field).checked_add(1).ok_or(LockError::HoldCountOverflow)?;
                // Redisson adds the lease to the PTTL here, so the TTL grows
                // with every re-entry (#891, #1110); never shortened instead,
                // unless asked to act like the script.
                let extended = match self.like_script {
                    None => Some(self.extended_expiry(keys, expire_at)?),
                    Some(lua_number) => self.grown_expiry(keys, lease_ms, now_ms, lua_number)?,
                };
                keys.hincr_by(self.name, &write_field, 1, count)?;
                match extended {
                    Some(at) => keys.set_expire_at(self.name, at)?,
                    None => keys.delete(self.name)?,
                }
                count
            }
            _ => return Ok(Acquire::Contended { pttl_ms: delay.pttl(pttl(keys, self.name, now_ms)?) }),
        };
        Ok(Acquire::Acquired { count })
    }

    pub fn release<K: Keyspace>(
        &self,
        keys: &mut K,
        owner: &[u8],
        side: Side,
        lease_ms: i64,
        latch: Option<&UnlockLatch>,
        now_ms: i64,
    ) -> Result<Release> {
        check_owner(owner)?;
        let expire_at = expiry(now_ms, lease_ms)?;
        if let Some(latch) = latch {
            if let Some(released) = latch.recorded(keys)? {
                return Ok(Release::Latched { released });
            }
        }
        let hash = RwHash::read(keys, self.name)?;
        let outcome = match side {
            _ if hash.mode.is_none() => {
                let message = if side == Side::Read { READ_RELEASED } else { WRITE_RELEASED };
                self.publish(keys, message)?;
                Release::NotHeld { published: true }
            }
            Side::Read => self.release_read(keys, &hash, owner, now_ms)?,
            Side::Write => self.release_write(keys, &hash, owner, expire_at)?,
        };
        let records = match outcome {
            Release::StillHeld | Release::Released => true,
            Release::NotHeld { published } => published && !self.missing_not_held,
            Release::Latched { .. } => false,
        };
        if let (Some(latch), true) = (latch, records) {
            latch.record(keys, outcome != Release::StillHeld)?;
        }
        Ok(outcome)
    }

    fn release_read<K: Keyspace>(&self, keys: &mut K, hash: &RwHash, owner: &[u8], now_ms: i64) -> Result<Release> {
        let count = hash.count(owner);
        if count == 0 {
            return Ok(Release::NotHeld { published: false });
        }
        hash.check_read_holds(0)?;
        let own_timeout = self.timeout_key(owner, count);
        self.touch_timeout(keys, &own_timeout)?;
        let own_timeout_exists = keys.key_type(&own_timeout)? != KeyType::Missing;
        // What is left once this hold is gone, read before any write: the
        // hash lives as long as the longest remaining read hold.
        let mut others_remain = false;
        let mut longest: Option<i64> = None;
        for (field, holds) in &hash.holds {
            let holds = if field == owner { count - 1 } else { *holds };
            if holds == 0 {
                continue;
            }
            others_remain = true;
            if is_write_field(field) {
                continue; // a write hold has no timeout keys
            }
            for n in 1..=holds {
                let key = self.timeout_key(field, n);
                self.touch_timeout(keys, &key)?;
                if let Some(at) = keys.expire_at(&key)? {
                    longest = Some(longest.map_or(at, |longest: i64| longest.max(at)));
                }
            }
        }
        let still_held_until = match longest {
            _ if !others_remain => None,
            Some(at) if at > now_ms => Some(Some(at)),
            _ if hash.mode == Some(Mode::Write) => Some(None),
            _ => None,
        };
        // As the script: count down, drop the field at 0, drop the hold's
        // key; when the hash goes too, those writes are only announced.
        if still_held_until.is_some() {
            keys.hincr_by(self.name, owner, -1, count - 1)?;
            if count == 1 {
                keys.hdel(self.name, owner)?;
            }
        } else {
            keys.announce(self.name, Moot::HashIncrement)?;
            if count == 1 {
                keys.announce(self.name, Moot::HashDelete)?;
            }
        }
        let own_timeout = own_timeout_exists.then_some(&*own_timeout);
        match still_held_until {
            Some(held_until) => {
                if let Some(own_timeout) = own_timeout {
                    keys.delete(own_timeout)?;
                }
                if let Some(at) = held_until {
                    keys.set_expire_at(self.name, at)?;
                }
                Ok(Release::StillHeld)
            }
            None => {
                match own_timeout {
                    Some(own_timeout) => keys.delete_both(own_timeout, self.name)?,
                    None => keys.delete(self.name)?,
                }
                self.publish(keys, READ_RELEASED)?;
                Ok(Release::Released)
            }
        }
    }

    fn release_write<K: Keyspace>(&self, keys: &mut K, hash: &RwHash, owner: &[u8], expire_at: i64) -> Result<Release> {
        let write_field = rwlock_write_field(owner);
        let count = hash.count(&write_field);
        if hash.mode != Some(Mode::Write) || count == 0 {
            return Ok(Release::NotHeld { published: false });
        }
        if count > 1 {
            keys.hincr_by(self.name, &write_field, -1, count - 1)?;
            keys.set_expire_at(self.name, expire_at)?;
            return Ok(Release::StillHeld);
        }
        let others = hash.holds.len() > 1;
        // The script counts down to 0 first: moot, the field goes.
        keys.announce(self.name, Moot::HashIncrement)?;
        if others {
            // The writer still holds reads: the lock goes on as a read
            // lock, silently and with its TTL, as in Redisson.
            keys.hdel(self.name, &write_field)?;
            keys.hset(self.name, &[(b"mode", b"read")])?;
        } else {
            keys.announce(self.name, Moot::HashDelete)?;
            keys.delete(self.name)?;
            self.publish(keys, WRITE_RELEASED)?;
        }
        Ok(Release::Released)
    }

    /// `RRW.RENEW`: resets the lease of every read hold of `owner` (each
    /// timeout key) and of its write hold; the hash's expiry is never
    /// shortened (other readers' holds live in it). False when the owner
    /// holds nothing.
    pub fn renew<K: Keyspace>(&self, keys: &mut K, owner: &[u8], lease_ms: i64, now_ms: i64) -> Result<bool> {
        check_owner(owner)?;
        let expire_at = expiry(now_ms, lease_ms)?;
        let hash = RwHash::read(keys, self.name)?;
        let reads = hash.count(owner);
        if reads == 0 && hash.write_count(owner) == 0 {
            return Ok(false);
        }
        hash.check_read_holds(0)?;
        let mut timeouts = Vec::new();
        for n in 1..=reads {
            let key = self.timeout_key(owner, n);
            self.touch_timeout(keys, &key)?;
            if keys.key_type(&key)? != KeyType::Missing {
                timeouts.push(key);
            }
        }
        let extended = self.extended_expiry(keys, expire_at)?;
        for key in timeouts {
            keys.set_expire_at(&key, expire_at)?;
        }
        keys.set_expire_at(self.name, extended)?;
        Ok(true)
    }

    /// `RRW.FORCERELEASE`: deletes the lock when it is held the given way
    /// (either way when `side` is `None`) and publishes that side's
    /// message (a write's, waking everyone, for either).
    pub fn force_release<K: Keyspace>(&self, keys: &mut K, side: Option<Side>) -> Result<bool> {
        let hash = RwHash::read(keys, self.name)?;
        let message = match (side, hash.mode) {
            (_, None) => return Ok(false),
            (Some(Side::Read), Some(Mode::Read)) => READ_RELEASED,
            (Some(Side::Write), Some(Mode::Write)) | (None, _) => WRITE_RELEASED,
            _ => return Ok(false),
        };
        keys.delete(self.name)?;
        self.publish(keys, message)?;
        Ok(true)
    }

    /// `RRW.STATUS`: the mode, PTTL, number of readers, and the owner's
    /// read and write hold counts.
    pub fn status<K: Keyspace>(&self, keys: &mut K, owner: Option<&[u8]>, now_ms: i64) -> Result<Status> {
        owner.map(check_owner).transpose()?;
        let hash = RwHash::read(keys, self.name)?;
        let owner = owner.map(|owner| (hash.count(owner), hash.write_count(owner)));
        let readers = hash.readers().count() as i64;
        Ok(Status { mode: hash.mode.map(Mode::name), pttl_ms: pttl(keys, self.name, now_ms)?, readers, owner })
    }
}
