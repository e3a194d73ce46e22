//! What the read-write lock does when it acts like Redisson's scripts
//! (the commands' `LIKESCRIPT`), where `RRW.*` deliberately differs.

use super::ReadWriteLock;
use crate::error::LockError;
use crate::keyspace::{pttl, Keyspace, Result};
use crate::lease::expiry;
use crate::semaphore::LuaNumberText;

impl ReadWriteLock<'_> {
    /// The expiry `pexpire(name, pttl + lease)` sets, as the script runs
    /// it: the sum is a Lua number (a double) that `redis.call` writes as
    /// text and PEXPIRE reads back; `None` when that time is already past
    /// (PEXPIRE deletes the key: a hash without expiry has PTTL -1). A sum
    /// PEXPIRE refuses (a TTL set by hand beyond 10^17 ms) is refused
    /// before anything is written (the script fails after its HINCRBY).
    pub(super) fn grown_expiry<K: Keyspace>(
        &self,
        keys: &mut K,
        lease_ms: i64,
        now_ms: i64,
        lua_number: LuaNumberText,
    ) -> Result<Option<i64>> {
        let sum = pttl(keys, self.name, now_ms)? as f64 + lease_ms as f64;
        let ttl_ms = crate::lock::parse_hold_count(&lua_number(sum)).map_err(|_| LockError::ExpiryOverflow)?;
        match ttl_ms {
            ..=0 => Ok(None),
            _ => expiry(now_ms, ttl_ms).map(Some),
        }
    }
}
