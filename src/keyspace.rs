//! The keys of one family command (a lock's hash, its queue, its latch,
//! its channels) seen as a small Redis: the pure logic of every primitive
//! is written against [`Keyspace`], the way Redisson's scripts are written
//! against `redis.call`.
//!
//! Redis's side (`store::RedisKeyspace`) writes through the key API,
//! replicates each effect and announces it. Derived keys are checked (ACL,
//! cluster slot) the first time they are touched, so a command must touch
//! every key it may write before its first write: then a refusal never
//! leaves a partial write. Channels derived from the name are not checked
//! (see "Permissions (ACL)" in docs/commands.md). The in-memory
//! keyspace of the unit tests enforces that rule.

use crate::error::LockError;

pub mod latch;
pub mod lock;
#[cfg(test)]
pub mod memory;

/// What a key holds, as TYPE reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyType {
    Missing,
    String,
    List,
    Hash,
    Zset,
    Other,
}

pub type Result<T> = std::result::Result<T, LockError>;

/// A script's write that a later write of the same command makes moot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Moot {
    /// `HINCRBY` of a hold count to 0.
    HashIncrement,
    /// `HDEL` of a field.
    HashDelete,
    /// `DECR` of a string counter (a latch counted down to 0).
    Increment,
}

/// Reads fail only when the caller may not touch the key (NOPERM, or
/// another slot); writes also when their key was never touched before.
/// Times are Unix milliseconds; zset scores are whole milliseconds.
pub trait Keyspace {
    fn key_type(&mut self, key: &[u8]) -> Result<KeyType>;
    /// Absolute expiry; `None` when the key is missing or has none.
    fn expire_at(&mut self, key: &[u8]) -> Result<Option<i64>>;
    /// The value of a string key; `None` unless it is a string.
    fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>>;
    /// A hash field; `None` unless the key is a hash holding it.
    fn hget(&mut self, key: &[u8], field: &[u8]) -> Result<Option<Vec<u8>>>;
    /// Every field and value of a hash (empty unless it is one).
    fn hgetall(&mut self, key: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let mut fields = Vec::new();
        self.hash_visit(key, &mut |field, value| fields.push((field.to_vec(), value.to_vec())))?;
        Ok(fields)
    }
    /// Shows `visit` every field and value of a hash (none unless it is
    /// one), in place: nothing is copied.
    fn hash_visit(&mut self, key: &[u8], visit: &mut dyn FnMut(&[u8], &[u8])) -> Result<()>;
    /// Every element of a list, head first (empty unless it is one).
    fn lrange(&mut self, key: &[u8]) -> Result<Vec<Vec<u8>>>;
    /// Every member of a sorted set, lowest score first.
    fn zrange(&mut self, key: &[u8]) -> Result<Vec<(Vec<u8>, i64)>>;
    /// `ZRANGEBYSCORE key -inf max LIMIT 0 limit`: the members scored at
    /// most `max`, lowest first, at most `limit` of them.
    fn zrange_to(&mut self, key: &[u8], max: i64, limit: usize) -> Result<Vec<(Vec<u8>, i64)>>;
    /// `ZSCORE`; `None` unless the key is a sorted set holding `member`.
    fn zscore(&mut self, key: &[u8], member: &[u8]) -> Result<Option<i64>>;
    /// `ZCARD`: 0 unless the key is a sorted set.
    fn zcard(&mut self, key: &[u8]) -> Result<usize>;
    /// A string counter (permits, a latch's count, a fencing token) as
    /// INCRBY reads it: `None` when missing; a key of another type is
    /// [`LockError::WrongType`], a string that is not an integer
    /// [`LockError::StoredNotInteger`].
    fn read_counter(&mut self, key: &[u8]) -> Result<Option<i64>> {
        match self.key_type(key)? {
            KeyType::Missing => Ok(None),
            KeyType::String => parse_counter(key, &self.get(key)?.unwrap_or_default()).map(Some),
            _ => Err(LockError::WrongType),
        }
    }
    /// `SET key value [PXAT at]`.
    fn set(&mut self, key: &[u8], value: &[u8], expire_at: Option<i64>) -> Result<()>;
    /// [`Keyspace::set`] of a counter that later calls read with
    /// [`Keyspace::read_counter`]: a store may keep it as it reads fastest.
    fn set_counter(&mut self, key: &[u8], value: &[u8], expire_at: Option<i64>) -> Result<()> {
        self.set(key, value, expire_at)
    }
    /// `INCRBY key by` (keeping the key's expiry), given the result `new`
    /// the caller computed.
    fn incr_by(&mut self, key: &[u8], by: i64, new: i64) -> Result<()>;
    /// `HSET key field value [field value]`, announced as one `hset` per
    /// pair (as a script's HSET calls one field at a time).
    fn hset(&mut self, key: &[u8], pairs: &[(&[u8], &[u8])]) -> Result<()>;
    /// `HINCRBY key field by`, given the result `new` the caller computed.
    fn hincr_by(&mut self, key: &[u8], field: &[u8], by: i64, new: i64) -> Result<()>;
    /// `HDEL`; a hash left empty is deleted, as Redis does.
    fn hdel(&mut self, key: &[u8], field: &[u8]) -> Result<()>;
    /// `LPOP`; a list left empty is deleted.
    fn lpop(&mut self, key: &[u8]) -> Result<()>;
    fn rpush(&mut self, key: &[u8], value: &[u8]) -> Result<()>;
    /// `LREM key 0 value` for each of `values`, in one pass over the list;
    /// a list left empty is deleted.
    fn lrem(&mut self, key: &[u8], values: &[&[u8]]) -> Result<()>;
    fn zadd(&mut self, key: &[u8], member: &[u8], score: i64) -> Result<()>;
    /// One `ZREM key member [member ...]` (one event, as a script's ZREM
    /// of several members); a sorted set left empty is deleted.
    fn zrem(&mut self, key: &[u8], members: &[&[u8]]) -> Result<()>;
    fn set_expire_at(&mut self, key: &[u8], at_ms: i64) -> Result<()>;
    fn delete(&mut self, key: &[u8]) -> Result<()>;
    /// One `DEL first second`: two `del` events, one command replicated
    /// (where a script's two DELs would send two).
    fn delete_both(&mut self, first: &[u8], second: &[u8]) -> Result<()>;
    /// Announces what a script would do to `key` just before a write of
    /// this command makes it moot (a count taken to 0, a field dropped, then
    /// the key deleted): the event is sent, nothing is written or replicated.
    fn announce(&mut self, key: &[u8], event: Moot) -> Result<()>;
    /// Publishes `message` on `channel`.
    fn publish(&mut self, channel: &[u8], message: &[u8]) -> Result<()>;
}

/// PTTL as Redis reports it: -2 missing, -1 no expiry, else the remaining
/// milliseconds, never negative.
pub fn pttl<K: Keyspace>(keys: &mut K, key: &[u8], now_ms: i64) -> Result<i64> {
    let missing = keys.key_type(key)? == KeyType::Missing;
    let expire_at = if missing { None } else { keys.expire_at(key)? };
    Ok(pttl_of(missing, expire_at, now_ms))
}

/// PTTL of a key, `missing` or else expiring at `expire_at` (`None`: no
/// expiry), at `now_ms`.
pub fn pttl_of(missing: bool, expire_at: Option<i64>, now_ms: i64) -> i64 {
    if missing {
        return -2;
    }
    match expire_at {
        None => -1,
        Some(at_ms) => at_ms.saturating_sub(now_ms).max(0),
    }
}

/// A string counter's value as INCRBY reads it: the bytes of `key`'s string.
pub fn parse_counter(key: &[u8], value: &[u8]) -> Result<i64> {
    crate::lock::parse_hold_count(value).map_err(|_| LockError::StoredNotInteger(key.to_vec()))
}

/// A stored count (hold count, permits) as HINCRBY/INCRBY read it:
/// `None` when absent, [`LockError::NotALock`] when not an integer.
pub fn parse_count(value: Option<Vec<u8>>) -> Result<Option<i64>> {
    value.map(|bytes| crate::lock::parse_hold_count(&bytes)).transpose()
}
