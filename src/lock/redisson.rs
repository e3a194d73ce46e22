//! RLock's scripts as Redisson sends them, and the `RLOCK.*` call each
//! becomes (see `redisson::scripts`).

use crate::lease::{parse_latch_ms, parse_lease_ms};
use crate::redisson::scripts::{is_release_channel, is_time, latch_request_id, native, publish_command};
use crate::redisson::scripts::{Call, Family, Known, Rewrite, FAMILIES};

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
    let ([name, channel], [message, lease, owner]) = (call.keys, call.argv) else { return None };
    unlatched_release(call, name, channel, message, lease, owner, b"PUBLISH")
}

/// KEYS name, channel; ARGV message, lease, owner, publish command.
fn release_publish(call: &Call) -> Option<Rewrite> {
    let ([name, channel], [message, lease, owner, publish]) = (call.keys, call.argv) else { return None };
    unlatched_release(call, name, channel, message, lease, owner, publish_command(publish)?)
}

fn unlatched_release(
    call: &Call,
    name: &[u8],
    channel: &[u8],
    message: &[u8],
    lease: &[u8],
    owner: &[u8],
    publish: &[u8],
) -> Option<Rewrite> {
    (is_release_channel(name, channel, message) && is_time(lease, parse_lease_ms) && call.same_slot(name, channel))
        .then(|| Rewrite {
            argv: native(&[b"RLOCK.RELEASE", name, owner, lease, b"VIA", publish]),
            channel: Some(channel.to_vec()),
        })
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
    Some(Rewrite {
        argv: native(&[b"RLOCK.RELEASE", name, owner, lease, b"ID", request_id, b"PX", latch_ms, b"VIA", publish]),
        channel: Some(channel.to_vec()),
    })
}

/// KEYS name, channel; ARGV message, publish command.
fn force_release(call: &Call) -> Option<Rewrite> {
    let ([name, channel], [message, publish]) = (call.keys, call.argv) else { return None };
    forced(call, name, channel, message, publish_command(publish)?)
}

/// KEYS name, channel; ARGV message (`publish` in the text).
fn force_release_plain(call: &Call) -> Option<Rewrite> {
    let ([name, channel], [message]) = (call.keys, call.argv) else { return None };
    forced(call, name, channel, message, b"PUBLISH")
}

fn forced(call: &Call, name: &[u8], channel: &[u8], message: &[u8], publish: &[u8]) -> Option<Rewrite> {
    (is_release_channel(name, channel, message) && call.same_slot(name, channel)).then(|| Rewrite {
        argv: native(&[b"RLOCK.FORCERELEASE", name, b"VIA", publish]),
        channel: Some(channel.to_vec()),
    })
}

#[cfg(test)]
mod tests;
