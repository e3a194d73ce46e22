//! The `RLATCH.*` commands, one file each.

mod count;
mod count_down;
mod delete;
mod try_set_count;

use crate::countdown::CountDownLatch;
use crate::store::Via;
use redis_module::RedisString;

/// The latch named `name`; with `VIA` (a rewritten Redisson script), as
/// Redisson's scripts treat it.
fn latch(name: &RedisString, via: Via) -> CountDownLatch<'_> {
    let latch = CountDownLatch::new(name.as_slice());
    if via == Via::Default {
        latch
    } else {
        latch.like_redissons_scripts()
    }
}
