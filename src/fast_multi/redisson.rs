//! The fast multi-lock's renewal as Redisson sends it, and the
//! `RFASTMULTI.RENEW` call it becomes (see `redisson::scripts`).

use crate::lease::parse_lease_ms;
use crate::redisson::scripts::{is_clock, is_time, Call, Family, Known, Rewrite};

pub(super) static FAST_MULTI: Family = Family::new("fast_multi", &SCRIPTS);

const SCRIPTS: [Known; 2] = [
    // renewal/FastMultilockTask.renew, 3.44.0 .. 4.1.0; renewal/FastMultilockTask.buildChunk, 4.2.0 .. 4.7.0
    Known { sha1: "935362a31ac5b3d6f7c5c3f1e26d9a012f87f2bd", len: 881, rewrite: renew },
    // RedissonFasterMultiLock.renewExpirationAsync, 3.38.0 .. 3.43.0
    Known { sha1: "9cdf4e206c51f838a9e65cf6e84613f0de3559cf", len: 881, rewrite: renew_owner_first },
];

// Left to Lua: a call of several keys. FastMultilockTask batches the
// groups its client holds, yet the script renews only the first, taking
// the other groups' owners and fields for fields of the first (it then
// replies 0); a native form would have to declare the keys it ignores. And
// a group of more than 249 values: the filter looks at 256 arguments at most.

/// KEYS group; ARGV lease, now, owner, fields.
fn renew<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    let [lease, now, owner, fields @ ..] = call.argv else { return None };
    renewal(call, owner, lease, now, fields)
}

/// KEYS group; ARGV owner, lease, now, fields.
fn renew_owner_first<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    let [owner, lease, now, fields @ ..] = call.argv else { return None };
    renewal(call, owner, lease, now, fields)
}

fn renewal<'a>(
    call: &Call<'a>,
    owner: &'a [u8],
    lease: &'a [u8],
    now: &'a [u8],
    fields: &[&'a [u8]],
) -> Option<Rewrite<'a>> {
    let [group] = call.keys else { return None };
    if fields.is_empty() || !is_time(lease, parse_lease_ms) || !is_clock(now) {
        return None;
    }
    let head: [&[u8]; 7] = [b"RFASTMULTI.RENEW", group, owner, lease, b"AT", now, b"FIELDS"];
    let argv = head.into_iter().chain(fields.iter().copied()).collect();
    Some(Rewrite { argv, channel: None })
}

#[cfg(test)]
mod tests;
