//! RPermitExpirableSemaphore's scripts as Redisson sends them, and the
//! `RPSEM.*` call each becomes (see `redisson::scripts`). A rewrite names
//! the script's clock (`AT now_ms`: the command then runs as the script,
//! see `permit_semaphore::script`) and its publish command (`VIA`).
//!
//! Rewritten: availablePermits, acquiredPermits and getPermits of 3.22.0 ..
//! 4.7.0; trySetPermits is RSemaphore's text (`semaphore/redisson.rs`).
//! The rest stay with Lua for now: tryAcquire, tryRelease (#2),
//! updateLeaseTime, getLeaseTime, setPermits and addPermits, whose native
//! commands differ from the scripts (the server's clock, ids held already
//! refused, the lapsed release's -1, a reclaim capped at 1,000, setPermits
//! reclaiming first, addPermits keeping the TTL), and the older texts.

use crate::lock::parse_hold_count;
use crate::redisson::scripts::{publish_command, Call, Family, Known, Rewrite, FAMILIES};
use crate::redisson::via::rewrite_via;
use rlock_protocol::{permit_timeout_key, semaphore_channel};

#[linkme::distributed_slice(FAMILIES)]
static PERMIT_SEMAPHORE: Family = Family::new("permit_semaphore", &SCRIPTS);

const SCRIPTS: [Known; 3] = [
    // RedissonPermitExpirableSemaphore.availablePermitsAsync, 3.22.0 .. 4.7.0
    Known { sha1: "26b3972b2c9e617556282f404cb79709d746a713", len: 377, rewrite: available },
    // RedissonPermitExpirableSemaphore.acquiredPermitsAsync, 3.22.0 .. 4.7.0
    Known { sha1: "6f0b0be79a0c146c778cb14f40c10eb5b706e574", len: 392, rewrite: acquired },
    // RedissonPermitExpirableSemaphore.getPermitsAsync, 3.22.0 .. 4.7.0
    Known { sha1: "e242db5c1c68811b0d26a41937dcf22415b6d872", len: 530, rewrite: permits },
];

fn available(call: &Call) -> Option<Rewrite> {
    reclaiming(call, b"RPSEM.AVAILABLE")
}

fn acquired(call: &Call) -> Option<Rewrite> {
    reclaiming(call, b"RPSEM.ACQUIRED")
}

fn permits(call: &Call) -> Option<Rewrite> {
    reclaiming(call, b"RPSEM.PERMITS")
}

/// KEYS name, timeouts, channel; ARGV now, publish command: the texts that
/// reclaim every permit scored 0 .. now, then read.
fn reclaiming(call: &Call, command: &[u8]) -> Option<Rewrite> {
    let ([name, timeouts, channel], [now, publish]) = (call.keys, call.argv) else { return None };
    let publish = publish_command(publish)?;
    let ours = *timeouts == permit_timeout_key(name).as_slice() && *channel == semaphore_channel(name).as_slice();
    let in_slot = call.same_slot(name, timeouts) && call.same_slot(name, channel);
    (ours && in_slot && is_clock(now)).then(|| rewrite_via(&[command, name, b"AT", now], publish, channel))
}

/// A clock reading ZRANGEBYSCORE and the command read alike: an integer
/// of 0 .. 2^53 (a double holds each exactly), without leading zeros.
fn is_clock(arg: &[u8]) -> bool {
    let plain = arg == b"0" || arg.first().is_some_and(|digit| (b'1'..=b'9').contains(digit));
    plain && parse_hold_count(arg).is_ok_and(|now| (0..=1 << 53).contains(&now))
}

#[cfg(test)]
mod tests;
