//! Redisson's count-down latch (layout: docs/commands.md) as pure logic over a
//! [`Keyspace`]: the key is a string holding the remaining count; message
//! `0` on `redisson_countdownlatch__channel__{name}` opens the latch for
//! every waiter, `1` tells them it was set (closed) again.
//!
//! Where it differs from Redisson's scripts: counting down a missing latch
//! writes nothing (Redisson's DECR creates -1 and deletes it again); delete
//! publishes `0`, so waiters see the latch open (Redisson publishes `1` and
//! leaves them blocked while the count reads 0). A latch opened
//! [`CountDownLatch::like_redissons_scripts`] (the commands' `VIA`) does
//! exactly what the scripts do instead, for the filter's rewrites.

#[cfg(test)]
mod tests;

#[cfg(not(test))]
mod commands;
mod primitive;
mod redisson;

use crate::error::LockError;
use crate::keyspace::{KeyType, Keyspace, Moot, Result};
use rlock_protocol::{count_down_latch_channel_parts, decimal, is_joined, DecimalBuffer, Joined};

/// The message that opens the latch.
pub const OPEN_MESSAGE: &[u8] = b"0";
/// The message that says the latch was set to a new count.
pub const SET_MESSAGE: &[u8] = b"1";

/// The key and channel of one latch.
pub struct CountDownLatch<'a> {
    name: &'a [u8],
    channel: Joined,
    as_scripts: bool,
}

impl<'a> CountDownLatch<'a> {
    pub fn new(name: &'a [u8]) -> Self {
        Self { name, channel: Joined::new(&count_down_latch_channel_parts(name)), as_scripts: false }
    }

    /// The latch on `channel`, as the caller named it (a Redisson script
    /// takes it as an argument); `None` when it is not the latch's.
    pub fn on_channel(name: &'a [u8], channel: &[u8]) -> Option<Self> {
        is_joined(channel, &count_down_latch_channel_parts(name)).then(|| Self::new(name))
    }

    /// The latch as Redisson's scripts treat it: trySetCount and delete
    /// see any key (EXISTS, DEL), delete publishes `1`, and counting down
    /// a missing latch writes -1 and deletes it (DECR, DEL).
    pub fn like_redissons_scripts(self) -> Self {
        Self { as_scripts: true, ..self }
    }

    /// Whether the latch exists: any key for the scripts' EXISTS and DEL,
    /// else a count (another key is refused).
    fn exists<K: Keyspace>(&self, keys: &mut K) -> Result<bool> {
        if self.as_scripts {
            return Ok(keys.key_type(self.name)? != KeyType::Missing);
        }
        Ok(keys.read_counter(self.name)?.is_some())
    }

    /// trySetCount: only a missing latch is set (with no TTL); publishes `1`.
    pub fn try_set_count<K: Keyspace>(&self, keys: &mut K, count: i64) -> Result<bool> {
        let exists = self.exists(keys)?;
        if exists {
            return Ok(false);
        }
        keys.set_counter(self.name, decimal(count, &mut DecimalBuffer::new()), None)?;
        keys.publish(&self.channel, SET_MESSAGE)?;
        Ok(true)
    }

    /// countDown: one less; at 0 or below the key is deleted, and reaching
    /// exactly 0 publishes `0`. A missing latch is left alone.
    pub fn count_down<K: Keyspace>(&self, keys: &mut K) -> Result<()> {
        let Some(count) = keys.read_counter(self.name)? else {
            if self.as_scripts {
                // DECR creates -1, which the script deletes at once.
                keys.incr_by(self.name, -1, -1)?;
                keys.delete(self.name)?;
            }
            return Ok(());
        };
        let count = count.checked_sub(1).ok_or_else(|| LockError::CounterOverflow(self.name.to_vec()))?;
        if count > 0 {
            return keys.incr_by(self.name, -1, count);
        }
        // Redisson's DECR, made moot by the DEL: announced, not written.
        keys.announce(self.name, Moot::Increment)?;
        keys.delete(self.name)?;
        if count == 0 {
            keys.publish(&self.channel, OPEN_MESSAGE)?;
        }
        Ok(())
    }

    /// getCount: 0 when the latch is missing.
    pub fn count<K: Keyspace>(&self, keys: &mut K) -> Result<i64> {
        Ok(keys.read_counter(self.name)?.unwrap_or(0))
    }

    /// delete: removes the latch and opens it for every waiter (as the
    /// scripts: tells them it was set, leaving them blocked); false when
    /// there was none.
    pub fn delete<K: Keyspace>(&self, keys: &mut K) -> Result<bool> {
        let exists = self.exists(keys)?;
        if !exists {
            return Ok(false);
        }
        keys.delete(self.name)?;
        keys.publish(&self.channel, if self.as_scripts { SET_MESSAGE } else { OPEN_MESSAGE })?;
        Ok(true)
    }
}
