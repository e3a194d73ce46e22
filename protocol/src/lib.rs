//! The wire contract shared by the rlock module, its client and its tests:
//! Redisson's release channel and message, and the lease bounds.

/// Prefix of Redisson's release channel.
const CHANNEL_PREFIX: &[u8] = b"redisson_lock__channel:";

/// The message Redisson publishes when a lock is fully released.
pub const UNLOCK_MESSAGE: &[u8] = b"0";

/// Longest lease the module accepts: a year. Anything longer is almost
/// certainly a unit mistake (seconds or microseconds for milliseconds).
pub const MAX_LEASE_MS: i64 = 365 * 24 * 60 * 60 * 1000;

/// Redisson's `lockWatchdogTimeout`: the default lease and watchdog timeout.
pub const DEFAULT_LEASE_MS: i64 = 30_000;

/// Redisson's release channel for a lock name: the name goes inside a hash
/// tag unless it already contains one.
pub fn release_channel(name: &[u8]) -> Vec<u8> {
    let mut channel = Vec::with_capacity(CHANNEL_PREFIX.len() + name.len() + 2);
    channel.extend_from_slice(CHANNEL_PREFIX);
    if name.contains(&b'{') {
        channel.extend_from_slice(name);
    } else {
        channel.push(b'{');
        channel.extend_from_slice(name);
        channel.push(b'}');
    }
    channel
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
