//! Redisson's scripts that run natively, recognised by their exact text,
//! and how each call becomes a native command. Pure: unit-tested without
//! Redis; `filter` applies it to the server's argv.
//!
//! Each primitive registers its texts in [`FAMILIES`] from a `redisson.rs`
//! of its own folder (see `lock/redisson.rs`): adding a primitive's scripts
//! touches neither this file nor the filter.
//!
//! A call is rewritten only when the native command answers exactly as
//! the script would, with the same effects: the keys and the channel the
//! script is given must be the ones the native command derives from the
//! name, every number must be one Redis itself would accept and the
//! native command takes. Anything else runs as Lua.

use crate::error::LockError;
use rlock_protocol::{
    hash_tag, is_joined, key_slot, release_channel_parts, strip_parts, unlock_latch_key_parts, UNLOCK_MESSAGE,
};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// One primitive's scripts, and how many calls of them ran natively.
pub struct Family {
    /// The `INFO rlock` counter is `rlock_redisson_native_<name>`.
    pub name: &'static str,
    pub native: AtomicU64,
    pub scripts: &'static [Known],
}

impl Family {
    pub const fn new(name: &'static str, scripts: &'static [Known]) -> Self {
        Self { name, native: AtomicU64::new(0), scripts }
    }

    pub fn record_native(&self) {
        self.native.fetch_add(1, Ordering::Relaxed);
    }
}

/// One script text: its SHA-1 (lower-case hex), its length in bytes, and
/// its rewrite. Each entry's comment names the Redisson method that sends
/// it and the releases that do (`tests/redisson_texts.rs` checks them
/// against Redisson's jars).
pub struct Known {
    pub sha1: &'static str,
    pub len: usize,
    pub rewrite: fn(&Call) -> Option<Rewrite>,
}

/// Every primitive's scripts.
#[linkme::distributed_slice]
pub static FAMILIES: [Family];

/// A script call's keys and arguments (`EVALSHA sha numkeys keys... argv...`).
pub struct Call<'a> {
    pub keys: &'a [&'a [u8]],
    pub argv: &'a [&'a [u8]],
    pub server: Server,
}

/// What a rewrite may depend on besides the call: the server it runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Server {
    /// Keys of another slot than the name stay with Lua, which refuses
    /// them in a cluster as Redis does.
    pub cluster: bool,
    /// A lock-delay is set (`crate::delay`): texts otherwise left to Lua
    /// for how they re-enter run natively, so that a delay refuses them.
    /// Set, not lasting: a call queued (MULTI) before a term began runs
    /// inside its delay.
    pub lock_delay: bool,
}

#[cfg(test)]
impl Server {
    /// With no lock-delay set, in cluster mode or not.
    pub fn plain(cluster: bool) -> Server {
        Server { cluster, lock_delay: false }
    }
}

impl Call<'_> {
    /// Whether `other` may be rewritten beside `name`: always outside a
    /// cluster, in one slot within one.
    pub fn same_slot(&self, name: &[u8], other: &[u8]) -> bool {
        !self.server.cluster || key_slot(name) == key_slot(other)
    }

    /// Whether every key that starts with `prefix` (keys a script builds
    /// from it, such as a read-write lock's hold keys) is in the slot of
    /// `name`: within a cluster, only when `prefix` has a hash tag of the
    /// name's slot (without one, the whole key is hashed, and what follows
    /// the prefix would decide).
    pub fn prefix_in_slot(&self, name: &[u8], prefix: &[u8]) -> bool {
        !self.server.cluster || (hash_tag(prefix).is_some() && key_slot(name) == key_slot(prefix))
    }
}

/// A call as the native command, and the channel the script publishes
/// on (for the ACL check: the native command does not check it).
#[derive(Debug, PartialEq, Eq)]
pub struct Rewrite {
    pub argv: Vec<Vec<u8>>,
    pub channel: Option<Vec<u8>>,
}

/// The text whose SHA-1 is `sha` (EVALSHA takes it in either case).
pub fn by_sha(sha: &[u8]) -> Option<(&'static Family, &'static Known)> {
    by_digest(&decode_sha1(sha)?)
}

/// The text `body`: hashed only when its length is one of a known text.
pub fn by_body(body: &[u8]) -> Option<(&'static Family, &'static Known)> {
    FAMILIES.iter().flat_map(|family| family.scripts).find(|known| known.len == body.len())?;
    by_digest(&sha1_smol::Sha1::from(body).digest().bytes())
}

/// Builds the index [`by_digest`] searches: at load, so that no call
/// through the filter pays for it.
pub fn prepare() {
    by_digest(&[0; 20]);
}

/// Every EVALSHA, and every EVAL of a known length, ends here: a binary
/// search over the texts' digests, sorted once, rather than a walk
/// comparing hex strings.
fn by_digest(digest: &Digest) -> Option<(&'static Family, &'static Known)> {
    static INDEX: OnceLock<Vec<(Digest, &'static Family, &'static Known)>> = OnceLock::new();
    let index = INDEX.get_or_init(|| {
        let mut index: Vec<_> = FAMILIES
            .iter()
            .flat_map(|family| family.scripts.iter().map(move |known| (family, known)))
            .filter_map(|(family, known)| Some((decode_sha1(known.sha1.as_bytes())?, family, known)))
            .collect();
        index.sort_by_key(|(digest, ..)| *digest);
        index
    });
    let found = index.binary_search_by_key(digest, |(digest, ..)| *digest).ok()?;
    let (_, family, known) = index[found];
    Some((family, known))
}

type Digest = [u8; 20];

fn hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// A SHA-1 in hex, in either case.
fn decode_sha1(hex: &[u8]) -> Option<Digest> {
    let mut digest = [0; 20];
    if hex.len() != 2 * digest.len() {
        return None;
    }
    for (byte, pair) in digest.iter_mut().zip(hex.chunks_exact(2)) {
        *byte = hex_digit(pair[0])? << 4 | hex_digit(pair[1])?;
    }
    Some(digest)
}

/// Which text an `EVAL`/`EVALSHA` call runs, if a known one.
pub fn identify(args: &[&[u8]]) -> Option<(&'static Family, &'static Known)> {
    let [command, script, ..] = args else { return None };
    if command.eq_ignore_ascii_case(b"EVALSHA") {
        by_sha(script)
    } else if command.eq_ignore_ascii_case(b"EVAL") {
        by_body(script)
    } else {
        None
    }
}

/// The native form of a call of `known` (`args` is the whole call), or
/// `None` when it must run as Lua. Only a `numkeys` written as Redisson
/// writes it is taken.
pub fn rewrite(known: &Known, args: &[&[u8]], server: Server) -> Option<Rewrite> {
    let [_, _, numkeys, rest @ ..] = args else { return None };
    if numkeys.first() == Some(&b'0') || !numkeys.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let count: usize = std::str::from_utf8(numkeys).ok()?.parse().ok()?;
    if count > rest.len() {
        return None;
    }
    let (keys, argv) = rest.split_at(count);
    (known.rewrite)(&Call { keys, argv, server })
}

/// A time both Redis (no leading zero) and the native command take.
pub fn is_time(arg: &[u8], parse: fn(&[u8]) -> Result<i64, LockError>) -> bool {
    arg.first() != Some(&b'0') && parse(arg).is_ok()
}

/// A clock reading (or a count) ZRANGEBYSCORE, Lua and the command read
/// alike: an integer of 0 .. 2^53 (a double holds each exactly), without
/// leading zeros.
pub fn is_clock(arg: &[u8]) -> bool {
    let plain = arg == b"0" || arg.first().is_some_and(|digit| (b'1'..=b'9').contains(digit));
    plain && crate::lock::parse_hold_count(arg).is_ok_and(|now| (0..=1 << 53).contains(&now))
}

/// `publish` or `spublish`, in any case, as `redis.call` looks it up.
pub fn publish_command(arg: &[u8]) -> Option<&'static [u8]> {
    if arg.eq_ignore_ascii_case(b"publish") {
        Some(b"PUBLISH")
    } else if arg.eq_ignore_ascii_case(b"spublish") {
        Some(b"SPUBLISH")
    } else {
        None
    }
}

/// Whether `channel` and `message` are the release channel of `name` and
/// the unlock message, which the native commands derive and publish.
/// Compared in place: no channel name is made.
pub fn is_release_channel(name: &[u8], channel: &[u8], message: &[u8]) -> bool {
    message == UNLOCK_MESSAGE && is_joined(channel, &release_channel_parts(name))
}

/// The request id of `latch`, when it is the unlock latch key the native
/// command derives from `name` and that id (`prefix:id`, compared in
/// place).
pub fn latch_request_id<'a>(name: &[u8], latch: &'a [u8]) -> Option<&'a [u8]> {
    let request_id = strip_parts(latch, &unlock_latch_key_parts(name, b""))?.strip_prefix(b":")?;
    (!request_id.is_empty()).then_some(request_id)
}

/// Builds a native argv from byte strings.
pub fn native(args: &[&[u8]]) -> Vec<Vec<u8>> {
    args.iter().map(|arg| arg.to_vec()).collect()
}

/// Test helpers for each primitive's table.
#[cfg(test)]
pub mod testing {
    use super::{identify, rewrite, Rewrite, Server};

    /// The rewrite of `EVALSHA sha numkeys keys... argv...` (`args` from
    /// numkeys on), checking the text is `family`'s.
    pub fn rewritten(family: &str, sha: &[u8], args: &[&[u8]], cluster: bool) -> Option<Rewrite> {
        let (found, known) = identify(&[b"EVALSHA", sha]).expect("a known text");
        assert_eq!(found.name, family);
        let call: Vec<&[u8]> = [&b"EVALSHA"[..], sha].into_iter().chain(args.iter().copied()).collect();
        rewrite(known, &call, Server::plain(cluster))
    }

    /// A native call `args` announced on `channel`.
    pub fn native(args: &[&str], channel: Option<&[u8]>) -> Option<Rewrite> {
        let argv = args.iter().map(|arg| arg.as_bytes().to_vec()).collect();
        Some(Rewrite { argv, channel: channel.map(<[u8]>::to_vec) })
    }
}

#[cfg(test)]
mod tests;
