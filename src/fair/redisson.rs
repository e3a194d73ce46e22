//! The fair lock's scripts as Redisson sends them, and the `RFAIR.*` call
//! each becomes (see `redisson::scripts`).
//!
//! Unlike RLock's, these rewrites are not exact: the native fair lock
//! differs from Redisson's scripts on purpose (docs/commands.md, "What differs from
//! Redisson, and why"): the server's clock instead of the caller's `now`,
//! dead waiters purged wherever they are, wait hints of at least 1 ms,
//! deadlines kept alive by polls, heads told of their turn by the server.
//! A rewritten call keeps the keys, their types and layout, the channels
//! and messages Redisson's waiters listen to, and replies of the kinds
//! Redisson's Java code reads (nil, or an integer hint that is never
//! negative); `tests/redisson_fair_differential.rs` checks these, and the
//! Java suite runs Redisson's fair lock in this mode.

use crate::lease::{parse_latch_ms, parse_lease_ms, parse_wait_ms};
use crate::redisson::scripts::{is_release_channel, is_time, latch_request_id, native, publish_command};
use crate::redisson::scripts::{Call, Family, Known, Rewrite, FAMILIES};
use rlock_protocol::DEFAULT_FAIR_WAIT_MS;
use rlock_protocol::{fair_queue_key, fair_queue_key_parts, fair_timeout_key_parts, fair_waiter_channel, is_joined};

#[linkme::distributed_slice(FAMILIES)]
static FAIR: Family = Family::new("fair", &SCRIPTS);

const SCRIPTS: [Known; 14] = [
    // RedissonFairLock.tryLockInnerAsync, 3.31.0 .. 4.7.0
    Known { sha1: "d20501c26a30adf6fb0fe9883bbbcc497e6157e2", len: 929, rewrite: acquire_no_wait },
    // RedissonFairLock.tryLockInnerAsync, 3.11.1 .. 3.30.0
    Known { sha1: "aa0a28d2eb7cbeb50151315a58eb75302d8dfa40", len: 908, rewrite: acquire_no_wait },
    // RedissonFairLock.tryLockInnerAsync#2, 3.45.0 .. 4.7.0
    Known { sha1: "8f6ed299ffd259f0539c20f89253998c0777ea75", len: 1541, rewrite: acquire_waiting },
    // RedissonFairLock.tryLockInnerAsync#2, 3.32.0 .. 3.44.0
    Known { sha1: "929defe0321e0a4c943b4244951d3a730b6eaabc", len: 1484, rewrite: acquire_waiting },
    // RedissonFairLock.tryLockInnerAsync#2, 3.31.0 .. 3.31.0
    Known { sha1: "f453a73adbe05f097ff2810e5e0c0489a9350076", len: 1474, rewrite: acquire_waiting },
    // RedissonFairLock.tryLockInnerAsync#2, 3.11.1 .. 3.30.0
    Known { sha1: "762bfafa6be221431a0b668685dd15c926483619", len: 1453, rewrite: acquire_waiting },
    // RedissonFairLock.acquireFailedAsync, 3.11.1 .. 4.7.0
    Known { sha1: "d1ddef65ad80886b5d36e023c99930044ddd653a", len: 305, rewrite: give_up },
    // RedissonFairLock.unlockInnerAsync, 3.31.0 .. 4.7.0
    Known { sha1: "367f80bd2e300e411fb0936d9b601e5bcb3fd4b6", len: 1173, rewrite: release_latched },
    // RedissonFairLock.unlockInnerAsync, 3.24.0 .. 3.30.0
    Known { sha1: "ca303f8587d0942f8a0021f62338626ca4dd0118", len: 1152, rewrite: release_latched },
    // RedissonFairLock.unlockInnerAsync, 3.22.0 .. 3.23.5
    Known { sha1: "14f85250fb2a386500bf8e4b25a8e95db140ff0c", len: 927, rewrite: release_via },
    // RedissonFairLock.unlockInnerAsync, 3.10.0 .. 3.21.3
    Known { sha1: "35d32367b21753c39b55dc64d1906fee627cc9a8", len: 931, rewrite: release_publish },
    // RedissonFairLock.forceUnlockAsync, 3.31.0 .. 4.7.0
    Known { sha1: "71ed11d4e4818119ac560b3d670a7f08256afc46", len: 555, rewrite: force_release_via },
    // RedissonFairLock.forceUnlockAsync, 3.22.0 .. 3.30.0
    Known { sha1: "047c11d7fec40d0102fe9903ff1e19e9a1dec610", len: 534, rewrite: force_release_via },
    // RedissonFairLock.forceUnlockAsync, 3.10.0 .. 3.21.3
    Known { sha1: "95cdf4b03f82c82edf987c7d216b4b67d861b14f", len: 536, rewrite: force_release_publish },
];

/// KEYS name, queue, deadlines; ARGV lease, owner, now, wait. `wait` only
/// moves script waiters' deadlines when the caller takes its turn; the
/// native no-wait form moves them by Redisson's default, so other waits
/// stay with Lua.
fn acquire_no_wait(call: &Call) -> Option<Rewrite> {
    let ([name, queue, deadlines], [lease, owner, now, wait]) = (call.keys, call.argv) else { return None };
    let default_wait = *wait == DEFAULT_FAIR_WAIT_MS.to_string().as_bytes();
    (default_wait && is_queue(call, name, queue, deadlines) && is_time(lease, parse_lease_ms) && is_now(now))
        .then(|| Rewrite { argv: native(&[b"RFAIR.ACQUIRE", name, owner, lease]), channel: None })
}

/// The least wait a Redisson waiter is given natively (Redisson's own
/// fair wait before 3.13.3). `tryLock(wait, unit)` without a lease sends
/// `wait` in the caller's unit as if in ms (RedissonLock.tryAcquireAsync):
/// `tryLock(20, SECONDS)` queues with a wait of 20 ms. The native lock
/// keeps a waiter's place only while it comes back within its wait, and
/// has one behind the head ask again within half of it: such a Java
/// waiter would poll every few ms and lose its place whenever its thread
/// wakes late. A killed one holds the queue up this long at most.
const LEAST_WAIT_MS: i64 = 5_000;

/// KEYS name, queue, deadlines; ARGV lease, owner, wait, now.
fn acquire_waiting(call: &Call) -> Option<Rewrite> {
    let ([name, queue, deadlines], [lease, owner, wait, now]) = (call.keys, call.argv) else { return None };
    if !is_time(wait, parse_wait_ms) {
        return None;
    }
    let wait = parse_wait_ms(wait).ok()?.max(LEAST_WAIT_MS).to_string();
    (is_queue(call, name, queue, deadlines) && is_time(lease, parse_lease_ms) && is_now(now)).then(|| Rewrite {
        argv: native(&[b"RFAIR.ACQUIRE", name, owner, lease, b"WAIT", wait.as_bytes()]),
        channel: None,
    })
}

/// KEYS queue, deadlines; ARGV owner, wait. The script does not name the
/// lock: it is read from the queue's key, when only one name has it (a
/// name without braces, `n`, shares Redisson's queue keys with `{n}`).
fn give_up(call: &Call) -> Option<Rewrite> {
    let ([queue, deadlines], [owner, wait]) = (call.keys, call.argv) else { return None };
    let name = name_of_queue(queue)?;
    (is_queue(call, &name, queue, deadlines) && is_time(wait, parse_wait_ms)).then(|| Rewrite {
        argv: native(&[b"RFAIR.CANCEL", &name, owner, b"WAIT", wait]),
        channel: Some(any_waiter_channel(&name).into()),
    })
}

/// KEYS name, queue, deadlines, channel, latch; ARGV message, lease,
/// owner, now, publish command, latch px.
fn release_latched(call: &Call) -> Option<Rewrite> {
    let ([name, queue, deadlines, channel, latch], [message, lease, owner, now, publish, latch_ms]) =
        (call.keys, call.argv)
    else {
        return None;
    };
    let request_id = latch_request_id(name, latch)?;
    (is_release(call, (name, queue, deadlines, channel), (message, lease, now), Some(publish))
        && is_time(latch_ms, parse_latch_ms)
        && call.same_slot(name, latch))
    .then(|| Rewrite {
        argv: native(&[b"RFAIR.RELEASE", name, owner, lease, b"ID", request_id, b"PX", latch_ms]),
        channel: Some(any_waiter_channel(name).into()),
    })
}

/// KEYS name, queue, deadlines, channel; ARGV message, lease, owner, now,
/// publish command.
fn release_via(call: &Call) -> Option<Rewrite> {
    let ([name, queue, deadlines, channel], [message, lease, owner, now, publish]) = (call.keys, call.argv) else {
        return None;
    };
    is_release(call, (name, queue, deadlines, channel), (message, lease, now), Some(publish)).then(|| Rewrite {
        argv: native(&[b"RFAIR.RELEASE", name, owner, lease]),
        channel: Some(any_waiter_channel(name).into()),
    })
}

/// KEYS name, queue, deadlines, channel; ARGV message, lease, owner, now
/// (the text publishes with `publish`).
fn release_publish(call: &Call) -> Option<Rewrite> {
    let ([name, queue, deadlines, channel], [message, lease, owner, now]) = (call.keys, call.argv) else {
        return None;
    };
    is_release(call, (name, queue, deadlines, channel), (message, lease, now), None).then(|| Rewrite {
        argv: native(&[b"RFAIR.RELEASE", name, owner, lease]),
        channel: Some(any_waiter_channel(name).into()),
    })
}

/// KEYS name, queue, deadlines, channel; ARGV message, now, publish command.
fn force_release_via(call: &Call) -> Option<Rewrite> {
    let ([name, queue, deadlines, channel], [message, now, publish]) = (call.keys, call.argv) else { return None };
    is_force_release(call, (name, queue, deadlines, channel), (message, now), Some(publish))
}

/// KEYS name, queue, deadlines, channel; ARGV message, now (the text
/// publishes with `publish`).
fn force_release_publish(call: &Call) -> Option<Rewrite> {
    let ([name, queue, deadlines, channel], [message, now]) = (call.keys, call.argv) else { return None };
    is_force_release(call, (name, queue, deadlines, channel), (message, now), None)
}

fn is_force_release(
    call: &Call,
    (name, queue, deadlines, channel): (&[u8], &[u8], &[u8], &[u8]),
    (message, now): (&[u8], &[u8]),
    publish: Option<&[u8]>,
) -> Option<Rewrite> {
    (is_queue(call, name, queue, deadlines) && is_waiter_channels(call, name, channel, message, publish) && is_now(now))
        .then(|| Rewrite {
            argv: native(&[b"RFAIR.FORCERELEASE", name]),
            channel: Some(any_waiter_channel(name).into()),
        })
}

fn is_release(
    call: &Call,
    (name, queue, deadlines, channel): (&[u8], &[u8], &[u8], &[u8]),
    (message, lease, now): (&[u8], &[u8], &[u8]),
    publish: Option<&[u8]>,
) -> bool {
    is_queue(call, name, queue, deadlines)
        && is_waiter_channels(call, name, channel, message, publish)
        && is_time(lease, parse_lease_ms)
        && is_now(now)
}

/// The queue and deadline keys the native command derives from `name`.
fn is_queue(call: &Call, name: &[u8], queue: &[u8], deadlines: &[u8]) -> bool {
    is_joined(queue, &fair_queue_key_parts(name))
        && is_joined(deadlines, &fair_timeout_key_parts(name))
        && call.same_slot(name, queue)
        && call.same_slot(name, deadlines)
}

/// The waiters' channels (the script appends `:owner` to `channel`) and
/// message the native command uses, published as it publishes: `PUBLISH`
/// always, and a sharded copy too in a cluster (where Redisson's waiters
/// SSUBSCRIBE when it names `spublish`). `None`: the text's own `publish`.
fn is_waiter_channels(call: &Call, name: &[u8], channel: &[u8], message: &[u8], publish: Option<&[u8]>) -> bool {
    let publishes_alike = match publish.map(publish_command) {
        None => true,
        Some(Some(command)) => command == b"PUBLISH" || call.server.cluster,
        Some(None) => false,
    };
    publishes_alike && is_release_channel(name, channel, message) && call.same_slot(name, channel)
}

/// The caller's clock, which the native command replaces with the
/// server's: only a time Lua's `tonumber` reads as Redisson sends it.
fn is_now(now: &[u8]) -> bool {
    now.first() != Some(&b'0') && !now.is_empty() && now.len() <= 18 && now.iter().all(u8::is_ascii_digit)
}

/// The name whose queue key is `queue`, when only one name has it.
fn name_of_queue(queue: &[u8]) -> Option<Vec<u8>> {
    let rest = queue.strip_prefix(b"redisson_lock_queue:".as_slice())?;
    let untagged = rest.strip_prefix(b"{").and_then(|rest| rest.strip_suffix(b"}"));
    let mut names = [Some(rest), untagged].into_iter().flatten().filter(|name| fair_queue_key(name) == queue);
    match (names.next(), names.next()) {
        (Some(name), None) => Some(name.to_vec()),
        _ => None,
    }
}

/// For the filter's ACL check: the script publishes on the head waiter's
/// channel, unknown until it runs, so the caller must be allowed every
/// waiter channel of the lock (a pattern such as `redisson_lock__channel:*`
/// matches this literal `…:*`).
fn any_waiter_channel(name: &[u8]) -> Vec<u8> {
    fair_waiter_channel(name, b"*")
}

#[cfg(test)]
mod tests;
