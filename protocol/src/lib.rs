//! The wire contract shared by the rlock module, its client and its tests:
//! Redisson's derived names (release channel, unlock latch key), the
//! release message, the lease bounds and Redis Cluster's key slots.

mod family;
mod joined;

pub use family::*;
pub use joined::{with_joined, Joined};

/// The README's example runs with the doc tests, so that it stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// Prefix of Redisson's release channel.
const CHANNEL_PREFIX: &[u8] = b"redisson_lock__channel";

/// Prefix of Redisson's unlock latch keys.
const LATCH_PREFIX: &[u8] = b"redisson_unlock_latch";

/// Prefix of rlock's acquire records (`RLOCK.ACQUIRE … ID`).
const ACQUIRE_RECORD_PREFIX: &[u8] = b"rlock_acquire_record";

/// The message Redisson publishes when a lock is fully released.
pub const UNLOCK_MESSAGE: &[u8] = b"0";

/// Longest lease the module accepts: a year. Anything longer is almost
/// certainly a unit mistake (seconds or microseconds for milliseconds).
pub const MAX_LEASE_MS: i64 = 365 * 24 * 60 * 60 * 1000;

/// Redisson's `lockWatchdogTimeout`: the default lease and watchdog timeout.
pub const DEFAULT_LEASE_MS: i64 = 30_000;

/// How long an unlock latch lives when the caller gives no `PX`: the top
/// of Redisson's default range (16000 to 20000 ms).
pub const DEFAULT_LATCH_MS: i64 = 20_000;

/// Redisson's release channel for a lock name: the name goes inside a hash
/// tag unless it already contains one.
///
/// ```
/// use rlock_protocol::release_channel;
///
/// assert_eq!(release_channel(b"orders:42"), b"redisson_lock__channel:{orders:42}");
/// assert_eq!(release_channel(b"{user}:lock"), b"redisson_lock__channel:{user}:lock");
/// ```
pub fn release_channel(name: &[u8]) -> Vec<u8> {
    release_channel_parts(name).concat()
}

/// [`release_channel`] as the parts it joins ([`prefix_parts`]).
pub fn release_channel_parts(name: &[u8]) -> [&[u8]; 4] {
    prefix_parts(CHANNEL_PREFIX, name)
}

/// Redisson's unlock latch key for one release request (3.24+): where a
/// release records its reply, so that a retry with the same request id
/// gets the same reply instead of "not held".
pub fn unlock_latch_key(name: &[u8], request_id: &[u8]) -> Vec<u8> {
    unlock_latch_key_parts(name, request_id).concat()
}

/// [`unlock_latch_key`] as the parts it joins ([`prefix_parts`]).
pub fn unlock_latch_key_parts<'a>(name: &'a [u8], request_id: &'a [u8]) -> [&'a [u8]; 6] {
    let [prefix, open, name, close] = prefix_parts(LATCH_PREFIX, name);
    let colon: &[u8] = if request_id.is_empty() { b"" } else { b":" };
    [prefix, open, name, close, colon, request_id]
}

/// Where `RLOCK.ACQUIRE … ID request_id` records the hold count it granted,
/// for a while: a resend of the request replies that grant again instead
/// of adding a level. In the lock's slot, like the unlock latch.
pub fn acquire_record_key(name: &[u8], request_id: &[u8]) -> Vec<u8> {
    let [prefix, open, name, close] = prefix_parts(ACQUIRE_RECORD_PREFIX, name);
    [prefix, open, name, close, b":", request_id].concat()
}

/// Number of hash slots in Redis Cluster.
const SLOTS: u16 = 16_384;

/// The Redis Cluster hash slot of a key, as CLUSTER KEYSLOT computes it:
/// CRC16 (XMODEM) of the hash tag (the bytes between the first `{` and the
/// next `}`, when not empty), else of the whole key.
pub fn key_slot(key: &[u8]) -> u16 {
    crc16(hash_tag(key).unwrap_or(key)) % SLOTS
}

/// The bytes between a key's first `{` and the next `}`, when not empty:
/// all that its slot is computed from.
pub fn hash_tag(key: &[u8]) -> Option<&[u8]> {
    let open = key.iter().position(|&b| b == b'{')?;
    let rest = &key[open + 1..];
    let close = rest.iter().position(|&b| b == b'}')?;
    (close > 0).then(|| &rest[..close])
}

/// CRC16-CCITT (XMODEM): polynomial 0x1021, initial value 0, as Redis's crc16.c.
fn crc16(bytes: &[u8]) -> u16 {
    bytes.iter().fold(0u16, |crc, &byte| {
        (0..8).fold(
            crc ^ (u16::from(byte) << 8),
            |crc, _| {
                if crc & 0x8000 != 0 {
                    (crc << 1) ^ 0x1021
                } else {
                    crc << 1
                }
            },
        )
    })
}

/// Room for any i64 in decimal, for [`decimal`].
pub use itoa::Buffer as DecimalBuffer;

/// `n` in decimal, formatted in `buffer`: a value written in place needs
/// no heap string. itoa writes two digits a step (an expiry's 13 digits
/// cost about half of a digit-a-step loop).
pub fn decimal(n: i64, buffer: &mut DecimalBuffer) -> &[u8] {
    buffer.format(n).as_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_writes_every_i64_as_redis_does() {
        let cases: [(i64, &[u8]); 6] = [
            (0, b"0"),
            (7, b"7"),
            (-7, b"-7"),
            (10_000, b"10000"),
            (i64::MAX, b"9223372036854775807"),
            (i64::MIN, b"-9223372036854775808"),
        ];
        for (n, expected) in cases {
            assert_eq!(decimal(n, &mut DecimalBuffer::new()), expected, "{n}");
        }
    }

    #[test]
    fn release_channel_follows_the_hash_tag_rule() {
        let cases: &[(&[u8], &[u8])] = &[
            (b"resource:x", b"redisson_lock__channel:{resource:x}"),
            (b"{user}:lock", b"redisson_lock__channel:{user}:lock"),
            (b"", b"redisson_lock__channel:{}"),
            (b"a{b", b"redisson_lock__channel:a{b"),
            (b"\x00\xff", b"redisson_lock__channel:{\x00\xff}"),
        ];
        for (name, channel) in cases {
            assert_eq!(release_channel(name), channel.to_vec());
        }
    }

    #[test]
    fn unlock_latch_key_follows_the_hash_tag_rule() {
        let cases: &[(&[u8], &[u8], &[u8])] = &[
            (b"resource:x", b"0af3", b"redisson_unlock_latch:{resource:x}:0af3"),
            (b"{user}:lock", b"0af3", b"redisson_unlock_latch:{user}:lock:0af3"),
            (b"a{b", b"id", b"redisson_unlock_latch:a{b:id"),
            (b"n", b"\x00\xff", b"redisson_unlock_latch:{n}:\x00\xff"),
        ];
        for (name, request_id, key) in cases {
            assert_eq!(unlock_latch_key(name, request_id), key.to_vec());
        }
    }

    /// Expected values from CLUSTER KEYSLOT on Redis 7.0.
    #[test]
    fn key_slots_match_cluster_keyslot() {
        let cases: &[(&[u8], u16)] = &[
            (b"foo", 12182),
            (b"123456789", 12739),
            (b"{user1000}.following", 3443),
            (b"user1000", 3443),
            (b"foo{}{bar}", 8363),
            (b"foo{{bar}}zap", 4015),
            (b"foo{bar}{zap}", 5061),
            (b"", 0),
        ];
        for (key, slot) in cases {
            assert_eq!(key_slot(key), *slot, "{:?}", String::from_utf8_lossy(key));
        }
    }
}
