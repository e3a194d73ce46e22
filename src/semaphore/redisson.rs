//! RSemaphore's scripts as Redisson sends them, and the `RSEM.*` call each
//! becomes (see `redisson::scripts`). Every rewrite names the publish
//! command (`VIA`), which makes the command do what the script does where
//! the two otherwise differ (see `Semaphore`).
//!
//! Every text of RSemaphore in 3.10.0 .. 4.7.0 is rewritten.

use crate::lease::parse_ttl_ms;
use crate::lock::parse_hold_count;
use crate::redisson::scripts::{is_time, native, Call, Family, Known, Rewrite};
use crate::redisson::via::{last_names_publish, rewrite_via, text_names_publish, Publishing};
use rlock_protocol::{is_joined, semaphore_channel_parts};

pub(super) static SEMAPHORE: Family = Family::new("semaphore", &SCRIPTS);

const SCRIPTS: [Known; 14] = [
    // RedissonSemaphore.addPermitsAsync, 3.12.0 .. 3.16.1 (publishes nothing)
    Known { sha1: "c3c3c87b52a880a2a73e312c1cc9d21f500d80f5", len: 126, rewrite: add_permits_unpublished },
    // RedissonSemaphore.reducePermitsAsync, 3.10.0 .. 3.11.6 (`value -
    // ARGV[1]`, publishes nothing)
    Known { sha1: "6bb281549022225c6d8228b4af1e06c9d6610b90", len: 126, rewrite: reduce_permits },
    // RedissonSemaphore.addPermitsAsync, 3.22.0 .. 4.7.0
    Known { sha1: "98238d408c6755085344670d3a2ddaa55cf177a9", len: 173, rewrite: add_permits },
    // RedissonSemaphore.addPermitsAsync, 3.16.2 .. 3.21.3 (publish in the text)
    Known { sha1: "af883fdf25153ad9a41ad1c0d5dfde728728961a", len: 175, rewrite: add_permits_older },
    // RedissonSemaphore.tryAcquireAsync, 3.10.0 .. 3.20.1; RedissonSemaphore.tryAcquireAsync0, 3.21.0 .. 4.7.0
    Known { sha1: "c7dc9d189c1715465a31a06ddbc008585e0c20be", len: 184, rewrite: try_acquire },
    // RedissonSemaphore.releaseAsync, 3.22.0 .. 4.7.0
    Known { sha1: "ae27582488dd01f4e238cc0733a12146d410eb44", len: 91, rewrite: release },
    // RedissonSemaphore.releaseAsync, 3.10.0 .. 3.21.3 (publish in the text)
    Known { sha1: "6ef996845b2b97db21c5bc1ed04b8eae2babe56f", len: 93, rewrite: release_older },
    // RedissonSemaphore.releaseIfExistsAsync, 4.0.0 .. 4.7.0
    Known { sha1: "6883802454c09d455e3234c8b01549adf1fb8b4c", len: 154, rewrite: release_if_exists },
    // RedissonSemaphore.trySetPermitsAsync, 3.22.0 .. 4.7.0;
    // RedissonPermitExpirableSemaphore.trySetPermitsAsync, 3.22.0 .. 4.7.0
    Known { sha1: "241ce4e87e652b4f9b39d33cbcd7df9ee8ed906c", len: 165, rewrite: try_set_permits },
    // RedissonSemaphore.trySetPermitsAsync, 3.16.3 .. 3.21.3 (publish in the text);
    // RedissonPermitExpirableSemaphore.trySetPermitsAsync, 3.18.1 .. 3.21.3
    Known { sha1: "8d41a082c3a98f3e882844af9c9e9f9fbd7f8573", len: 167, rewrite: try_set_permits_older },
    // RedissonSemaphore.trySetPermitsAsync, 3.10.0 .. 3.16.2 (publish in the
    // text; its `value == 0` compares a string with a number: never true);
    // RedissonPermitExpirableSemaphore.trySetPermitsAsync, 3.10.0 .. 3.18.0
    Known { sha1: "44d63d4882cfdb9af87c32c96c24a9e1e15cffd5", len: 181, rewrite: try_set_permits_older },
    // RedissonSemaphore.trySetPermitsAsync#2 (with a TTL), 3.29.0 .. 4.7.0
    Known { sha1: "38bf99884eb94708a40a9aabacb15b4c5f16e804", len: 180, rewrite: try_set_permits_expiring },
    // RedissonSemaphore.drainPermitsAsync, 3.16.3 .. 4.7.0
    Known { sha1: "c87766d572855e9461c4ecd453db5d1cbab6119e", len: 126, rewrite: drain },
    // RedissonSemaphore.drainPermits(Async), 3.10.0 .. 3.16.2 (its `value ==
    // 0` compares a string with a number: never true)
    Known { sha1: "74e35a16120f0f07ddf9bccd2f3593b769a9fd11", len: 140, rewrite: drain },
];

/// KEYS name; ARGV permits. The script compares `tonumber`s, which the
/// command's LIKESCRIPT does too.
fn try_acquire<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    let ([name], [permits]) = (call.keys, call.argv) else { return None };
    let taken = parse_hold_count(permits).is_ok_and(|permits| permits >= 0);
    taken.then(|| Rewrite { argv: native(&[b"RSEM.TRYACQUIRE", name, permits, b"LIKESCRIPT"]), channel: None })
}

/// KEYS name, channel; ARGV permits, publish command (older texts:
/// permits). Only permits Redisson sends (1 or more) are rewritten: the
/// script's INCRBY of 0 is still a write, which the command skips.
fn release<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    release_with(call, last_names_publish(call)?, false)
}

fn release_older<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    release_with(call, text_names_publish(call), false)
}

/// As release; the script answers 0 on a missing key, else 1.
fn release_if_exists<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    release_with(call, last_names_publish(call)?, true)
}

fn release_with<'a>(call: &Call<'a>, (argv, publish): Publishing<'a>, if_exists: bool) -> Option<Rewrite<'a>> {
    let ([name, channel], [permits]) = (call.keys, argv) else { return None };
    if !(parse_hold_count(permits).is_ok_and(|permits| permits > 0) && is_semaphore_channel(call, name, channel)) {
        return None;
    }
    let command: &[&[u8]] =
        if if_exists { &[b"RSEM.RELEASE", name, permits, b"IFEXISTS"] } else { &[b"RSEM.RELEASE", name, permits] };
    Some(rewrite_via(command, publish, channel))
}

/// KEYS name, channel; ARGV permits, publish command (older texts:
/// permits). The script stores and publishes the permits as given: only
/// ones the command takes and writes back the same way are rewritten.
fn try_set_permits<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    let (argv, publish) = last_names_publish(call)?;
    let [permits] = argv else { return None };
    try_set_permits_with(call, permits, None, publish)
}

fn try_set_permits_older<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    let (argv, publish) = text_names_publish(call);
    let [permits] = argv else { return None };
    try_set_permits_with(call, permits, None, publish)
}

/// KEYS name, channel; ARGV permits, publish command, TTL in ms (SET PX).
fn try_set_permits_expiring<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    let [permits, publish, ttl_ms] = call.argv else { return None };
    let (_, publish) = last_names_publish(&Call { argv: &[publish], ..*call })?;
    is_time(ttl_ms, parse_ttl_ms).then_some(())?;
    try_set_permits_with(call, permits, Some(ttl_ms), publish)
}

fn try_set_permits_with<'a>(
    call: &Call<'a>,
    permits: &'a [u8],
    ttl_ms: Option<&'a [u8]>,
    publish: &'a [u8],
) -> Option<Rewrite<'a>> {
    let [name, channel] = call.keys else { return None };
    if !(parse_hold_count(permits).is_ok_and(|permits| permits >= 0) && is_semaphore_channel(call, name, channel)) {
        return None;
    }
    let command: &[&[u8]] = match ttl_ms {
        None => &[b"RSEM.TRYSETPERMITS", name, permits],
        Some(ttl_ms) => &[b"RSEM.TRYSETPERMITS", name, permits, b"PX", ttl_ms],
    };
    Some(rewrite_via(command, publish, channel))
}

/// KEYS name, channel; ARGV delta, publish command (older texts: delta).
/// The script adds in Lua's numbers, which the command's `VIA` does too.
fn add_permits<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    add_permits_with(call, last_names_publish(call)?)
}

fn add_permits_older<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    add_permits_with(call, text_names_publish(call))
}

fn add_permits_with<'a>(call: &Call<'a>, (argv, publish): Publishing<'a>) -> Option<Rewrite<'a>> {
    let ([name, channel], [delta]) = (call.keys, argv) else { return None };
    let taken = parse_hold_count(delta).is_ok() && is_semaphore_channel(call, name, channel);
    taken.then(|| rewrite_via(&[b"RSEM.ADDPERMITS", name, delta], publish, channel))
}

/// KEYS name; ARGV delta: addPermits before it published.
fn add_permits_unpublished<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    let ([name], [delta]) = (call.keys, call.argv) else { return None };
    let taken = parse_hold_count(delta).is_ok();
    taken.then(|| Rewrite { argv: native(&[b"RSEM.ADDPERMITS", name, delta, b"LIKESCRIPT"]), channel: None })
}

/// KEYS name; ARGV permits, taken away: `value - p` is `value + (-p)` in
/// Lua's doubles too.
fn reduce_permits<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    let ([name], [permits]) = (call.keys, call.argv) else { return None };
    let delta = match *permits {
        b"0" => b"0".to_vec(),
        [b'-', digits @ ..] => digits.to_vec(),
        digits => [b"-", digits].concat(),
    };
    let taken = parse_hold_count(permits).is_ok() && parse_hold_count(&delta).is_ok();
    taken.then(|| {
        let mut argv = native(&[b"RSEM.ADDPERMITS", name]);
        argv.push_made(&delta);
        argv.push(b"LIKESCRIPT");
        Rewrite { argv, channel: None }
    })
}

/// KEYS name; no ARGV. The script replies any string as it is and sets
/// it to 0 without its TTL: the command's LIKESCRIPT.
fn drain<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    let ([name], []) = (call.keys, call.argv) else { return None };
    Some(Rewrite { argv: native(&[b"RSEM.DRAIN", name, b"LIKESCRIPT"]), channel: None })
}

/// The semaphore's own channel, in the name's slot.
fn is_semaphore_channel(call: &Call, name: &[u8], channel: &[u8]) -> bool {
    is_joined(channel, &semaphore_channel_parts(name)) && call.same_slot(name, channel)
}

#[cfg(test)]
mod tests;
