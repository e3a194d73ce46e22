use super::*;
use crate::delay::Delay;
use crate::keyspace::memory::{MemoryKeyspace as Keys, Value};

mod cases;
mod script;
use cases::cases;

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
        Op::TryAcquire(lease, list) => {
            Reply::Acquire(semaphore.try_acquire(keys, (NOW, Delay::OVER), lease, &ids(list))?)
        }
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
    assert_eq!(semaphore.try_acquire(&mut keys, (NOW, Delay::OVER), Lease::Never, &many), Ok(TryAcquire::Granted));
    assert_eq!(after(&keys).0.as_deref(), Some("0"), "reclaimed {} then took {}", RECLAIM_LIMIT + 2, many.len());
}

#[test]
fn permit_ids_are_binary() {
    let mut keys = Keys::at(semaphore(Some("2"), &[], None), NOW);
    let semaphore = PermitSemaphore::new(b"s");
    let ids: [&[u8]; 2] = [b"\x00\xff\r\n", b"\x00\xff\r"];
    assert_eq!(semaphore.try_acquire(&mut keys, (NOW, Delay::OVER), Lease::Ms(10), &ids), Ok(TryAcquire::Granted));
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
