//! `RLOCK.INSPECT`: what a key holds, told to an operator: the kind of
//! lock, its holders with their holds and leases, and what the kind has
//! besides (a fenced lock's token, a fair lock's queue, a semaphore's
//! permits). Each kind's descriptor (`primitive`) names its [`Inspect`],
//! beside its logic; the first that recognises the key, in the
//! descriptors' order (the most specific first), describes it. Reads
//! only; a derived key the caller may not read is taken as missing.

use crate::error::LockError;
use crate::keyspace::{KeyType, Keyspace, Result};
use crate::lock::parse_hold_count;

#[cfg(not(test))]
mod command;
#[cfg(not(test))]
mod list;
#[cfg(test)]
mod tests;
#[cfg(not(test))]
mod waiters;

/// One holder: an owner (a lock's), or a permit's id (a permit-expirable
/// semaphore's), with its hold count and the lease it has left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    pub owner: Vec<u8>,
    pub holds: i64,
    /// PTTL semantics: -1 when the hold has no expiry.
    pub lease_ms: i64,
    /// A read-write lock's side: `read` or `write`.
    pub side: Option<&'static str>,
}

/// What a kind tells besides its holders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Detail {
    Integer(i64),
    Text(&'static str),
    /// Owners, each with the ms left to a deadline.
    Queue(Vec<(Vec<u8>, i64)>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inspection {
    /// `lock`, `fair`, `read-write`, `fenced`, `permit-semaphore`,
    /// `counter` (a semaphore's permits or a latch's count: Redisson keeps
    /// both as a bare integer), `other` (no lock's data), `none` (missing).
    pub kind: &'static str,
    /// The key's PTTL: -1 without expiry, -2 when missing.
    pub ttl_ms: i64,
    pub holders: Vec<Holder>,
    pub details: Vec<(&'static str, Detail)>,
}

/// Describes a key of one kind; `None` when the key is not of that kind.
pub type Inspect = fn(&mut dyn Keyspace, &[u8], i64) -> Result<Option<Inspection>>;

/// The description of `name` at `now_ms`: by the first of `inspectors`
/// (`primitive::inspectors()`) that recognises it.
pub fn inspect(
    keys: &mut dyn Keyspace,
    name: &[u8],
    now_ms: i64,
    inspectors: impl IntoIterator<Item = Inspect>,
) -> Result<Inspection> {
    for inspect in inspectors {
        if let Some(found) = inspect(keys, name, now_ms)? {
            return Ok(found);
        }
    }
    let kind = match keys.key_type(name)? {
        KeyType::Missing => "none",
        _ => "other",
    };
    Ok(Inspection { kind, ttl_ms: ttl_ms(keys, name, now_ms)?, holders: vec![], details: vec![] })
}

/// The type of `key`, one the inspected name derives (a queue, a token):
/// `Missing` when the caller may not read it (ACL) or it lies in another
/// slot, so that the kind is told from the keys the caller may read.
pub fn companion_type(keys: &mut dyn Keyspace, key: &[u8]) -> Result<KeyType> {
    match keys.key_type(key) {
        Err(LockError::NoKeyPermission(_) | LockError::DerivedKeyCrossSlot(_)) => Ok(KeyType::Missing),
        found => found,
    }
}

/// PTTL of `key`: -2 when missing, -1 without expiry.
pub fn ttl_ms(keys: &mut dyn Keyspace, key: &[u8], now_ms: i64) -> Result<i64> {
    if keys.key_type(key)? == KeyType::Missing {
        return Ok(-2);
    }
    Ok(keys.expire_at(key)?.map_or(-1, |at| at.saturating_sub(now_ms).max(0)))
}

/// The holders of a lock's hash (owner → hold count), each with the
/// hash's lease; fields that are no positive hold count are left out.
pub fn hash_holders(keys: &mut dyn Keyspace, name: &[u8], lease_ms: i64) -> Result<Vec<Holder>> {
    Ok(hold_counts(keys, name)?
        .into_iter()
        .map(|(owner, holds)| Holder { owner, holds, lease_ms, side: None })
        .collect())
}

/// The owners holding the lock `name`, of any kind that has owners (a
/// read-write lock's writer by its owner id): what deadlock detection
/// needs, read in one pass over the hash, without the rest.
pub fn owners(keys: &mut dyn Keyspace, name: &[u8]) -> Result<Vec<Vec<u8>>> {
    if keys.key_type(name)? != KeyType::Hash {
        return Ok(vec![]);
    }
    let fields = keys.hgetall(name)?;
    // Only a read-write lock's writer field is its owner with a suffix: a
    // plain lock's owner may end the same way.
    let read_write = fields.iter().any(|(field, _)| field == MODE_FIELD);
    Ok(positive_counts(fields)
        .into_iter()
        .map(|(field, _)| match field.strip_suffix(WRITE_SUFFIX) {
            Some(owner) if read_write => owner.to_vec(),
            _ => field,
        })
        .collect())
}

/// A read-write lock's writer field: its owner id and this.
pub const WRITE_SUFFIX: &[u8] = b":write";

/// A hash's fields whose values are positive hold counts.
fn hold_counts(keys: &mut dyn Keyspace, name: &[u8]) -> Result<Vec<(Vec<u8>, i64)>> {
    Ok(positive_counts(keys.hgetall(name)?))
}

fn positive_counts(fields: Vec<(Vec<u8>, Vec<u8>)>) -> Vec<(Vec<u8>, i64)> {
    let fields = fields.into_iter();
    fields.filter_map(|(field, count)| Some((field, parse_hold_count(&count).ok().filter(|n| *n > 0)?))).collect()
}

/// A read-write lock's mode field.
const MODE_FIELD: &[u8] = b"mode";
