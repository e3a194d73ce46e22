//! Redisson's fenced lock (layout: docs/commands.md) as pure logic over a
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
//! wait hint instead; the token is taken after the hold count is raised.
//! [`acquire_like_script`] (the command's `LIKESCRIPT`) does exactly what
//! the script does instead, for the filter's rewrites.
//!
//! Tokens that survive failover: every token a primary gives is at least
//! the floor of its term, [`term_floor`] of when it became primary (its
//! start, or its promotion), so a new primary's tokens are greater than
//! any an earlier primary gave, even those its replicas never received.

#[cfg(test)]
mod tests;

#[cfg(not(test))]
mod commands;
mod inspect;
mod primitive;
mod redisson;

use crate::delay::Delay;
use crate::error::LockError;
use crate::keyspace::lock::KeyspaceLock;
use crate::keyspace::{pttl, KeyType, Keyspace, Result};
use crate::lease::expiry;
use crate::lock::acquire_once::granted_count;
use crate::lock::{self, parse_hold_count, Acquire};
use rlock_protocol::{fenced_token_key_parts, Joined};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FencedAcquire {
    /// Taken or re-entered, with the new token; `count`: the owner's holds now.
    Granted { token: i64, count: i64 },
    /// Someone else holds it: retry after `pttl_ms` (never below 0, never -1
    /// but [`acquire_like_script`]'s).
    Contended { pttl_ms: i64 },
}

/// Tokens a term may give per millisecond before its tokens could reach
/// the next term's floor: more than one server gives in a millisecond (a
/// grant is a command), for all its names together.
pub const TOKENS_PER_MS: i64 = 1000;

/// The least token of a primary's term that began at `term_start_ms` (a
/// Unix time): a later term's floor is greater than every token of an
/// earlier term that gave fewer than [`TOKENS_PER_MS`] tokens a
/// millisecond, as long as the servers' clocks agree.
pub fn term_floor(term_start_ms: i64) -> i64 {
    term_start_ms.max(0).saturating_mul(TOKENS_PER_MS)
}

/// The token counter's key, joined on the stack (an acquire reads it).
fn token_key(name: &[u8]) -> Joined {
    Joined::new(&fenced_token_key_parts(name))
}

/// The token after `last`: one more, and never below `floor`; with the
/// step from `last` (an `INCRBY` a replica can apply). A counter so far
/// below the floor that the step overflows is refused, as one at the top.
fn next_token(last: i64, floor: i64, token_key: &[u8]) -> Result<(i64, i64)> {
    let overflow = || LockError::CounterOverflow(token_key.to_vec());
    let next = last.checked_add(1).ok_or_else(overflow)?.max(floor);
    Ok((next, next.checked_sub(last).ok_or_else(overflow)?))
}

/// lockAndGetToken / tryLockAndGetToken: RLock's acquire and, when granted,
/// the next token, at least `token_floor`. While `delay` lasts, nothing
/// is granted.
pub fn acquire<K: Keyspace>(
    keys: &mut K,
    name: &[u8],
    owner: &[u8],
    lease_ms: i64,
    (now_ms, token_floor, delay): (i64, i64, Delay),
) -> Result<FencedAcquire> {
    let token_key = token_key(name);
    let last = keys.read_counter(&token_key)?.unwrap_or(0);
    // Checked before any write, even if the lock turns out contended.
    let (next, step) = next_token(last, token_floor, &token_key)?;
    let mut lock = KeyspaceLock::open(keys, name)?;
    let outcome = lock::acquire(&mut lock, owner, lease_ms, (now_ms, delay));
    lock.finish()?;
    Ok(match outcome? {
        Acquire::Contended { pttl_ms: -1 } => FencedAcquire::Contended { pttl_ms: lease_ms },
        Acquire::Contended { pttl_ms } => FencedAcquire::Contended { pttl_ms },
        granted => {
            keys.incr_by(&token_key, step, next)?;
            FencedAcquire::Granted { token: next, count: granted_count(granted).unwrap_or(1) }
        }
    })
}

/// Acquire as Redisson's scripts do, in their order: a contended lock
/// gives its PTTL as PTTL does (-1 without a TTL); a grant takes the next
/// token (INCR) before it raises the hold count (HINCRBY), so a hold count
/// that is no integer is refused after the token was taken, as by the script.
/// The token is at least `token_floor`, and `delay` refuses as in [`acquire`].
pub fn acquire_like_script<K: Keyspace>(
    keys: &mut K,
    name: &[u8],
    owner: &[u8],
    lease_ms: i64,
    (now_ms, token_floor, delay): (i64, i64, Delay),
) -> Result<FencedAcquire> {
    let expire_at = expiry(now_ms, lease_ms)?;
    let held = match keys.key_type(name)? {
        KeyType::Missing => None,
        KeyType::Hash => match keys.hget(name, owner)? {
            None => return Ok(FencedAcquire::Contended { pttl_ms: delay.pttl(pttl(keys, name, now_ms)?) }),
            held => held,
        },
        _ => return Err(LockError::WrongType),
    };
    let token_key = token_key(name);
    // The script's INCR would refuse a counter that is no integer first.
    let last = keys.read_counter(&token_key)?.unwrap_or(0);
    if delay.refuses() {
        return Ok(FencedAcquire::Contended { pttl_ms: delay.left_ms() });
    }
    let (token, step) = next_token(last, token_floor, &token_key)?;
    keys.incr_by(&token_key, step, token)?;
    let count = match held {
        None => 1,
        Some(count) => parse_hold_count(&count)?.checked_add(1).ok_or(LockError::HoldCountOverflow)?,
    };
    keys.hincr_by(name, owner, 1, count)?;
    keys.set_expire_at(name, expire_at)?;
    Ok(FencedAcquire::Granted { token, count })
}

/// getToken: the last token given, 0 when none was.
pub fn token<K: Keyspace>(keys: &mut K, name: &[u8]) -> Result<i64> {
    Ok(keys.read_counter(&token_key(name))?.unwrap_or(0))
}
