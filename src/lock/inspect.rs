//! RLock to `RLOCK.INSPECT`: any hash with holds that no more specific
//! kind claims.

use crate::inspect::{hash_holders, ttl_ms, Inspection};
use crate::keyspace::{KeyType, Keyspace, Result};

pub(super) fn inspect(keys: &mut dyn Keyspace, name: &[u8], now_ms: i64) -> Result<Option<Inspection>> {
    if keys.key_type(name)? != KeyType::Hash {
        return Ok(None);
    }
    let ttl_ms = ttl_ms(keys, name, now_ms)?;
    let holders = hash_holders(keys, name, ttl_ms)?;
    // A hash with no hold in it is no lock's.
    Ok((!holders.is_empty()).then_some(Inspection { kind: "lock", ttl_ms, holders, details: vec![] }))
}
