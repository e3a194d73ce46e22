//! RFencedLock's acquire scripts as Redisson sends them, and the
//! `RFENCED.ACQUIRE` call each becomes (see `redisson::scripts`). Both run
//! with `LIKESCRIPT`, which makes the command do what the scripts do where
//! the two otherwise differ (the token taken first, PTTL's -1 replied).
//! Release, renewal and force release are RLock's scripts.

use crate::lease::parse_lease_ms;
use crate::redisson::scripts::{is_time, native, Call, Family, Known, Rewrite};
use rlock_protocol::{fenced_token_key_parts, is_joined};

pub(super) static FENCED: Family = Family::new("fenced", &SCRIPTS);

const SCRIPTS: [Known; 2] = [
    // RedissonFencedLock.tryLockInnerAsync (lockAndGetToken), 3.19.0 .. 4.7.0
    Known { sha1: "49babb5a1e6a0c5f188c2ae62b93b51cdfd63e45", len: 288, rewrite: acquire_with_token },
    // RedissonFencedLock.tryLockInnerAsync#2 (lock, tryLock), 3.19.0 .. 4.7.0
    Known { sha1: "46b5551ba403d6152a7a6eca122e08728d6c8c66", len: 262, rewrite: acquire_as_lock },
];

/// KEYS name, token counter; ARGV lease, owner. Replies `[-1, token]` or
/// `[pttl, -1]`.
fn acquire_with_token<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    acquire(call, b"TOKEN")
}

/// The same keys and arguments; replies nil or the PTTL, as RLock's.
fn acquire_as_lock<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    acquire(call, b"LOCK")
}

fn acquire<'a>(call: &Call<'a>, reply: &'a [u8]) -> Option<Rewrite<'a>> {
    let ([name, token_key], [lease, owner]) = (call.keys, call.argv) else { return None };
    let taken = is_joined(token_key, &fenced_token_key_parts(name))
        && call.same_slot(name, token_key)
        && is_time(lease, parse_lease_ms);
    taken.then(|| Rewrite {
        argv: native(&[b"RFENCED.ACQUIRE", name, owner, lease, b"LIKESCRIPT", reply]),
        channel: None,
    })
}

#[cfg(test)]
mod tests;
