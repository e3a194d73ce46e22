//! RLock's rules ([`crate::lock`]) over a lock hash inside any
//! [`Keyspace`]: a primitive built on RLock (the fenced lock) runs
//! `lock::acquire` and the rest unchanged, together with its own keys, in
//! one command.
//!
//! The hash is read once when opened (a lock has a few fields); writes go
//! to the keyspace and to that copy. [`LockStore`]'s writes cannot fail,
//! so the keyspace's first error is kept and given by [`KeyspaceLock::finish`].

use super::{KeyType, Keyspace, Moot, Result};
use crate::error::LockError;
use crate::lock::{parse_hold_count, LockStore};
use rlock_protocol::{release_channel, UNLOCK_MESSAGE};

pub struct KeyspaceLock<'k, K: Keyspace> {
    keys: &'k mut K,
    name: Vec<u8>,
    kind: KeyType,
    fields: Vec<(Vec<u8>, Vec<u8>)>,
    expire_at: Option<i64>,
    failed: Option<LockError>,
}

impl<'k, K: Keyspace> KeyspaceLock<'k, K> {
    /// Reads the lock `name`.
    pub fn open(keys: &'k mut K, name: &[u8]) -> Result<Self> {
        let kind = keys.key_type(name)?;
        let fields = if kind == KeyType::Hash { keys.hgetall(name)? } else { Vec::new() };
        let expire_at = keys.expire_at(name)?;
        Ok(Self { keys, name: name.to_vec(), kind, fields, expire_at, failed: None })
    }

    /// The first error a write met, if any.
    pub fn finish(self) -> Result<()> {
        self.failed.map_or(Ok(()), Err)
    }

    fn record(&mut self, written: Result<()>) {
        if let Err(err) = written {
            self.failed.get_or_insert(err);
        }
    }

    fn field(&self, owner: &[u8]) -> Option<&[u8]> {
        self.fields.iter().find(|(field, _)| field == owner).map(|(_, value)| value.as_slice())
    }
}

impl<K: Keyspace> LockStore for KeyspaceLock<'_, K> {
    type Owner = [u8];

    fn kind(&self) -> KeyType {
        self.kind
    }

    fn hold_count(&self, owner: &[u8]) -> std::result::Result<Option<i64>, LockError> {
        self.field(owner).map(parse_hold_count).transpose()
    }

    fn holds_only_counts(&self) -> bool {
        self.fields.iter().all(|(_, value)| parse_hold_count(value).is_ok())
    }

    fn holder_count(&self) -> i64 {
        self.fields.len() as i64
    }

    fn expire_at(&self) -> Option<i64> {
        self.expire_at
    }

    fn increment(&mut self, owner: &[u8], by: i64, new_count: i64) {
        let written = self.keys.hincr_by(&self.name, owner, by, new_count);
        self.record(written);
        let value = new_count.to_string().into_bytes();
        match self.fields.iter_mut().find(|(field, _)| field == owner) {
            Some((_, old)) => *old = value,
            None => self.fields.push((owner.to_vec(), value)),
        }
        self.kind = KeyType::Hash;
    }

    fn set_expire_at(&mut self, at_ms: i64) {
        let written = self.keys.set_expire_at(&self.name, at_ms);
        self.record(written);
        self.expire_at = Some(at_ms);
    }

    fn remove_last_hold(&mut self, _owner: &[u8]) {
        let announced = self.keys.announce(&self.name, Moot::HashIncrement);
        self.record(announced);
        self.delete();
    }

    fn delete(&mut self) {
        let written = self.keys.delete(&self.name);
        self.record(written);
        (self.kind, self.expire_at) = (KeyType::Missing, None);
        self.fields.clear();
    }

    fn publish_release(&mut self) {
        let published = self.keys.publish(&release_channel(&self.name), UNLOCK_MESSAGE);
        self.record(published);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delay::Delay;
    use crate::keyspace::memory::MemoryKeyspace as Keys;
    use crate::lock::{self, Acquire, ForceRelease, Release};

    const NOW: i64 = 1_000_000;

    #[test]
    fn rlocks_rules_run_over_a_keyspace() {
        let mut keys = Keys::default();
        let mut lock = KeyspaceLock::open(&mut keys, b"l").unwrap();
        assert_eq!(lock::acquire(&mut lock, b"a", 100, (NOW, Delay::OVER)), Ok(Acquire::Acquired));
        assert_eq!(lock::acquire(&mut lock, b"a", 200, (NOW, Delay::OVER)), Ok(Acquire::Reentered { count: 2 }));
        assert_eq!(
            lock::acquire(&mut lock, b"b", 100, (NOW + 50, Delay::OVER)),
            Ok(Acquire::Contended { pttl_ms: 150 })
        );
        lock.finish().unwrap();
        assert_eq!(keys.effects, ["HINCRBY l a 1", "PEXPIREAT l 1000100", "HINCRBY l a 1", "PEXPIREAT l 1000200"]);
        keys.effects.clear();

        let mut lock = KeyspaceLock::open(&mut keys, b"l").unwrap();
        assert_eq!(lock::release(&mut lock, b"a", 100, NOW), Ok(Release::Decremented { count: 1 }));
        assert_eq!(lock::release(&mut lock, b"a", 100, NOW), Ok(Release::Released));
        assert_eq!(lock::force_release(&mut lock), Ok(ForceRelease::NotLocked));
        lock.finish().unwrap();
        assert_eq!(
            keys.effects,
            ["HINCRBY l a -1", "PEXPIREAT l 1000100", "DEL l", "PUBLISH redisson_lock__channel:{l} 0"]
        );
        assert!(keys.keys.is_empty());
    }

    #[test]
    fn a_hash_that_is_not_a_lock_is_refused_before_any_write() {
        let mut keys = Keys::at(vec![("l", Keys::hash(&[("a", "x")]), None)], NOW);
        let mut lock = KeyspaceLock::open(&mut keys, b"l").unwrap();
        assert_eq!(lock::acquire(&mut lock, b"a", 100, (NOW, Delay::OVER)), Err(LockError::NotALock));
        assert_eq!(lock::force_release(&mut lock), Err(LockError::NotALock));
        lock.finish().unwrap();
        assert!(keys.effects.is_empty());
    }
}
