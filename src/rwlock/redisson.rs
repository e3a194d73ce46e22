//! The read-write lock's scripts as Redisson sends them, and the `RRW.*`
//! call each becomes (see `redisson::scripts`).
//!
//! The write acquire runs as `RRW.ACQUIRE … WRITE lease LIKESCRIPT`: a
//! re-entry adds the lease to the PTTL as the script does (plain
//! `RRW.ACQUIRE` never grows the lease, docs/commands.md).
//! The read acquire of 3.10.0 .. 3.11.0 runs with `LIKESCRIPT` too (a
//! re-entry sets the hash's TTL to the lease, shorter too); the 3.x read
//! renewal as `RRW.RENEW … LIKESCRIPT`.

use super::{check_owner, positive_count, READ_RELEASED, WRITE_RELEASED};
use crate::lease::{parse_latch_ms, parse_lease_ms};
use crate::redisson::scripts::{is_time, latch_request_id, native, native_joined, publish_command};
use crate::redisson::scripts::{Call, Family, Known, Rewrite};
use rlock_protocol::{is_joined, rwlock_channel_parts, rwlock_key_prefix_parts, rwlock_timeout_prefix_parts};
use smallvec::SmallVec;

pub(super) static RWLOCK: Family = Family::new("rwlock", &SCRIPTS);

const SCRIPTS: [Known; 18] = [
    // RedissonWriteLock.tryLockInnerAsync, 3.10.6 .. 4.7.0
    Known { sha1: "6306ba3bf1f563b284bed52d305fce615c6664d9", len: 508, rewrite: write_acquire },
    // RedissonReadLock.tryLockInnerAsync, 3.11.1 .. 4.7.0
    Known { sha1: "95553a6ff11176c18e71344e89d116b06fd6f753", len: 717, rewrite: |call| read_acquire(call, &[]) },
    // RedissonReadLock.tryLockInnerAsync, 3.10.0 .. 3.11.0
    Known { sha1: "3e6597e1d1157c59ac0d6efa2ba7e92ef418c41e", len: 647, rewrite: |call| read_acquire(call, LIKE_3_10) },
    // RedissonReadLock.isLocked, 3.24.0 .. 4.7.0
    Known { sha1: "8ad44f1ba014938c20da38206b6d496c85ec1aed", len: 157, rewrite: read_locked },
    // renewal/ReadLockTask.buildChunk, 4.4.0 .. 4.7.0
    Known { sha1: "38d2b478dfbe264ab67c221b7e4be62245f00ba0", len: 574, rewrite: renew_reads },
    // RedissonReadLock.renewExpirationAsync, 3.10.0 .. 3.43.0
    Known { sha1: "6563941ff57e01b8cf61e86907b80686438a2f74", len: 475, rewrite: renew_all },
    // RedissonReadLock.unlockInnerAsync, 3.44.0 .. 4.7.0
    Known { sha1: "6e1b10e11ac0a3ed8e902562ecd32ce01b553039", len: 1295, rewrite: |call| read_release(call, V3_44) },
    // RedissonWriteLock.unlockInnerAsync, 3.44.0 .. 4.7.0
    Known { sha1: "21f5fb0f8ddfa9be5c3e0c9757c128796add75c6", len: 860, rewrite: |call| write_release(call, V3_44) },
    // RedissonReadLock.forceUnlockAsync, 3.22.0 .. 4.7.0
    Known { sha1: "27dbe744e95c1d854a7f556cc6817030de2d0d01", len: 148, rewrite: |call| force_release(call, READ) },
    // RedissonWriteLock.forceUnlockAsync, 3.22.0 .. 4.7.0
    Known { sha1: "2e2cb2a3b13e2e80e4236ef6a25beaf365dba608", len: 149, rewrite: |call| force_release(call, WRITE) },
    // RedissonReadLock.unlockInnerAsync, 3.24.0 .. 3.43.0
    Known { sha1: "5947c0fee6ca25ae094ec1b3e7a2559a9273d29f", len: 1293, rewrite: |call| read_release(call, V3_24) },
    // RedissonWriteLock.unlockInnerAsync, 3.24.0 .. 3.43.0
    Known { sha1: "d29c5559782035515d32e926762830b3304b49be", len: 858, rewrite: |call| write_release(call, V3_24) },
    // RedissonReadLock.unlockInnerAsync, 3.22.0 .. 3.23.5
    Known { sha1: "92a54c31a4dc3b46f81e24a6dd5bb7d677c6f882", len: 1022, rewrite: |call| read_release(call, V3_22) },
    // RedissonWriteLock.unlockInnerAsync, 3.22.0 .. 3.23.5
    Known { sha1: "319a1cdf1b56c767a0a9adf2224250bf811f110c", len: 633, rewrite: |call| write_release(call, V3_22) },
    // RedissonReadLock.unlockInnerAsync, 3.10.0 .. 3.21.3
    Known { sha1: "f5469be4bfe5232d519471092634b3ee84e5ee6f", len: 1026, rewrite: |call| read_release(call, V3_10) },
    // RedissonWriteLock.unlockInnerAsync, 3.10.0 .. 3.21.3
    Known { sha1: "baa634f6184acc1b8f145e810a0e0e00967a3cbe", len: 637, rewrite: |call| write_release(call, V3_10) },
    // RedissonReadLock.forceUnlockAsync, 3.10.0 .. 3.21.3
    Known {
        sha1: "23f9bc91439172625235ce2ee06d6647f08a7e27",
        len: 150,
        rewrite: |call| force_release(call, READ_V3_10),
    },
    // RedissonWriteLock.forceUnlockAsync, 3.10.0 .. 3.21.3
    Known {
        sha1: "23639b0b2d18d26ce352e148ff4ac5b8e984b696",
        len: 151,
        rewrite: |call| force_release(call, WRITE_V3_10),
    },
];

/// How the release texts of some releases are called, and what they reply.
#[derive(Clone, Copy)]
struct Era {
    /// 3.22+: the publish command is an argument (the last but the latch's).
    publish_argument: bool,
    /// 3.24+: the unlock latch is the last key, and its PX the last argument.
    latched: bool,
    /// Before 3.44: a release of a missing lock replies 1 (later, nil).
    missing_replies_one: bool,
}

const V3_44: Era = Era { publish_argument: true, latched: true, missing_replies_one: false };
const V3_24: Era = Era { publish_argument: true, latched: true, missing_replies_one: true };
const V3_22: Era = Era { publish_argument: true, latched: false, missing_replies_one: true };
const V3_10: Era = Era { publish_argument: false, latched: false, missing_replies_one: true };

/// A force release text: the side it deletes and the message it must be
/// given, and whether the publish command is an argument (3.22+).
#[derive(Clone, Copy)]
struct Force {
    side: &'static [u8],
    message: &'static [u8],
    publish_argument: bool,
}

const READ: Force = Force { side: b"READ", message: READ_RELEASED, publish_argument: true };
const WRITE: Force = Force { side: b"WRITE", message: WRITE_RELEASED, publish_argument: true };
const READ_V3_10: Force = Force { publish_argument: false, ..READ };
const WRITE_V3_10: Force = Force { publish_argument: false, ..WRITE };

/// The owner a call names, when `RRW.*` takes it: the module refuses the
/// read-write lock's own fields as owners (`mode`, `*:write`).
fn owner_taken(owner: &[u8]) -> bool {
    check_owner(owner).is_ok()
}

/// KEYS name; ARGV lease, owner's write field.
fn write_acquire<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    let ([name], [lease, write_field]) = (call.keys, call.argv) else { return None };
    let owner = write_field.strip_suffix(b":write")?;
    let derived = is_write_field(write_field, owner);
    (derived && owner_taken(owner) && is_time(lease, parse_lease_ms)).then(|| Rewrite {
        argv: native(&[b"RRW.ACQUIRE", name, owner, b"WRITE", lease, b"LIKESCRIPT"]),
        channel: None,
    })
}

/// The read acquire of 3.10.0 .. 3.11.0: a re-entry sets the hash's TTL
/// to the lease (later texts keep the longer).
const LIKE_3_10: &[&[u8]] = &[b"LIKESCRIPT"];

/// KEYS name, owner's hold prefix; ARGV lease, owner, owner's write field.
/// `tail`: what the text's era adds to the native call.
fn read_acquire<'a>(call: &Call<'a>, tail: &[&'a [u8]]) -> Option<Rewrite<'a>> {
    let ([name, timeouts], [lease, owner, write_field]) = (call.keys, call.argv) else { return None };
    let derived = is_joined(timeouts, &rwlock_timeout_prefix_parts(name, owner)) && is_write_field(write_field, owner);
    (derived && owner_taken(owner) && is_time(lease, parse_lease_ms) && call.prefix_in_slot(name, timeouts)).then(
        || Rewrite { argv: native_joined(&[&[b"RRW.ACQUIRE", name, owner, b"READ", lease], tail]), channel: None },
    )
}

/// KEYS name.
fn read_locked<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    let ([name], []) = (call.keys, call.argv) else { return None };
    Some(Rewrite { argv: native(&[b"RRW.READLOCKED", name]), channel: None })
}

/// KEYS name, every hold's prefix; ARGV lease, owner.
fn renew_all<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    let ([name, holds], [lease, owner]) = (call.keys, call.argv) else { return None };
    let derived = is_joined(holds, &rwlock_key_prefix_parts(name));
    (derived && owner_taken(owner) && is_time(lease, parse_lease_ms) && call.prefix_in_slot(name, holds))
        .then(|| Rewrite { argv: native(&[b"RRW.RENEW", name, owner, lease, b"LIKESCRIPT"]), channel: None })
}

/// KEYS name, every hold's prefix, for each lock; ARGV lease, then for
/// each lock the number of owners and the owners. Every argument must be
/// used, each count written as `RRW.RENEWREADS` takes it (Lua's `tonumber`
/// takes more), every name in one slot within a cluster.
fn renew_reads<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    let [lease, rest @ ..] = call.argv else { return None };
    let (pairs, mut rest) = (call.keys.chunks_exact(2), rest);
    let first = call.keys.first()?;
    if !pairs.remainder().is_empty() || !is_time(lease, parse_lease_ms) {
        return None;
    }
    let mut tail: Vec<&[u8]> = vec![lease];
    for pair in pairs.clone() {
        let [name, holds] = pair else { return None };
        let [count, after @ ..] = rest else { return None };
        let owners = after.get(..positive_count(count)?)?;
        let derived = is_joined(holds, &rwlock_key_prefix_parts(name)) && owners.iter().all(|owner| owner_taken(owner));
        if !(derived && call.same_slot(first, name) && call.prefix_in_slot(name, holds)) {
            return None;
        }
        tail.push(count);
        tail.extend(owners);
        rest = &after[owners.len()..];
    }
    if !rest.is_empty() {
        return None;
    }
    let numkeys = (call.keys.len() / 2).to_string();
    let names = pairs.map(|pair| pair[0]);
    let mut argv = native(&[b"RRW.RENEWREADS"]);
    argv.push_made(numkeys.as_bytes());
    names.chain(tail).for_each(|arg| argv.push(arg));
    Some(Rewrite { argv, channel: None })
}

/// KEYS name, channel, owner's hold prefix, every hold's prefix; ARGV
/// message, owner; then the era's (see [`EraCall`]).
fn read_release<'a>(call: &Call<'a>, era: Era) -> Option<Rewrite<'a>> {
    let EraCall { keys, args, tail } = EraCall::split(call, era, 4, 2)?;
    let ([name, channel, timeouts, holds], [message, owner]) = (keys, args) else { return None };
    let derived = is_joined(timeouts, &rwlock_timeout_prefix_parts(name, owner))
        && is_joined(holds, &rwlock_key_prefix_parts(name));
    if !(derived && owner_taken(owner) && call.prefix_in_slot(name, holds)) {
        return None;
    }
    is_channel(call, name, channel, message, READ_RELEASED).then(|| Rewrite {
        argv: native_joined(&[&[b"RRW.RELEASE", name, owner, b"READ"], &tail]),
        channel: Some(channel.into()),
    })
}

/// KEYS name, channel; ARGV message, lease, owner's write field; then the
/// era's (see [`EraCall`]).
fn write_release<'a>(call: &Call<'a>, era: Era) -> Option<Rewrite<'a>> {
    let EraCall { keys, args, tail } = EraCall::split(call, era, 2, 3)?;
    let ([name, channel], [message, lease, write_field]) = (keys, args) else { return None };
    let owner = write_field.strip_suffix(b":write").filter(|owner| owner_taken(owner))?;
    (is_time(lease, parse_lease_ms) && is_channel(call, name, channel, message, WRITE_RELEASED)).then(|| Rewrite {
        argv: native_joined(&[&[b"RRW.RELEASE", name, owner, b"WRITE", lease], &tail]),
        channel: Some(channel.into()),
    })
}

/// A release call of some era: the text's own keys and arguments, and the
/// native call's tail for what the era adds after them (the latch key; the
/// publish command, the latch's PX):
/// `[ID request_id PX latch_ms] [MISSING 1] VIA publish`.
struct EraCall<'a> {
    keys: &'a [&'a [u8]],
    args: &'a [&'a [u8]],
    /// At most `ID request_id PX latch_ms MISSING 1 VIA publish`: inline.
    tail: SmallVec<[&'a [u8]; 8]>,
}

impl<'a> EraCall<'a> {
    /// The text's own are the first `own_keys` keys and `own_args` arguments.
    fn split(call: &Call<'a>, era: Era, own_keys: usize, own_args: usize) -> Option<Self> {
        let (keys, latch) = call.keys.split_at_checked(own_keys)?;
        let (args, added) = call.argv.split_at_checked(own_args)?;
        let name = keys.first()?;
        let mut tail: SmallVec<[&[u8]; 8]> = SmallVec::new();
        let publish = match (era.publish_argument, era.latched, latch, added) {
            (false, false, [], []) => b"PUBLISH",
            (true, false, [], [publish]) => publish_command(publish)?,
            (true, true, [latch], [publish, latch_ms]) => {
                if !(is_time(latch_ms, parse_latch_ms) && call.same_slot(name, latch)) {
                    return None;
                }
                tail.extend::<[&[u8]; 4]>([b"ID", latch_request_id(name, latch)?, b"PX", latch_ms]);
                publish_command(publish)?
            }
            _ => return None,
        };
        if era.missing_replies_one {
            tail.extend::<[&[u8]; 2]>([b"MISSING", b"1"]);
        }
        tail.extend::<[&[u8]; 2]>([b"VIA", publish]);
        Some(Self { keys, args, tail })
    }
}

/// KEYS name, channel; ARGV message, and from 3.22 the publish command.
fn force_release<'a>(call: &Call<'a>, force: Force) -> Option<Rewrite<'a>> {
    let publish = match (force.publish_argument, call.argv) {
        (true, [_, publish]) => publish_command(publish)?,
        (false, [_]) => b"PUBLISH",
        _ => return None,
    };
    let ([name, channel], [message, ..]) = (call.keys, call.argv) else { return None };
    is_channel(call, name, channel, message, force.message).then(|| Rewrite {
        argv: native(&[b"RRW.FORCERELEASE", name, force.side, b"VIA", publish]),
        channel: Some(channel.into()),
    })
}

/// Whether `write_field` is the write hold's field of `owner`.
fn is_write_field(write_field: &[u8], owner: &[u8]) -> bool {
    is_joined(write_field, &[owner, b":write"])
}

/// The channel `RRW.*` publishes on, in the name's slot, and the message
/// it publishes.
fn is_channel(call: &Call, name: &[u8], channel: &[u8], message: &[u8], expected_message: &[u8]) -> bool {
    message == expected_message && is_joined(channel, &rwlock_channel_parts(name)) && call.same_slot(name, channel)
}

#[cfg(test)]
mod tests;
