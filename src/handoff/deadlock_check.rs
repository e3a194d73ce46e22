//! The deadlock check of a caller about to block on the server: the
//! graph is every caller blocked in the caller's database on a key the
//! caller may read, and the holders of each such lock, read from its
//! keys. A cycle through a key the caller may not read is not seen: its
//! reply would tell the caller about that key.

use super::blocking::listed;
use super::deadlock::{cycle, Edges, Step};
use super::glue::{lock_id, split_lock_id};
use crate::config;
use crate::inspect::owners;
use crate::store::{Caller, RedisKeyspace};
use redis_module::{Context, RedisString};

/// The cycle `owner`'s wait for `name` would close (none when detection
/// is off).
pub fn cycle_closed_by(ctx: &Context, name: &[u8], owner: &[u8]) -> Option<Vec<Step>> {
    if !config::deadlock_detection() {
        return None;
    }
    let db = split_lock_id(&lock_id(ctx, name)).0;
    let mut caller = Caller::new(ctx);
    let mut may_read = |lock: &[u8]| {
        let key = RedisString::create_from_slice(ctx.get_raw(), lock);
        caller.may_inspect(&key)
    };
    let mut waits = Edges::new();
    for waiter in listed() {
        let (waiter_db, lock) = split_lock_id(&waiter.lock);
        if waiter_db == db && may_read(lock) {
            waits.entry(waiter.owner).or_default().push(lock.to_vec());
        }
    }
    // Nobody else waits: no cycle to close.
    if waits.is_empty() {
        return None;
    }
    cycle(owner, name, &waits, |lock| {
        if lock != name && !may_read(lock) {
            return vec![];
        }
        let key = RedisString::create_from_slice(ctx.get_raw(), lock);
        owners(&mut RedisKeyspace::open_as_server(ctx, &key), lock).unwrap_or_default()
    })
}
