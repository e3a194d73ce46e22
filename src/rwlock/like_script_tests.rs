//! The read-write lock acting like Redisson's scripts (`LIKESCRIPT`).

use super::*;
use crate::delay::Delay;
use crate::keyspace::memory::{MemoryKeyspace as Keys, Value};
use crate::redisson::lua_number::percent_17g;

const NOW: i64 = 1_000_000;

fn like_script() -> ReadWriteLock<'static> {
    ReadWriteLock::new(b"rw").like_redissons_script(|x| percent_17g(x).into_bytes())
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
