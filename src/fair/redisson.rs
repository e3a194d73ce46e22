//! The fair lock's scripts as Redisson sends them, and the `RFAIR.*` call
//! each becomes (see `redisson::scripts`).
//!
//! A Java waiter keeps Redisson's keys, scores and hints: the waiting
//! acquire runs with `REDISSON PTTL|AHEAD`, so its deadline follows
//! Redisson's arithmetic and it is told what the script tells it. What
//! differs on purpose (docs/redisson.md, "Fair lock"): the server's clock
//! instead of the caller's `now`, dead waiters purged wherever they are,
//! hints of at least 1 ms, waiters kept alive in the server's memory, and
//! every new head of a free lock told its turn by the server.
//! `tests/redisson_fair_differential.rs` holds replies, hints, scores,
//! keys and messages to Lua's; the Java suite runs Redisson's fair lock in
//! this mode.

use crate::lease::{parse_latch_ms, parse_lease_ms, parse_wait_ms};
use crate::redisson::scripts::{is_release_channel, is_time, latch_request_id, native, publish_command};
use crate::redisson::scripts::{Call, Channel, Family, Known, Rewrite};
use rlock_protocol::DEFAULT_FAIR_WAIT_MS;
use rlock_protocol::{fair_queue_key_parts, fair_timeout_key_parts, fair_waiter_channel_parts, is_joined};

pub(super) static FAIR: Family = Family::new("fair", &SCRIPTS);

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
    Known { sha1: "f453a73adbe05f097ff2810e5e0c0489a9350076", len: 1474, rewrite: acquire_waiting_told_ahead },
    // RedissonFairLock.tryLockInnerAsync#2, 3.11.1 .. 3.30.0
    Known { sha1: "762bfafa6be221431a0b668685dd15c926483619", len: 1453, rewrite: acquire_waiting_told_ahead },
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
/// moves script waiters' deadlines when the caller takes its turn: the
/// native no-wait form's `SHIFT` (by default Redisson's 300000).
fn acquire_no_wait<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    let ([name, queue, deadlines], [lease, owner, now, wait]) = (call.keys, call.argv) else { return None };
    let taken = is_queue(call, name, queue, deadlines) && is_time(lease, parse_lease_ms) && is_now(now);
    if !(taken && is_time(wait, parse_wait_ms)) {
        return None;
    }
    let argv = match *wait == DEFAULT_FAIR_WAIT_MS.to_string().as_bytes() {
        true => native(&[b"RFAIR.ACQUIRE", name, owner, lease]),
        false => native(&[b"RFAIR.ACQUIRE", name, owner, lease, b"SHIFT", wait]),
    };
    Some(Rewrite { argv, channel: None })
}

/// KEYS name, queue, deadlines; ARGV lease, owner, wait, now. Redisson's
/// wait as it sends it (`tryLock(20, SECONDS)` without a lease sends 20,
/// RedissonLock.tryAcquireAsync), and Redisson's arithmetic for the
/// waiter's deadline and hint (`REDISSON`: 3.32+ tells a waiter that asks
/// again the lock's PTTL); the server keeps it alive while it asks again.
fn acquire_waiting<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    acquire_waiting_told(call, b"PTTL")
}

/// The texts before 3.32 tell a waiter that asks again the time to the
/// deadline ahead of it.
fn acquire_waiting_told_ahead<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    acquire_waiting_told(call, b"AHEAD")
}

fn acquire_waiting_told<'a>(call: &Call<'a>, asked_again: &'a [u8]) -> Option<Rewrite<'a>> {
    let ([name, queue, deadlines], [lease, owner, wait, now]) = (call.keys, call.argv) else { return None };
    (is_queue(call, name, queue, deadlines)
        && is_time(lease, parse_lease_ms)
        && is_time(wait, parse_wait_ms)
        && is_now(now))
    .then(|| Rewrite {
        argv: native(&[b"RFAIR.ACQUIRE", name, owner, lease, b"WAIT", wait, b"REDISSON", asked_again]),
        channel: None,
    })
}

/// KEYS queue, deadlines; ARGV owner, wait. The script does not name the
/// lock: it is read from the queue's key. A name without braces, `n`,
/// shares Redisson's queue keys with `{n}`: then `OR {n}`, and the command
/// tells them apart by the state.
fn give_up<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    let ([queue, deadlines], [owner, wait]) = (call.keys, call.argv) else { return None };
    let names = names_of_queue(queue);
    let name = names.first()?;
    if !(is_queue(call, name, queue, deadlines) && is_time(wait, parse_wait_ms)) {
        return None;
    }
    let mut argv: Vec<&[u8]> = vec![b"RFAIR.CANCEL", name, owner, b"WAIT", wait];
    if let Some(other) = names.get(1) {
        argv.extend([&b"OR"[..], other]);
    }
    Some(Rewrite { argv: native(&argv), channel: Some(any_waiter_channel(name)) })
}

/// KEYS name, queue, deadlines, channel, latch; ARGV message, lease,
/// owner, now, publish command, latch px.
fn release_latched<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
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
        channel: Some(any_waiter_channel(name)),
    })
}

/// KEYS name, queue, deadlines, channel; ARGV message, lease, owner, now,
/// publish command.
fn release_via<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    let ([name, queue, deadlines, channel], [message, lease, owner, now, publish]) = (call.keys, call.argv) else {
        return None;
    };
    is_release(call, (name, queue, deadlines, channel), (message, lease, now), Some(publish)).then(|| Rewrite {
        argv: native(&[b"RFAIR.RELEASE", name, owner, lease]),
        channel: Some(any_waiter_channel(name)),
    })
}

/// KEYS name, queue, deadlines, channel; ARGV message, lease, owner, now
/// (the text publishes with `publish`).
fn release_publish<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    let ([name, queue, deadlines, channel], [message, lease, owner, now]) = (call.keys, call.argv) else {
        return None;
    };
    is_release(call, (name, queue, deadlines, channel), (message, lease, now), None).then(|| Rewrite {
        argv: native(&[b"RFAIR.RELEASE", name, owner, lease]),
        channel: Some(any_waiter_channel(name)),
    })
}

/// KEYS name, queue, deadlines, channel; ARGV message, now, publish command.
fn force_release_via<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    let ([name, queue, deadlines, channel], [message, now, publish]) = (call.keys, call.argv) else { return None };
    is_force_release(call, (name, queue, deadlines, channel), (message, now), Some(publish))
}

/// KEYS name, queue, deadlines, channel; ARGV message, now (the text
/// publishes with `publish`).
fn force_release_publish<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    let ([name, queue, deadlines, channel], [message, now]) = (call.keys, call.argv) else { return None };
    is_force_release(call, (name, queue, deadlines, channel), (message, now), None)
}

fn is_force_release<'a>(
    call: &Call,
    (name, queue, deadlines, channel): (&'a [u8], &[u8], &[u8], &[u8]),
    (message, now): (&[u8], &[u8]),
    publish: Option<&[u8]>,
) -> Option<Rewrite<'a>> {
    (is_queue(call, name, queue, deadlines) && is_waiter_channels(call, name, channel, message, publish) && is_now(now))
        .then(|| Rewrite { argv: native(&[b"RFAIR.FORCERELEASE", name]), channel: Some(any_waiter_channel(name)) })
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

/// The names whose queue key is `queue`: none, one, or `n` and `{n}`
/// (the name without braces first).
fn names_of_queue(queue: &[u8]) -> Vec<&[u8]> {
    let Some(rest) = queue.strip_prefix(b"redisson_lock_queue:".as_slice()) else { return Vec::new() };
    let untagged = rest.strip_prefix(b"{").and_then(|rest| rest.strip_suffix(b"}"));
    [untagged, Some(rest)].into_iter().flatten().filter(|name| is_joined(queue, &fair_queue_key_parts(name))).collect()
}

/// For the filter's ACL check: the script publishes on the head waiter's
/// channel, unknown until it runs, so the caller must be allowed every
/// waiter channel of the lock (a pattern such as `redisson_lock__channel:*`
/// matches this literal `…:*`).
fn any_waiter_channel(name: &[u8]) -> Channel<'static> {
    Channel::joined(&fair_waiter_channel_parts(name, b"*"))
}

#[cfg(test)]
mod tests;
