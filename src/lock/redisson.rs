//! RLock's scripts as Redisson sends them, and the `RLOCK.*` call each
//! becomes (see `redisson::scripts`).

use crate::lease::{parse_latch_ms, parse_lease_ms};
use crate::redisson::scripts::{is_release_channel, is_time, latch_request_id, native, publish_command};
use crate::redisson::scripts::{Call, Family, Known, Rewrite, FAMILIES};
use crate::redisson::via::{last_names_publish, rewrite_via, text_names_publish, Publishing};

#[linkme::distributed_slice(FAMILIES)]
static LOCK: Family = Family::new("lock", &SCRIPTS);

const SCRIPTS: [Known; 8] = [
    // RedissonLock.tryLockInnerAsync, 3.19.0 .. 4.7.0
    Known { sha1: "149c5a8bf18676fd99e9e6e24923bd64d9b62f94", len: 234, rewrite: acquire },
    // RedissonLock.tryLockInnerAsync, 3.12.3 .. 3.18.1; RedissonSpinLock.tryLockInnerAsync, 3.15.0 .. 4.7.0
    Known { sha1: "dad0f8d619e548e04f21fb48d50be5034df3adae", len: 339, rewrite: acquire },
    // RedissonLock.unlockInnerAsync, 3.24.0 .. 4.7.0
    Known { sha1: "6866459238a13a701d42f4971f12d9f3a50e2442", len: 471, rewrite: release },
    // RedissonLock.unlockInnerAsync, 3.22.0 .. 3.23.5
    Known { sha1: "778cea8aada230ae060b432fc333adaec85f2f4c", len: 303, rewrite: release_publish },
    // RedissonLock.unlockInnerAsync, 3.10.6 .. 3.21.3
    Known { sha1: "3ffe249c16dee540ac8ab32e39bd408626b9aff7", len: 305, rewrite: release_plain },
    // RedissonLock.forceUnlockAsync, 3.22.0 .. 4.7.0
    Known { sha1: "605e338249a7a1d40df83b04f7658354f883b41b", len: 107, rewrite: force_release },
    // RedissonLock.forceUnlockAsync, 3.10.0 .. 3.21.3
    Known { sha1: "7e9c80b3d786b95d5d4aaf8fd73adb9775fa6fb1", len: 109, rewrite: force_release_plain },
    // RedissonLock.renewExpirationAsync, 3.10.0 .. 3.14.1; RedissonBaseLock.renewExpirationAsync, 3.15.0 .. 3.43.0
    Known { sha1: "8e19a1ddbdee9138df9f32a480c57addab4353d1", len: 120, rewrite: renew },
];

// Left to Lua (README, "Redisson's scripts, natively"): the acquire of 3.10.0 ..
// 3.12.2 (its first hold is an `hset`, announced as such), the unlock of
// 3.10.0 .. 3.10.5 (it publishes for a lock already gone), the batch
// renewals of 3.44+ (up to 100 locks in one call), and the spin lock's
// unlock and force unlock (they publish nothing).

/// KEYS name; ARGV lease, owner.
fn acquire(call: &Call) -> Option<Rewrite> {
    let ([name], [lease, owner]) = (call.keys, call.argv) else { return None };
    is_time(lease, parse_lease_ms)
        .then(|| Rewrite { argv: native(&[b"RLOCK.ACQUIRE", name, owner, lease]), channel: None })
}

/// KEYS name; ARGV lease, owner.
fn renew(call: &Call) -> Option<Rewrite> {
    let ([name], [lease, owner]) = (call.keys, call.argv) else { return None };
    is_time(lease, parse_lease_ms)
        .then(|| Rewrite { argv: native(&[b"RLOCK.RENEW", name, owner, lease]), channel: None })
}

/// KEYS name, channel; ARGV message, lease, owner (`publish` in the text).
fn release_plain(call: &Call) -> Option<Rewrite> {
    unlatched_release(call, text_names_publish(call))
}

/// KEYS name, channel; ARGV message, lease, owner, publish command.
fn release_publish(call: &Call) -> Option<Rewrite> {
    unlatched_release(call, last_names_publish(call)?)
}

fn unlatched_release(call: &Call, (argv, publish): Publishing) -> Option<Rewrite> {
    let ([name, channel], [message, lease, owner]) = (call.keys, argv) else { return None };
    (is_release_channel(name, channel, message) && is_time(lease, parse_lease_ms) && call.same_slot(name, channel))
        .then(|| rewrite_via(&[b"RLOCK.RELEASE", name, owner, lease], publish, channel))
}

/// KEYS name, channel, latch; ARGV message, lease, owner, publish command,
/// latch px.
fn release(call: &Call) -> Option<Rewrite> {
    let ([name, channel, latch], [message, lease, owner, publish, latch_ms]) = (call.keys, call.argv) else {
        return None;
    };
    if !(is_release_channel(name, channel, message)
        && is_time(lease, parse_lease_ms)
        && is_time(latch_ms, parse_latch_ms)
        && call.same_slot(name, channel)
        && call.same_slot(name, latch))
    {
        return None;
    }
    let request_id = latch_request_id(name, latch)?;
    let publish = publish_command(publish)?;
    Some(rewrite_via(&[b"RLOCK.RELEASE", name, owner, lease, b"ID", request_id, b"PX", latch_ms], publish, channel))
}

/// KEYS name, channel; ARGV message, publish command.
fn force_release(call: &Call) -> Option<Rewrite> {
    forced(call, last_names_publish(call)?)
}

/// KEYS name, channel; ARGV message (`publish` in the text).
fn force_release_plain(call: &Call) -> Option<Rewrite> {
    forced(call, text_names_publish(call))
}

fn forced(call: &Call, (argv, publish): Publishing) -> Option<Rewrite> {
    let ([name, channel], [message]) = (call.keys, argv) else { return None };
    (is_release_channel(name, channel, message) && call.same_slot(name, channel))
        .then(|| rewrite_via(&[b"RLOCK.FORCERELEASE", name], publish, channel))
}

#[cfg(test)]
mod tests;
