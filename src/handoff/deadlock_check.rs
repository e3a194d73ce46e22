//! The deadlock check of a caller about to block on the server: the
//! graph is every caller blocked in the caller's database, and the
//! holders of each lock on the way, read from its keys.

use super::blocking::listed;
use super::deadlock::{cycle, Edges, Step};
use super::glue::{lock_id, split_lock_id};
use crate::config;
use crate::inspect::inspect;
use crate::stats;
use crate::store::{now_ms, RedisKeyspace};
use redis_module::{Context, RedisString};

/// The cycle `owner`'s wait for `name` would close (none when detection
/// is off); counted as a deadlock broken.
pub fn cycle_closed_by(ctx: &Context, name: &[u8], owner: &[u8]) -> Option<Vec<Step>> {
    if !config::deadlock_detection() {
        return None;
    }
    let db = split_lock_id(&lock_id(ctx, name)).0;
    let mut waits = Edges::new();
    for waiter in listed() {
        let (waiter_db, lock) = split_lock_id(&waiter.lock);
        if waiter_db == db {
            waits.entry(waiter.owner).or_default().push(lock.to_vec());
        }
    }
    // Nobody else waits: no cycle to close.
    if waits.is_empty() {
        return None;
    }
    let now = now_ms();
    let found = cycle(owner, name, &waits, |lock| {
        let key = RedisString::create_from_slice(ctx.get_raw(), lock);
        let mut keys = RedisKeyspace::open_as_server(ctx, &key);
        let inspection = inspect(&mut keys, lock, now);
        inspection.map(|found| found.holders.into_iter().map(|holder| holder.owner).collect()).unwrap_or_default()
    });
    if found.is_some() {
        stats::record_deadlock();
    }
    found
}
