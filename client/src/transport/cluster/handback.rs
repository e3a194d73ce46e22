//! Handing rerouted slot ranges back to redis-rs (see
//! [`SlotMapCache::route`](super::slot_map_cache::SlotMapCache::route)):
//! after a map read, one key of each rerouted range is read (`EXISTS`)
//! through redis-rs's own routing, within the read's timeout. A range whose
//! read answers goes by redis-rs again: redis-rs reached the slot's owner,
//! directly or by following the old owner's `MOVED` (and it then read its
//! own map again). A hung old owner answers nothing, and its range stays
//! rerouted until the next try. A read is safe to abandon, and is never
//! sent again.
//!
//! A read the server refuses (`NOPERM`: the ACL denies `EXISTS`) does not
//! show that redis-rs reached the slot's owner: the ACL is checked before
//! the redirect. The range stays rerouted (its commands go on the client's
//! own connection to the owner by its map, until a redirect hands it back)
//! and a `tracing` warning (target `rlock`) says so, at most once a try.

use redis::aio::ConnectionLike;
use redis::cluster_async::ClusterConnection;
use redis::Value;
use rlock_protocol::key_slot;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::time::Instant;

/// Tries at most this often.
const INTERVAL: Duration = Duration::from_secs(5);

#[derive(Default)]
pub(crate) struct Handback {
    /// A try is under way.
    busy: Arc<AtomicBool>,
    last: Mutex<Option<Instant>>,
}

impl Handback {
    /// Reads a key of each of `ranges` through redis-rs, in the
    /// background, within `timeout`; `agreed` gets each range that answered.
    pub fn probe(
        &self,
        connection: &ClusterConnection,
        ranges: Vec<(u16, u16)>,
        timeout: Duration,
        agreed: impl Fn((u16, u16)) + Send + 'static,
    ) {
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        let due = last.is_none_or(|at| at.elapsed() >= INTERVAL);
        if ranges.is_empty() || !due || self.busy.swap(true, Ordering::SeqCst) {
            return;
        }
        *last = Some(Instant::now());
        let (busy, connection) = (self.busy.clone(), connection.clone());
        tokio::spawn(async move {
            let mut reads = tokio::task::JoinSet::new();
            for range in ranges {
                let Some(key) = key_in(range) else { continue };
                let mut connection = connection.clone();
                reads.spawn(async move {
                    let exists = redis::cmd("EXISTS").arg(key).clone();
                    let read = tokio::time::timeout(timeout, connection.req_packed_command(&exists)).await;
                    (range, read.map(|read| read.and_then(Value::extract_error)))
                });
            }
            let mut refused = None;
            while let Some(joined) = reads.join_next().await {
                match joined {
                    Ok((range, Ok(Ok(_)))) => agreed(range),
                    Ok((_, Ok(Err(err)))) if err.code() == Some("NOPERM") => {
                        refused = Some(err);
                    }
                    _ => {}
                }
            }
            if let Some(err) = refused {
                tracing::warn!(
                    target: "rlock",
                    error = %err,
                    "cluster: a rerouted slot range cannot be handed back to redis-rs, its check (EXISTS) was \
                     refused; its commands stay on the client's own connections until a redirect"
                );
            }
            busy.store(false, Ordering::SeqCst);
        });
    }
}

/// A key (`{n}`) whose slot is in `(start, end)`.
fn key_in((start, end): (u16, u16)) -> Option<String> {
    (0..1_000_000u32).map(|n| format!("{{{n}}}")).find(|key| (start..=end).contains(&key_slot(key.as_bytes())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_found_in_any_single_slot() {
        for slot in [0, 1, 5000, 16383] {
            let key = key_in((slot, slot)).unwrap();
            assert_eq!(key_slot(key.as_bytes()), slot);
        }
    }
}
