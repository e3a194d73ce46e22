//! The deadlock check of a caller about to block on the server: the
//! graph is the callers blocked in the caller's database, and the holders
//! of each lock they wait for, read from its keys, followed from the
//! caller's wait on: the check costs what it visits, not every waiter on
//! the server. A lock the caller may not inspect has no holders here: a
//! cycle through it would tell the caller about that key.

use super::blocking::{nobody_waits, waits_of};
use super::deadlock::{cycle, Step};
use super::glue::{lock_id, split_lock_id};
use crate::config;
use crate::inspect::owners;
use crate::store::{Caller, RedisKeyspace};
use redis_module::{Context, RedisString};

/// The cycle `owner`'s wait for `name` would close (none when detection
/// is off).
pub fn cycle_closed_by(ctx: &Context, name: &[u8], owner: &[u8]) -> Option<Vec<Step>> {
    // Nobody else waits: no cycle to close.
    if !config::deadlock_detection() || nobody_waits() {
        return None;
    }
    let db = split_lock_id(&lock_id(ctx, name)).0;
    let waits = |owner: &[u8]| {
        let ids = waits_of(owner).into_iter();
        ids.filter_map(|id| {
            let (waiter_db, lock) = split_lock_id(&id);
            (waiter_db == db).then(|| lock.to_vec())
        })
        .collect()
    };
    let mut caller = Caller::new(ctx);
    cycle(owner, name, waits, |lock| {
        let key = RedisString::create_from_slice(ctx.get_raw(), lock);
        if lock != name && !caller.may_inspect(&key) {
            return vec![];
        }
        owners(&mut RedisKeyspace::open_as_server(ctx, &key), lock).unwrap_or_default()
    })
}
