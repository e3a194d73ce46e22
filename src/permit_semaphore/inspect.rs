//! The permit-expirable semaphore to `RLOCK.INSPECT`: its permits left
//! (lapsed ones among them), and each permit taken (its id, as a holder)
//! with its lease. With no
//! permit taken Redisson keeps no set of them, and it reads as a counter.

use crate::inspect::{companion_type, ttl_ms, Detail, Holder, Inspection};
use crate::keyspace::{KeyType, Keyspace, Result};
use crate::lock::parse_hold_count;
use rlock_protocol::{permit_timeout_key, PERMIT_NEVER_EXPIRES};

/// Permits listed at most; `taken` counts them all.
const LISTED: usize = 1_000;

pub(super) fn inspect(keys: &mut dyn Keyspace, name: &[u8], now_ms: i64) -> Result<Option<Inspection>> {
    let timeouts = permit_timeout_key(name);
    if !matches!(keys.key_type(name)?, KeyType::String | KeyType::Missing)
        || companion_type(keys, &timeouts)? != KeyType::Zset
    {
        return Ok(None);
    }
    // Its count is an integer (or missing: no permit left), as RLOCK.LIST
    // looks for it.
    let count = keys.get(name)?;
    if count.as_deref().is_some_and(|count| parse_hold_count(count).is_err()) {
        return Ok(None);
    }
    let left = count.and_then(|count| parse_hold_count(&count).ok()).unwrap_or(0);
    // Lapsed permits are the semaphore's again (its next call takes them back).
    let lapsed = keys.zrange_to(&timeouts, now_ms, usize::MAX)?.len() as i64;
    let permits = left.saturating_add(lapsed);
    let taken = keys.zcard(&timeouts)? as i64 - lapsed;
    let holders = keys
        .zrange_to(&timeouts, i64::MAX, LISTED.saturating_add(lapsed as usize))?
        .into_iter()
        .filter(|(_, expires_at)| *expires_at > now_ms)
        .map(|(id, expires_at)| {
            let lease_ms = match expires_at {
                PERMIT_NEVER_EXPIRES => -1,
                at => at - now_ms,
            };
            Holder { owner: id, holds: 1, lease_ms, side: None }
        })
        .take(LISTED)
        .collect();
    let details = vec![("permits", Detail::Integer(permits)), ("taken", Detail::Integer(taken))];
    Ok(Some(Inspection { kind: "permit-semaphore", ttl_ms: ttl_ms(keys, name, now_ms)?, holders, details }))
}
