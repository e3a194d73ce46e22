//! The semaphore and the count-down latch to `RLOCK.INSPECT`: Redisson
//! keeps both as a bare integer (permits, or the count), so the key
//! alone cannot tell them apart: a `counter`.

use crate::inspect::{ttl_ms, Detail, Inspection};
use crate::keyspace::{KeyType, Keyspace, Result};
use crate::lock::parse_hold_count;

pub(super) fn inspect(keys: &mut dyn Keyspace, name: &[u8], now_ms: i64) -> Result<Option<Inspection>> {
    if keys.key_type(name)? != KeyType::String {
        return Ok(None);
    }
    let Some(count) = keys.get(name)?.and_then(|count| parse_hold_count(&count).ok()) else {
        return Ok(None);
    };
    let ttl_ms = ttl_ms(keys, name, now_ms)?;
    Ok(Some(Inspection { kind: "counter", ttl_ms, holders: vec![], details: vec![("count", Detail::Integer(count))] }))
}
