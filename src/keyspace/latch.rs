//! Keys of one request, derived from a lock's name and a request id: a
//! short string with an expiry. Redisson's unlock latch (layout:
//! docs/commands.md) records a release's reply; rlock's acquire record
//! (`lock::acquire_once`) records a grant. Both are written as
//! `SET key text PXAT at`, through [`RequestKey`]: the key API on the hot
//! path (`store::RedisLatch`), or any [`Keyspace`] ([`KeyspaceKey`]).

use super::{KeyType, Keyspace, Result};
use crate::error::LockError;
use crate::lease::expiry;
use rlock_protocol::unlock_latch_key;

/// One request's key: an unlock latch or an acquire record.
pub trait RequestKey {
    /// The string the key holds; `None` when it is missing. Fails with
    /// [`LockError::WrongType`] when it holds another type.
    fn text(&mut self) -> Result<Option<Vec<u8>>>;
    /// `SET key text PXAT at_ms`.
    fn set_text(&mut self, text: &[u8], at_ms: i64) -> Result<()>;
}

/// A request key inside a [`Keyspace`].
pub struct KeyspaceKey<'k, K: Keyspace> {
    pub keys: &'k mut K,
    pub key: &'k [u8],
}

impl<K: Keyspace> RequestKey for KeyspaceKey<'_, K> {
    fn text(&mut self) -> Result<Option<Vec<u8>>> {
        match self.keys.key_type(self.key)? {
            KeyType::Missing => Ok(None),
            KeyType::String => self.keys.get(self.key),
            _ => Err(LockError::WrongType),
        }
    }

    fn set_text(&mut self, text: &[u8], at_ms: i64) -> Result<()> {
        self.keys.set(self.key, text, Some(at_ms))
    }
}

/// The reply an earlier release with this latch's request id recorded:
/// `Some(true)` for 1, `Some(false)` for 0, `None` when there is none.
/// Fails with [`LockError::NotALatch`] when the key holds anything else.
/// Touches the key, so call it first.
pub fn recorded(latch: &mut impl RequestKey) -> Result<Option<bool>> {
    match latch.text() {
        Ok(None) => Ok(None),
        Ok(Some(text)) if text == b"0" => Ok(Some(false)),
        Ok(Some(text)) if text == b"1" => Ok(Some(true)),
        Ok(Some(_)) | Err(LockError::WrongType) => Err(LockError::NotALatch),
        Err(err) => Err(err),
    }
}

/// Records a release's reply (`1` released, `0` still held), to expire at `at_ms`.
pub fn record(latch: &mut impl RequestKey, released: bool, at_ms: i64) -> Result<()> {
    latch.set_text(if released { b"1" } else { b"0" }, at_ms)
}

/// The latch of one release request, as the family's commands parse it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnlockLatch {
    key: Vec<u8>,
    expire_at: i64,
}

impl UnlockLatch {
    /// The latch of `request_id` on the lock `name`, living `latch_ms` from `now_ms`.
    pub fn new(name: &[u8], request_id: &[u8], latch_ms: i64, now_ms: i64) -> Result<Self> {
        Ok(Self { key: unlock_latch_key(name, request_id), expire_at: expiry(now_ms, latch_ms)? })
    }

    /// The latch of a release given `ID request_id [PX latch_ms]`, if any.
    pub fn for_request(name: &[u8], request: Option<(&[u8], i64)>, now_ms: i64) -> Result<Option<Self>> {
        request.map(|(request_id, latch_ms)| Self::new(name, request_id, latch_ms, now_ms)).transpose()
    }

    /// The latch's key (for the commands' cluster check: not built for
    /// unit tests, as the commands are not).
    #[cfg(not(test))]
    pub fn key(&self) -> &[u8] {
        &self.key
    }

    /// [`recorded`] in `keys`.
    pub fn recorded<K: Keyspace>(&self, keys: &mut K) -> Result<Option<bool>> {
        recorded(&mut KeyspaceKey { keys, key: &self.key })
    }

    /// [`record`] in `keys`.
    pub fn record<K: Keyspace>(&self, keys: &mut K, released: bool) -> Result<()> {
        record(&mut KeyspaceKey { keys, key: &self.key }, released, self.expire_at)
    }
}
