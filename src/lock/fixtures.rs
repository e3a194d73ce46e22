//! The unit tests' lock: the key `l` in a [`MemoryKeyspace`], seen
//! through [`KeyspaceLock`], as the fenced lock sees its lock; and a
//! request's key (`r`: a latch or a record) through [`KeyspaceKey`].

use crate::keyspace::latch::KeyspaceKey;
use crate::keyspace::lock::KeyspaceLock;
use crate::keyspace::memory::{MemoryKeyspace, Value};
use std::collections::BTreeMap;

pub const NAME: &[u8] = b"l";

pub fn missing() -> MemoryKeyspace {
    MemoryKeyspace::default()
}

pub fn string_key() -> MemoryKeyspace {
    with_key(NAME, MemoryKeyspace::string("x"), None)
}

/// The lock as a hash of `fields`, expiring at `expire_at` (past or not).
pub fn hash(fields: &[(&str, &str)], expire_at: Option<i64>) -> MemoryKeyspace {
    with_key(NAME, MemoryKeyspace::hash(fields), expire_at)
}

/// A keyspace of one key (kept even when its expiry has passed).
fn with_key(name: &[u8], value: Value, expire_at: Option<i64>) -> MemoryKeyspace {
    let mut keys = MemoryKeyspace::default();
    keys.keys.insert(name.to_vec(), (value, expire_at));
    keys
}

/// The lock's fields (empty unless it is a hash).
pub fn fields(keys: &MemoryKeyspace) -> BTreeMap<Vec<u8>, Vec<u8>> {
    match keys.keys.get(NAME) {
        Some((Value::Hash(fields), _)) => fields.clone(),
        _ => BTreeMap::new(),
    }
}

/// Runs `op` on the lock, as one command.
pub fn with_lock<T>(keys: &mut MemoryKeyspace, op: impl FnOnce(&mut KeyspaceLock<MemoryKeyspace>) -> T) -> T {
    let mut lock = KeyspaceLock::open(keys, NAME).expect("the lock");
    let outcome = op(&mut lock);
    lock.finish().expect("no write fails");
    outcome
}

pub const REQUEST_KEY: &[u8] = b"r";

/// A request's key (an unlock latch or an acquire record) holding `text`,
/// in a keyspace of its own.
pub fn request_key(text: Option<&str>) -> MemoryKeyspace {
    text.map_or_else(missing, |text| with_key(REQUEST_KEY, MemoryKeyspace::string(text), None))
}

/// Runs `op` on the request key in `keys`.
pub fn with_request_key<T>(keys: &mut MemoryKeyspace, op: impl FnOnce(&mut KeyspaceKey<MemoryKeyspace>) -> T) -> T {
    op(&mut KeyspaceKey { keys, key: REQUEST_KEY })
}
