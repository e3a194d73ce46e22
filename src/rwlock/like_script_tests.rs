//! The read-write lock acting like Redisson's scripts (`LIKESCRIPT`).

use super::*;
use crate::delay::Delay;
use crate::keyspace::memory::{MemoryKeyspace as Keys, Value};
use crate::redisson::lua_number::percent_17g;

const NOW: i64 = 1_000_000;

fn like_script() -> ReadWriteLock<'static> {
    ReadWriteLock::new(b"rw").like_redissons_script(percent_17g)
}

fn writer(expiry: Option<i64>) -> Vec<(&'static str, Value, Option<i64>)> {
    vec![("rw", Keys::hash(&[("mode", "write"), ("a:write", "1")]), expiry)]
}

/// `pexpire(name, pttl(name) + lease)` after the HINCRBY, as 6306ba3b.
#[test]
#[allow(clippy::type_complexity)]
fn a_write_re_entry_adds_the_lease_to_the_pttl() {
    let cases: [(&str, Vec<_>, i64, Result<Acquire>, &[&str]); 6] = [
        (
            "the TTL grows by the lease",
            writer(Some(NOW + 1_000)),
            30_000,
            Ok(Acquire::Acquired { count: 2 }),
            &["HINCRBY rw a:write 1", "PEXPIREAT rw 1031000"],
        ),
        (
            "a lock without expiry: PTTL -1 plus the lease",
            writer(None),
            30_000,
            Ok(Acquire::Acquired { count: 2 }),
            &["HINCRBY rw a:write 1", "PEXPIREAT rw 1029999"],
        ),
        (
            "-1 + 1 is 0: PEXPIRE deletes the lock",
            writer(None),
            1,
            Ok(Acquire::Acquired { count: 2 }),
            &["HINCRBY rw a:write 1", "DEL rw"],
        ),
        (
            "a sum %.17g writes with an exponent: PEXPIRE refuses it, nothing is written",
            writer(Some(NOW + 100_000_000_000_000_000)),
            30_000,
            Err(LockError::ExpiryOverflow),
            &[],
        ),
        (
            "the first writer: the lease",
            vec![],
            30_000,
            Ok(Acquire::Acquired { count: 1 }),
            &["HSET rw mode write a:write 1", "PEXPIREAT rw 1030000"],
        ),
        (
            "another's write: its PTTL",
            vec![("rw", Keys::hash(&[("mode", "write"), ("b:write", "1")]), Some(NOW + 700))],
            30_000,
            Ok(Acquire::Contended { pttl_ms: 700 }),
            &[],
        ),
    ];
    for (name, state, lease, reply, effects) in cases {
        let mut keys = Keys::at(state, NOW);
        let acquired = like_script().acquire(&mut keys, b"a", Side::Write, lease, (NOW, Delay::OVER));
        assert_eq!(acquired, reply, "{name}: reply");
        assert_eq!(keys.effects, effects, "{name}: effects");
    }
}

/// A lock-delay refuses a re-entry acting like the script too.
#[test]
fn a_lock_delay_refuses_a_like_script_re_entry() {
    let mut keys = Keys::at(writer(Some(NOW + 1_000)), NOW);
    let acquired = like_script().acquire(&mut keys, b"a", Side::Write, 30_000, (NOW, Delay::left(700)));
    assert_eq!(acquired, Ok(Acquire::Contended { pttl_ms: 700 }));
    assert!(keys.effects.is_empty());
}

fn hold(key: &'static str, expiry: i64) -> (&'static str, Value, Option<i64>) {
    (key, Keys::string("1"), Some(expiry))
}

/// isLocked (8ad44f1b) reads the mode and the number of fields only.
#[test]
#[allow(clippy::type_complexity)]
fn read_locked_is_the_mode_read_or_a_writer_with_more() {
    let cases: [(Vec<(&str, &str)>, Result<bool>); 5] = [
        (vec![], Ok(false)),
        (vec![("mode", "read"), ("a", "1")], Ok(true)),
        (vec![("mode", "write"), ("a:write", "1")], Ok(false)),
        (vec![("mode", "write"), ("a:write", "1"), ("a", "1")], Ok(true)),
        (vec![("a", "x"), ("b", "y"), ("c", "z")], Ok(false)),
    ];
    for (fields, locked) in cases {
        let state = if fields.is_empty() { vec![] } else { vec![("rw", Keys::hash(&fields), None)] };
        let mut keys = Keys::at(state, NOW);
        assert_eq!(like_script().read_locked(&mut keys), locked, "{fields:?}");
        assert!(keys.effects.is_empty());
    }
    let mut keys = Keys::at(vec![("rw", Keys::string("x"), None)], NOW);
    assert_eq!(like_script().read_locked(&mut keys), Err(LockError::WrongType));
}

/// 3.x's renewal (6563941f): the hash first, then every field's holds
/// from the highest, every reader's.
#[test]
fn renew_all_sets_the_hash_then_every_readers_holds() {
    let state = || {
        vec![
            ("rw", Keys::hash(&[("mode", "read"), ("a", "2"), ("b", "1")]), Some(NOW + 90_000)),
            hold("{rw}:a:rwlock_timeout:1", NOW + 90_000),
            hold("{rw}:a:rwlock_timeout:2", NOW + 90_000),
            hold("{rw}:b:rwlock_timeout:1", NOW + 90_000),
        ]
    };
    let mut keys = Keys::at(state(), NOW);
    assert_eq!(like_script().renew_all_like_script(&mut keys, b"a", 30_000, NOW), Ok(true));
    let expected = [
        "PEXPIREAT rw 1030000",
        "PEXPIREAT {rw}:a:rwlock_timeout:2 1030000",
        "PEXPIREAT {rw}:a:rwlock_timeout:1 1030000",
        "PEXPIREAT {rw}:b:rwlock_timeout:1 1030000",
    ];
    assert_eq!(keys.effects, expected);
    let mut keys = Keys::at(state(), NOW);
    assert_eq!(like_script().renew_all_like_script(&mut keys, b"c", 30_000, NOW), Ok(false));
    assert!(keys.effects.is_empty(), "not a holder: nothing");
}

/// ReadLockTask's renewal of one lock (38d2b478): each holding owner's
/// holds that exist, then the hash; planned before anything is written.
#[test]
fn renew_owners_sets_the_holders_holds_then_the_hash() {
    let state = vec![
        ("rw", Keys::hash(&[("mode", "read"), ("a", "2"), ("b", "1")]), Some(NOW + 90_000)),
        hold("{rw}:a:rwlock_timeout:2", NOW + 90_000),
        hold("{rw}:b:rwlock_timeout:1", NOW + 90_000),
    ];
    let mut keys = Keys::at(state, NOW);
    let plan = like_script().check_owners(&mut keys, &[b"c", b"a"]).unwrap();
    assert!(keys.effects.is_empty(), "planning writes nothing");
    assert_eq!(like_script().renew_owners(&mut keys, plan, NOW + 30_000), Ok(true));
    assert_eq!(keys.effects, ["PEXPIREAT {rw}:a:rwlock_timeout:2 1030000", "PEXPIREAT rw 1030000"]);
    let plan = like_script().check_owners(&mut keys, &[b"c"]).unwrap();
    assert_eq!(like_script().renew_owners(&mut keys, plan, NOW + 30_000), Ok(false));
    let refused = like_script().check_owners(&mut keys, &[b"mode"]).err();
    assert_eq!(refused, Some(LockError::OwnerReserved));
    let refused = like_script().check_owners(&mut keys, &[b"c", b""]).err();
    assert_eq!(refused, Some(LockError::OwnerEmpty), "RRW.RENEWREADS's owners");
}

/// The read acquire before 3.11.1: a re-entry sets the hash's TTL to the
/// lease, shorter too (later texts keep the longer).
#[test]
fn a_read_re_entry_sets_the_lease() {
    let state = vec![
        ("rw", Keys::hash(&[("mode", "read"), ("a", "1")]), Some(NOW + 90_000)),
        hold("{rw}:a:rwlock_timeout:1", NOW + 90_000),
    ];
    let mut keys = Keys::at(state, NOW);
    let acquired = like_script().acquire(&mut keys, b"a", Side::Read, 30_000, (NOW, Delay::OVER));
    assert_eq!(acquired, Ok(Acquire::Acquired { count: 2 }));
    let expected = ["HINCRBY rw a 1", "SET {rw}:a:rwlock_timeout:2 1 PXAT 1030000", "PEXPIREAT rw 1030000"];
    assert_eq!(keys.effects, expected);
}
