//! The read-write lock to `RLOCK.INSPECT`: a hash with a `mode`; each
//! holder on its side, a reader with the lease of its latest hold.

use crate::inspect::{self, Detail, Holder, Inspection, Inspector, INSPECTORS};
use crate::keyspace::{KeyType, Keyspace, Result};
use crate::lock::parse_hold_count;
use rlock_protocol::rwlock_timeout_key;

#[linkme::distributed_slice(INSPECTORS)]
static RWLOCK: Inspector = Inspector { rank: 0, inspect };

const WRITE_SUFFIX: &[u8] = b":write";

fn inspect(keys: &mut dyn Keyspace, name: &[u8], now_ms: i64) -> Result<Option<Inspection>> {
    if keys.key_type(name)? != KeyType::Hash {
        return Ok(None);
    }
    let mode = match keys.hget(name, b"mode")?.as_deref() {
        Some(b"read") => "read",
        Some(b"write") => "write",
        _ => return Ok(None),
    };
    let ttl_ms = inspect::ttl_ms(keys, name, now_ms)?;
    let mut holders = Vec::new();
    for (field, count) in keys.hgetall(name)? {
        let Ok(holds) = parse_hold_count(&count) else { continue };
        let holder = match field.strip_suffix(WRITE_SUFFIX) {
            Some(owner) => Holder { owner: owner.to_vec(), holds, lease_ms: ttl_ms, side: Some("write") },
            None => {
                // Each read hold has a timeout key; the latest is the last to end.
                let timeout = rwlock_timeout_key(name, &field, holds);
                let lease_ms = match inspect::companion_type(keys, &timeout)? {
                    KeyType::Missing => ttl_ms,
                    _ => inspect::ttl_ms(keys, &timeout, now_ms)?,
                };
                Holder { owner: field, holds, lease_ms, side: Some("read") }
            }
        };
        holders.push(holder);
    }
    Ok(Some(Inspection { kind: "read-write", ttl_ms, holders, details: vec![("mode", Detail::Text(mode))] }))
}
