//! RCountDownLatch's scripts as Redisson sends them, and the `RLATCH.*`
//! call each becomes (see `redisson::scripts`). Every rewrite names the
//! publish command (`VIA`), which makes the command do what the script
//! does where the two otherwise differ (see `CountDownLatch`), and the
//! script's channel (`CHANNEL`): Redis checks the caller's ACL for it
//! before the command runs, as it does for the script's publish.

use super::{OPEN_MESSAGE, SET_MESSAGE};
use crate::lock::parse_hold_count;
use crate::redisson::scripts::{Call, Family, Known, Rewrite};
use crate::redisson::via::{last_names_publish, rewrite_via_naming_channel, text_names_publish, Publishing};
use rlock_protocol::{count_down_latch_channel_parts, is_joined};

pub(super) static LATCH: Family = Family::new("latch", &SCRIPTS);

const SCRIPTS: [Known; 6] = [
    // RedissonCountDownLatch.countDownAsync, 3.22.0 .. 4.7.0
    Known { sha1: "38060fab26b0e7c5982a5cfd7ad542e44d3da19b", len: 141, rewrite: count_down },
    // RedissonCountDownLatch.countDownAsync, 3.10.0 .. 3.21.3 (publish in the text)
    Known { sha1: "c103a1b27e5635c206edc800af5851a8c4cc8305", len: 143, rewrite: count_down_older },
    // RedissonCountDownLatch.trySetCountAsync, 3.22.0 .. 4.7.0
    Known { sha1: "2a52d54a6f35bc8af5e84a2930b2ca1aa2a15892", len: 145, rewrite: try_set_count },
    // RedissonCountDownLatch.trySetCountAsync, 3.10.0 .. 3.21.3 (publish in the text)
    Known { sha1: "956d64ccf21d1feed0339006db8295e2aa04a8d8", len: 147, rewrite: try_set_count_older },
    // RedissonCountDownLatch.deleteAsync, 3.22.0 .. 4.7.0
    Known { sha1: "47aed1b8133417c9bc009ffc08602e37ed4a1bb3", len: 105, rewrite: delete },
    // RedissonCountDownLatch.deleteAsync, 3.10.0 .. 3.21.3 (publish in the text)
    Known { sha1: "23bcabf6e8e3267791df8ea2e9ed607944b28658", len: 107, rewrite: delete_older },
];

/// KEYS name, channel; ARGV `0`, publish command (older texts: `0`).
fn count_down<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    count_down_with(call, last_names_publish(call)?)
}

fn count_down_older<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    count_down_with(call, text_names_publish(call))
}

fn count_down_with<'a>(call: &Call<'a>, (argv, publish): Publishing<'a>) -> Option<Rewrite<'a>> {
    let ([name, channel], [message]) = (call.keys, argv) else { return None };
    let taken = *message == OPEN_MESSAGE && is_latch_channel(call, name, channel);
    taken.then(|| rewrite_via_naming_channel(&[b"RLATCH.COUNTDOWN", name], publish, channel))
}

/// KEYS name, channel; ARGV `1`, count, publish command (older texts:
/// `1`, count). The script stores the count as given: only one the
/// command takes and writes back the same way is rewritten.
fn try_set_count<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    try_set_count_with(call, last_names_publish(call)?)
}

fn try_set_count_older<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    try_set_count_with(call, text_names_publish(call))
}

fn try_set_count_with<'a>(call: &Call<'a>, (argv, publish): Publishing<'a>) -> Option<Rewrite<'a>> {
    let ([name, channel], [message, count]) = (call.keys, argv) else { return None };
    let count_taken = parse_hold_count(count).is_ok_and(|count| count >= 0);
    let taken = *message == SET_MESSAGE && count_taken && is_latch_channel(call, name, channel);
    taken.then(|| rewrite_via_naming_channel(&[b"RLATCH.TRYSETCOUNT", name, count], publish, channel))
}

/// KEYS name, channel; ARGV `1`, publish command (older texts: `1`).
fn delete<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    delete_with(call, last_names_publish(call)?)
}

fn delete_older<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    delete_with(call, text_names_publish(call))
}

fn delete_with<'a>(call: &Call<'a>, (argv, publish): Publishing<'a>) -> Option<Rewrite<'a>> {
    let ([name, channel], [message]) = (call.keys, argv) else { return None };
    let taken = *message == SET_MESSAGE && is_latch_channel(call, name, channel);
    taken.then(|| rewrite_via_naming_channel(&[b"RLATCH.DELETE", name], publish, channel))
}

/// The latch's own channel, in the name's slot.
fn is_latch_channel(call: &Call, name: &[u8], channel: &[u8]) -> bool {
    is_joined(channel, &count_down_latch_channel_parts(name)) && call.same_slot(name, channel)
}

#[cfg(test)]
mod tests;
