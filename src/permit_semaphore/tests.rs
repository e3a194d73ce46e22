use super::*;
use crate::keyspace::memory::{MemoryKeyspace as Keys, Value};

const NOW: i64 = 1_000_000;
const NEVER: i64 = PERMIT_NEVER_EXPIRES;
const T: &str = "{s}:timeout";
/// A lease that runs out in 500 ms, one that ran out 1 ms ago, one that
/// runs out now (expired: a score at or before now is).
const SOON: i64 = NOW + 500;
const PAST: i64 = NOW - 1;
const GONE: i64 = NOW;

type Key = (&'static str, Value, Option<i64>);

/// The count `s` and, if any, the permits taken in `{s}:timeout`.
fn semaphore(count: Option<&str>, taken: &[(&str, i64)], expire_at: Option<i64>) -> Vec<Key> {
    let mut keys: Vec<Key> = count.map(|count| ("s", Keys::string(count), expire_at)).into_iter().collect();
    if !taken.is_empty() {
        keys.push((T, Keys::zset(taken), expire_at));
    }
    keys
}

#[derive(Debug, Clone, Copy)]
enum Op {
    TryAcquire(Lease, &'static [&'static str]),
    Release(&'static str),
    ReleaseAll(&'static [&'static str]),
    UpdateLease(&'static str, Lease),
    Lease(&'static str),
    Available,
    Permits,
    Acquired,
    TrySetPermits(i64, Option<i64>),
    SetPermits(i64),
    AddPermits(i64),
}

/// What each operation replied, in one type for the table.
#[derive(Debug, PartialEq)]
enum Reply {
    Acquire(TryAcquire),
    Release(Release),
    Int(i64),
    Bool(bool),
    Nothing,
}

fn run(op: Op, keys: &mut Keys) -> Result<Reply> {
    let semaphore = PermitSemaphore::new(b"s");
    let ids = |ids: &'static [&'static str]| -> Vec<&'static [u8]> { ids.iter().map(|id| id.as_bytes()).collect() };
    Ok(match op {
        Op::TryAcquire(lease, list) => Reply::Acquire(semaphore.try_acquire(keys, NOW, lease, &ids(list))?),
        Op::Release(id) => Reply::Release(semaphore.release(keys, NOW, id.as_bytes())?),
        Op::ReleaseAll(list) => Reply::Int(semaphore.release_all(keys, NOW, &ids(list))?),
        Op::UpdateLease(id, lease) => Reply::Bool(semaphore.update_lease(keys, NOW, id.as_bytes(), lease)?),
        Op::Lease(id) => Reply::Int(semaphore.lease(keys, NOW, id.as_bytes())?),
        Op::Available => Reply::Int(semaphore.available(keys, NOW)?),
        Op::Permits => Reply::Int(semaphore.permits(keys, NOW)?),
        Op::Acquired => Reply::Int(semaphore.acquired(keys, NOW)?),
        Op::TrySetPermits(n, at) => Reply::Bool(semaphore.try_set_permits(keys, NOW, n, at)?),
        Op::SetPermits(n) => {
            semaphore.set_permits(keys, NOW, n)?;
            Reply::Nothing
        }
        Op::AddPermits(d) => {
            semaphore.add_permits(keys, NOW, d)?;
            Reply::Nothing
        }
    })
}

struct Case {
    name: &'static str,
    keys: Vec<Key>,
    op: Op,
    reply: Result<Reply>,
    effects: &'static [&'static str],
    /// The count (`None`: missing) and the permits taken afterwards.
    after: (Option<&'static str>, &'static [(&'static str, i64)]),
}

fn cases() -> Vec<Case> {
    let in_a_minute = Some(NOW + 60_000);
    vec![
        Case {
            name: "tryAcquire takes one permit per id with an absolute expiry",
            keys: semaphore(Some("3"), &[], None),
            op: Op::TryAcquire(Lease::Ms(500), &["a", "b"]),
            reply: Ok(Reply::Acquire(TryAcquire::Granted)),
            effects: &["INCRBY s -2", "ZADD {s}:timeout 1000500 a", "ZADD {s}:timeout 1000500 b"],
            after: (Some("1"), &[("a", SOON), ("b", SOON)]),
        },
        Case {
            name: "a lease of -1 never expires",
            keys: semaphore(Some("1"), &[], None),
            op: Op::TryAcquire(Lease::Never, &["a"]),
            reply: Ok(Reply::Acquire(TryAcquire::Granted)),
            effects: &["INCRBY s -1", "ZADD {s}:timeout 922337203685477 a"],
            after: (Some("0"), &[("a", NEVER)]),
        },
        Case {
            name: "the permits take the semaphore's TTL, as an absolute expiry",
            keys: semaphore(Some("1"), &[], in_a_minute),
            op: Op::TryAcquire(Lease::Ms(500), &["a"]),
            reply: Ok(Reply::Acquire(TryAcquire::Granted)),
            effects: &["INCRBY s -1", "ZADD {s}:timeout 1000500 a", "PEXPIREAT {s}:timeout 1060000"],
            after: (Some("0"), &[("a", SOON)]),
        },
        Case {
            name: "too few permits: the earliest expiry is the hint, nothing written",
            keys: semaphore(Some("0"), &[("x", NEVER), ("y", SOON)], None),
            op: Op::TryAcquire(Lease::Ms(500), &["a"]),
            reply: Ok(Reply::Acquire(TryAcquire::FirstExpiry(SOON))),
            effects: &[],
            after: (Some("0"), &[("x", NEVER), ("y", SOON)]),
        },
        Case {
            name: "too few permits and none expires: no hint",
            keys: semaphore(Some("1"), &[("x", NEVER)], None),
            op: Op::TryAcquire(Lease::Ms(500), &["a", "b"]),
            reply: Ok(Reply::Acquire(TryAcquire::NoExpiry)),
            effects: &[],
            after: (Some("1"), &[("x", NEVER)]),
        },
        Case {
            name: "a missing semaphore has no permits",
            keys: vec![],
            op: Op::TryAcquire(Lease::Ms(500), &["a"]),
            reply: Ok(Reply::Acquire(TryAcquire::NoExpiry)),
            effects: &[],
            after: (None, &[]),
        },
        Case {
            name: "expired permits are reclaimed first (all of them), published, then taken",
            keys: semaphore(Some("0"), &[("x", PAST), ("y", GONE), ("z", SOON)], None),
            op: Op::TryAcquire(Lease::Ms(500), &["a"]),
            reply: Ok(Reply::Acquire(TryAcquire::Granted)),
            effects: &[
                "ZREM {s}:timeout x y",
                "INCRBY s 2",
                "PUBLISH redisson_sc:{s} 2",
                "INCRBY s -1",
                "ZADD {s}:timeout 1000500 a",
            ],
            after: (Some("1"), &[("a", SOON), ("z", SOON)]),
        },
        Case {
            name: "a reclaim that leaves no permit publishes nothing",
            keys: semaphore(Some("-3"), &[("x", PAST)], None),
            op: Op::Available,
            reply: Ok(Reply::Int(-2)),
            effects: &["ZREM {s}:timeout x", "INCRBY s 1"],
            after: (Some("-2"), &[]),
        },
        Case {
            name: "an id held already is refused",
            keys: semaphore(Some("5"), &[("a", SOON)], None),
            op: Op::TryAcquire(Lease::Ms(500), &["b", "a"]),
            reply: Err(LockError::PermitIdHeld),
            effects: &[],
            after: (Some("5"), &[("a", SOON)]),
        },
        Case {
            name: "an id given twice is refused",
            keys: semaphore(Some("5"), &[("x", PAST)], None),
            op: Op::TryAcquire(Lease::Ms(500), &["a", "a"]),
            reply: Err(LockError::PermitIdRepeated),
            effects: &[],
            after: (Some("5"), &[("x", PAST)]),
        },
        Case {
            name: "an empty id is refused",
            keys: semaphore(Some("5"), &[], None),
            op: Op::Release(""),
            reply: Err(LockError::PermitIdEmpty),
            effects: &[],
            after: (Some("5"), &[]),
        },
        Case {
            name: "release returns a held permit and publishes the new count",
            keys: semaphore(Some("0"), &[("a", SOON), ("b", SOON)], None),
            op: Op::Release("a"),
            reply: Ok(Reply::Release(Release::Returned)),
            effects: &["ZREM {s}:timeout a", "INCRBY s 1", "PUBLISH redisson_sc:{s} 1"],
            after: (Some("1"), &[("b", SOON)]),
        },
        Case {
            name: "release publishes the new count even when it is not positive (as Redisson)",
            keys: semaphore(Some("-2"), &[("a", NEVER)], None),
            op: Op::Release("a"),
            reply: Ok(Reply::Release(Release::Returned)),
            effects: &["ZREM {s}:timeout a", "INCRBY s 1", "PUBLISH redisson_sc:{s} -1"],
            after: (Some("-1"), &[]),
        },
        Case {
            name: "release of an expired permit returns it and says -1",
            keys: semaphore(Some("0"), &[("a", GONE), ("b", SOON)], None),
            op: Op::Release("a"),
            reply: Ok(Reply::Release(Release::Lapsed)),
            effects: &["ZREM {s}:timeout a", "INCRBY s 1", "PUBLISH redisson_sc:{s} 1"],
            after: (Some("1"), &[("b", SOON)]),
        },
        Case {
            name: "release of an unknown id: 0, nothing written",
            keys: semaphore(Some("0"), &[("b", SOON)], None),
            op: Op::Release("a"),
            reply: Ok(Reply::Release(Release::NotHeld)),
            effects: &[],
            after: (Some("0"), &[("b", SOON)]),
        },
        Case {
            name: "release of an unknown id still reclaims",
            keys: semaphore(Some("0"), &[("b", PAST)], None),
            op: Op::Release("a"),
            reply: Ok(Reply::Release(Release::NotHeld)),
            effects: &["ZREM {s}:timeout b", "INCRBY s 1", "PUBLISH redisson_sc:{s} 1"],
            after: (Some("1"), &[]),
        },
        Case {
            name: "release of several ids returns them and publishes how many",
            keys: semaphore(Some("5"), &[("a", SOON), ("b", NEVER), ("c", SOON)], None),
            op: Op::ReleaseAll(&["a", "b"]),
            reply: Ok(Reply::Int(2)),
            effects: &["ZREM {s}:timeout a b", "INCRBY s 2", "PUBLISH redisson_sc:{s} 2"],
            after: (Some("7"), &[("c", SOON)]),
        },
        Case {
            name: "release of several ids, one unknown: 0, none returned",
            keys: semaphore(Some("5"), &[("a", SOON)], None),
            op: Op::ReleaseAll(&["a", "b"]),
            reply: Ok(Reply::Int(0)),
            effects: &[],
            after: (Some("5"), &[("a", SOON)]),
        },
        Case {
            name: "release of several ids, one expired: 0, only the expired one is reclaimed",
            keys: semaphore(Some("5"), &[("a", SOON), ("b", GONE)], None),
            op: Op::ReleaseAll(&["a", "b"]),
            reply: Ok(Reply::Int(0)),
            effects: &["ZREM {s}:timeout b", "INCRBY s 1", "PUBLISH redisson_sc:{s} 6"],
            after: (Some("6"), &[("a", SOON)]),
        },
        Case {
            name: "updateLease starts a held permit's lease again",
            keys: semaphore(Some("0"), &[("a", SOON)], None),
            op: Op::UpdateLease("a", Lease::Ms(2_000)),
            reply: Ok(Reply::Bool(true)),
            effects: &["ZADD {s}:timeout 1002000 a"],
            after: (Some("0"), &[("a", NOW + 2_000)]),
        },
        Case {
            name: "updateLease to the same expiry writes nothing",
            keys: semaphore(Some("0"), &[("a", NEVER)], None),
            op: Op::UpdateLease("a", Lease::Never),
            reply: Ok(Reply::Bool(true)),
            effects: &[],
            after: (Some("0"), &[("a", NEVER)]),
        },
        Case {
            name: "updateLease of an expired permit: reclaimed, 0",
            keys: semaphore(Some("0"), &[("a", GONE)], None),
            op: Op::UpdateLease("a", Lease::Ms(2_000)),
            reply: Ok(Reply::Bool(false)),
            effects: &["ZREM {s}:timeout a", "INCRBY s 1", "PUBLISH redisson_sc:{s} 1"],
            after: (Some("1"), &[]),
        },
        Case {
            name: "lease: the time left",
            keys: semaphore(Some("0"), &[("a", SOON)], None),
            op: Op::Lease("a"),
            reply: Ok(Reply::Int(500)),
            effects: &[],
            after: (Some("0"), &[("a", SOON)]),
        },
        Case {
            name: "lease of a permit that never expires: -1",
            keys: semaphore(Some("0"), &[("a", NEVER)], None),
            op: Op::Lease("a"),
            reply: Ok(Reply::Int(-1)),
            effects: &[],
            after: (Some("0"), &[("a", NEVER)]),
        },
        Case {
            name: "lease of an unknown id: 0",
            keys: semaphore(Some("0"), &[], None),
            op: Op::Lease("a"),
            reply: Ok(Reply::Int(0)),
            effects: &[],
            after: (Some("0"), &[]),
        },
        Case {
            name: "available of a missing semaphore: 0",
            keys: vec![],
            op: Op::Available,
            reply: Ok(Reply::Int(0)),
            effects: &[],
            after: (None, &[]),
        },
        Case {
            name: "permits: available plus taken, after the reclaim",
            keys: semaphore(Some("2"), &[("a", SOON), ("b", PAST)], None),
            op: Op::Permits,
            reply: Ok(Reply::Int(4)),
            effects: &["ZREM {s}:timeout b", "INCRBY s 1", "PUBLISH redisson_sc:{s} 3"],
            after: (Some("3"), &[("a", SOON)]),
        },
        Case {
            name: "acquired: taken, after the reclaim",
            keys: semaphore(Some("2"), &[("a", SOON), ("b", PAST)], None),
            op: Op::Acquired,
            reply: Ok(Reply::Int(1)),
            effects: &["ZREM {s}:timeout b", "INCRBY s 1", "PUBLISH redisson_sc:{s} 3"],
            after: (Some("3"), &[("a", SOON)]),
        },
        Case {
            name: "trySetPermits sets a missing semaphore",
            keys: vec![],
            op: Op::TrySetPermits(3, Some(NOW + 1_000)),
            reply: Ok(Reply::Bool(true)),
            effects: &["SET s 3 PXAT 1001000", "PUBLISH redisson_sc:{s} 3"],
            after: (Some("3"), &[]),
        },
        Case {
            name: "trySetPermits leaves an existing one alone",
            keys: semaphore(Some("0"), &[], None),
            op: Op::TrySetPermits(3, None),
            reply: Ok(Reply::Bool(false)),
            effects: &[],
            after: (Some("0"), &[]),
        },
        Case {
            name: "setPermits of a missing semaphore sets it",
            keys: vec![],
            op: Op::SetPermits(4),
            reply: Ok(Reply::Nothing),
            effects: &["SET s 4", "PUBLISH redisson_sc:{s} 4"],
            after: (Some("4"), &[]),
        },
        Case {
            name: "setPermits counts the permits taken and publishes the total",
            keys: semaphore(Some("1"), &[("a", SOON), ("b", NEVER)], None),
            op: Op::SetPermits(6),
            reply: Ok(Reply::Nothing),
            effects: &["INCRBY s 3", "PUBLISH redisson_sc:{s} 6"],
            after: (Some("4"), &[("a", SOON), ("b", NEVER)]),
        },
        Case {
            name: "setPermits below the permits taken leaves a negative count",
            keys: semaphore(Some("1"), &[("a", SOON), ("b", NEVER)], None),
            op: Op::SetPermits(1),
            reply: Ok(Reply::Nothing),
            effects: &["INCRBY s -2", "PUBLISH redisson_sc:{s} 1"],
            after: (Some("-1"), &[("a", SOON), ("b", NEVER)]),
        },
        Case {
            name: "setPermits to the total already there writes nothing",
            keys: semaphore(Some("1"), &[("a", SOON)], None),
            op: Op::SetPermits(2),
            reply: Ok(Reply::Nothing),
            effects: &[],
            after: (Some("1"), &[("a", SOON)]),
        },
        Case {
            name: "addPermits keeps the TTL and publishes the delta",
            keys: semaphore(Some("1"), &[], in_a_minute),
            op: Op::AddPermits(2),
            reply: Ok(Reply::Nothing),
            effects: &["SET s 3 PXAT 1060000", "PUBLISH redisson_sc:{s} 2"],
            after: (Some("3"), &[]),
        },
        Case {
            name: "addPermits of a negative delta publishes nothing",
            keys: semaphore(Some("1"), &[], None),
            op: Op::AddPermits(-2),
            reply: Ok(Reply::Nothing),
            effects: &["SET s -1"],
            after: (Some("-1"), &[]),
        },
        Case {
            name: "addPermits of 0 to a missing semaphore creates it",
            keys: vec![],
            op: Op::AddPermits(0),
            reply: Ok(Reply::Nothing),
            effects: &["SET s 0"],
            after: (Some("0"), &[]),
        },
        Case {
            name: "addPermits of 0 to an existing one writes nothing",
            keys: semaphore(Some("4"), &[], None),
            op: Op::AddPermits(0),
            reply: Ok(Reply::Nothing),
            effects: &[],
            after: (Some("4"), &[]),
        },
        Case {
            name: "a count PAST the 64-bit range is refused before any write",
            keys: semaphore(Some("9223372036854775807"), &[("a", SOON)], None),
            op: Op::AddPermits(1),
            reply: Err(LockError::CounterOverflow(b"s".to_vec())),
            effects: &[],
            after: (Some("9223372036854775807"), &[("a", SOON)]),
        },
    ]
}

fn after(keys: &Keys) -> (Option<String>, Vec<(String, i64)>) {
    let count = keys.keys.get(b"s".as_slice()).map(|(value, _)| match value {
        Value::String(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        other => panic!("not a string: {other:?}"),
    });
    let taken = match keys.keys.get(T.as_bytes()) {
        None => Vec::new(),
        Some((Value::Zset(zset), _)) => {
            zset.iter().map(|(id, s)| (String::from_utf8_lossy(id).into_owned(), *s)).collect()
        }
        Some(other) => panic!("not a zset: {other:?}"),
    };
    (count, taken)
}

#[test]
fn operations_follow_redissons_scripts_and_their_fixes() {
    for case in cases() {
        let mut keys = Keys::at(case.keys, NOW);
        assert_eq!(run(case.op, &mut keys), case.reply, "{}: reply", case.name);
        assert_eq!(keys.effects, case.effects, "{}: effects", case.name);
        let (count, taken) = case.after;
        let expected = (count.map(str::to_owned), taken.iter().map(|(id, s)| (id.to_string(), *s)).collect());
        assert_eq!(after(&keys), expected, "{}: after", case.name);
    }
}

#[test]
fn keys_of_other_types_are_refused_by_every_operation_with_nothing_written() {
    let ops = [
        Op::TryAcquire(Lease::Ms(5), &["a"]),
        Op::Release("a"),
        Op::ReleaseAll(&["a", "b"]),
        Op::UpdateLease("a", Lease::Never),
        Op::Lease("a"),
        Op::Available,
        Op::Permits,
        Op::Acquired,
        Op::TrySetPermits(1, None),
        Op::SetPermits(1),
        Op::AddPermits(1),
    ];
    let timeouts_not_a_zset = LockError::DerivedWrongType(T.as_bytes().to_vec());
    let bad: [(Vec<Key>, LockError); 4] = [
        (semaphore(Some("five"), &[("a", NOW - 1)], None), LockError::StoredNotInteger(b"s".to_vec())),
        (vec![("s", Keys::hash(&[("a", "1")]), None)], LockError::WrongType),
        (vec![("s", Keys::string("1"), None), (T, Keys::string("x"), None)], timeouts_not_a_zset.clone()),
        (vec![(T, Keys::list(&["a"]), None)], timeouts_not_a_zset),
    ];
    for op in ops {
        for (stored, error) in &bad {
            let mut keys = Keys::at(stored.clone(), NOW);
            let before = keys.keys.clone();
            assert_eq!(run(op, &mut keys), Err(error.clone()), "{op:?} on {stored:?}");
            assert!(keys.effects.is_empty() && keys.keys == before, "{op:?} on {stored:?} changed something");
        }
    }
}

#[test]
fn a_reclaim_takes_at_most_the_limit_but_an_acquire_at_least_what_it_asks() {
    let ids: Vec<String> = (0..RECLAIM_LIMIT + 5).map(|n| format!("p{n:05}")).collect();
    let zset = Value::Zset(ids.iter().map(|id| (id.as_bytes().to_vec(), NOW - 1)).collect());
    let start = || Keys::at(vec![("s", Keys::string("0"), None), (T, zset.clone(), None)], NOW);
    let semaphore = PermitSemaphore::new(b"s");

    let mut keys = start();
    assert_eq!(semaphore.available(&mut keys, NOW), Ok(RECLAIM_LIMIT as i64));
    assert_eq!(after(&keys).1.len(), 5);

    let many: Vec<String> = (0..RECLAIM_LIMIT + 2).map(|n| format!("n{n:05}")).collect();
    let many: Vec<&[u8]> = many.iter().map(|id| id.as_bytes()).collect();
    let mut keys = start();
    assert_eq!(semaphore.try_acquire(&mut keys, NOW, Lease::Never, &many), Ok(TryAcquire::Granted));
    assert_eq!(after(&keys).0.as_deref(), Some("0"), "reclaimed {} then took {}", RECLAIM_LIMIT + 2, many.len());
}

#[test]
fn permit_ids_are_binary() {
    let mut keys = Keys::at(semaphore(Some("2"), &[], None), NOW);
    let semaphore = PermitSemaphore::new(b"s");
    let ids: [&[u8]; 2] = [b"\x00\xff\r\n", b"\x00\xff\r"];
    assert_eq!(semaphore.try_acquire(&mut keys, NOW, Lease::Ms(10), &ids), Ok(TryAcquire::Granted));
    assert_eq!(semaphore.lease(&mut keys, NOW, ids[0]), Ok(10));
    assert_eq!(semaphore.release(&mut keys, NOW, ids[1]), Ok(Release::Returned));
    assert_eq!(semaphore.acquired(&mut keys, NOW), Ok(1));
}

#[test]
fn leases_parse_by_the_table() {
    let cases: &[(&[u8], Result<Lease>)] = &[
        (b"1", Ok(Lease::Ms(1))),
        (b"30000", Ok(Lease::Ms(30_000))),
        (b"-1", Ok(Lease::Never)),
        (b"0", Err(LockError::PermitLeaseInvalid)),
        (b"-2", Err(LockError::PermitLeaseInvalid)),
        (b"-0", Err(LockError::PermitLeaseInvalid)),
        (b"1.5", Err(LockError::PermitLeaseInvalid)),
        (b"", Err(LockError::PermitLeaseInvalid)),
        (b"ten", Err(LockError::PermitLeaseInvalid)),
        (b"31536000001", Err(LockError::LeaseTooLong)),
    ];
    for (arg, expected) in cases {
        assert_eq!(&Lease::parse(arg), expected, "{}", String::from_utf8_lossy(arg));
    }
}

#[test]
fn derived_names_follow_redissons_rules() {
    let semaphore = PermitSemaphore::new(b"{tag}s");
    assert_eq!(semaphore.timeouts, b"{tag}s:timeout");
    assert_eq!(semaphore.channel, b"redisson_sc:{tag}s");
}
