//! Redisson's semaphore (layout: docs/commands.md) as pure logic over a
//! [`Keyspace`]: the key is a string counting the available permits, and
//! every change that may let a waiter in publishes the new count on
//! `redisson_sc:{name}`.
//!
//! Where it differs from Redisson's scripts: adding permits and draining
//! keep the key's TTL (Redisson's SET drops it, #3224); a drain of an empty
//! semaphore writes nothing; a value that is not an integer is refused
//! instead of being read by Lua's `tonumber`. A semaphore opened
//! [`Semaphore::like_redissons_scripts`] (the commands' `VIA`) does what
//! the scripts do where the filter's rewrites need it.

#[cfg(test)]
mod like_script_tests;
#[cfg(test)]
mod tests;

#[cfg(not(test))]
mod commands;
#[cfg(not(test))]
mod delay_wake;
mod inspect;
mod primitive;
mod redisson;

use crate::delay::Delay;
use crate::error::LockError;
use crate::keyspace::{KeyType, Keyspace, Result};
use crate::redisson::lua_number::{lua_tonumber, LuaText};
use rlock_protocol::{decimal, semaphore_channel_parts, DecimalBuffer, Joined};

/// How the server writes a number a script gives `redis.call`: Lua holds
/// it as a double.
pub type LuaNumberText = fn(f64) -> LuaText;

/// What Redisson's addPermits scripts publish.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Announce {
    /// Before 3.16.2: nothing.
    Nothing,
    /// RSemaphore's from 3.16.2: the new count.
    Sum,
    /// RPermitExpirableSemaphore's: the delta, when it is positive.
    PositiveDelta,
}

/// The key of one semaphore (its channel is derived when published on).
pub struct Semaphore<'a> {
    name: &'a [u8],
    /// Set when the semaphore acts like Redisson's scripts.
    like_scripts: Option<LuaNumberText>,
}

impl<'a> Semaphore<'a> {
    pub fn new(name: &'a [u8]) -> Self {
        Self { name, like_scripts: None }
    }

    /// The channel, joined on the stack (a release publishes on it).
    fn channel(&self) -> Joined {
        Joined::new(&semaphore_channel_parts(self.name))
    }

    /// The semaphore as Redisson's scripts treat it: a release publishes
    /// the new count as Lua's number (`lua_number`: exact up to 2^53, a
    /// double beyond), trySetPermits finds any string there (GET), and
    /// addPermits adds in Lua's numbers.
    pub fn like_redissons_scripts(self, lua_number: LuaNumberText) -> Self {
        Self { like_scripts: Some(lua_number), ..self }
    }

    /// Whether the semaphore exists: any string for the scripts' GET (which
    /// refuses another type), else a count.
    fn exists<K: Keyspace>(&self, keys: &mut K) -> Result<bool> {
        if self.like_scripts.is_none() {
            return Ok(keys.read_counter(self.name)?.is_some());
        }
        match keys.key_type(self.name)? {
            KeyType::Missing => Ok(false),
            KeyType::String => Ok(true),
            _ => Err(LockError::WrongType),
        }
    }

    /// tryAcquire: takes `permits` when that many are available, unless a
    /// lock-delay lasts. 0 permits are always there (Redisson answers
    /// without asking Redis).
    pub fn try_acquire<K: Keyspace>(&self, keys: &mut K, permits: i64, delay: Delay) -> Result<bool> {
        let available = keys.read_counter(self.name)?;
        if permits == 0 {
            return Ok(true);
        }
        match available {
            Some(available) if available >= permits && !delay.refuses() => {
                keys.incr_by(self.name, -permits, available - permits)?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// tryAcquire as Redisson's script: `tonumber(value) >= tonumber(permits)`
    /// compared as Lua's doubles, then DECRBY. A string that is no integer
    /// fails where the script fails (a `tonumber` of nil, or DECRBY) and is
    /// left with 0 where Lua finds it below the permits (as `1.5`, `nan`).
    pub fn try_acquire_like_script<K: Keyspace>(&self, keys: &mut K, permits: i64, delay: Delay) -> Result<bool> {
        // Lua's `>=`: false for a NaN too.
        let lua_at_least = |number: f64| number >= permits as f64;
        // An integer is read in place; only another string is copied for Lua's reading.
        let available = match keys.read_counter(self.name) {
            Ok(None) => return Ok(false),
            Ok(Some(available)) => available,
            Err(LockError::StoredNotInteger(name)) => {
                let value = keys.get(self.name)?.unwrap_or_default();
                return match lua_tonumber(&value) {
                    Some(number) if !lua_at_least(number) => Ok(false),
                    _ => Err(LockError::StoredNotInteger(name)),
                };
            }
            Err(err) => return Err(err),
        };
        if !lua_at_least(available as f64) || (permits > 0 && delay.refuses()) {
            return Ok(false);
        }
        let new = self.add(available, -permits)?;
        keys.incr_by(self.name, -permits, new)?;
        Ok(true)
    }

    /// release (creating the key) or, with `if_exists`, releaseIfExists
    /// (nothing when the key is missing): adds `permits` and publishes the
    /// new count. False only when `if_exists` found no key.
    pub fn release<K: Keyspace>(&self, keys: &mut K, permits: i64, if_exists: bool) -> Result<bool> {
        let available = keys.read_counter(self.name)?;
        let channel = self.channel();
        if if_exists && available.is_none() {
            return Ok(false);
        }
        if permits == 0 {
            return Ok(true);
        }
        let new = self.add(available.unwrap_or(0), permits)?;
        keys.incr_by(self.name, permits, new)?;
        let message = self.like_scripts.map_or_else(
            || LuaText::from_slice(decimal(new, &mut DecimalBuffer::new())),
            |lua_number| lua_number(new as f64),
        );
        keys.publish(&channel, &message)?;
        Ok(true)
    }

    /// trySetPermits: only a missing semaphore is set, expiring at
    /// `expire_at` if given; publishes the permits.
    pub fn try_set_permits<K: Keyspace>(&self, keys: &mut K, permits: i64, expire_at: Option<i64>) -> Result<bool> {
        let exists = self.exists(keys)?;
        let channel = self.channel();
        if exists {
            return Ok(false);
        }
        let permits = permits.to_string();
        keys.set_counter(self.name, permits.as_bytes(), expire_at)?;
        keys.publish(&channel, permits.as_bytes())?;
        Ok(true)
    }

    /// addPermits: adds `delta` (which may be negative) and publishes the
    /// new count, even when it is 0 or less, as Redisson does. Keeps the TTL.
    pub fn add_permits<K: Keyspace>(&self, keys: &mut K, delta: i64) -> Result<()> {
        if let Some(lua_number) = self.like_scripts {
            return self.add_permits_like_script(keys, delta, lua_number, Announce::Sum);
        }
        let available = keys.read_counter(self.name)?;
        let expire_at = keys.expire_at(self.name)?;
        let channel = self.channel();
        let new = self.add(available.unwrap_or(0), delta)?.to_string();
        keys.set(self.name, new.as_bytes(), expire_at)?;
        keys.publish(&channel, new.as_bytes())
    }

    /// addPermits as Redisson's script: `value + delta` in Lua's doubles
    /// (a missing key counts 0; a string Lua reads as no number fails),
    /// SET as Lua writes that number (dropping the TTL) and announced as
    /// the script does (`announce`).
    pub fn add_permits_like_script<K: Keyspace>(
        &self,
        keys: &mut K,
        delta: i64,
        lua_number: LuaNumberText,
        announce: Announce,
    ) -> Result<()> {
        let value = match keys.key_type(self.name)? {
            KeyType::Missing => 0.0,
            KeyType::String => {
                let value = keys.get(self.name)?.unwrap_or_default();
                lua_tonumber(&value).ok_or_else(|| LockError::StoredNotInteger(self.name.to_vec()))?
            }
            _ => return Err(LockError::WrongType),
        };
        let channel = self.channel();
        let sum = lua_number(value + delta as f64);
        keys.set(self.name, &sum, None)?;
        match announce {
            Announce::Sum => keys.publish(&channel, &sum),
            Announce::PositiveDelta if delta > 0 => keys.publish(&channel, delta.to_string().as_bytes()),
            _ => Ok(()),
        }
    }

    /// drainPermits: takes every available permit; `None` when the key is
    /// missing, else the count taken (which may be 0 or negative). Keeps
    /// the TTL; publishes nothing. While `delay` lasts it takes none (0).
    pub fn drain<K: Keyspace>(&self, keys: &mut K, delay: Delay) -> Result<Option<i64>> {
        let available = keys.read_counter(self.name)?;
        if available.is_some_and(|taken| taken > 0) && delay.refuses() {
            return Ok(Some(0));
        }
        if let Some(taken) = available.filter(|taken| *taken != 0) {
            let expire_at = keys.expire_at(self.name)?;
            keys.set(self.name, b"0", expire_at)?;
            return Ok(Some(taken));
        }
        Ok(available)
    }

    /// drainPermits as Redisson's script: the value as it is (any string),
    /// set to 0 without its TTL (SET); `None` when the key is missing.
    /// While `delay` lasts, positive permits stay: `0`, nothing written.
    pub fn drain_like_script<K: Keyspace>(&self, keys: &mut K, delay: Delay) -> Result<Option<Vec<u8>>> {
        match keys.key_type(self.name)? {
            KeyType::Missing => Ok(None),
            KeyType::String => {
                let value = keys.get(self.name)?.unwrap_or_default();
                if lua_tonumber(&value).is_some_and(|permits| permits > 0.0) && delay.refuses() {
                    return Ok(Some(b"0".to_vec()));
                }
                keys.set(self.name, b"0", None)?;
                Ok(Some(value))
            }
            _ => Err(LockError::WrongType),
        }
    }

    /// Publishes the count, when positive, as a release does: at a
    /// lock-delay's end, for the callers it refused (Redisson's acquire()
    /// waits for a release message with no timeout).
    pub fn announce_available<K: Keyspace>(&self, keys: &mut K) -> Result<()> {
        let channel = self.channel();
        match keys.read_counter(self.name)? {
            Some(count) if count > 0 => keys.publish(&channel, count.to_string().as_bytes()),
            _ => Ok(()),
        }
    }

    /// availablePermits: 0 when the key is missing.
    pub fn available<K: Keyspace>(&self, keys: &mut K) -> Result<i64> {
        Ok(keys.read_counter(self.name)?.unwrap_or(0))
    }

    fn add(&self, count: i64, by: i64) -> Result<i64> {
        count.checked_add(by).ok_or_else(|| LockError::CounterOverflow(self.name.to_vec()))
    }
}
