//! Redisson's RLock scripts that run natively, recognised by their exact
//! text, and how each call becomes the native command. Pure: unit-tested
//! without Redis; `filter` applies it to the server's argv.
//!
//! A call is rewritten only when the native command answers exactly as
//! the script would, with the same effects: the keys and the channel the
//! script is given must be the ones the native command derives from the
//! name, every number must be one Redis itself would accept and the
//! native command takes. Anything else runs as Lua.

use crate::lease::{parse_latch_ms, parse_lease_ms};
use rlock_protocol::{key_slot, release_channel, unlock_latch_key, UNLOCK_MESSAGE};

/// The scripts the filter knows (the family's other primitives come next).
#[allow(clippy::enum_variant_names)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Script {
    /// `RedissonLock::tryLockInnerAsync` (3.19.0 ..): KEYS name, ARGV lease, owner.
    LockAcquire,
    /// `RedissonLock::unlockInnerAsync` (3.24.0 ..): KEYS name, channel,
    /// latch; ARGV message, lease, owner, publish command, latch px.
    LockRelease,
    /// `RedissonLock::forceUnlockAsync` (3.22.0 ..): KEYS name, channel;
    /// ARGV message, publish command.
    LockForceRelease,
}

/// One script text: its SHA-1 (lower-case hex) and length in bytes.
pub struct Known {
    pub sha1: &'static str,
    pub len: usize,
    pub script: Script,
}

/// Every text run natively, with the Redisson releases that send it.
pub const KNOWN: [Known; 3] = [
    // 3.19.0 .. 4.7.0
    Known { sha1: "149c5a8bf18676fd99e9e6e24923bd64d9b62f94", len: 234, script: Script::LockAcquire },
    // 3.24.0 .. 4.7.0
    Known { sha1: "6866459238a13a701d42f4971f12d9f3a50e2442", len: 471, script: Script::LockRelease },
    // 3.22.0 .. 4.7.0
    Known { sha1: "605e338249a7a1d40df83b04f7658354f883b41b", len: 107, script: Script::LockForceRelease },
];

/// The script whose SHA-1 is `sha` (EVALSHA takes it in either case).
pub fn by_sha(sha: &[u8]) -> Option<Script> {
    KNOWN.iter().find(|known| known.sha1.as_bytes().eq_ignore_ascii_case(sha)).map(|known| known.script)
}

/// The script whose text is `body`: hashed only when its length is one of
/// a known text.
pub fn by_body(body: &[u8]) -> Option<Script> {
    if !KNOWN.iter().any(|known| known.len == body.len()) {
        return None;
    }
    let sha = sha1_smol::Sha1::from(body).digest().to_string();
    KNOWN.iter().find(|known| known.sha1 == sha).map(|known| known.script)
}

/// Which script an `EVAL`/`EVALSHA` call runs, if a known one.
pub fn identify(args: &[&[u8]]) -> Option<Script> {
    let [command, script, ..] = args else { return None };
    if command.eq_ignore_ascii_case(b"EVALSHA") {
        by_sha(script)
    } else if command.eq_ignore_ascii_case(b"EVAL") {
        by_body(script)
    } else {
        None
    }
}

/// A call as the native command, and the channel the script publishes
/// on (for the ACL check: the native command does not check it).
#[derive(Debug, PartialEq, Eq)]
pub struct Rewrite {
    pub argv: Vec<Vec<u8>>,
    pub channel: Option<Vec<u8>>,
}

/// The native form of a call of `script` (`args` is the whole call,
/// `EVALSHA sha numkeys keys... argv...`), or `None` when it must run as
/// Lua. `cluster`: keys of another slot than the name stay with Lua, which
/// refuses them as Redis does.
pub fn rewrite(script: Script, args: &[&[u8]], cluster: bool) -> Option<Rewrite> {
    let same_slot = |name: &[u8], other: &[u8]| !cluster || key_slot(name) == key_slot(other);
    match (script, args) {
        (Script::LockAcquire, [_, _, b"1", name, lease, owner]) if is_time(lease, parse_lease_ms) => Some(Rewrite {
            argv: vec![b"RLOCK.ACQUIRE".to_vec(), name.to_vec(), owner.to_vec(), lease.to_vec()],
            channel: None,
        }),
        (Script::LockRelease, [_, _, b"3", name, channel, latch, message, lease, owner, publish, latch_ms])
            if is_release_channel(name, channel, message)
                && is_time(lease, parse_lease_ms)
                && is_time(latch_ms, parse_latch_ms)
                && same_slot(name, channel)
                && same_slot(name, latch) =>
        {
            let request_id = latch.strip_prefix(unlock_latch_key(name, b"").as_slice())?.strip_prefix(b":")?;
            if request_id.is_empty() || unlock_latch_key(name, request_id) != *latch {
                return None;
            }
            Some(Rewrite {
                argv: vec![
                    b"RLOCK.RELEASE".to_vec(),
                    name.to_vec(),
                    owner.to_vec(),
                    lease.to_vec(),
                    b"ID".to_vec(),
                    request_id.to_vec(),
                    b"PX".to_vec(),
                    latch_ms.to_vec(),
                    b"VIA".to_vec(),
                    publish_command(publish)?.to_vec(),
                ],
                channel: Some(channel.to_vec()),
            })
        }
        (Script::LockForceRelease, [_, _, b"2", name, channel, message, publish])
            if is_release_channel(name, channel, message) && same_slot(name, channel) =>
        {
            Some(Rewrite {
                argv: vec![
                    b"RLOCK.FORCERELEASE".to_vec(),
                    name.to_vec(),
                    b"VIA".to_vec(),
                    publish_command(publish)?.to_vec(),
                ],
                channel: Some(channel.to_vec()),
            })
        }
        _ => None,
    }
}

/// The channel the native command publishes on, and its message.
fn is_release_channel(name: &[u8], channel: &[u8], message: &[u8]) -> bool {
    message == UNLOCK_MESSAGE && channel == release_channel(name).as_slice()
}

/// A time both Redis (no leading zero) and the native command take.
fn is_time(arg: &[u8], parse: fn(&[u8]) -> Result<i64, crate::error::LockError>) -> bool {
    arg.first() != Some(&b'0') && parse(arg).is_ok()
}

/// `publish` or `spublish`, in any case, as `redis.call` looks it up.
fn publish_command(arg: &[u8]) -> Option<&'static [u8]> {
    if arg.eq_ignore_ascii_case(b"publish") {
        Some(b"PUBLISH")
    } else if arg.eq_ignore_ascii_case(b"spublish") {
        Some(b"SPUBLISH")
    } else {
        None
    }
}

#[cfg(test)]
mod tests;
