//! Table-driven tests of the protocol rules over an in-memory keyspace.

use super::fixtures::{fields, hash, missing, string_key, with_lock};
use super::*;
use crate::keyspace::memory::MemoryKeyspace;
use std::collections::BTreeMap;

const NOW: i64 = 1_000_000;
const LEASE: i64 = 30_000;

/// One row: a starting key, an operation, and what must follow.
struct Case {
    name: &'static str,
    before: MemoryKeyspace,
    op: Op,
    reply: Result<String, LockError>,
    effects: &'static [&'static str],
    /// Fields after the operation (ignored when the key is missing or not a hash).
    after_fields: &'static [(&'static str, &'static str)],
}

enum Op {
    Acquire(&'static str),
    /// An acquire while a lock-delay of 700 ms lasts.
    AcquireDelayed(&'static str),
    Renew(&'static str),
    Release(&'static str),
    Force,
    Status(Option<&'static str>),
}

fn run(keys: &mut MemoryKeyspace, op: &Op) -> Result<String, LockError> {
    with_lock(keys, |store| {
        Ok(match *op {
            Op::Acquire(o) => format!("{:?}", acquire(store, o.as_bytes(), LEASE, (NOW, Delay::OVER))?),
            Op::AcquireDelayed(o) => format!("{:?}", acquire(store, o.as_bytes(), LEASE, (NOW, Delay::left(700)))?),
            Op::Renew(o) => format!("{:?}", renew(store, o.as_bytes(), LEASE, NOW)?),
            Op::Release(o) => format!("{:?}", release(store, o.as_bytes(), LEASE, NOW)?),
            Op::Force => format!("{:?}", force_release(store)?),
            Op::Status(o) => format!("{:?}", status(store, o.map(str::as_bytes), NOW)?),
        })
    })
}

/// A lock held by `owner` `count` times, with `ttl` ms of lease left.
fn held(owner: &str, count: &str, ttl: i64) -> MemoryKeyspace {
    hash(&[(owner, count)], Some(NOW + ttl))
}

fn cases() -> Vec<Case> {
    const PUBLISH: &str = "PUBLISH redisson_lock__channel:{l} 0";
    const EXPIRE: &str = "PEXPIREAT l 1030000";
    vec![
        Case {
            name: "acquire a free lock",
            before: missing(),
            op: Op::Acquire("a"),
            reply: Ok("Acquired".into()),
            effects: &["HINCRBY l a 1", EXPIRE],
            after_fields: &[("a", "1")],
        },
        Case {
            name: "re-enter an owned lock",
            before: held("a", "1", 500),
            op: Op::Acquire("a"),
            reply: Ok("Reentered { count: 2 }".into()),
            effects: &["HINCRBY l a 1", EXPIRE],
            after_fields: &[("a", "2")],
        },
        Case {
            name: "contend for a held lock",
            before: held("a", "1", 500),
            op: Op::Acquire("b"),
            reply: Ok("Contended { pttl_ms: 500 }".into()),
            effects: &[],
            after_fields: &[("a", "1")],
        },
        Case {
            name: "a lock-delay refuses a free lock for its rest",
            before: missing(),
            op: Op::AcquireDelayed("a"),
            reply: Ok("Contended { pttl_ms: 700 }".into()),
            effects: &[],
            after_fields: &[],
        },
        Case {
            // Its release may have been lost with the old primary.
            name: "a lock-delay defers a holder's re-entry to its end",
            before: held("a", "1", 900),
            op: Op::AcquireDelayed("a"),
            reply: Ok("Contended { pttl_ms: 700 }".into()),
            effects: &[],
            after_fields: &[("a", "1")],
        },
        Case {
            name: "a lock-delay outlasting the holder's lease is told",
            before: held("a", "1", 500),
            op: Op::AcquireDelayed("b"),
            reply: Ok("Contended { pttl_ms: 700 }".into()),
            effects: &[],
            after_fields: &[("a", "1")],
        },
        Case {
            name: "a holder's lease outlasting a lock-delay is told",
            before: held("a", "1", 900),
            op: Op::AcquireDelayed("b"),
            reply: Ok("Contended { pttl_ms: 900 }".into()),
            effects: &[],
            after_fields: &[("a", "1")],
        },
        Case {
            name: "contend for a lock with no expiry",
            before: hash(&[("a", "1")], None),
            op: Op::Acquire("b"),
            reply: Ok("Contended { pttl_ms: -1 }".into()),
            effects: &[],
            after_fields: &[("a", "1")],
        },
        Case {
            name: "acquire on a string key",
            before: string_key(),
            op: Op::Acquire("a"),
            reply: Err(LockError::WrongType),
            effects: &[],
            after_fields: &[],
        },
        Case {
            name: "re-enter a hash whose count is not an integer",
            before: hash(&[("a", "x")], None),
            op: Op::Acquire("a"),
            reply: Err(LockError::NotALock),
            effects: &[],
            after_fields: &[("a", "x")],
        },
        Case {
            name: "re-enter at the largest count",
            before: hash(&[("a", "9223372036854775807")], None),
            op: Op::Acquire("a"),
            reply: Err(LockError::HoldCountOverflow),
            effects: &[],
            after_fields: &[("a", "9223372036854775807")],
        },
        Case {
            name: "renew an owned lock",
            before: held("a", "3", 5),
            op: Op::Renew("a"),
            reply: Ok("Renewed".into()),
            effects: &[EXPIRE],
            after_fields: &[("a", "3")],
        },
        Case {
            name: "renew someone else's lock",
            before: held("a", "1", 5),
            op: Op::Renew("b"),
            reply: Ok("NotHeld".into()),
            effects: &[],
            after_fields: &[("a", "1")],
        },
        Case {
            name: "renew never creates a key",
            before: missing(),
            op: Op::Renew("a"),
            reply: Ok("NotHeld".into()),
            effects: &[],
            after_fields: &[],
        },
        Case {
            name: "renew on a string key",
            before: string_key(),
            op: Op::Renew("a"),
            reply: Err(LockError::WrongType),
            effects: &[],
            after_fields: &[],
        },
        Case {
            name: "release one reentry level",
            before: held("a", "2", 5),
            op: Op::Release("a"),
            reply: Ok("Decremented { count: 1 }".into()),
            effects: &["HINCRBY l a -1", EXPIRE],
            after_fields: &[("a", "1")],
        },
        Case {
            name: "release the last level",
            before: held("a", "1", 5),
            op: Op::Release("a"),
            reply: Ok("Released".into()),
            effects: &["DEL l", PUBLISH],
            after_fields: &[],
        },
        Case {
            name: "release a lock held by someone else",
            before: held("a", "1", 5),
            op: Op::Release("b"),
            reply: Ok("NotHeld".into()),
            effects: &[],
            after_fields: &[("a", "1")],
        },
        Case {
            name: "release a missing lock",
            before: missing(),
            op: Op::Release("a"),
            reply: Ok("NotHeld".into()),
            effects: &[],
            after_fields: &[],
        },
        Case {
            name: "release with a non-integer count",
            before: hash(&[("a", "1.5")], None),
            op: Op::Release("a"),
            reply: Err(LockError::NotALock),
            effects: &[],
            after_fields: &[("a", "1.5")],
        },
        Case {
            name: "force-release a held lock",
            before: held("a", "4", 5),
            op: Op::Force,
            reply: Ok("Released".into()),
            effects: &["DEL l", PUBLISH],
            after_fields: &[],
        },
        Case {
            name: "force-release a missing lock",
            before: missing(),
            op: Op::Force,
            reply: Ok("NotLocked".into()),
            effects: &[],
            after_fields: &[],
        },
        Case {
            name: "force-release never deletes a string",
            before: string_key(),
            op: Op::Force,
            reply: Err(LockError::WrongType),
            effects: &[],
            after_fields: &[],
        },
        Case {
            name: "force-release never deletes a hash that is not a lock",
            before: hash(&[("a", "1"), ("name", "bob")], None),
            op: Op::Force,
            reply: Err(LockError::NotALock),
            effects: &[],
            after_fields: &[("a", "1"), ("name", "bob")],
        },
        Case {
            name: "status of a held lock for its owner",
            before: held("a", "2", 700),
            op: Op::Status(Some("a")),
            reply: Ok("Status { locked: true, pttl_ms: 700, holders: 1, owner_hold_count: Some(2) }".into()),
            effects: &[],
            after_fields: &[("a", "2")],
        },
        Case {
            name: "status of a held lock for another owner",
            before: held("a", "2", 700),
            op: Op::Status(Some("b")),
            reply: Ok("Status { locked: true, pttl_ms: 700, holders: 1, owner_hold_count: Some(0) }".into()),
            effects: &[],
            after_fields: &[("a", "2")],
        },
        Case {
            name: "status of a missing lock",
            before: missing(),
            op: Op::Status(None),
            reply: Ok("Status { locked: false, pttl_ms: -2, holders: 0, owner_hold_count: None }".into()),
            effects: &[],
            after_fields: &[],
        },
        Case {
            name: "status of an expiry in the past reads 0, never negative",
            before: held("a", "1", -20),
            op: Op::Status(None),
            reply: Ok("Status { locked: true, pttl_ms: 0, holders: 1, owner_hold_count: None }".into()),
            effects: &[],
            after_fields: &[("a", "1")],
        },
        Case {
            name: "status on a string key",
            before: string_key(),
            op: Op::Status(Some("a")),
            reply: Err(LockError::WrongType),
            effects: &[],
            after_fields: &[],
        },
    ]
}

#[test]
fn operations_follow_the_protocol_table() {
    for case in cases() {
        let mut keys = case.before.clone();
        let reply = run(&mut keys, &case.op);
        assert_eq!(reply, case.reply, "{}: reply", case.name);
        assert_eq!(keys.effects, case.effects, "{}: effects", case.name);
        let expected: BTreeMap<Vec<u8>, Vec<u8>> =
            case.after_fields.iter().map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec())).collect();
        assert_eq!(fields(&keys), expected, "{}: fields", case.name);
        if case.reply.is_err() {
            assert_eq!(keys.keys, case.before.keys, "{}: an error must leave the key alone", case.name);
        }
    }
}

#[test]
fn hold_counts_parse_like_hincrby() {
    let cases: &[(&[u8], Result<i64, LockError>)] = &[
        (b"1", Ok(1)),
        (b"0", Ok(0)),
        (b"-3", Ok(-3)),
        (b"9223372036854775807", Ok(i64::MAX)),
        (b"9223372036854775808", Err(LockError::NotALock)),
        (b"-9223372036854775808", Ok(i64::MIN)),
        (b"-9223372036854775809", Err(LockError::NotALock)),
        (b"-", Err(LockError::NotALock)),
        (b"1-", Err(LockError::NotALock)),
        (b"+1", Err(LockError::NotALock)),
        (b"01", Err(LockError::NotALock)),
        (b"-0", Err(LockError::NotALock)),
        (b" 1", Err(LockError::NotALock)),
        (b"1.0", Err(LockError::NotALock)),
        (b"", Err(LockError::NotALock)),
        (b"\xff", Err(LockError::NotALock)),
    ];
    for (value, expected) in cases {
        assert_eq!(parse_hold_count(value), *expected, "{:?}", String::from_utf8_lossy(value));
    }
}

#[test]
fn expiry_arithmetic_never_overflows() {
    let late = i64::MAX - LEASE + 1;
    for before in [missing(), held("a", "2", 5)] {
        let mut keys = before.clone();
        with_lock(&mut keys, |store| {
            assert_eq!(acquire(store, b"a".as_slice(), LEASE, (late, Delay::OVER)), Err(LockError::ExpiryOverflow));
            assert_eq!(renew(store, b"a".as_slice(), LEASE, late), Err(LockError::ExpiryOverflow));
            assert_eq!(release(store, b"a".as_slice(), LEASE, late), Err(LockError::ExpiryOverflow));
            assert_eq!(acquire(store, b"a".as_slice(), i64::MAX, (NOW, Delay::OVER)), Err(LockError::ExpiryOverflow));
        });
        assert_eq!((keys.keys, keys.effects), (before.keys, vec![]), "an overflowing expiry changes nothing");
    }
    let mut far = hash(&[("a", "1")], Some(i64::MAX));
    assert_eq!(with_lock(&mut far, |store| status(store, None, -1)).map(|s| s.pttl_ms), Ok(i64::MAX), "PTTL saturates");
    let mut past = hash(&[("a", "1")], Some(i64::MIN));
    assert_eq!(with_lock(&mut past, |store| status(store, None, NOW)).map(|s| s.pttl_ms), Ok(0));
}

#[test]
fn holds_checks_the_type_as_a_renewal_does() {
    let cases: [(MemoryKeyspace, Result<bool, LockError>); 5] = [
        (missing(), Ok(false)),
        (held("a", "2", 500), Ok(true)),
        (held("b", "1", 500), Ok(false)),
        (hash(&[("a", "x")], None), Err(LockError::NotALock)),
        (string_key(), Err(LockError::WrongType)),
    ];
    for (mut keys, expected) in cases {
        assert_eq!(with_lock(&mut keys, |store| holds(store, b"a".as_slice())), expected);
        assert!(keys.effects.is_empty(), "a check writes nothing");
    }
}
