//! The fair lock to `RLOCK.INSPECT`: a lock's hash (or none) with a queue
//! of waiters, each with the time left to its deadline. Without waiters
//! Redisson keeps no queue, and a fair lock reads as a lock.

use crate::inspect::{companion_type, hash_holders, ttl_ms, Detail, Inspection};
use crate::keyspace::{KeyType, Keyspace, Result};
use rlock_protocol::{fair_queue_key, fair_timeout_key};

/// Waiters listed at most; `queued` counts them all.
const LISTED: usize = 1_000;

pub(super) fn inspect(keys: &mut dyn Keyspace, name: &[u8], now_ms: i64) -> Result<Option<Inspection>> {
    let (queue, timeouts) = (fair_queue_key(name), fair_timeout_key(name));
    let hash = keys.key_type(name)?;
    if !matches!(hash, KeyType::Hash | KeyType::Missing) || companion_type(keys, &queue)? != KeyType::List {
        return Ok(None);
    }
    let ttl_ms = ttl_ms(keys, name, now_ms)?;
    let holders = match hash {
        KeyType::Hash => hash_holders(keys, name, ttl_ms)?,
        _ => vec![],
    };
    let deadlines = companion_type(keys, &timeouts)? == KeyType::Zset;
    let queued = keys.lrange(&queue)?;
    let mut waiters = Vec::new();
    for owner in queued.iter().take(LISTED) {
        let deadline = if deadlines { keys.zscore(&timeouts, owner)? } else { None };
        waiters.push((owner.clone(), deadline.map_or(-1, |at| at.saturating_sub(now_ms).max(0))));
    }
    let details = vec![("queue", Detail::Queue(waiters)), ("queued", Detail::Integer(queued.len() as i64))];
    Ok(Some(Inspection { kind: "fair", ttl_ms, holders, details }))
}
