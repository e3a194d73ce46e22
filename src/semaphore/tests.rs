use super::*;
use crate::keyspace::memory::{MemoryKeyspace as Keys, Value};
use rlock_protocol::semaphore_channel;

pub(super) const NOW: i64 = 1_000_000;
const C: &str = "redisson_sc:{s}";

pub(super) type Key = (&'static str, Value, Option<i64>);

pub(super) fn permits(count: &str, expire_at: Option<i64>) -> Vec<Key> {
    vec![("s", Keys::string(count), expire_at)]
}

#[derive(Debug, Clone, Copy)]
enum Op {
    TryAcquire(i64),
    /// A tryAcquire while a lock-delay lasts.
    TryAcquireDelayed(i64),
    Release(i64),
    ReleaseIfExists(i64),
    TrySetPermits(i64, Option<i64>),
    AddPermits(i64),
    AnnounceAvailable,
    Drain,
    /// A drainPermits while a lock-delay lasts.
    DrainDelayed,
    Available,
}

/// What each operation replied, in one type for the table.
#[derive(Debug, PartialEq)]
enum Reply {
    Bool(bool),
    Count(Option<i64>),
    Nothing,
}

fn run(op: Op, keys: &mut Keys) -> Result<Reply> {
    let semaphore = Semaphore::new(b"s");
    Ok(match op {
        Op::TryAcquire(n) => Reply::Bool(semaphore.try_acquire(keys, n, Delay::OVER)?),
        Op::TryAcquireDelayed(n) => Reply::Bool(semaphore.try_acquire(keys, n, Delay::left(700))?),
        Op::Release(n) => Reply::Bool(semaphore.release(keys, n, false)?),
        Op::ReleaseIfExists(n) => Reply::Bool(semaphore.release(keys, n, true)?),
        Op::TrySetPermits(n, at) => Reply::Bool(semaphore.try_set_permits(keys, n, at)?),
        Op::AddPermits(d) => {
            semaphore.add_permits(keys, d)?;
            Reply::Nothing
        }
        Op::Drain => Reply::Count(semaphore.drain(keys, Delay::OVER)?),
        Op::DrainDelayed => Reply::Count(semaphore.drain(keys, Delay::left(700))?),
        Op::Available => Reply::Count(Some(semaphore.available(keys)?)),
        Op::AnnounceAvailable => {
            semaphore.announce_available(keys)?;
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
    /// The semaphore's value and expiry afterwards (`None`: missing).
    after: Option<(&'static str, Option<i64>)>,
}

fn cases() -> Vec<Case> {
    let in_a_minute = Some(NOW + 60_000);
    vec![
        Case {
            name: "tryAcquire takes permits that are there",
            keys: permits("5", in_a_minute),
            op: Op::TryAcquire(3),
            reply: Ok(Reply::Bool(true)),
            effects: &["INCRBY s -3"],
            after: Some(("2", in_a_minute)),
        },
        Case {
            name: "a lock-delay gives no permit",
            keys: permits("5", in_a_minute),
            op: Op::TryAcquireDelayed(3),
            reply: Ok(Reply::Bool(false)),
            effects: &[],
            after: Some(("5", in_a_minute)),
        },
        Case {
            name: "the end of a lock-delay announces the permits there are",
            keys: permits("5", in_a_minute),
            op: Op::AnnounceAvailable,
            reply: Ok(Reply::Nothing),
            effects: &["PUBLISH redisson_sc:{s} 5"],
            after: Some(("5", in_a_minute)),
        },
        Case {
            name: "the end of a lock-delay announces no permit when there is none",
            keys: permits("0", None),
            op: Op::AnnounceAvailable,
            reply: Ok(Reply::Nothing),
            effects: &[],
            after: Some(("0", None)),
        },
        Case {
            name: "tryAcquire of all the permits leaves 0",
            keys: permits("3", None),
            op: Op::TryAcquire(3),
            reply: Ok(Reply::Bool(true)),
            effects: &["INCRBY s -3"],
            after: Some(("0", None)),
        },
        Case {
            name: "tryAcquire of more than there are takes nothing",
            keys: permits("2", None),
            op: Op::TryAcquire(3),
            reply: Ok(Reply::Bool(false)),
            effects: &[],
            after: Some(("2", None)),
        },
        Case {
            name: "a missing semaphore has no permits",
            keys: vec![],
            op: Op::TryAcquire(1),
            reply: Ok(Reply::Bool(false)),
            effects: &[],
            after: None,
        },
        Case {
            name: "0 permits are always there and nothing is written",
            keys: vec![],
            op: Op::TryAcquire(0),
            reply: Ok(Reply::Bool(true)),
            effects: &[],
            after: None,
        },
        Case {
            name: "a negative count has no permits",
            keys: permits("-2", None),
            op: Op::TryAcquire(1),
            reply: Ok(Reply::Bool(false)),
            effects: &[],
            after: Some(("-2", None)),
        },
        Case {
            name: "release adds, keeps the TTL and publishes the new count",
            keys: permits("1", in_a_minute),
            op: Op::Release(2),
            reply: Ok(Reply::Bool(true)),
            effects: &["INCRBY s 2", "PUBLISH redisson_sc:{s} 3"],
            after: Some(("3", in_a_minute)),
        },
        Case {
            name: "release creates a missing semaphore",
            keys: vec![],
            op: Op::Release(1),
            reply: Ok(Reply::Bool(true)),
            effects: &["INCRBY s 1", "PUBLISH redisson_sc:{s} 1"],
            after: Some(("1", None)),
        },
        Case {
            name: "releaseIfExists leaves a missing semaphore alone",
            keys: vec![],
            op: Op::ReleaseIfExists(1),
            reply: Ok(Reply::Bool(false)),
            effects: &[],
            after: None,
        },
        Case {
            name: "releaseIfExists adds to an existing one",
            keys: permits("0", None),
            op: Op::ReleaseIfExists(4),
            reply: Ok(Reply::Bool(true)),
            effects: &["INCRBY s 4", "PUBLISH redisson_sc:{s} 4"],
            after: Some(("4", None)),
        },
        Case {
            name: "a release of 0 permits writes and publishes nothing",
            keys: permits("2", None),
            op: Op::Release(0),
            reply: Ok(Reply::Bool(true)),
            effects: &[],
            after: Some(("2", None)),
        },
        Case {
            name: "a release past the 64-bit range is refused",
            keys: permits("9223372036854775807", None),
            op: Op::Release(1),
            reply: Err(LockError::CounterOverflow(b"s".to_vec())),
            effects: &[],
            after: Some(("9223372036854775807", None)),
        },
        Case {
            name: "trySetPermits sets a missing semaphore and publishes",
            keys: vec![],
            op: Op::TrySetPermits(5, None),
            reply: Ok(Reply::Bool(true)),
            effects: &["SET s 5", "PUBLISH redisson_sc:{s} 5"],
            after: Some(("5", None)),
        },
        Case {
            name: "trySetPermits with a TTL sets an absolute expiry",
            keys: vec![],
            op: Op::TrySetPermits(5, Some(NOW + 1_000)),
            reply: Ok(Reply::Bool(true)),
            effects: &["SET s 5 PXAT 1001000", "PUBLISH redisson_sc:{s} 5"],
            after: Some(("5", Some(NOW + 1_000))),
        },
        Case {
            name: "trySetPermits leaves an existing semaphore alone",
            keys: permits("0", None),
            op: Op::TrySetPermits(5, None),
            reply: Ok(Reply::Bool(false)),
            effects: &[],
            after: Some(("0", None)),
        },
        Case {
            name: "addPermits adds and keeps the TTL (Redisson drops it, #3224)",
            keys: permits("2", in_a_minute),
            op: Op::AddPermits(3),
            reply: Ok(Reply::Nothing),
            effects: &["SET s 5 PXAT 1060000", "PUBLISH redisson_sc:{s} 5"],
            after: Some(("5", in_a_minute)),
        },
        Case {
            name: "addPermits may go below 0 and still publishes",
            keys: permits("2", None),
            op: Op::AddPermits(-3),
            reply: Ok(Reply::Nothing),
            effects: &["SET s -1", "PUBLISH redisson_sc:{s} -1"],
            after: Some(("-1", None)),
        },
        Case {
            name: "addPermits creates a missing semaphore",
            keys: vec![],
            op: Op::AddPermits(2),
            reply: Ok(Reply::Nothing),
            effects: &["SET s 2", "PUBLISH redisson_sc:{s} 2"],
            after: Some(("2", None)),
        },
        Case {
            name: "drain takes every permit, keeps the TTL, publishes nothing",
            keys: permits("4", in_a_minute),
            op: Op::Drain,
            reply: Ok(Reply::Count(Some(4))),
            effects: &["SET s 0 PXAT 1060000"],
            after: Some(("0", in_a_minute)),
        },
        Case {
            name: "drain takes no permit while a lock-delay lasts",
            keys: permits("4", in_a_minute),
            op: Op::DrainDelayed,
            reply: Ok(Reply::Count(Some(0))),
            effects: &[],
            after: Some(("4", in_a_minute)),
        },
        Case {
            name: "drain of a missing semaphore",
            keys: vec![],
            op: Op::Drain,
            reply: Ok(Reply::Count(None)),
            effects: &[],
            after: None,
        },
        Case {
            name: "drain of an empty semaphore writes nothing",
            keys: permits("0", None),
            op: Op::Drain,
            reply: Ok(Reply::Count(Some(0))),
            effects: &[],
            after: Some(("0", None)),
        },
        Case {
            name: "available permits",
            keys: permits("7", None),
            op: Op::Available,
            reply: Ok(Reply::Count(Some(7))),
            effects: &[],
            after: Some(("7", None)),
        },
        Case {
            name: "a missing semaphore has 0 available",
            keys: vec![],
            op: Op::Available,
            reply: Ok(Reply::Count(Some(0))),
            effects: &[],
            after: None,
        },
    ]
}

pub(super) fn value(keys: &Keys) -> Option<(String, Option<i64>)> {
    keys.keys.get(b"s".as_slice()).map(|(value, at)| match value {
        Value::String(bytes) => (String::from_utf8_lossy(bytes).into_owned(), *at),
        other => panic!("not a string: {other:?}"),
    })
}

#[test]
fn operations_follow_redissons_scripts_and_their_fixes() {
    for case in cases() {
        let mut keys = Keys::at(case.keys, NOW);
        assert_eq!(run(case.op, &mut keys), case.reply, "{}: reply", case.name);
        assert_eq!(keys.effects, case.effects, "{}: effects", case.name);
        let after = case.after.map(|(v, at)| (v.to_owned(), at));
        assert_eq!(value(&keys), after, "{}: value", case.name);
    }
}

#[test]
fn a_key_that_is_not_a_semaphore_is_refused_by_every_operation() {
    let ops = [
        Op::TryAcquire(1),
        Op::TryAcquire(0),
        Op::Release(1),
        Op::ReleaseIfExists(1),
        Op::TrySetPermits(1, None),
        Op::AddPermits(1),
        Op::Drain,
        Op::Available,
    ];
    let not_counts: [(Value, LockError); 4] = [
        (Keys::string("five"), LockError::StoredNotInteger(b"s".to_vec())),
        (Keys::string("5.0"), LockError::StoredNotInteger(b"s".to_vec())),
        (Keys::string(" 5"), LockError::StoredNotInteger(b"s".to_vec())),
        (Keys::hash(&[("a", "1")]), LockError::WrongType),
    ];
    for op in ops {
        for (stored, error) in &not_counts {
            let mut keys = Keys::at(vec![("s", stored.clone(), None)], NOW);
            let before = keys.keys.clone();
            assert_eq!(run(op, &mut keys), Err(error.clone()), "{op:?} on {stored:?}");
            assert!(keys.effects.is_empty() && keys.keys == before, "{op:?} on {stored:?} changed something");
        }
    }
}

#[test]
fn the_channel_follows_redissons_prefix_rule() {
    let mut keys = Keys::default();
    Semaphore::new(b"{tag}s").release(&mut keys, 1, false).unwrap();
    assert_eq!(keys.effects, ["INCRBY {tag}s 1", "PUBLISH redisson_sc:{tag}s 1"]);
    assert_eq!(C, String::from_utf8(semaphore_channel(b"s")).unwrap());
}

#[test]
fn like_redissons_scripts_it_publishes_lua_numbers_and_finds_any_string() {
    fn lua_number(x: f64) -> LuaText {
        format!("lua:{x}").into_bytes().into()
    }
    let semaphore = Semaphore::new(b"s").like_redissons_scripts(lua_number);
    let mut keys = Keys::at(permits("2", None), NOW);
    assert_eq!(semaphore.release(&mut keys, 3, true), Ok(true));
    assert_eq!(keys.effects, ["INCRBY s 3", "PUBLISH redisson_sc:{s} lua:5"]);

    let mut keys = Keys::at(permits("five", None), NOW);
    assert_eq!(semaphore.try_set_permits(&mut keys, 3, None), Ok(false), "GET finds a string");
    assert!(keys.effects.is_empty());
    let mut keys = Keys::at(vec![("s", Keys::hash(&[("a", "1")]), None)], NOW);
    assert_eq!(semaphore.try_set_permits(&mut keys, 3, None), Err(LockError::WrongType), "GET refuses a hash");
    let mut keys = Keys::at(permits("1.5", Some(NOW + 5)), NOW);
    assert_eq!(semaphore.add_permits(&mut keys, 2), Ok(()), "Lua's 1.5 + 2");
    assert_eq!(keys.effects, ["SET s lua:3.5", "PUBLISH redisson_sc:{s} lua:3.5"]);
    assert_eq!(value(&keys), Some(("lua:3.5".to_owned(), None)), "SET drops the TTL");
    let mut keys = Keys::at(permits("five", None), NOW);
    assert_eq!(semaphore.add_permits(&mut keys, 2), Err(LockError::StoredNotInteger(b"s".to_vec())));
    let mut keys = Keys::at(vec![], NOW);
    assert_eq!(semaphore.try_set_permits(&mut keys, 3, Some(NOW + 5)), Ok(true));
    assert_eq!(keys.effects, [format!("SET s 3 PXAT {}", NOW + 5).as_str(), "PUBLISH redisson_sc:{s} 3"]);
}
