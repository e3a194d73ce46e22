//! Redisson's drainPermits, tryAcquire and addPermits scripts, as the filter runs them.

use super::tests::{permits, value, NOW};
use super::*;
use crate::keyspace::memory::MemoryKeyspace as Keys;

#[test]
fn drain_like_script_replies_any_string_as_it_is_and_sets_0_without_the_ttl() {
    let semaphore = Semaphore::new(b"s");
    let mut keys = Keys::at(permits("1.5", Some(NOW + 60_000)), NOW);
    assert_eq!(semaphore.drain_like_script(&mut keys, Delay::OVER), Ok(Some(b"1.5".to_vec())));
    assert_eq!(keys.effects, ["SET s 0"]);
    assert_eq!(value(&keys), Some(("0".to_owned(), None)));
    let mut keys = Keys::at(permits("0", None), NOW);
    assert_eq!(semaphore.drain_like_script(&mut keys, Delay::OVER), Ok(Some(b"0".to_vec())));
    assert_eq!(keys.effects, ["SET s 0"], "written even at 0");
    let mut keys = Keys::at(vec![], NOW);
    assert_eq!(semaphore.drain_like_script(&mut keys, Delay::OVER), Ok(None));
    assert!(keys.effects.is_empty());
    let mut keys = Keys::at(vec![("s", Keys::hash(&[("a", "1")]), None)], NOW);
    assert_eq!(semaphore.drain_like_script(&mut keys, Delay::OVER), Err(LockError::WrongType));
}

#[test]
fn try_acquire_like_script_compares_as_lua_tonumber_does() {
    let semaphore = Semaphore::new(b"s");
    let not_integer = || Err(LockError::StoredNotInteger(b"s".to_vec()));
    // Stored, permits, reply, effects.
    type ScriptCase = (&'static str, i64, Result<bool>, &'static [&'static str]);
    let cases: [ScriptCase; 9] = [
        ("5", 2, Ok(true), &["INCRBY s -2"]),
        ("5", 6, Ok(false), &[]),
        ("0", 0, Ok(true), &["INCRBY s 0"]),
        ("1.5", 2, Ok(false), &[]),
        ("1.5", 1, not_integer(), &[]),
        (" 3", 5, Ok(false), &[]),
        ("0x10", 20, Ok(false), &[]),
        ("nan", 1, Ok(false), &[]),
        ("five", 1, not_integer(), &[]),
    ];
    for (stored, taken, reply, effects) in cases {
        let mut keys = Keys::at(permits(stored, None), NOW);
        assert_eq!(semaphore.try_acquire_like_script(&mut keys, taken, Delay::OVER), reply, "{stored} for {taken}");
        assert_eq!(keys.effects, effects, "{stored} for {taken}");
    }
    let mut keys = Keys::at(vec![], NOW);
    assert_eq!(semaphore.try_acquire_like_script(&mut keys, 1, Delay::OVER), Ok(false));
    let mut keys = Keys::at(vec![("s", Keys::string("5"), None)], 0);
    assert_eq!(semaphore.try_acquire_like_script(&mut keys, 1, Delay::left(700)), Ok(false), "a lock-delay");
    assert!(keys.effects.is_empty());
}

#[test]
fn drain_like_script_takes_no_permit_while_a_lock_delay_lasts() {
    let semaphore = Semaphore::new(b"s");
    for (stored, reply, effects) in [("4", "0", &[][..]), ("0", "0", &["SET s 0"][..]), ("-2", "-2", &["SET s 0"][..])]
    {
        let mut keys = Keys::at(permits(stored, None), NOW);
        assert_eq!(
            semaphore.drain_like_script(&mut keys, Delay::left(700)),
            Ok(Some(reply.as_bytes().to_vec())),
            "{stored}"
        );
        assert_eq!(keys.effects, effects, "{stored}");
    }
}

#[test]
fn add_permits_like_script_announces_as_each_release_of_the_script_does() {
    let semaphore = Semaphore::new(b"s");
    let lua_number: LuaNumberText = |x| format!("{x}").into_bytes().into();
    let cases: [(Announce, i64, &[&str]); 4] = [
        (Announce::Nothing, 2, &["SET s 7"]),
        (Announce::Sum, 2, &["SET s 7", "PUBLISH redisson_sc:{s} 7"]),
        (Announce::PositiveDelta, 2, &["SET s 7", "PUBLISH redisson_sc:{s} 2"]),
        (Announce::PositiveDelta, -2, &["SET s 3"]),
    ];
    for (announce, delta, effects) in cases {
        let mut keys = Keys::at(permits("5", None), NOW);
        assert_eq!(semaphore.add_permits_like_script(&mut keys, delta, lua_number, announce), Ok(()));
        assert_eq!(keys.effects, effects, "{announce:?} {delta}");
    }
}
