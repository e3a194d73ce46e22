//! Redisson's derived names for the rest of the lock family (docs/commands.md):
//! every key and channel a family command derives from a name.

/// Redisson's `prefix(P, name)`: `P:{name}`, or `P:name` when the name
/// already contains a `{`.
pub fn prefix(prefix: &[u8], name: &[u8]) -> Vec<u8> {
    prefix_parts(prefix, name).concat()
}

/// [`prefix`] as the parts it joins, for a caller that joins them in a
/// buffer of its own or compares a name with them in place.
pub fn prefix_parts<'a>(prefix: &'a [u8], name: &'a [u8]) -> [&'a [u8]; 4] {
    if name.contains(&b'{') {
        [prefix, b":", name, b""]
    } else {
        [prefix, b":{", name, b"}"]
    }
}

/// What follows `parts` joined at the start of `bytes`, when they are
/// there: a derived name checked in place, with no name made.
pub fn strip_parts<'a>(bytes: &'a [u8], parts: &[&[u8]]) -> Option<&'a [u8]> {
    parts.iter().try_fold(bytes, |rest, part| rest.strip_prefix(*part))
}

/// Whether `bytes` are `parts` joined, compared in place.
pub fn is_joined(bytes: &[u8], parts: &[&[u8]]) -> bool {
    strip_parts(bytes, parts) == Some(b"")
}

/// Redisson's `suffix(name, S)`: `{name}:S`, or `name:S` when the name
/// already contains a `{`.
pub fn suffix(name: &[u8], suffix: &[u8]) -> Vec<u8> {
    let mut derived = Vec::with_capacity(name.len() + suffix.len() + 3);
    push_tagged(&mut derived, name);
    derived.push(b':');
    derived.extend_from_slice(suffix);
    derived
}

fn push_tagged(out: &mut Vec<u8>, name: &[u8]) {
    tagged_parts(name).iter().for_each(|part| out.extend_from_slice(part));
}

/// A name as Redisson tags it, as parts: `{name}`, or `name` when it
/// already contains a `{`.
fn tagged_parts(name: &[u8]) -> [&[u8]; 3] {
    if name.contains(&b'{') {
        [b"", name, b""]
    } else {
        [b"{", name, b"}"]
    }
}

/// The fair lock's waiter queue (a list of owners).
pub fn fair_queue_key(name: &[u8]) -> Vec<u8> {
    fair_queue_key_parts(name).concat()
}

/// [`fair_queue_key`] as the parts it joins (see [`prefix_parts`]).
pub fn fair_queue_key_parts(name: &[u8]) -> [&[u8]; 4] {
    prefix_parts(b"redisson_lock_queue", name)
}

/// The fair lock's deadlines (a sorted set, owner -> Unix ms).
pub fn fair_timeout_key(name: &[u8]) -> Vec<u8> {
    fair_timeout_key_parts(name).concat()
}

/// [`fair_timeout_key`] as the parts it joins (see [`prefix_parts`]).
pub fn fair_timeout_key_parts(name: &[u8]) -> [&[u8]; 4] {
    prefix_parts(b"redisson_lock_timeout", name)
}

/// The channel on which one fair-lock waiter is told its turn has come.
pub fn fair_waiter_channel(name: &[u8], owner: &[u8]) -> Vec<u8> {
    fair_waiter_channel_parts(name, owner).concat()
}

/// [`fair_waiter_channel`] as the parts it joins (see [`prefix_parts`]).
pub fn fair_waiter_channel_parts<'a>(name: &'a [u8], owner: &'a [u8]) -> [&'a [u8]; 6] {
    let [prefix, open, name, close] = crate::release_channel_parts(name);
    [prefix, open, name, close, b":", owner]
}

/// The read-write lock's channel, shared by readers and writers.
pub fn rwlock_channel(name: &[u8]) -> Vec<u8> {
    rwlock_channel_parts(name).concat()
}

/// [`rwlock_channel`] as the parts it joins (see [`prefix_parts`]).
pub fn rwlock_channel_parts(name: &[u8]) -> [&[u8]; 4] {
    prefix_parts(b"redisson_rwlock", name)
}

/// The hash field of a write hold: the owner with `:write` appended.
pub fn rwlock_write_field(owner: &[u8]) -> Vec<u8> {
    [owner, b":write"].concat()
}

/// What read holds' timeout keys start with (the script's "key prefix"):
/// `{name}`, or `name` when it has a `{`.
pub fn rwlock_key_prefix(name: &[u8]) -> Vec<u8> {
    let mut derived = Vec::with_capacity(name.len() + 2);
    push_tagged(&mut derived, name);
    derived
}

/// [`rwlock_key_prefix`] as the parts it joins, for a caller that
/// compares a prefix with them in place.
pub fn rwlock_key_prefix_parts(name: &[u8]) -> [&[u8]; 3] {
    tagged_parts(name)
}

/// The prefix of an owner's read holds' timeout keys, the script's `P`:
/// `{name}:owner:rwlock_timeout`, or `name:owner:rwlock_timeout` when the
/// name has a `{`.
pub fn rwlock_timeout_prefix(name: &[u8], owner: &[u8]) -> Vec<u8> {
    rwlock_timeout_prefix_parts(name, owner).concat()
}

/// [`rwlock_timeout_prefix`] as the parts it joins (see
/// [`rwlock_key_prefix_parts`]).
pub fn rwlock_timeout_prefix_parts<'a>(name: &'a [u8], owner: &'a [u8]) -> [&'a [u8]; 6] {
    let [open, name, close] = tagged_parts(name);
    [open, name, close, b":", owner, b":rwlock_timeout"]
}

/// The timeout key of an owner's `n`-th read hold (a string with the
/// hold's own expiry). `field` is the hash field, i.e. the owner.
pub fn rwlock_timeout_key(name: &[u8], field: &[u8], n: i64) -> Vec<u8> {
    rwlock_timeout_key_parts(name, field, crate::decimal(n, &mut crate::DecimalBuffer::new())).concat()
}

/// [`rwlock_timeout_key`] as the parts it joins, `n` written out (for a
/// key joined on the stack, see `Joined`).
pub fn rwlock_timeout_key_parts<'a>(name: &'a [u8], field: &'a [u8], n: &'a [u8]) -> [&'a [u8]; 8] {
    let [open, name, close, colon, field, tail] = rwlock_timeout_prefix_parts(name, field);
    [open, name, close, colon, field, tail, b":", n]
}

/// Redisson's `fairLockWaitTimeout` default (3.46+): the `wait` a fair
/// lock's no-wait acquire shifts the deadlines by, and the waiting form's
/// when the caller gives no wait time.
pub const DEFAULT_FAIR_WAIT_MS: i64 = 300_000;

/// The channel of a semaphore and of a permit-expirable semaphore; each
/// message is a permit count.
pub fn semaphore_channel(name: &[u8]) -> Vec<u8> {
    semaphore_channel_parts(name).concat()
}

/// [`semaphore_channel`] as the parts it joins (see [`prefix_parts`]).
pub fn semaphore_channel_parts(name: &[u8]) -> [&[u8]; 4] {
    prefix_parts(b"redisson_sc", name)
}

/// The permit-expirable semaphore's permits (a sorted set, permit id ->
/// Unix ms of its expiry).
pub fn permit_timeout_key(name: &[u8]) -> Vec<u8> {
    suffix(name, b"timeout")
}

/// The score of a permit that never expires (Redisson's
/// `nonExpirableTimeout`, a lease of -1).
pub const PERMIT_NEVER_EXPIRES: i64 = 922_337_203_685_477;

/// The count-down latch's channel. Redisson always adds the braces, even
/// to a name that has some: such a channel may hash to another slot.
pub fn count_down_latch_channel(name: &[u8]) -> Vec<u8> {
    count_down_latch_channel_parts(name).concat()
}

/// [`count_down_latch_channel`] as the parts it joins, for a caller that
/// joins them in a buffer of its own or compares a channel with them.
pub fn count_down_latch_channel_parts(name: &[u8]) -> [&[u8]; 3] {
    [b"redisson_countdownlatch__channel__{", name, b"}"]
}

/// The fenced lock's token counter (a string that never expires).
pub fn fenced_token_key(name: &[u8]) -> Vec<u8> {
    fenced_token_key_parts(name).concat()
}

/// [`fenced_token_key`] as the parts it joins (see [`prefix_parts`]).
pub fn fenced_token_key_parts(name: &[u8]) -> [&[u8]; 4] {
    prefix_parts(b"redisson_lock_token", name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_read_write_lock_prefixes_parts_join_to_the_prefixes() {
        for name in [&b"n"[..], b"{n}x", b"a{b", b"", b"\x00\xff"] {
            assert_eq!(rwlock_key_prefix_parts(name).concat(), rwlock_key_prefix(name));
            assert_eq!(rwlock_timeout_prefix_parts(name, b"o:1").concat(), rwlock_timeout_prefix(name, b"o:1"));
        }
    }

    #[test]
    fn prefix_and_suffix_tag_a_name_without_braces() {
        let cases: [(Vec<u8>, &[u8]); 8] = [
            (prefix(b"P", b"n"), b"P:{n}"),
            (prefix(b"P", b"{n}x"), b"P:{n}x"),
            (prefix(b"P", b"a{b"), b"P:a{b"),
            (prefix(b"P", b""), b"P:{}"),
            (suffix(b"n", b"S"), b"{n}:S"),
            (suffix(b"x{n}", b"S"), b"x{n}:S"),
            (suffix(b"a{b", b"S"), b"a{b:S"),
            (suffix(b"\x00\xff", b"S"), b"{\x00\xff}:S"),
        ];
        for (derived, expected) in cases {
            assert_eq!(String::from_utf8_lossy(&derived), String::from_utf8_lossy(expected));
        }
    }

    #[test]
    fn strip_parts_strips_the_joined_parts_only() {
        let parts: [&[u8]; 4] = prefix_parts(b"P", b"n");
        let cases: [(&[u8], Option<&[u8]>); 5] =
            [(b"P:{n}", Some(b"")), (b"P:{n}:id", Some(b":id")), (b"P:{n", None), (b"P:n}", None), (b"", None)];
        for (bytes, rest) in cases {
            assert_eq!(strip_parts(bytes, &parts), rest, "{}", String::from_utf8_lossy(bytes));
        }
    }

    #[test]
    fn names_follow_redissons_prefix_and_suffix_rules() {
        let cases: [(Vec<u8>, &[u8]); 22] = [
            (fair_queue_key(b"orders"), b"redisson_lock_queue:{orders}"),
            (fair_queue_key(b"{o}rders"), b"redisson_lock_queue:{o}rders"),
            (fair_timeout_key(b"orders"), b"redisson_lock_timeout:{orders}"),
            (fair_timeout_key(b"{o}rders"), b"redisson_lock_timeout:{o}rders"),
            (fair_waiter_channel(b"orders", b"u:1"), b"redisson_lock__channel:{orders}:u:1"),
            (fair_waiter_channel(b"a{b}", b"u:1"), b"redisson_lock__channel:a{b}:u:1"),
            (rwlock_channel(b"cfg"), b"redisson_rwlock:{cfg}"),
            (rwlock_channel(b"{c}fg"), b"redisson_rwlock:{c}fg"),
            (rwlock_key_prefix(b"cfg"), b"{cfg}"),
            (rwlock_key_prefix(b"x{cfg}"), b"x{cfg}"),
            (rwlock_timeout_prefix(b"cfg", b"u:1"), b"{cfg}:u:1:rwlock_timeout"),
            (rwlock_timeout_prefix(b"x{cfg}", b"u:1"), b"x{cfg}:u:1:rwlock_timeout"),
            (rwlock_timeout_key(b"cfg", b"u:1", 2), b"{cfg}:u:1:rwlock_timeout:2"),
            (rwlock_timeout_key(b"x{cfg}", b"u:1", 10), b"x{cfg}:u:1:rwlock_timeout:10"),
            (rwlock_write_field(b"u:1"), b"u:1:write"),
            (semaphore_channel(b"s"), b"redisson_sc:{s}"),
            (semaphore_channel(b"{s}1"), b"redisson_sc:{s}1"),
            (permit_timeout_key(b"s"), b"{s}:timeout"),
            (permit_timeout_key(b"{s}1"), b"{s}1:timeout"),
            (count_down_latch_channel(b"l"), b"redisson_countdownlatch__channel__{l}"),
            (count_down_latch_channel(b"a{b}"), b"redisson_countdownlatch__channel__{a{b}}"),
            (fenced_token_key(b"f"), b"redisson_lock_token:{f}"),
        ];
        for (derived, expected) in cases {
            assert_eq!(String::from_utf8_lossy(&derived), String::from_utf8_lossy(expected));
        }
    }

    /// The script's "key prefix" K and the timeout prefix P agree: P is
    /// K + `:owner:rwlock_timeout`, which is how the read release finds
    /// every field's timeout keys.
    #[test]
    fn the_key_prefix_is_the_timeout_prefix_cut_before_the_owner() {
        for name in [&b"cfg"[..], b"x{cfg}", b"a{b", b""] {
            let expected = [&rwlock_key_prefix(name)[..], b":u:1:rwlock_timeout"].concat();
            assert_eq!(rwlock_timeout_prefix(name, b"u:1"), expected);
        }
    }
}
