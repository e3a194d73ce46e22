//! The `RLATCH.*` commands, one file each.

mod count;
mod count_down;
mod delete;
mod try_set_count;

use crate::countdown::CountDownLatch;
use crate::error::LockError;
use crate::store::Via;
use redis_module::RedisString;

/// The latch named `name`, whose channel the call may name (`CHANNEL`,
/// which must be the latch's); with `VIA` (a rewritten Redisson script),
/// as Redisson's scripts treat it.
fn latch<'a>(name: &'a RedisString, via: Via, channel: Option<&RedisString>) -> Result<CountDownLatch<'a>, LockError> {
    let latch = match channel {
        None => CountDownLatch::new(name.as_slice()),
        // Not `ok_or`: its unused error would be dropped on every call.
        Some(channel) => match CountDownLatch::on_channel(name.as_slice(), channel.as_slice()) {
            Some(latch) => latch,
            None => return Err(LockError::Syntax("CHANNEL must be the latch's channel")),
        },
    };
    Ok(if via == Via::Default { latch } else { latch.like_redissons_scripts() })
}
