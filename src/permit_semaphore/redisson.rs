//! RPermitExpirableSemaphore's scripts as Redisson sends them, and the
//! `RPSEM.*` call each becomes (see `redisson::scripts`). A rewrite names
//! the script's clock (`AT now_ms`: the command then runs as the script,
//! see `permit_semaphore::script`) and its publish command (`VIA`).
//!
//! Rewritten: every text 4.7.0 sends (from 3.22.0, 3.23.4 or 3.41.0 on),
//! and the older texts that differ from them only by naming `publish`;
//! trySetPermits is RSemaphore's text (`semaphore/redisson.rs`). Left to
//! Lua: tryAcquire before 3.12.0 (no TTL copied), tryRelease before
//! 3.17.0 (no clock) and expire/expireAt/clearExpire before 3.12.2 (plain
//! PEXPIRE/PEXPIREAT/PERSIST of both keys).

use crate::lock::parse_hold_count;
use crate::redisson::scripts::{is_clock, publish_command, Call, Family, Known, Rewrite};
use crate::redisson::via::rewrite_via;
use rlock_protocol::{is_joined, permit_timeout_key, semaphore_channel_parts, PERMIT_NEVER_EXPIRES};

pub(super) static PERMIT_SEMAPHORE: Family = Family::new("permit_semaphore", &SCRIPTS);

const SCRIPTS: [Known; 21] = [
    // RedissonPermitExpirableSemaphore.tryAcquireAsync, 3.22.0 .. 3.23.3
    Known { sha1: "d47a2fd3852467e5e7f2d1618c92a1ca719fcf7a", len: 756, rewrite: try_acquire_one },
    // RedissonPermitExpirableSemaphore.setPermitsAsync, 3.22.0 .. 3.23.3
    Known { sha1: "055e71dede7c0d07958c639e4661ab8bd36c4ab9", len: 436, rewrite: set_permits_always },
    // RedissonPermitExpirableSemaphore.tryAcquireAsync, 3.23.4 .. 4.7.0
    Known { sha1: "992c96b09a3d8ea0b37f5dc12e5347a44d93909d", len: 781, rewrite: try_acquire },
    // RedissonPermitExpirableSemaphore.availablePermitsAsync, 3.22.0 .. 4.7.0
    Known { sha1: "26b3972b2c9e617556282f404cb79709d746a713", len: 377, rewrite: available },
    // RedissonPermitExpirableSemaphore.acquiredPermitsAsync, 3.22.0 .. 4.7.0
    Known { sha1: "6f0b0be79a0c146c778cb14f40c10eb5b706e574", len: 392, rewrite: acquired },
    // RedissonPermitExpirableSemaphore.getPermitsAsync, 3.22.0 .. 4.7.0
    Known { sha1: "e242db5c1c68811b0d26a41937dcf22415b6d872", len: 530, rewrite: permits },
    // RedissonPermitExpirableSemaphore.tryReleaseAsync, 3.22.0 .. 4.7.0
    Known { sha1: "4ce079451bee2993ce00c8a4e205b536c6ccad67", len: 310, rewrite: release },
    // RedissonPermitExpirableSemaphore.tryReleaseAsync#2, 3.41.0 .. 4.7.0
    Known { sha1: "cf3ab77b1c0ae1226ae0e06e5cb18ee75f56c96b", len: 678, rewrite: release_all },
    // RedissonPermitExpirableSemaphore.tryReleaseAsync#2, 3.23.4 .. 3.40.2
    Known { sha1: "bb41a8ec1cd921c89e9d8f2ddde38ad13a2e8b74", len: 563, rewrite: release_any },
    // RedissonPermitExpirableSemaphore.getLeaseTimeAsync, 3.41.0 .. 4.7.0
    Known { sha1: "8be95cb5221cc7ee883cacb8859a8b32ef501a0e", len: 472, rewrite: lease },
    // RedissonPermitExpirableSemaphore.updateLeaseTimeAsync, 3.22.0 .. 4.7.0
    Known { sha1: "2298b02cc67a89f2a638e47503db3675c73d77f5", len: 438, rewrite: update_lease },
    // RedissonPermitExpirableSemaphore.addPermitsAsync, 3.22.0 .. 4.7.0
    Known { sha1: "ec6fb1cd5f66817424e8fe70fee7929391b7c6f0", len: 219, rewrite: add_permits },
    // RedissonPermitExpirableSemaphore.setPermitsAsync, 3.23.4 .. 4.7.0
    Known { sha1: "494d8561fee0cdb033f6c28d74c052c52189a578", len: 446, rewrite: set_permits },
    // RedissonPermitExpirableSemaphore.tryAcquireAsync, 3.12.0 .. 3.21.3 (publish in the text)
    Known { sha1: "9dd7dc38c905805c04c8f14cb8aae2bd5dd529b0", len: 758, rewrite: try_acquire_older },
    // RedissonPermitExpirableSemaphore.setPermitsAsync, 3.19.1 .. 3.21.3 (publish in the text)
    Known { sha1: "f753b3fd2954a5f1ed4d8f95a9c41819ecc27f41", len: 440, rewrite: set_permits_older },
    // RedissonPermitExpirableSemaphore.availablePermitsAsync, 3.10.0 .. 3.21.3 (publish in the text)
    Known { sha1: "6aee5085c7e0b3ff5d8612116a9b5f2ceb1fdab2", len: 379, rewrite: available_older },
    // RedissonPermitExpirableSemaphore.acquiredPermitsAsync, 3.19.1 .. 3.21.3 (publish in the text)
    Known { sha1: "dd0e62727caf54b589ae8e4bf22c32ec5ec33250", len: 394, rewrite: acquired_older },
    // RedissonPermitExpirableSemaphore.getPermitsAsync, 3.19.1 .. 3.21.3 (publish in the text)
    Known { sha1: "795a15adb7654812d3711bed0f526f84076f8f4e", len: 532, rewrite: permits_older },
    // RedissonPermitExpirableSemaphore.tryReleaseAsync, 3.17.0 .. 3.21.3 (publish in the text)
    Known { sha1: "2eac39f9e36394f850326ea7cd240d6ebc715ae2", len: 312, rewrite: release_older },
    // RedissonPermitExpirableSemaphore.updateLeaseTimeAsync, 3.10.0 .. 3.21.3 (publish in the text)
    Known { sha1: "5100a65fefa9ca6c9ed0977c06c41c68e2e847e8", len: 440, rewrite: update_lease_older },
    // RedissonPermitExpirableSemaphore.addPermitsAsync, 3.10.0 .. 3.21.3 (publish in the text)
    Known { sha1: "575a088d37e6b44b707ce3103c04a03c2cd504bd", len: 221, rewrite: add_permits_older },
];

fn available<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    reclaiming(call, b"RPSEM.AVAILABLE")
}

fn acquired<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    reclaiming(call, b"RPSEM.ACQUIRED")
}

fn permits<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    reclaiming(call, b"RPSEM.PERMITS")
}

/// KEYS name, timeouts, channel; ARGV now, publish command: the texts that
/// reclaim every permit scored 0 .. now, then read.
fn reclaiming<'a>(call: &Call<'a>, command: &'a [u8]) -> Option<Rewrite<'a>> {
    let [name, timeouts, channel] = call.keys else { return None };
    let [now, publish] = call.argv else { return None };
    at_clock(call, [name, timeouts, channel], &[command, name], now, publish)
}

/// KEYS name, timeouts, channel; ARGV permits (as many as ids), the lease's
/// end (their score), now, the score of a permit that never expires,
/// publish command, ids.
fn try_acquire<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    let [name, timeouts, channel] = call.keys else { return None };
    let [permits, until, now, never, publish, ids @ ..] = call.argv else { return None };
    let as_many = !ids.is_empty() && *permits == ids.len().to_string().as_bytes();
    (as_many && is_clock(until) && *never == PERMIT_NEVER_EXPIRES.to_string().as_bytes()).then_some(())?;
    let command: Vec<&[u8]> = [&b"RPSEM.TRYACQUIRE"[..], name, until].into_iter().chain(ids.iter().copied()).collect();
    at_clock(call, [name, timeouts, channel], &command, now, publish)
}

/// Its texts of 3.12.0 .. 3.23.3: KEYS as the newer; ARGV 1 (one
/// permit), the lease's end, the id, now, the score of a permit that never
/// expires, publish command (3.22.0 on). They reply the id.
fn try_acquire_one<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    let [name, timeouts, channel] = call.keys else { return None };
    let [b"1", until, id, now, never, publish] = call.argv else { return None };
    (is_clock(until) && *never == PERMIT_NEVER_EXPIRES.to_string().as_bytes()).then_some(())?;
    let command: [&[u8]; 5] = [b"RPSEM.TRYACQUIRE", name, until, id, b"REPLYID"];
    at_clock(call, [name, timeouts, channel], &command, now, publish)
}

fn try_acquire_older<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    naming_publish(call, try_acquire_one)
}

/// KEYS name, channel, timeouts; ARGV id, 1 (the permits it returns),
/// now, publish command.
fn release<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    let [name, channel, timeouts] = call.keys else { return None };
    let [id, b"1", now, publish] = call.argv else { return None };
    at_clock(call, [name, timeouts, channel], &[b"RPSEM.RELEASE", name, id], now, publish)
}

fn release_all<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    release_ids(call, b"ALL")
}

fn release_any<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    release_ids(call, b"ANY")
}

/// KEYS name, channel, timeouts; ARGV count (unread), now, publish
/// command, ids (one or more: ZREM takes no fewer).
fn release_ids<'a>(call: &Call<'a>, marker: &'a [u8]) -> Option<Rewrite<'a>> {
    let [name, channel, timeouts] = call.keys else { return None };
    let [_, now, publish, ids @ ..] = call.argv else { return None };
    (!ids.is_empty()).then_some(())?;
    let command: Vec<&[u8]> =
        [&b"RPSEM.RELEASE"[..], name].into_iter().chain(ids.iter().copied()).chain([marker]).collect();
    at_clock(call, [name, timeouts, channel], &command, now, publish)
}

/// KEYS name, timeouts, channel; ARGV id, the score of a permit that never
/// expires, now, publish command.
fn lease<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    let [name, timeouts, channel] = call.keys else { return None };
    let [id, never, now, publish] = call.argv else { return None };
    (*never == PERMIT_NEVER_EXPIRES.to_string().as_bytes()).then_some(())?;
    at_clock(call, [name, timeouts, channel], &[b"RPSEM.LEASE", name, id], now, publish)
}

/// KEYS name, timeouts, channel; ARGV id, the lease's end (the new score),
/// now, publish command.
fn update_lease<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    let [name, timeouts, channel] = call.keys else { return None };
    let [id, until, now, publish] = call.argv else { return None };
    is_clock(until).then_some(())?;
    at_clock(call, [name, timeouts, channel], &[b"RPSEM.UPDATELEASE", name, id, until], now, publish)
}

/// KEYS name, channel; ARGV delta, publish command. The script publishes
/// the delta as given, the command as it writes a number: only integers
/// written as Rust writes them are rewritten.
fn add_permits<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    let [name, channel] = call.keys else { return None };
    let [delta, publish] = call.argv else { return None };
    let publish = publish_command(publish)?;
    let plain = parse_hold_count(delta).is_ok_and(|n| n.to_string().as_bytes() == *delta);
    let ours = is_joined(channel, &semaphore_channel_parts(name)) && call.same_slot(name, channel);
    (plain && ours).then(|| rewrite_via(&[b"RPSEM.ADDPERMITS", name, delta], publish, channel))
}

/// KEYS name, channel, timeouts; ARGV permits, publish command: permits
/// the command takes (0 or more) and Lua's doubles hold exactly.
fn set_permits<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    set_permits_with(call, &[])
}

/// Its texts of 3.19.1 .. 3.23.3, which write even when the count is right.
fn set_permits_always<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    set_permits_with(call, &[b"ALWAYS"])
}

fn set_permits_older<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    naming_publish(call, set_permits_always)
}

fn set_permits_with<'a>(call: &Call<'a>, always: &[&'a [u8]]) -> Option<Rewrite<'a>> {
    let [name, channel, timeouts] = call.keys else { return None };
    let [permits, publish] = call.argv else { return None };
    let publish = publish_command(publish)?;
    let ours = is_semaphores(call, [name, timeouts, channel]);
    let command = [&[&b"RPSEM.SETPERMITS"[..], name, permits][..], always].concat();
    (ours && is_clock(permits)).then(|| rewrite_via(&command, publish, channel))
}

/// The texts before 3.22.0 name `publish`: as the newer ones given it as
/// their last argument (copied: rare).
fn naming_publish<'a>(call: &Call<'a>, newer: for<'b> fn(&Call<'b>) -> Option<Rewrite<'b>>) -> Option<Rewrite<'a>> {
    let argv: Vec<&[u8]> = call.argv.iter().copied().chain([&b"publish"[..]]).collect();
    newer(&Call { argv: &argv, ..*call }).map(Rewrite::into_made)
}

fn available_older<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    naming_publish(call, available)
}

fn acquired_older<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    naming_publish(call, acquired)
}

fn permits_older<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    naming_publish(call, permits)
}

fn release_older<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    naming_publish(call, release)
}

fn update_lease_older<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    naming_publish(call, update_lease)
}

fn add_permits_older<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    naming_publish(call, add_permits)
}

/// `command AT now VIA publish`, when the keys are the semaphore's own
/// (in the name's slot) and `now` a clock the command reads as Redis does.
fn at_clock<'a>(
    call: &Call,
    [name, timeouts, channel]: [&'a [u8]; 3],
    command: &[&'a [u8]],
    now: &'a [u8],
    publish: &[u8],
) -> Option<Rewrite<'a>> {
    let publish = publish_command(publish)?;
    let ours = is_semaphores(call, [name, timeouts, channel]);
    (ours && is_clock(now)).then(|| rewrite_via(&[command, &[b"AT", now]].concat(), publish, channel))
}

/// Whether the keys are the semaphore's own, in the name's slot.
fn is_semaphores(call: &Call, [name, timeouts, channel]: [&[u8]; 3]) -> bool {
    let ours = timeouts == permit_timeout_key(name).as_slice() && is_joined(channel, &semaphore_channel_parts(name));
    ours && call.same_slot(name, timeouts) && call.same_slot(name, channel)
}

#[cfg(test)]
mod tests;
