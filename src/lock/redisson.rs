//! RLock's scripts as Redisson sends them, and the `RLOCK.*` call each
//! becomes (see `redisson::scripts`).

use crate::lease::{parse_latch_ms, parse_lease_ms};
use crate::redisson::scripts::{is_release_channel, is_time, native, publish_command};
use crate::redisson::scripts::{Call, Family, Known, Rewrite};
use crate::redisson::via::{last_names_publish, rewrite_via, text_names_publish, Publishing};

pub(super) static LOCK: Family = Family::new("lock", &SCRIPTS);

const SCRIPTS: [Known; 13] = [
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
    // renewal/LockTask.renew, 3.44.0 .. 4.1.0; renewal/LockTask.buildChunk, 4.2.0 .. 4.7.0
    Known { sha1: "6a3d31570dc6f4b0bd32bcdc8e75667747c6f635", len: 220, rewrite: renew_all },
    // RedissonSpinLock.unlockInnerAsync, 3.24.0 .. 4.7.0
    Known { sha1: "73ac2729af29ea9a975f95e8097f7ee9a74cce3d", len: 432, rewrite: spin_release },
    // RedissonSpinLock.unlockInnerAsync, 3.15.0 .. 3.23.5
    Known { sha1: "5b9e58d1bcb8498e14aa1d5b49a1ca5b90748946", len: 264, rewrite: spin_release_plain },
    // RedissonSpinLock.forceUnlockAsync, 3.15.0 .. 4.7.0
    Known { sha1: "51b433c3cc9a6ca991b3aefec63d23490c246318", len: 68, rewrite: spin_force_release },
    // RedissonNonReentrantLock.tryLockInnerAsync, 4.4.0 .. 4.7.0
    Known { sha1: "3daa7be6cf69d9309ad990442e83bf25094f9b22", len: 273, rewrite: acquire_non_reentrant },
];

// Left to Lua (README, "Redisson's scripts, natively"): the acquire of 3.10.0 ..
// 3.12.2 (its first hold is an `hset`, announced as such) and the unlock of
// 3.10.0 .. 3.10.5 (it publishes for a lock already gone).

/// KEYS name; ARGV lease, owner.
fn acquire<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    let ([name], [lease, owner]) = (call.keys, call.argv) else { return None };
    is_time(lease, parse_lease_ms)
        .then(|| Rewrite { argv: native(&[b"RLOCK.ACQUIRE", name, owner, lease]), channel: None })
}

/// KEYS name; ARGV lease, owner.
fn renew<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    let ([name], [lease, owner]) = (call.keys, call.argv) else { return None };
    is_time(lease, parse_lease_ms)
        .then(|| Rewrite { argv: native(&[b"RLOCK.RENEW", name, owner, lease]), channel: None })
}

/// KEYS name; ARGV lease, owner, the error a re-entry replies (Redisson's
/// own, which the native command replies).
fn acquire_non_reentrant<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    let ([name], [lease, owner, error]) = (call.keys, call.argv) else { return None };
    (is_time(lease, parse_lease_ms) && error == b"NON_REENTRANT_REACQUIRE")
        .then(|| Rewrite { argv: native(&[b"RLOCK.ACQUIRE", name, owner, lease, b"NOREENTRY"]), channel: None })
}

/// KEYS lock names; ARGV lease, then each lock's owner.
fn renew_all<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    let (lease, owners) = call.argv.split_first()?;
    if owners.len() != call.keys.len() || !is_time(lease, parse_lease_ms) {
        return None;
    }
    // Every key is declared to Redis, which refuses keys of several slots
    // in a cluster as it refuses the script's.
    let pairs = call.keys.iter().zip(owners).flat_map(|(name, owner)| [*name, *owner]);
    let argv = [&b"RLOCK.RENEWALL"[..], lease].into_iter().chain(pairs).collect();
    Some(Rewrite { argv, channel: None })
}

/// KEYS name, latch; ARGV lease, owner, latch px (nothing published).
fn spin_release<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    let ([name, latch], [lease, owner, latch_ms]) = (call.keys, call.argv) else { return None };
    if !(is_time(lease, parse_lease_ms) && is_time(latch_ms, parse_latch_ms) && is_latch_of(call, name, latch)) {
        return None;
    }
    let argv = native(&[b"RLOCK.RELEASE", name, owner, lease, b"LATCH", latch, b"PX", latch_ms, b"VIA", b"NONE"]);
    Some(Rewrite { argv, channel: None })
}

/// KEYS name; ARGV lease, owner (nothing published).
fn spin_release_plain<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    let ([name], [lease, owner]) = (call.keys, call.argv) else { return None };
    is_time(lease, parse_lease_ms)
        .then(|| Rewrite { argv: native(&[b"RLOCK.RELEASE", name, owner, lease, b"VIA", b"NONE"]), channel: None })
}

/// KEYS name: whatever it holds is deleted, nothing published.
fn spin_force_release<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    let ([name], []) = (call.keys, call.argv) else { return None };
    Some(Rewrite { argv: native(&[b"RLOCK.FORCERELEASE", name, b"VIA", b"NONE"]), channel: None })
}

/// KEYS name, channel; ARGV message, lease, owner (`publish` in the text).
fn release_plain<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    unlatched_release(call, text_names_publish(call))
}

/// KEYS name, channel; ARGV message, lease, owner, publish command.
fn release_publish<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    unlatched_release(call, last_names_publish(call)?)
}

fn unlatched_release<'a>(call: &Call<'a>, (argv, publish): Publishing<'a>) -> Option<Rewrite<'a>> {
    let ([name, channel], [message, lease, owner]) = (call.keys, argv) else { return None };
    (is_release_channel(name, channel, message) && is_time(lease, parse_lease_ms) && call.same_slot(name, channel))
        .then(|| rewrite_via(&[b"RLOCK.RELEASE", name, owner, lease], publish, channel))
}

/// KEYS name, channel, latch; ARGV message, lease, owner, publish command,
/// latch px.
fn release<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    let ([name, channel, latch], [message, lease, owner, publish, latch_ms]) = (call.keys, call.argv) else {
        return None;
    };
    if !(is_release_channel(name, channel, message)
        && is_time(lease, parse_lease_ms)
        && is_time(latch_ms, parse_latch_ms)
        && call.same_slot(name, channel)
        && is_latch_of(call, name, latch))
    {
        return None;
    }
    let publish = publish_command(publish)?;
    Some(rewrite_via(&[b"RLOCK.RELEASE", name, owner, lease, b"LATCH", latch, b"PX", latch_ms], publish, channel))
}

/// Whether the script's `latch` can be the native release's declared latch
/// key, as the script writes whatever key it is given: any other key than
/// the lock's (whose script fails on the hash) and not empty, in its slot.
fn is_latch_of(call: &Call, name: &[u8], latch: &[u8]) -> bool {
    !latch.is_empty() && latch != name && call.same_slot(name, latch)
}

/// KEYS name, channel; ARGV message, publish command.
fn force_release<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    forced(call, last_names_publish(call)?)
}

/// KEYS name, channel; ARGV message (`publish` in the text).
fn force_release_plain<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    forced(call, text_names_publish(call))
}

fn forced<'a>(call: &Call<'a>, (argv, publish): Publishing<'a>) -> Option<Rewrite<'a>> {
    let ([name, channel], [message]) = (call.keys, argv) else { return None };
    (is_release_channel(name, channel, message) && call.same_slot(name, channel))
        .then(|| rewrite_via(&[b"RLOCK.FORCERELEASE", name], publish, channel))
}

#[cfg(test)]
mod tests;
