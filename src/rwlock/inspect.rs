//! The read-write lock to `RLOCK.INSPECT`: a hash with a `mode`; each
//! holder on its side, a reader with the lease of its longest hold.

use crate::inspect::{self, Detail, Holder, Inspection, WRITE_SUFFIX};
use crate::keyspace::{KeyType, Keyspace, Result};
use crate::lock::parse_hold_count;
use rlock_protocol::rwlock_timeout_key;

pub(super) fn inspect(keys: &mut dyn Keyspace, name: &[u8], now_ms: i64) -> Result<Option<Inspection>> {
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
        let Some(holds) = parse_hold_count(&count).ok().filter(|holds| *holds > 0) else { continue };
        let holder = match field.strip_suffix(WRITE_SUFFIX) {
            Some(owner) => Holder { owner: owner.to_vec(), holds, lease_ms: ttl_ms, side: Some("write") },
            None => {
                let lease_ms = reader_lease_ms(keys, (name, &field, holds), now_ms)?.unwrap_or(ttl_ms);
                Holder { owner: field, holds, lease_ms, side: Some("read") }
            }
        };
        holders.push(holder);
    }
    Ok(Some(Inspection { kind: "read-write", ttl_ms, holders, details: vec![("mode", Detail::Text(mode))] }))
}

/// Read holds whose timeout keys are read, at most.
const TIMEOUTS_READ: i64 = 100;

/// The lease of a reader's longest-lived hold (of its first
/// [`TIMEOUTS_READ`]): each read hold has a timeout key of its own.
fn reader_lease_ms(
    keys: &mut dyn Keyspace,
    (name, owner, holds): (&[u8], &[u8], i64),
    now_ms: i64,
) -> Result<Option<i64>> {
    let mut longest = None;
    for n in 1..=holds.min(TIMEOUTS_READ) {
        let timeout = rwlock_timeout_key(name, owner, n);
        if inspect::companion_type(keys, &timeout)? != KeyType::Missing {
            let lease_ms = inspect::ttl_ms(keys, &timeout, now_ms)?;
            longest = Some(longest.map_or(lease_ms, |longest: i64| {
                if lease_ms == -1 || longest == -1 {
                    -1
                } else {
                    longest.max(lease_ms)
                }
            }));
        }
    }
    Ok(longest)
}
