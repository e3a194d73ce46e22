//! Redisson's scripts that run natively, recognised by their exact text,
//! and how each call becomes a native command. Pure: unit-tested without
//! Redis; `filter` applies it to the server's argv.
//!
//! Each primitive names its texts (a [`Family`], in a `redisson.rs` of its
//! own folder, see `lock/redisson.rs`) in its descriptor (`primitive`):
//! adding a primitive's scripts touches neither this file nor the filter.
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
use smallvec::SmallVec;
use std::sync::atomic::{AtomicU64, Ordering};

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
    pub rewrite: for<'a> fn(&Call<'a>) -> Option<Rewrite<'a>>,
}

mod index;
pub use index::prepare;
use index::{by_body, by_sha};
#[cfg(test)]
use index::{decode_sha1, hex_key};

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
}

#[cfg(test)]
impl Server {
    /// In cluster mode or not.
    pub fn plain(cluster: bool) -> Server {
        Server { cluster }
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
/// on (for the ACL check: the native command does not check it). Borrows
/// the call's arguments (`'a`).
#[derive(Debug, PartialEq, Eq)]
pub struct Rewrite<'a> {
    pub argv: Argv<'a>,
    pub channel: Option<Channel<'a>>,
}

impl Rewrite<'_> {
    /// The same rewrite owning every byte (for a rewrite of arguments it
    /// made itself, and for tests).
    pub fn into_made<'b>(self) -> Rewrite<'b> {
        let mut argv = Argv::default();
        self.argv.iter().for_each(|arg| argv.push_made(arg));
        Rewrite { argv, channel: self.channel.map(|channel| Channel::joined(&[&channel])) }
    }
}

/// A channel a rewrite names: one of the call's (`.into()`), or a derived
/// name ([`Channel::joined`]), inline for a usual name.
pub enum Channel<'a> {
    Lent(&'a [u8]),
    Joined(SmallVec<[u8; 64]>),
}

impl std::ops::Deref for Channel<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Channel::Lent(bytes) => bytes,
            Channel::Joined(bytes) => bytes,
        }
    }
}

impl Channel<'_> {
    /// `parts` joined, inline for a usual name (no `Vec` made first).
    pub fn joined(parts: &[&[u8]]) -> Self {
        let mut bytes = SmallVec::new();
        parts.iter().for_each(|part| bytes.extend_from_slice(part));
        Self::Joined(bytes)
    }
}

impl<'a> From<&'a [u8]> for Channel<'a> {
    fn from(bytes: &'a [u8]) -> Self {
        Self::Lent(bytes)
    }
}

impl<'a> From<&&'a [u8]> for Channel<'a> {
    fn from(bytes: &&'a [u8]) -> Self {
        Self::Lent(bytes)
    }
}

impl PartialEq for Channel<'_> {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for Channel<'_> {}

impl std::fmt::Debug for Channel<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        String::from_utf8_lossy(self).fmt(f)
    }
}

/// A native call's arguments: the call's own and constants lent, not
/// copied (the filter finds the call's own string of an argument by its
/// address), and the few a rewrite makes (a count it writes, say) kept
/// inline. Equal when the arguments' bytes are.
#[derive(Default, Clone)]
pub struct Argv<'a> {
    args: SmallVec<[Piece<'a>; 12]>,
    made: SmallVec<[u8; 32]>,
}

/// An argument: lent, or made (its start and end in `Argv::made`).
#[derive(Clone, Copy)]
enum Piece<'a> {
    Lent(&'a [u8]),
    Made(u32, u32),
}

impl<'a> Argv<'a> {
    pub fn push(&mut self, arg: &'a [u8]) {
        self.args.push(Piece::Lent(arg));
    }

    /// Appends a copy of `arg`, which the rewrite made.
    pub fn push_made(&mut self, arg: &[u8]) {
        let start = self.made.len() as u32;
        self.made.extend_from_slice(arg);
        self.args.push(Piece::Made(start, self.made.len() as u32));
    }

    /// Appends each group's arguments in turn, with one reservation (a
    /// `SmallVec` checks where its buffer is at every push or extend).
    pub(super) fn extend_from_groups(&mut self, groups: &[&[&'a [u8]]]) {
        let count = groups.iter().map(|group| group.len()).sum();
        self.args.reserve(count);
        let (start, places) = (self.args.len(), self.args.as_mut_ptr());
        let mut at = start;
        for group in groups {
            for &arg in *group {
                // SAFETY: `count` places were reserved past the length,
                // and are written before the length covers them.
                unsafe { places.add(at).write(Piece::Lent(arg)) };
                at += 1;
            }
        }
        // SAFETY: written above.
        unsafe { self.args.set_len(start + count) };
    }

    pub fn len(&self) -> usize {
        self.args.len()
    }

    /// Argument `at` (of [`len`](Self::len)).
    pub fn arg(&self, at: usize) -> &[u8] {
        self.piece(self.args[at])
    }

    fn piece(&self, piece: Piece<'a>) -> &[u8] {
        match piece {
            Piece::Lent(arg) => arg,
            Piece::Made(start, end) => &self.made[start as usize..end as usize],
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = &[u8]> + use<'_, 'a> {
        self.args.iter().map(|&piece| self.piece(piece))
    }
}

impl PartialEq for Argv<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for Argv<'_> {}

impl std::fmt::Debug for Argv<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter().map(String::from_utf8_lossy)).finish()
    }
}

impl<'a> FromIterator<&'a [u8]> for Argv<'a> {
    fn from_iter<I: IntoIterator<Item = &'a [u8]>>(args: I) -> Self {
        let mut argv = Argv::default();
        args.into_iter().for_each(|arg| argv.push(arg));
        argv
    }
}

/// Owned arguments, for tests.
#[cfg(test)]
impl FromIterator<Vec<u8>> for Argv<'static> {
    fn from_iter<I: IntoIterator<Item = Vec<u8>>>(args: I) -> Self {
        let mut argv = Argv::default();
        args.into_iter().for_each(|arg| argv.push_made(&arg));
        argv
    }
}

#[cfg(test)]
impl From<Vec<Vec<u8>>> for Argv<'static> {
    fn from(args: Vec<Vec<u8>>) -> Self {
        args.into_iter().collect()
    }
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
pub fn rewrite<'a>(known: &Known, args: &'a [&'a [u8]], server: Server) -> Option<Rewrite<'a>> {
    let [_, _, numkeys, rest @ ..] = args else { return None };
    if numkeys.first().is_none_or(|&first| first == b'0') || !numkeys.iter().all(u8::is_ascii_digit) {
        return None;
    }
    // Digits only (checked above): no UTF-8 check, no sign to parse.
    let count = numkeys
        .iter()
        .try_fold(0usize, |count, digit| count.checked_mul(10)?.checked_add(usize::from(digit - b'0')))?;
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

/// Builds a native argv from byte strings: the call's own (borrowed from
/// it, as given), constants, or bytes the rewrite made.
pub fn native<'a>(args: &[&'a [u8]]) -> Argv<'a> {
    native_joined(&[args])
}

/// [`native`] of several groups of arguments, one after the other, with
/// no copy of the groups joined.
pub fn native_joined<'a>(groups: &[&[&'a [u8]]]) -> Argv<'a> {
    let mut argv = Argv::default();
    argv.extend_from_groups(groups);
    argv
}

/// Test helpers for each primitive's table.
#[cfg(test)]
pub mod testing {
    use super::{identify, rewrite, Channel, Rewrite, Server};

    /// The rewrite of `EVALSHA sha numkeys keys... argv...` (`args` from
    /// numkeys on), checking the text is `family`'s.
    pub fn rewritten(family: &str, sha: &[u8], args: &[&[u8]], cluster: bool) -> Option<Rewrite<'static>> {
        let (found, known) = identify(&[b"EVALSHA", sha]).expect("a known text");
        assert_eq!(found.name, family);
        let call: Vec<&[u8]> = [&b"EVALSHA"[..], sha].into_iter().chain(args.iter().copied()).collect();
        rewrite(known, &call, Server::plain(cluster)).map(Rewrite::into_made)
    }

    /// A native call `args` announced on `channel`.
    pub fn native(args: &[&str], channel: Option<&[u8]>) -> Option<Rewrite<'static>> {
        let argv = args.iter().map(|arg| arg.as_bytes().to_vec()).collect();
        Some(Rewrite { argv, channel: channel.map(|channel| Channel::joined(&[channel])) })
    }
}

#[cfg(test)]
mod tests;
