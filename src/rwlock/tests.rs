use super::*;
use crate::keyspace::memory::{MemoryKeyspace as Keys, Value};

const NOW: i64 = 1_000_000;
const LEASE: i64 = 30_000;
const T_A1: &str = "{rw}:a:rwlock_timeout:1";
const T_A2: &str = "{rw}:a:rwlock_timeout:2";
const T_B1: &str = "{rw}:b:rwlock_timeout:1";

fn lock() -> ReadWriteLock {
    ReadWriteLock::new(b"rw")
}

fn hash(fields: &[(&str, &str)], expiry: i64) -> (&'static str, Value, Option<i64>) {
    ("rw", Keys::hash(fields), Some(expiry))
}

fn hold(key: &'static str, expiry: i64) -> (&'static str, Value, Option<i64>) {
    (key, Keys::string("1"), Some(expiry))
}

#[test]
#[allow(clippy::type_complexity)]
fn acquires_follow_redissons_scripts() {
    let cases: [(&str, Vec<_>, &str, Side, Result<Acquire>, &[&str]); 8] = [
        (
            "the first reader",
            vec![],
            "a",
            Side::Read,
            Ok(Acquire::Acquired),
            &["HSET rw mode read", "HSET rw a 1", "SET {rw}:a:rwlock_timeout:1 1 PXAT 1030000", "PEXPIREAT rw 1030000"],
        ),
        (
            "a reader re-enters: the hash keeps the longer expiry",
            vec![hash(&[("mode", "read"), ("a", "1")], NOW + 50_000), hold(T_A1, NOW + 50_000)],
            "a",
            Side::Read,
            Ok(Acquire::Acquired),
            &["HINCRBY rw a 1", "SET {rw}:a:rwlock_timeout:2 1 PXAT 1030000", "PEXPIREAT rw 1050000"],
        ),
        (
            "the writer takes a read",
            vec![hash(&[("mode", "write"), ("a:write", "1")], NOW + 1_000)],
            "a",
            Side::Read,
            Ok(Acquire::Acquired),
            &["HINCRBY rw a 1", "SET {rw}:a:rwlock_timeout:1 1 PXAT 1030000", "PEXPIREAT rw 1030000"],
        ),
        (
            "a reader waits for another's write",
            vec![hash(&[("mode", "write"), ("b:write", "1")], NOW + 1_000)],
            "a",
            Side::Read,
            Ok(Acquire::Contended { pttl_ms: 1_000 }),
            &[],
        ),
        (
            "the first writer",
            vec![],
            "a",
            Side::Write,
            Ok(Acquire::Acquired),
            &["HSET rw mode write", "HSET rw a:write 1", "PEXPIREAT rw 1030000"],
        ),
        (
            "a write re-entry never grows the lease past its own (Redisson adds them)",
            vec![hash(&[("mode", "write"), ("a:write", "1")], NOW + 1_000)],
            "a",
            Side::Write,
            Ok(Acquire::Acquired),
            &["HINCRBY rw a:write 1", "PEXPIREAT rw 1030000"],
        ),
        (
            "no upgrade: a reader asking to write waits",
            vec![hash(&[("mode", "read"), ("a", "1")], NOW + 1_000)],
            "a",
            Side::Write,
            Ok(Acquire::Contended { pttl_ms: 1_000 }),
            &[],
        ),
        (
            "a hash that is not a read-write lock is refused",
            vec![hash(&[("a", "1")], NOW + 1_000)],
            "a",
            Side::Read,
            Err(LockError::NotAReadWriteLock),
            &[],
        ),
    ];
    for (name, state, owner, side, reply, effects) in cases {
        let mut keys = Keys::at(state, NOW);
        assert_eq!(lock().acquire(&mut keys, owner.as_bytes(), side, LEASE, NOW), reply, "{name}: reply");
        assert_eq!(keys.effects, effects, "{name}: effects");
    }
}

#[test]
#[allow(clippy::type_complexity)]
fn releases_follow_redissons_scripts() {
    let latch = UnlockLatch::new(b"rw", b"r", 20_000, NOW).unwrap();
    let two_readers = vec![
        hash(&[("mode", "read"), ("a", "2"), ("b", "1")], NOW + 9_000),
        hold(T_A1, NOW + 1_000),
        hold(T_A2, NOW + 2_000),
        hold(T_B1, NOW + 9_000),
    ];
    let cases: [(&str, Vec<_>, Side, Result<Release>, &[&str]); 7] = [
        (
            "a reader's hold goes; the hash lives as long as the longest hold left",
            two_readers.clone(),
            Side::Read,
            Ok(Release::StillHeld),
            &[
                "HINCRBY rw a -1",
                "DEL {rw}:a:rwlock_timeout:2",
                "PEXPIREAT rw 1009000",
                "SET redisson_unlock_latch:{rw}:r 0 PXAT 1020000",
            ],
        ),
        (
            "the last read hold: delete, publish 0, record 1",
            vec![hash(&[("mode", "read"), ("a", "1")], NOW + 1_000), hold(T_A1, NOW + 1_000)],
            Side::Read,
            Ok(Release::Released),
            &[
                "HINCRBY rw a -1",
                "HDEL rw a",
                "DEL {rw}:a:rwlock_timeout:1",
                "DEL rw",
                "PUBLISH redisson_rwlock:{rw} 0",
                "SET redisson_unlock_latch:{rw}:r 1 PXAT 1020000",
            ],
        ),
        (
            "a missing lock publishes anyway and records 1, but replies nil, as the script",
            vec![],
            Side::Write,
            Ok(Release::NotHeld { published: true }),
            &["PUBLISH redisson_rwlock:{rw} 1", "SET redisson_unlock_latch:{rw}:r 1 PXAT 1020000"],
        ),
        (
            "a write re-entry level",
            vec![hash(&[("mode", "write"), ("a:write", "2")], NOW + 1_000)],
            Side::Write,
            Ok(Release::StillHeld),
            &["HINCRBY rw a:write -1", "PEXPIREAT rw 1030000", "SET redisson_unlock_latch:{rw}:r 0 PXAT 1020000"],
        ),
        (
            "the last write hold of a writer that reads: downgrade, silently",
            vec![hash(&[("mode", "write"), ("a:write", "1"), ("a", "1")], NOW + 1_000), hold(T_A1, NOW + 1_000)],
            Side::Write,
            Ok(Release::Released),
            &[
                "HINCRBY rw a:write -1",
                "HDEL rw a:write",
                "HSET rw mode read",
                "SET redisson_unlock_latch:{rw}:r 1 PXAT 1020000",
            ],
        ),
        (
            "the last write hold: delete, publish 1",
            vec![hash(&[("mode", "write"), ("a:write", "1")], NOW + 1_000)],
            Side::Write,
            Ok(Release::Released),
            &[
                "HINCRBY rw a:write -1",
                "HDEL rw a:write",
                "DEL rw",
                "PUBLISH redisson_rwlock:{rw} 1",
                "SET redisson_unlock_latch:{rw}:r 1 PXAT 1020000",
            ],
        ),
        (
            "a write release of a read lock: nil, no latch",
            two_readers.clone(),
            Side::Write,
            Ok(Release::NotHeld { published: false }),
            &[],
        ),
    ];
    for (name, state, side, reply, effects) in cases {
        let mut keys = Keys::at(state, NOW);
        assert_eq!(lock().release(&mut keys, b"a", side, LEASE, Some(&latch), NOW), reply, "{name}: reply");
        assert_eq!(keys.effects, effects, "{name}: effects");
    }
}

#[test]
fn renew_force_release_and_status() {
    let state = vec![
        hash(&[("mode", "write"), ("a:write", "1"), ("a", "2"), ("b", "1")], NOW + 40_000),
        hold(T_A1, NOW + 1_000),
        hold(T_A2, NOW + 1_000),
        hold(T_B1, NOW + 40_000),
    ];
    let mut keys = Keys::at(state.clone(), NOW);
    assert_eq!(lock().renew(&mut keys, b"a", LEASE, NOW), Ok(true));
    assert_eq!(
        keys.effects,
        [
            "PEXPIREAT {rw}:a:rwlock_timeout:1 1030000",
            "PEXPIREAT {rw}:a:rwlock_timeout:2 1030000",
            "PEXPIREAT rw 1040000"
        ],
        "each read hold renewed; the hash never shortened"
    );
    let mut keys = Keys::at(state.clone(), NOW);
    assert_eq!(lock().renew(&mut keys, b"c", LEASE, NOW), Ok(false));
    assert!(keys.effects.is_empty());

    let mut keys = Keys::at(state.clone(), NOW);
    assert_eq!(lock().force_release(&mut keys, Some(Side::Read)), Ok(false), "the read side leaves a write lock");
    assert_eq!(lock().force_release(&mut keys, None), Ok(true));
    assert_eq!(keys.effects, ["DEL rw", "PUBLISH redisson_rwlock:{rw} 1"]);

    let mut keys = Keys::at(state, NOW);
    let status = lock().status(&mut keys, Some(b"a"), NOW).unwrap();
    assert_eq!(status, Status { mode: Some("write"), pttl_ms: 40_000, readers: 2, owner: Some((2, 1)) });
}
