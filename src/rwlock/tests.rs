use super::*;
use crate::delay::Delay;
use crate::keyspace::memory::{MemoryKeyspace as Keys, Value};

const NOW: i64 = 1_000_000;
const LEASE: i64 = 30_000;
const T_A1: &str = "{rw}:a:rwlock_timeout:1";
const T_A2: &str = "{rw}:a:rwlock_timeout:2";
const T_B1: &str = "{rw}:b:rwlock_timeout:1";

fn lock() -> ReadWriteLock<'static> {
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
            Ok(Acquire::Acquired { count: 1 }),
            &["HSET rw mode read a 1", "SET {rw}:a:rwlock_timeout:1 1 PXAT 1030000", "PEXPIREAT rw 1030000"],
        ),
        (
            "a reader re-enters: the hash keeps the longer expiry",
            vec![hash(&[("mode", "read"), ("a", "1")], NOW + 50_000), hold(T_A1, NOW + 50_000)],
            "a",
            Side::Read,
            Ok(Acquire::Acquired { count: 2 }),
            &["HINCRBY rw a 1", "SET {rw}:a:rwlock_timeout:2 1 PXAT 1030000", "PEXPIREAT rw 1050000"],
        ),
        (
            "the writer takes a read",
            vec![hash(&[("mode", "write"), ("a:write", "1")], NOW + 1_000)],
            "a",
            Side::Read,
            Ok(Acquire::Acquired { count: 1 }),
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
            Ok(Acquire::Acquired { count: 1 }),
            &["HSET rw mode write a:write 1", "PEXPIREAT rw 1030000"],
        ),
        (
            "a write re-entry never grows the lease past its own (Redisson adds them)",
            vec![hash(&[("mode", "write"), ("a:write", "1")], NOW + 1_000)],
            "a",
            Side::Write,
            Ok(Acquire::Acquired { count: 2 }),
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
        assert_eq!(
            lock().acquire(&mut keys, owner.as_bytes(), side, LEASE, (NOW, Delay::OVER)),
            reply,
            "{name}: reply"
        );
        assert_eq!(keys.effects, effects, "{name}: effects");
    }
}

#[test]
fn a_lock_delay_grants_no_side_not_even_a_holder_re_entering() {
    let readers = || vec![hash(&[("mode", "read"), ("a", "1")], NOW + 300), hold(T_A1, NOW + 300)];
    let writer = |ends| vec![hash(&[("mode", "write"), ("a:write", "1")], NOW + ends)];
    // (state, owner, side, told to retry after): whatever is grantable at
    // the delay's end is told its end; the rest, the later of it and the lease.
    let cases: [(Vec<_>, &str, Side, i64); 8] = [
        (vec![], "a", Side::Read, 700),
        (vec![], "a", Side::Write, 700),
        (readers(), "b", Side::Read, 700),
        (readers(), "a", Side::Read, 700),
        (writer(300), "b", Side::Read, 700),
        (writer(900), "b", Side::Read, 900),
        (writer(900), "a", Side::Write, 700),
        (writer(900), "a", Side::Read, 700),
    ];
    for (state, owner, side, pttl_ms) in cases {
        let mut keys = Keys::at(state.clone(), NOW);
        let acquired = lock().acquire(&mut keys, owner.as_bytes(), side, LEASE, (NOW, Delay::left(700)));
        assert_eq!(acquired, Ok(Acquire::Contended { pttl_ms }), "{state:?} {owner} {side:?}");
        assert!(keys.effects.is_empty(), "{owner}: {:?}", keys.effects);
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
    let cases: [(&str, Vec<_>, Side, Result<Release>, &[&str]); 12] = [
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
                "DEL {rw}:a:rwlock_timeout:1 rw",
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
            &["HDEL rw a:write", "HSET rw mode read", "SET redisson_unlock_latch:{rw}:r 1 PXAT 1020000"],
        ),
        (
            "the last write hold: delete, publish 1",
            vec![hash(&[("mode", "write"), ("a:write", "1")], NOW + 1_000)],
            Side::Write,
            Ok(Release::Released),
            &["DEL rw", "PUBLISH redisson_rwlock:{rw} 1", "SET redisson_unlock_latch:{rw}:r 1 PXAT 1020000"],
        ),
        (
            "a write release of a read lock: nil, no latch",
            two_readers.clone(),
            Side::Write,
            Ok(Release::NotHeld { published: false }),
            &[],
        ),
        (
            "others remain but every hold of theirs has expired: released, as the script",
            vec![hash(&[("mode", "read"), ("a", "1"), ("b", "1")], NOW + 9_000), hold(T_A1, NOW + 9_000)],
            Side::Read,
            Ok(Release::Released),
            &[
                "DEL {rw}:a:rwlock_timeout:1 rw",
                "PUBLISH redisson_rwlock:{rw} 0",
                "SET redisson_unlock_latch:{rw}:r 1 PXAT 1020000",
            ],
        ),
        (
            "a writer's read goes: still held by the write, the TTL untouched",
            vec![hash(&[("mode", "write"), ("a:write", "1"), ("a", "1")], NOW + 9_000), hold(T_A1, NOW + 1_000)],
            Side::Read,
            Ok(Release::StillHeld),
            &[
                "HINCRBY rw a -1",
                "HDEL rw a",
                "DEL {rw}:a:rwlock_timeout:1",
                "SET redisson_unlock_latch:{rw}:r 0 PXAT 1020000",
            ],
        ),
        (
            "a read release of a reader that holds nothing: nil, no latch",
            vec![hash(&[("mode", "read"), ("b", "1")], NOW + 9_000), hold(T_B1, NOW + 9_000)],
            Side::Read,
            Ok(Release::NotHeld { published: false }),
            &[],
        ),
        (
            "a write release by one who does not hold the write: nil",
            vec![hash(&[("mode", "write"), ("b:write", "1")], NOW + 9_000)],
            Side::Write,
            Ok(Release::NotHeld { published: false }),
            &[],
        ),
        (
            "a read hold whose key has expired: counted down, no DEL of a missing key",
            vec![hash(&[("mode", "read"), ("a", "1"), ("b", "1")], NOW + 9_000), hold(T_B1, NOW + 9_000)],
            Side::Read,
            Ok(Release::StillHeld),
            &[
                "HINCRBY rw a -1",
                "HDEL rw a",
                "PEXPIREAT rw 1009000",
                "SET redisson_unlock_latch:{rw}:r 0 PXAT 1020000",
            ],
        ),
    ];
    for (name, state, side, reply, effects) in cases {
        let mut keys = Keys::at(state, NOW);
        assert_eq!(lock().release(&mut keys, b"a", side, LEASE, Some(&latch), NOW), reply, "{name}: reply");
        assert_eq!(keys.effects, effects, "{name}: effects");
    }
}

/// `MISSING NOTHELD` (rlock-client's): a missing lock is announced as
/// without it, but no latch records "released", which a resend after a
/// lost reply would replay to a holder whose hold had ended.
#[test]
fn a_missing_lock_records_no_latch_when_not_held_is_asked() {
    let latch = UnlockLatch::new(b"rw", b"r", 20_000, NOW).unwrap();
    for side in [Side::Read, Side::Write] {
        let mut keys = Keys::at(vec![], NOW);
        let released = lock().missing_not_held().release(&mut keys, b"a", side, LEASE, Some(&latch), NOW);
        assert_eq!(released, Ok(Release::NotHeld { published: true }), "{side:?}");
        let message = if side == Side::Read { "0" } else { "1" };
        assert_eq!(keys.effects, [format!("PUBLISH redisson_rwlock:{{rw}} {message}")], "{side:?}");
    }
    let mut keys = Keys::at(vec![hash(&[("mode", "write"), ("a:write", "1")], NOW + 1_000)], NOW);
    let released = lock().missing_not_held().release(&mut keys, b"a", Side::Write, LEASE, Some(&latch), NOW);
    assert_eq!(released, Ok(Release::Released), "a held lock as without it");
    assert_eq!(
        keys.effects,
        ["DEL rw", "PUBLISH redisson_rwlock:{rw} 1", "SET redisson_unlock_latch:{rw}:r 1 PXAT 1020000"]
    );
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

#[test]
fn a_latched_release_replays_its_reply_and_changes_nothing() {
    for (recorded, reply) in [("0", false), ("1", true)] {
        let state = vec![
            hash(&[("mode", "read"), ("a", "1")], NOW + 9_000),
            ("redisson_unlock_latch:{rw}:r", Keys::string(recorded), Some(NOW + 5_000)),
        ];
        let latch = UnlockLatch::new(b"rw", b"r", 20_000, NOW).unwrap();
        let mut keys = Keys::at(state, NOW);
        let outcome = lock().release(&mut keys, b"a", Side::Read, LEASE, Some(&latch), NOW);
        assert_eq!(outcome, Ok(Release::Latched { released: reply }));
        assert!(keys.effects.is_empty());
    }
}

#[test]
#[allow(clippy::type_complexity)]
fn what_is_not_a_read_write_lock_is_refused_before_any_write() {
    let many = MAX_READ_HOLDS.to_string();
    let almost = (MAX_READ_HOLDS - 1).to_string();
    let cases: [(&str, Vec<_>, &str, Side, LockError); 9] = [
        (
            "a count that is not an integer",
            vec![hash(&[("mode", "read"), ("x", "abc")], NOW + 1)],
            "a",
            Side::Read,
            LockError::NotAReadWriteLock,
        ),
        (
            "a count of 0",
            vec![hash(&[("mode", "read"), ("x", "0")], NOW + 1)],
            "a",
            Side::Read,
            LockError::NotAReadWriteLock,
        ),
        (
            "no valid mode",
            vec![hash(&[("mode", "both"), ("x", "1")], NOW + 1)],
            "a",
            Side::Write,
            LockError::NotAReadWriteLock,
        ),
        ("a key of another type", vec![("rw", Keys::string("1"), None)], "a", Side::Write, LockError::WrongType),
        ("owner `mode` would overwrite the mode", vec![], "mode", Side::Read, LockError::OwnerReserved),
        ("an owner ending in :write looks like a write hold", vec![], "b:write", Side::Read, LockError::OwnerReserved),
        ("an empty owner tells no holder apart", vec![], "", Side::Write, LockError::OwnerEmpty),
        (
            "one read hold past the limit",
            vec![hash(&[("mode", "read"), ("x", &almost), ("a", "1")], NOW + 1)],
            "a",
            Side::Read,
            LockError::TooManyReadHolds,
        ),
        (
            "a crafted count past the limit",
            vec![hash(&[("mode", "read"), ("x", &many), ("a", "1")], NOW + 1)],
            "a",
            Side::Read,
            LockError::TooManyReadHolds,
        ),
    ];
    for (name, state, owner, side, error) in cases {
        let mut keys = Keys::at(state.clone(), NOW);
        assert_eq!(
            lock().acquire(&mut keys, owner.as_bytes(), side, LEASE, (NOW, Delay::OVER)),
            Err(error.clone()),
            "{name}: acquire"
        );
        // A release is refused alike, but one more read hold is no
        // problem to it.
        if !name.starts_with("one read hold") {
            let released = lock().release(&mut keys, owner.as_bytes(), side, LEASE, None, NOW);
            assert_eq!(released, Err(error), "{name}: release");
        }
        assert_eq!(keys.effects, Vec::<String>::new(), "{name}: nothing written");
    }
}

#[test]
fn force_release_takes_only_the_side_asked_and_status_reports_a_free_lock() {
    let reading = vec![hash(&[("mode", "read"), ("a", "1")], NOW + 1_000), hold(T_A1, NOW + 1_000)];
    let writing = vec![hash(&[("mode", "write"), ("a:write", "1")], NOW + 1_000)];
    let cases = [
        (&reading, Some(Side::Read), true, "0"),
        (&reading, Some(Side::Write), false, ""),
        (&reading, None, true, "1"),
        (&writing, Some(Side::Write), true, "1"),
        (&writing, Some(Side::Read), false, ""),
        (&vec![], None, false, ""),
    ];
    for (state, side, released, message) in cases {
        let mut keys = Keys::at(state.clone(), NOW);
        assert_eq!(lock().force_release(&mut keys, side), Ok(released), "{side:?} on {state:?}");
        let expected: Vec<String> =
            if released { vec!["DEL rw".into(), format!("PUBLISH redisson_rwlock:{{rw}} {message}")] } else { vec![] };
        assert_eq!(keys.effects, expected, "{side:?}: the timeout keys are left to expire");
    }
    let mut keys = Keys::at(vec![], NOW);
    let status = lock().status(&mut keys, None, NOW).unwrap();
    assert_eq!(status, Status { mode: None, pttl_ms: -2, readers: 0, owner: None });
}
