use super::*;
use crate::keyspace::memory::{MemoryKeyspace as Keys, Value};

const NOW: i64 = 1_000_000;
const LEASE: i64 = 30_000;
const WAIT: i64 = 5_000;
const Q: &str = "redisson_lock_queue:{f}";
const Z: &str = "redisson_lock_timeout:{f}";

fn lock() -> FairLock {
    FairLock::new(b"f")
}

fn held_by(owner: &str, count: &str) -> (&'static str, Value, Option<i64>) {
    let fields = [(owner, count)];
    ("f", Keys::hash(&fields), Some(NOW + 1_000))
}

fn queue(owners: &[(&str, i64)]) -> Vec<(&'static str, Value, Option<i64>)> {
    let names: Vec<&str> = owners.iter().map(|(o, _)| *o).collect();
    vec![(Q, Keys::list(&names), None), (Z, Keys::zset(owners), None)]
}

struct Case {
    name: &'static str,
    keys: Vec<(&'static str, Value, Option<i64>)>,
    owner: &'static str,
    wait: Option<i64>,
    reply: Result<Acquire>,
    effects: &'static [&'static str],
}

#[test]
fn acquires_follow_redissons_script_and_its_fixes() {
    let cases = [
        Case {
            name: "a free lock with no queue is taken",
            keys: vec![],
            owner: "a",
            wait: Some(WAIT),
            reply: Ok(Acquire::Acquired),
            effects: &["HSET f a 1", "PEXPIREAT f 1030000"],
        },
        Case {
            name: "the owner re-enters",
            keys: vec![held_by("a", "1")],
            owner: "a",
            wait: None,
            reply: Ok(Acquire::Reentered { count: 2 }),
            effects: &["HINCRBY f a 1", "PEXPIREAT f 1030000"],
        },
        Case {
            name: "no-wait form: refused, nothing queued",
            keys: vec![held_by("a", "1")],
            owner: "b",
            wait: None,
            reply: Ok(Acquire::Refused),
            effects: &[],
        },
        Case {
            name: "the first waiter queues behind the lease and waits for it",
            keys: vec![held_by("a", "1")],
            owner: "b",
            wait: Some(WAIT),
            reply: Ok(Acquire::Queued { hint_ms: 1_000 }),
            effects: &["ZADD redisson_lock_timeout:{f} 1006000 b", "RPUSH redisson_lock_queue:{f} b"],
        },
        Case {
            name: "a later waiter queues behind the tail and asks again within half its wait",
            keys: [vec![held_by("a", "1")], queue(&[("b", NOW + 6_000)])].concat(),
            owner: "c",
            wait: Some(WAIT),
            reply: Ok(Acquire::Queued { hint_ms: WAIT / 2 }),
            effects: &["ZADD redisson_lock_timeout:{f} 1011000 c", "RPUSH redisson_lock_queue:{f} c"],
        },
        Case {
            name: "a queued waiter is not queued twice",
            keys: [vec![held_by("a", "1")], queue(&[("b", NOW + 6_000), ("c", NOW + 11_000)])].concat(),
            owner: "c",
            wait: Some(WAIT),
            reply: Ok(Acquire::Queued { hint_ms: WAIT / 2 }),
            effects: &[],
        },
        Case {
            name: "a queued waiter asking again is alive: its deadline is kept a wait past its turn",
            keys: [vec![held_by("a", "1")], queue(&[("b", NOW + 1_500)])].concat(),
            owner: "b",
            wait: Some(WAIT),
            reply: Ok(Acquire::Queued { hint_ms: 1_000 }),
            effects: &["ZADD redisson_lock_timeout:{f} 1006000 b"],
        },
        Case {
            name: "a free lock whose head has not come yet: a hint, never 0",
            keys: queue(&[("b", NOW + 6_000), ("c", NOW + 11_000)]),
            owner: "c",
            wait: Some(WAIT),
            reply: Ok(Acquire::Queued { hint_ms: WAIT / 2 }),
            effects: &[],
        },
        Case {
            name: "the head takes a free lock; a waiter of a script loses the taker's wait, as in Redisson",
            keys: queue(&[("b", NOW + 6_000), ("c", NOW + 11_000)]),
            owner: "b",
            wait: Some(WAIT),
            reply: Ok(Acquire::Acquired),
            effects: &[
                "LPOP redisson_lock_queue:{f}",
                "ZREM redisson_lock_timeout:{f} b",
                "ZADD redisson_lock_timeout:{f} 1006000 c",
                "HSET f b 1",
                "PEXPIREAT f 1030000",
            ],
        },
        Case {
            name: "dead waiters anywhere in the queue are purged",
            keys: queue(&[("b", NOW), ("c", NOW - 1), ("d", NOW + 9_000)]),
            owner: "d",
            wait: Some(WAIT),
            reply: Ok(Acquire::Acquired),
            effects: &[
                "LPOP redisson_lock_queue:{f}",
                "LPOP redisson_lock_queue:{f}",
                "ZREM redisson_lock_timeout:{f} c",
                "ZREM redisson_lock_timeout:{f} b",
                "LPOP redisson_lock_queue:{f}",
                "ZREM redisson_lock_timeout:{f} d",
                "HSET f d 1",
                "PEXPIREAT f 1030000",
            ],
        },
        Case {
            name: "a dead waiter behind a live one is searched for and removed",
            keys: [vec![held_by("a", "1")], queue(&[("b", NOW + 9_000), ("c", NOW), ("d", NOW + 9_500)])].concat(),
            owner: "a",
            wait: Some(WAIT),
            reply: Ok(Acquire::Reentered { count: 2 }),
            effects: &[
                "LREM redisson_lock_queue:{f} 0 c",
                "ZREM redisson_lock_timeout:{f} c",
                "HINCRBY f a 1",
                "PEXPIREAT f 1030000",
            ],
        },
        Case {
            name: "a queued owner without a deadline, and a deadline without a queued owner, are dead",
            keys: vec![(Q, Keys::list(&["x"]), None), (Z, Keys::zset(&[("y", NOW + 9_000)]), None)],
            owner: "a",
            wait: None,
            reply: Ok(Acquire::Acquired),
            effects: &[
                "LPOP redisson_lock_queue:{f}",
                "ZREM redisson_lock_timeout:{f} y",
                "HSET f a 1",
                "PEXPIREAT f 1030000",
            ],
        },
        Case {
            name: "a lock without expiry gives the head half its wait as its hint",
            keys: vec![("f", Keys::hash(&[("a", "1")]), None)],
            owner: "b",
            wait: Some(WAIT),
            reply: Ok(Acquire::Queued { hint_ms: WAIT / 2 }),
            effects: &["ZADD redisson_lock_timeout:{f} 1004999 b", "RPUSH redisson_lock_queue:{f} b"],
        },
        Case {
            name: "a string at the lock's name is refused",
            keys: vec![("f", Keys::string("x"), None)],
            owner: "a",
            wait: Some(WAIT),
            reply: Err(LockError::WrongType),
            effects: &[],
        },
        Case {
            name: "a hash at the queue's name is refused",
            keys: vec![(Q, Keys::hash(&[("x", "1")]), None)],
            owner: "a",
            wait: Some(WAIT),
            reply: Err(LockError::WrongType),
            effects: &[],
        },
        Case {
            name: "a set at the deadlines' name is refused",
            keys: vec![(Z, Value::Other, None)],
            owner: "a",
            wait: Some(WAIT),
            reply: Err(LockError::WrongType),
            effects: &[],
        },
        Case {
            name: "a hold count that is not a number is refused",
            keys: vec![held_by("a", "x")],
            owner: "a",
            wait: Some(WAIT),
            reply: Err(LockError::NotALock),
            effects: &[],
        },
    ];
    for case in cases {
        let mut keys = Keys::at(case.keys, NOW);
        let reply = lock().acquire(
            &mut keys,
            &mut Waits::default(),
            case.owner.as_bytes(),
            (LEASE, case.wait.map(Wait::native)),
            (NOW, Delay::OVER),
        );
        assert_eq!(reply, case.reply, "{}: reply", case.name);
        assert_eq!(keys.effects, case.effects, "{}: effects", case.name);
    }
}

#[test]
#[allow(clippy::type_complexity)]
fn releases_wake_the_head_on_its_own_channel() {
    let latch = UnlockLatch::for_request(b"f", Some((b"r", 20_000)), NOW).unwrap().expect("a latch");
    let head_waiting = queue(&[("b", NOW + 6_000)]);
    let mut waits = Waits::default();
    waits.record(b"b", Wait::native(2_000));
    let cases: [(&str, Vec<_>, Option<&UnlockLatch>, Result<Release>, &[&str]); 7] = [
        (
            "the last hold: the head's turn starts (its known wait from now), delete, wake it, record 1",
            [vec![held_by("a", "1")], head_waiting.clone()].concat(),
            Some(&latch),
            Ok(Release::Released),
            &[
                "ZADD redisson_lock_timeout:{f} 1002000 b",
                "DEL f",
                "PUBLISH redisson_lock__channel:{f}:b 0",
                "SET redisson_unlock_latch:{f}:r 1 PXAT 1020000",
            ],
        ),
        (
            "a reentry level: record 0",
            vec![held_by("a", "2")],
            Some(&latch),
            Ok(Release::Decremented { count: 1 }),
            &["HINCRBY f a -1", "PEXPIREAT f 1030000", "SET redisson_unlock_latch:{f}:r 0 PXAT 1020000"],
        ),
        ("not held: nothing", vec![held_by("b", "1")], Some(&latch), Ok(Release::NotHeld), &[]),
        (
            "a missing lock still wakes the head and replies 1, as the script",
            head_waiting.clone(),
            None,
            Ok(Release::Released),
            &["PUBLISH redisson_lock__channel:{f}:b 0"],
        ),
        (
            "a recorded reply is replayed",
            vec![held_by("a", "1"), ("redisson_unlock_latch:{f}:r", Keys::string("0"), None)],
            Some(&latch),
            Ok(Release::Latched { released: false }),
            &[],
        ),
        ("no waiters: no message", vec![held_by("a", "1")], None, Ok(Release::Released), &["DEL f"]),
        (
            "a head whose wait the server never saw (a script's waiter) keeps Redisson's deadline",
            [vec![held_by("a", "1")], queue(&[("j", NOW + 6_000)])].concat(),
            None,
            Ok(Release::Released),
            &["DEL f", "PUBLISH redisson_lock__channel:{f}:j 0"],
        ),
    ];
    for (name, state, latch, reply, effects) in cases {
        let mut keys = Keys::at(state, NOW);
        assert_eq!(
            lock().release(&mut keys, &mut waits.clone(), b"a", (LEASE, latch), NOW).map(|(release, _)| release),
            reply,
            "{name}: reply"
        );
        assert_eq!(keys.effects, effects, "{name}: effects");
    }
}

/// `MISSING NOTHELD` (rlock-client's): a missing lock is not held, nil,
/// and no latch records "released" for a resend to replay; the head is
/// woken as without it.
#[test]
fn a_missing_lock_is_not_held_when_asked_and_records_no_latch() {
    let latch = UnlockLatch::for_request(b"f", Some((b"r", 20_000)), NOW).unwrap().expect("a latch");
    let mut waits = Waits::default();
    waits.record(b"b", Wait::native(2_000));
    let lock = lock().missing_not_held();
    let mut keys = Keys::at(queue(&[("b", NOW + 6_000)]), NOW);
    let released = lock.release(&mut keys, &mut waits, b"a", (LEASE, Some(&latch)), NOW);
    assert_eq!(released, Ok((Release::NotHeld, true)));
    assert_eq!(keys.effects, ["PUBLISH redisson_lock__channel:{f}:b 0"]);
    let mut keys = Keys::at(vec![held_by("a", "1")], NOW);
    let released = lock.release(&mut keys, &mut Waits::default(), b"a", (LEASE, Some(&latch)), NOW);
    assert_eq!(released, Ok((Release::Released, false)), "a held lock as without it");
    assert_eq!(keys.effects, ["DEL f", "SET redisson_unlock_latch:{f}:r 1 PXAT 1020000"]);
}

#[test]
fn cancel_force_release_and_status() {
    // A head giving up on a free lock passes the turn on at once.
    let mut keys = Keys::at(queue(&[("b", NOW + 6_000), ("c", NOW + 11_000)]), NOW);
    lock().cancel(&mut keys, &mut Waits::default(), b"b", WAIT, NOW).unwrap();
    assert_eq!(
        keys.effects,
        [
            "LPOP redisson_lock_queue:{f}",
            "ZREM redisson_lock_timeout:{f} b",
            "ZADD redisson_lock_timeout:{f} 1006000 c",
            "PUBLISH redisson_lock__channel:{f}:c 0"
        ]
    );
    // A waiter behind a held lock leaves quietly; those after it move up.
    let mut keys = Keys::at([vec![held_by("a", "1")], queue(&[("b", NOW + 6_000), ("c", NOW + 11_000)])].concat(), NOW);
    lock().cancel(&mut keys, &mut Waits::default(), b"b", WAIT, NOW).unwrap();
    assert_eq!(
        keys.effects,
        [
            "LPOP redisson_lock_queue:{f}",
            "ZREM redisson_lock_timeout:{f} b",
            "ZADD redisson_lock_timeout:{f} 1006000 c"
        ]
    );

    let mut keys = Keys::at([vec![held_by("a", "1")], queue(&[("b", NOW + 6_000)])].concat(), NOW);
    let mut waits = Waits::default();
    waits.record(b"b", Wait::native(5_000));
    assert_eq!(lock().force_release(&mut keys, &mut waits, NOW), Ok((true, true)));
    assert_eq!(
        keys.effects,
        ["ZADD redisson_lock_timeout:{f} 1005000 b", "DEL f", "PUBLISH redisson_lock__channel:{f}:b 0"],
        "the head's turn starts now"
    );
    let mut keys = Keys::at(vec![], NOW);
    assert_eq!(lock().force_release(&mut keys, &mut Waits::default(), NOW).map(|(released, _)| released), Ok(false));
    let mut keys = Keys::at(vec![("f", Keys::hash(&[("a", "x")]), None)], NOW);
    assert_eq!(
        lock().force_release(&mut keys, &mut Waits::default(), NOW).map(|(released, _)| released),
        Err(LockError::NotALock)
    );
    assert!(keys.effects.is_empty());

    let mut keys = Keys::at([vec![held_by("a", "2")], queue(&[("x", NOW), ("b", NOW + 6_000)])].concat(), NOW);
    let status = lock().status(&mut keys, &Waits::default(), Some(b"b"), NOW).unwrap();
    assert_eq!(status, Status { locked: true, pttl_ms: 1_000, holders: 1, owner: Some((0, 1)), queued: 1 });
    assert!(keys.effects.is_empty(), "status writes nothing");
}
