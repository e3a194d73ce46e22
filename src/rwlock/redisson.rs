//! The read-write lock's scripts as Redisson sends them, and the `RRW.*`
//! call each becomes (see `redisson::scripts`).
//!
//! Left to Lua, because `RRW.*` deliberately differs from them (README):
//! the write acquire (a re-entry adds the lease to the PTTL), the read
//! acquire of 3.10.0 .. 3.11.0 (a re-entry may shorten the hash's expiry),
//! the read renewals (`RRW.RENEW` never shortens the expiry and renews a
//! write hold too); and the releases before 3.44.0, which reply 1 for a
//! missing lock where `RRW.RELEASE` replies nil.

use super::{check_owner, READ_RELEASED, WRITE_RELEASED};
use crate::lease::{parse_latch_ms, parse_lease_ms};
use crate::redisson::scripts::{
    is_time, latch_request_id, native, publish_command, Call, Family, Known, Rewrite, FAMILIES,
};
use rlock_protocol::{rwlock_channel, rwlock_key_prefix, rwlock_timeout_prefix, rwlock_write_field};

#[linkme::distributed_slice(FAMILIES)]
static RWLOCK: Family = Family::new("rwlock", &SCRIPTS);

const SCRIPTS: [Known; 7] = [
    // RedissonReadLock.tryLockInnerAsync, 3.11.1 .. 4.7.0
    Known { sha1: "95553a6ff11176c18e71344e89d116b06fd6f753", len: 717, rewrite: read_acquire },
    // RedissonReadLock.unlockInnerAsync, 3.44.0 .. 4.7.0
    Known { sha1: "6e1b10e11ac0a3ed8e902562ecd32ce01b553039", len: 1295, rewrite: read_release },
    // RedissonWriteLock.unlockInnerAsync, 3.44.0 .. 4.7.0
    Known { sha1: "21f5fb0f8ddfa9be5c3e0c9757c128796add75c6", len: 860, rewrite: write_release },
    // RedissonReadLock.forceUnlockAsync, 3.22.0 .. 4.7.0
    Known { sha1: "27dbe744e95c1d854a7f556cc6817030de2d0d01", len: 148, rewrite: read_force_release },
    // RedissonWriteLock.forceUnlockAsync, 3.22.0 .. 4.7.0
    Known { sha1: "2e2cb2a3b13e2e80e4236ef6a25beaf365dba608", len: 149, rewrite: write_force_release },
    // RedissonReadLock.forceUnlockAsync, 3.10.0 .. 3.21.3 (publishes with PUBLISH)
    Known { sha1: "23f9bc91439172625235ce2ee06d6647f08a7e27", len: 150, rewrite: read_force_release_by_publish },
    // RedissonWriteLock.forceUnlockAsync, 3.10.0 .. 3.21.3 (publishes with PUBLISH)
    Known { sha1: "23639b0b2d18d26ce352e148ff4ac5b8e984b696", len: 151, rewrite: write_force_release_by_publish },
];

/// The owner a call names, when `RRW.*` takes it: the module refuses the
/// read-write lock's own fields as owners (`mode`, `*:write`).
fn owner_taken(owner: &[u8]) -> bool {
    check_owner(owner).is_ok()
}

/// KEYS name, owner's hold prefix; ARGV lease, owner, owner's write field.
fn read_acquire(call: &Call) -> Option<Rewrite> {
    let ([name, timeouts], [lease, owner, write_field]) = (call.keys, call.argv) else { return None };
    let derived = *timeouts == rwlock_timeout_prefix(name, owner) && *write_field == rwlock_write_field(owner);
    (derived && owner_taken(owner) && is_time(lease, parse_lease_ms) && call.prefix_in_slot(name, timeouts))
        .then(|| Rewrite { argv: native(&[b"RRW.ACQUIRE", name, owner, b"READ", lease]), channel: None })
}

/// KEYS name, channel, owner's hold prefix, every hold's prefix, latch;
/// ARGV message, owner, publish command, latch px.
fn read_release(call: &Call) -> Option<Rewrite> {
    let ([name, channel, timeouts, holds, latch], [message, owner, publish, latch_ms]) = (call.keys, call.argv) else {
        return None;
    };
    let derived = *timeouts == rwlock_timeout_prefix(name, owner) && *holds == rwlock_key_prefix(name);
    if !(derived && owner_taken(owner) && call.prefix_in_slot(name, holds)) {
        return None;
    }
    let (request_id, publish) = release_tail(call, name, channel, message, READ_RELEASED, latch, latch_ms, publish)?;
    let argv: &[&[u8]] = &[b"RRW.RELEASE", name, owner, b"READ", b"ID", request_id, b"PX", latch_ms, b"VIA", publish];
    Some(Rewrite { argv: native(argv), channel: Some(channel.to_vec()) })
}

/// KEYS name, channel, latch; ARGV message, lease, owner's write field,
/// publish command, latch px.
fn write_release(call: &Call) -> Option<Rewrite> {
    let ([name, channel, latch], [message, lease, write_field, publish, latch_ms]) = (call.keys, call.argv) else {
        return None;
    };
    let owner = write_field.strip_suffix(b":write").filter(|owner| owner_taken(owner))?;
    if !is_time(lease, parse_lease_ms) {
        return None;
    }
    let (request_id, publish) = release_tail(call, name, channel, message, WRITE_RELEASED, latch, latch_ms, publish)?;
    let argv: &[&[u8]] =
        &[b"RRW.RELEASE", name, owner, b"WRITE", lease, b"ID", request_id, b"PX", latch_ms, b"VIA", publish];
    Some(Rewrite { argv: native(argv), channel: Some(channel.to_vec()) })
}

/// What a release's channel, message, latch and publish command must be
/// for `RRW.RELEASE`: its request id and publish command.
#[allow(clippy::too_many_arguments)]
fn release_tail<'a>(
    call: &Call,
    name: &[u8],
    channel: &[u8],
    message: &[u8],
    expected_message: &[u8],
    latch: &'a [u8],
    latch_ms: &[u8],
    publish: &[u8],
) -> Option<(&'a [u8], &'static [u8])> {
    if !(is_channel(call, name, channel, message, expected_message)
        && is_time(latch_ms, parse_latch_ms)
        && call.same_slot(name, latch))
    {
        return None;
    }
    Some((latch_request_id(name, latch)?, publish_command(publish)?))
}

/// KEYS name, channel; ARGV message, publish command.
fn read_force_release(call: &Call) -> Option<Rewrite> {
    force_release(call, b"READ", READ_RELEASED)
}

fn write_force_release(call: &Call) -> Option<Rewrite> {
    force_release(call, b"WRITE", WRITE_RELEASED)
}

fn force_release(call: &Call, side: &[u8], expected_message: &[u8]) -> Option<Rewrite> {
    let ([name, channel], [message, publish]) = (call.keys, call.argv) else { return None };
    forced(call, name, channel, message, expected_message, side, publish_command(publish)?)
}

/// KEYS name, channel; ARGV message (the text names `publish` itself).
fn read_force_release_by_publish(call: &Call) -> Option<Rewrite> {
    force_release_by_publish(call, b"READ", READ_RELEASED)
}

fn write_force_release_by_publish(call: &Call) -> Option<Rewrite> {
    force_release_by_publish(call, b"WRITE", WRITE_RELEASED)
}

fn force_release_by_publish(call: &Call, side: &[u8], expected_message: &[u8]) -> Option<Rewrite> {
    let ([name, channel], [message]) = (call.keys, call.argv) else { return None };
    forced(call, name, channel, message, expected_message, side, b"PUBLISH")
}

fn forced(
    call: &Call,
    name: &[u8],
    channel: &[u8],
    message: &[u8],
    expected_message: &[u8],
    side: &[u8],
    publish: &[u8],
) -> Option<Rewrite> {
    is_channel(call, name, channel, message, expected_message).then(|| Rewrite {
        argv: native(&[b"RRW.FORCERELEASE", name, side, b"VIA", publish]),
        channel: Some(channel.to_vec()),
    })
}

/// The channel `RRW.*` publishes on, in the name's slot, and the message
/// it publishes.
fn is_channel(call: &Call, name: &[u8], channel: &[u8], message: &[u8], expected_message: &[u8]) -> bool {
    message == expected_message && channel == rwlock_channel(name).as_slice() && call.same_slot(name, channel)
}

#[cfg(test)]
mod tests;
