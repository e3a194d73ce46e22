//! Redisson's fenced lock (protocol page §7) as pure logic over a
//! [`Keyspace`]: an RLock hash, run by RLock's own rules through
//! [`KeyspaceLock`], plus a token counter `redisson_lock_token:{name}` that
//! every grant (first hold or re-entry) increments in the same command.
//! The counter never expires and nothing but a DEL by the user removes
//! it, so tokens only grow. Release, renewal, force release and status are
//! RLock's commands, unchanged.
//!
//! Where it differs from Redisson's script: a contended acquire never
//! replies -1 as the holder's TTL (Java reads a first element of -1 as
//! "acquired"); a lock hash without a TTL gives the caller's lease as the
//! wait hint instead.

#[cfg(test)]
mod tests;

#[cfg(not(test))]
mod commands;

use crate::error::LockError;
use crate::keyspace::lock::KeyspaceLock;
use crate::keyspace::{read_counter, Keyspace, Result};
use crate::lock::{self, Acquire};
use rlock_protocol::fenced_token_key;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FencedAcquire {
    /// Taken or re-entered, with the new token.
    Granted { token: i64 },
    /// Someone else holds it: retry after `pttl_ms` (never below 0, never -1).
    Contended { pttl_ms: i64 },
}

/// lockAndGetToken / tryLockAndGetToken: RLock's acquire and, when granted,
/// the next token.
pub fn acquire<K: Keyspace>(
    keys: &mut K,
    name: &[u8],
    owner: &[u8],
    lease_ms: i64,
    now_ms: i64,
) -> Result<FencedAcquire> {
    let token_key = fenced_token_key(name);
    let last = read_counter(keys, &token_key)?.unwrap_or(0);
    // Checked before any write, even if the lock turns out contended.
    let next = last.checked_add(1).ok_or_else(|| LockError::CounterOverflow(token_key.clone()))?;
    let mut lock = KeyspaceLock::open(keys, name)?;
    let outcome = lock::acquire(&mut lock, owner, lease_ms, now_ms);
    lock.finish()?;
    Ok(match outcome? {
        Acquire::Acquired | Acquire::Reentered { .. } => {
            keys.incr_by(&token_key, 1, next)?;
            FencedAcquire::Granted { token: next }
        }
        Acquire::Contended { pttl_ms: -1 } => FencedAcquire::Contended { pttl_ms: lease_ms },
        Acquire::Contended { pttl_ms } => FencedAcquire::Contended { pttl_ms },
    })
}

/// getToken: the last token given, 0 when none was.
pub fn token<K: Keyspace>(keys: &mut K, name: &[u8]) -> Result<i64> {
    Ok(read_counter(keys, &fenced_token_key(name))?.unwrap_or(0))
}
