//! The fenced lock to `RLOCK.INSPECT`: a lock's hash (or none, once a
//! token was given) and the last token given.

use crate::inspect::{companion_type, hash_holders, ttl_ms, Detail, Inspection};
use crate::keyspace::{KeyType, Keyspace, Result};
use crate::lock::parse_hold_count;
use rlock_protocol::fenced_token_key;

pub(super) fn inspect(keys: &mut dyn Keyspace, name: &[u8], now_ms: i64) -> Result<Option<Inspection>> {
    let hash = keys.key_type(name)?;
    let token_key = fenced_token_key(name);
    if !matches!(hash, KeyType::Hash | KeyType::Missing) || companion_type(keys, &token_key)? != KeyType::String {
        return Ok(None);
    }
    let Some(token) = keys.get(&token_key)?.and_then(|token| parse_hold_count(&token).ok()) else {
        return Ok(None);
    };
    let ttl_ms = ttl_ms(keys, name, now_ms)?;
    let holders = match hash {
        KeyType::Hash => hash_holders(keys, name, ttl_ms)?,
        _ => vec![],
    };
    Ok(Some(Inspection { kind: "fenced", ttl_ms, holders, details: vec![("token", Detail::Integer(token))] }))
}
