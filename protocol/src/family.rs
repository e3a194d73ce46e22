//! Redisson's derived names for the rest of the lock family (protocol page
//! §0.1): every key and channel a family command derives from a name.

/// Redisson's `prefix(P, name)`: `P:{name}`, or `P:name` when the name
/// already contains a `{`.
pub fn prefix(prefix: &[u8], name: &[u8]) -> Vec<u8> {
    let mut derived = Vec::with_capacity(prefix.len() + name.len() + 3);
    derived.extend_from_slice(prefix);
    derived.push(b':');
    push_tagged(&mut derived, name);
    derived
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
    if name.contains(&b'{') {
        out.extend_from_slice(name);
    } else {
        out.push(b'{');
        out.extend_from_slice(name);
        out.push(b'}');
    }
}

/// The fair lock's waiter queue (a list of owners).
pub fn fair_queue_key(name: &[u8]) -> Vec<u8> {
    prefix(b"redisson_lock_queue", name)
}

/// The fair lock's deadlines (a sorted set, owner -> Unix ms).
pub fn fair_timeout_key(name: &[u8]) -> Vec<u8> {
    prefix(b"redisson_lock_timeout", name)
}

/// The channel on which one fair-lock waiter is told its turn has come.
pub fn fair_waiter_channel(name: &[u8], owner: &[u8]) -> Vec<u8> {
    let mut channel = crate::release_channel(name);
    channel.push(b':');
    channel.extend_from_slice(owner);
    channel
}

/// The read-write lock's channel, shared by readers and writers.
pub fn rwlock_channel(name: &[u8]) -> Vec<u8> {
    prefix(b"redisson_rwlock", name)
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

/// The timeout key of an owner's `n`-th read hold (a string with the
/// hold's own expiry). `field` is the hash field, i.e. the owner.
pub fn rwlock_timeout_key(name: &[u8], field: &[u8], n: i64) -> Vec<u8> {
    let mut key = suffix(name, field);
    key.extend_from_slice(b":rwlock_timeout:");
    key.extend_from_slice(n.to_string().as_bytes());
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_redissons_prefix_and_suffix_rules() {
        let cases: [(Vec<u8>, &[u8]); 10] = [
            (fair_queue_key(b"orders"), b"redisson_lock_queue:{orders}"),
            (fair_queue_key(b"{o}rders"), b"redisson_lock_queue:{o}rders"),
            (fair_timeout_key(b"orders"), b"redisson_lock_timeout:{orders}"),
            (fair_waiter_channel(b"orders", b"u:1"), b"redisson_lock__channel:{orders}:u:1"),
            (fair_waiter_channel(b"a{b}", b"u:1"), b"redisson_lock__channel:a{b}:u:1"),
            (rwlock_channel(b"cfg"), b"redisson_rwlock:{cfg}"),
            (rwlock_key_prefix(b"cfg"), b"{cfg}"),
            (rwlock_key_prefix(b"x{cfg}"), b"x{cfg}"),
            (rwlock_timeout_key(b"cfg", b"u:1", 2), b"{cfg}:u:1:rwlock_timeout:2"),
            (rwlock_timeout_key(b"x{cfg}", b"u:1", 10), b"x{cfg}:u:1:rwlock_timeout:10"),
        ];
        for (derived, expected) in cases {
            assert_eq!(String::from_utf8_lossy(&derived), String::from_utf8_lossy(expected));
        }
        assert_eq!(rwlock_write_field(b"u:1"), b"u:1:write");
        assert_eq!(suffix(b"s", b"timeout"), b"{s}:timeout");
    }
}
