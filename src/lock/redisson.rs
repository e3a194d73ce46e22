//! RLock's scripts as Redisson sends them, and the `RLOCK.*` call each
//! becomes (see `redisson::scripts`).

use crate::lease::{parse_latch_ms, parse_lease_ms};
use crate::redisson::scripts::{is_release_channel, is_time, latch_request_id, native, publish_command};
use crate::redisson::scripts::{Call, Family, Known, Rewrite, FAMILIES};

#[linkme::distributed_slice(FAMILIES)]
static LOCK: Family = Family::new("lock", &SCRIPTS);

const SCRIPTS: [Known; 3] = [
    // RedissonLock.tryLockInnerAsync, 3.19.0 .. 4.7.0
    Known { sha1: "149c5a8bf18676fd99e9e6e24923bd64d9b62f94", len: 234, rewrite: acquire },
    // RedissonLock.unlockInnerAsync, 3.24.0 .. 4.7.0
    Known { sha1: "6866459238a13a701d42f4971f12d9f3a50e2442", len: 471, rewrite: release },
    // RedissonLock.forceUnlockAsync, 3.22.0 .. 4.7.0
    Known { sha1: "605e338249a7a1d40df83b04f7658354f883b41b", len: 107, rewrite: force_release },
];

/// KEYS name; ARGV lease, owner.
fn acquire(call: &Call) -> Option<Rewrite> {
    let ([name], [lease, owner]) = (call.keys, call.argv) else { return None };
    is_time(lease, parse_lease_ms)
        .then(|| Rewrite { argv: native(&[b"RLOCK.ACQUIRE", name, owner, lease]), channel: None })
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
    if !(is_release_channel(name, channel, message) && call.same_slot(name, channel)) {
        return None;
    }
    let publish = publish_command(publish)?;
    Some(Rewrite { argv: native(&[b"RLOCK.FORCERELEASE", name, b"VIA", publish]), channel: Some(channel.to_vec()) })
}

#[cfg(test)]
mod tests;
