//! Redisson's fast multi-lock (`RedissonFasterMultiLock`, 3.38.0 on): many
//! locks in one hash, the group's key. Each locked field (a hashed value)
//! maps to its holder's lock name (`uuid:threadId`); beside it,
//! `field:holder:expire_time` holds the hold's end in the holder's own
//! clock (Unix ms, as Lua wrote the number) and `field:holder:lock_count`
//! its count. The key's own TTL keeps the whole group.
//!
//! Only the watchdog's renewal is native: [`renew`], exactly as Redisson's
//! script does it, on the caller's clock for the expiry fields and the
//! server's for the key's TTL.

#[cfg(test)]
mod tests;

#[cfg(not(test))]
mod commands;
mod primitive;
mod redisson;

use crate::error::LockError;
use crate::keyspace::{pttl, KeyType, Keyspace, Result};
use crate::redisson::lua_number::lua_tonumber;
use crate::semaphore::LuaNumberText;
use std::collections::HashSet;

/// One renewal: `owner`'s holds of `fields` in the group's hash.
pub struct Renewal<'a> {
    pub owner: &'a [u8],
    pub lease_ms: i64,
    /// The caller's clock: each hold's end becomes `now_ms + lease_ms`.
    pub now_ms: i64,
    pub fields: &'a [&'a [u8]],
}

/// The watchdog's renewal (`FastMultilockTask`): true when `owner` holds
/// every field, each hold's end then pushed to `now_ms + lease_ms` where it
/// was earlier and the key's TTL raised to `lease_ms` (on `server_now_ms`)
/// where it was less. False when the group is missing, or when a field (in
/// order) is not `owner`'s: the holds before it renewed all the same, the
/// TTL left, as the script does.
///
/// Where the script would fail (a key of another type, a hold whose end is
/// missing or not a number), nothing is written: the script fails there
/// with the holds before renewed.
pub fn renew<K: Keyspace>(
    keys: &mut K,
    group: &[u8],
    renewal: &Renewal,
    server_now_ms: i64,
    lua_number: LuaNumberText,
) -> Result<bool> {
    match keys.key_type(group)? {
        KeyType::Missing => return Ok(false),
        KeyType::Hash => {}
        _ if renewal.fields.is_empty() => {}
        _ => return Err(LockError::WrongType),
    }
    // In Lua, a number plus a number: doubles.
    let new_end = renewal.lease_ms as f64 + renewal.now_ms as f64;
    let new_end_text = lua_number(new_end);
    // Every write is decided before the first, so a failure writes
    // nothing; a field written earlier in the call reads as written (a set:
    // a group may have thousands of fields).
    let mut writes: Vec<Vec<u8>> = Vec::new();
    let mut written: HashSet<Vec<u8>> = HashSet::new();
    let read = |keys: &mut K, written: &HashSet<Vec<u8>>, field: &[u8]| -> Result<Option<Vec<u8>>> {
        match written.contains(field) {
            true => Ok(Some(new_end_text.to_vec())),
            false => keys.hget(group, field),
        }
    };
    let mut held = true;
    for &field in renewal.fields {
        if read(keys, &written, field)?.as_deref() != Some(renewal.owner) {
            held = false;
            break;
        }
        let end_field = [field, b":", renewal.owner, b":expire_time"].concat();
        let end = read(keys, &written, &end_field)?.and_then(|end| lua_tonumber(&end));
        let Some(end) = end else { return Err(LockError::HoldEndNotNumber(end_field)) };
        // A field written reads back as `new_end`: never written twice.
        if end < new_end {
            written.insert(end_field.clone());
            writes.push(end_field);
        }
    }
    for field in &writes {
        keys.hset(group, &[(field, &new_end_text)])?;
    }
    if held && pttl(keys, group, server_now_ms)? < renewal.lease_ms {
        keys.set_expire_at(group, server_now_ms + renewal.lease_ms)?;
    }
    Ok(held)
}
