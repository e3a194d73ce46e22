//! Redisson's unlock latch (layout: docs/commands.md) over a [`Keyspace`], for
//! the family's releases: a release given a request id first replays the
//! reply recorded under the latch key, if any; otherwise it releases and
//! records whether the lock is still held (`0`) or released (`1`).

use super::{KeyType, Keyspace, Result};
use crate::error::LockError;
use crate::lease::expiry;
use rlock_protocol::unlock_latch_key;

/// The latch of one release request.
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

    /// The reply an earlier release with this request id recorded: `1`
    /// (`Some(true)`), `0`, or `None`. Touches the key, so call it first.
    pub fn recorded<K: Keyspace>(&self, keys: &mut K) -> Result<Option<bool>> {
        match keys.key_type(&self.key)? {
            KeyType::Missing => Ok(None),
            KeyType::String => match keys.get(&self.key)?.as_deref() {
                Some(b"0") => Ok(Some(false)),
                Some(b"1") => Ok(Some(true)),
                _ => Err(LockError::NotALatch),
            },
            _ => Err(LockError::NotALatch),
        }
    }

    /// `SET latch 0|1 PXAT expiry`.
    pub fn record<K: Keyspace>(&self, keys: &mut K, released: bool) -> Result<()> {
        keys.set(&self.key, if released { b"1" } else { b"0" }, Some(self.expire_at))
    }
}
