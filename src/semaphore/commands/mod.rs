//! The `RSEM.*` commands, one file each.

mod add_permits;
mod available;
mod drain;
mod release;
mod try_acquire;
mod try_set_permits;

/// This kind's `INFO` counters.
pub static STATS: crate::stats::KindStats = crate::stats::KindStats::new("semaphore");

use crate::commands::info::{Arg, ArgKind};
use crate::semaphore::Semaphore;
use crate::store::{lua_number_text, Via};
use redis_module::RedisString;

const PERMITS: Arg = Arg { name: c"permits", kind: ArgKind::Integer, optional: true, token: None };

/// The semaphore named `name`; with `VIA` (a rewritten Redisson script),
/// as Redisson's scripts treat it.
fn semaphore(name: &RedisString, via: Via) -> Semaphore<'_> {
    let semaphore = Semaphore::new(name.as_slice());
    if via == Via::Default {
        semaphore
    } else {
        semaphore.like_redissons_scripts(lua_number_text)
    }
}
