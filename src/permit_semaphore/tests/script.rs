//! The `AT now_ms` form: Redisson's 3.22+ scripts on their own clock.

use super::*;
use crate::permit_semaphore::script::ScriptCount;
use crate::redisson::lua_number::percent_17g;
use crate::semaphore::Announce;

/// The script's clock, later than the server's `NOW` the keyspace has.
const AT: i64 = NOW + 1_000;

#[test]
fn the_reads_reclaim_every_permit_scored_0_to_the_scripts_clock() {
    let expirable = PermitSemaphore::new(b"s");
    let taken = [("a", NOW + 200), ("b", AT), ("c", AT + 1), ("d", NEVER), ("n", -5)];
    let mut keys = Keys::at(semaphore(Some("-1"), &taken, None), NOW);
    assert_eq!(expirable.available_like_script(&mut keys, AT), Ok(ScriptCount::Integer(1)), "2 back: INCRBY's reply");
    assert!(keys.effects.iter().any(|effect| effect == "PUBLISH redisson_sc:{s} 1"), "{:?}", keys.effects);
    assert_eq!(expirable.available_like_script(&mut keys, AT), Ok(ScriptCount::Stored(b"1".to_vec())), "GET's");
    assert_eq!(expirable.acquired_like_script(&mut keys, AT), Ok(2), "ZCOUNT 0 +inf leaves out n");
    assert_eq!(expirable.permits_like_script(&mut keys, AT), Ok(3));
    assert_eq!(after(&keys).1.len(), 3);
}

/// The count and permits stored; what availablePermits and getPermits reply.
type Found = (Option<&'static str>, &'static [(&'static str, i64)], Result<ScriptCount>, Result<i64>);

#[test]
fn the_reads_answer_as_the_scripts_on_what_they_find() {
    let expirable = PermitSemaphore::new(b"s");
    let cases: [Found; 5] = [
        (None, &[], Ok(ScriptCount::Integer(0)), Ok(0)),
        (Some("1.5"), &[("d", NEVER)], Ok(ScriptCount::Stored(b"1.5".to_vec())), Ok(2)),
        (Some("five"), &[], Ok(ScriptCount::Stored(b"five".to_vec())), Err(LockError::StoredNotInteger(b"s".to_vec()))),
        (None, &[("d", NEVER)], Ok(ScriptCount::Integer(0)), Ok(0)),
        (Some("1e300"), &[], Ok(ScriptCount::Stored(b"1e300".to_vec())), Ok(i64::MIN)),
    ];
    for (count, taken, available, permits) in cases {
        let mut keys = Keys::at(semaphore(count, taken, None), NOW);
        assert_eq!(expirable.available_like_script(&mut keys, AT), available, "{count:?}");
        assert_eq!(expirable.permits_like_script(&mut keys, AT), permits, "{count:?}");
        assert!(keys.effects.is_empty(), "{count:?}: {:?}", keys.effects);
    }
}

#[test]
fn a_count_that_is_no_integer_fails_after_the_zrem_as_in_lua() {
    let expirable = PermitSemaphore::new(b"s");
    let mut keys = Keys::at(semaphore(Some("five"), &[("a", NOW), ("b", NEVER)], None), NOW);
    assert_eq!(expirable.acquired_like_script(&mut keys, AT), Err(LockError::StoredNotInteger(b"s".to_vec())));
    assert_eq!(after(&keys), (Some("five".to_owned()), vec![("b".to_owned(), NEVER)]));
    let mut keys = Keys::at(vec![("s", Keys::string("1"), None), (T, Keys::string("x"), None)], NOW);
    assert_eq!(expirable.permits_like_script(&mut keys, AT), Err(LockError::DerivedWrongType(T.as_bytes().to_vec())));
    assert!(keys.effects.is_empty());
}

#[test]
fn a_release_returns_the_permit_even_when_its_lease_ran_out_and_publishes_the_count() {
    let expirable = PermitSemaphore::new(b"s");
    let mut keys = Keys::at(semaphore(Some("-3"), &[("a", AT), ("b", AT + 1), ("p", NOW - 5)], None), NOW);
    assert_eq!(expirable.release_like_script(&mut keys, AT, b"a"), Ok(0), "ran out at AT: 0, returned");
    assert_eq!(expirable.release_like_script(&mut keys, AT, b"b"), Ok(1));
    assert_eq!(expirable.release_like_script(&mut keys, AT, b"b"), Ok(0), "not held");
    assert!(keys.effects.iter().any(|effect| effect == "PUBLISH redisson_sc:{s} -1"), "{:?}", keys.effects);
    assert_eq!(after(&keys), (Some("-1".to_owned()), vec![("p".to_owned(), NOW - 5)]), "no reclaim");
}

#[test]
fn a_release_of_ids_is_all_or_nothing_and_publishes_how_many() {
    let expirable = PermitSemaphore::new(b"s");
    let taken = [("a", AT + 1), ("b", NEVER), ("c", AT), ("p", NOW - 5)];
    let mut keys = Keys::at(semaphore(Some("0"), &taken, None), NOW);
    assert_eq!(expirable.release_all_like_script(&mut keys, AT, &[b"a", b"c"]), Ok(0));
    assert!(keys.effects.is_empty(), "{:?}", keys.effects);
    assert_eq!(expirable.release_all_like_script(&mut keys, AT, &[b"a", b"b", b"a"]), Ok(2), "ZREM counts a once");
    assert!(keys.effects.iter().any(|effect| effect == "PUBLISH redisson_sc:{s} 2"), "{:?}", keys.effects);
    assert_eq!(after(&keys), (Some("4".to_owned()), vec![]), "c and p reclaimed, a and b returned");
}

#[test]
fn lease_reads_and_renewals_run_on_the_scripts_clock() {
    let expirable = PermitSemaphore::new(b"s");
    let mut keys = Keys::at(semaphore(Some("0"), &[("a", AT + 7), ("b", NEVER), ("c", AT)], None), NOW);
    assert_eq!(expirable.lease_like_script(&mut keys, AT, b"a"), Ok(7));
    assert_eq!(expirable.lease_like_script(&mut keys, AT, b"b"), Ok(-1));
    assert_eq!(expirable.lease_like_script(&mut keys, AT, b"c"), Ok(0), "reclaimed");
    let written = keys.effects.len();
    assert_eq!(expirable.update_lease_like_script(&mut keys, AT, b"a", AT + 7), Ok(true));
    assert_eq!(keys.effects.len(), written, "the same score: no ZADD");
    assert_eq!(expirable.update_lease_like_script(&mut keys, AT, b"a", NEVER), Ok(true));
    assert_eq!(expirable.update_lease_like_script(&mut keys, AT, b"c", NEVER), Ok(false));
    assert_eq!(after(&keys).1, vec![("a".to_owned(), NEVER), ("b".to_owned(), NEVER)]);
}

#[test]
fn set_permits_sets_a_missing_count_or_adds_the_difference_as_lua_writes_it() {
    let expirable = PermitSemaphore::new(b"s");
    let mut keys = Keys::at(vec![(T, Keys::zset(&[("p", NOW - 5)]), None)], NOW);
    assert_eq!(expirable.set_permits_like_script(&mut keys, 4, false), Ok(()));
    assert_eq!(after(&keys), (Some("4".to_owned()), vec![("p".to_owned(), NOW - 5)]), "no reclaim");
    // One keyspace per call, as each command opens its keys.
    let mut keys = Keys::at(semaphore(Some("4"), &[("p", NOW - 5)], None), NOW);
    assert_eq!(expirable.set_permits_like_script(&mut keys, 6, false), Ok(()));
    assert_eq!(after(&keys).0.as_deref(), Some("5"), "4 + 1 taken: INCRBY 1");
    assert!(keys.effects.iter().any(|effect| effect == "PUBLISH redisson_sc:{s} 6"), "{:?}", keys.effects);
    let written = keys.effects.len();
    assert_eq!(expirable.set_permits_like_script(&mut keys, 6, false), Ok(()));
    assert_eq!(keys.effects.len(), written, "6 already: nothing");
    let mut keys = Keys::at(semaphore(Some("5"), &[("p", NOW - 5)], None), NOW);
    assert_eq!(expirable.set_permits_like_script(&mut keys, 6, true), Ok(()));
    assert_eq!(keys.effects, ["INCRBY s 0", "PUBLISH redisson_sc:{s} 6"], "the older text: INCRBY 0");
    let cases: [(&str, Result<()>); 3] = [
        ("1.5", Err(LockError::PermitsChangeNotInteger)),
        ("2e0", Err(LockError::StoredNotInteger(b"s".to_vec()))),
        ("five", Err(LockError::StoredNotInteger(b"s".to_vec()))),
    ];
    for (stored, refused) in cases {
        let mut keys = Keys::at(semaphore(Some(stored), &[], None), NOW);
        assert_eq!(expirable.set_permits_like_script(&mut keys, 6, false), refused, "{stored}");
        assert!(keys.effects.is_empty(), "{stored}: {:?}", keys.effects);
    }
}

#[test]
fn counts_are_published_and_replied_as_lua_holds_them_in_a_double() {
    let expirable = PermitSemaphore::new(b"s").like_redissons_scripts(|x| format!("<{x}>").into_bytes().into());
    let mut keys = Keys::at(semaphore(Some("9007199254740992"), &[("a", NOW)], None), NOW);
    assert_eq!(expirable.available_like_script(&mut keys, AT), Ok(ScriptCount::Integer(9_007_199_254_740_992)));
    assert!(keys.effects.iter().any(|effect| effect == "PUBLISH redisson_sc:{s} <9007199254740992>"));
    assert_eq!(after(&keys).0.as_deref(), Some("9007199254740993"), "INCRBY is exact");
}

#[test]
fn the_expirable_semaphores_add_permits_publishes_a_positive_delta() {
    let semaphore_of = |stored| Keys::at(semaphore(stored, &[], Some(NOW + 50)), NOW);
    let add = |keys: &mut Keys, delta| {
        Semaphore::new(b"s").add_permits_like_script(keys, delta, percent_17g, Announce::PositiveDelta)
    };
    let mut keys = semaphore_of(Some("1.5"));
    assert_eq!(add(&mut keys, 2), Ok(()));
    assert_eq!(keys.keys.get(b"s".as_slice()), Some(&(Keys::string("3.5"), None)), "Lua's sum, no TTL");
    assert!(keys.effects.iter().any(|effect| effect == "PUBLISH redisson_sc:{s} 2"), "{:?}", keys.effects);
    let mut keys = semaphore_of(None);
    assert_eq!(add(&mut keys, -2), Ok(()));
    assert!(!keys.effects.iter().any(|effect| effect.starts_with("PUBLISH")), "{:?}", keys.effects);
}

#[test]
fn an_acquire_reclaims_as_many_as_it_asks_and_scores_its_ids_as_given() {
    let expirable = PermitSemaphore::new(b"s");
    let taken = [("x", NOW - 2), ("y", NOW - 1), ("a", AT + 9)];
    let mut keys = Keys::at(semaphore(Some("0"), &taken, Some(NOW + 60_000)), NOW);
    let ids: [&[u8]; 1] = [b"n"];
    assert_eq!(
        expirable.try_acquire_like_script(&mut keys, (AT, Delay::OVER), AT + 50, &ids),
        Ok(TryAcquire::Granted),
        "x back"
    );
    let (count, scores) = after(&keys);
    assert_eq!(count.as_deref(), Some("0"));
    assert_eq!(scores, vec![("a".to_owned(), AT + 9), ("n".to_owned(), AT + 50), ("y".to_owned(), NOW - 1)]);
    assert_eq!(keys.keys.get(T.as_bytes()).map(|(_, at)| *at), Some(Some(NOW + 60_000)), "the count's TTL");
    let twice: [&[u8]; 2] = [b"a", b"a"];
    let mut keys = Keys::at(semaphore(Some("2"), &[("a", AT + 9)], None), NOW);
    assert_eq!(expirable.try_acquire_like_script(&mut keys, (AT, Delay::OVER), NEVER, &twice), Ok(TryAcquire::Granted));
    assert_eq!(after(&keys), (Some("0".to_owned()), vec![("a".to_owned(), NEVER)]), "two taken, one recorded");
}

/// The count and permits stored; what an acquire of two replies.
type Refused = (Option<&'static str>, &'static [(&'static str, i64)], Result<TryAcquire>);

#[test]
fn a_refused_acquire_replies_the_earliest_score_unless_it_never_expires() {
    let expirable = PermitSemaphore::new(b"s");
    let ids: [&[u8]; 2] = [b"n", b"m"];
    let cases: [Refused; 5] = [
        (None, &[], Ok(TryAcquire::NoExpiry)),
        (Some("1"), &[("a", AT + 9), ("b", NEVER)], Ok(TryAcquire::FirstExpiry(AT + 9))),
        (Some("1.5"), &[("b", NEVER)], Ok(TryAcquire::NoExpiry)),
        (Some("five"), &[], Err(LockError::StoredNotInteger(b"s".to_vec()))),
        (Some("2e0"), &[], Err(LockError::StoredNotInteger(b"s".to_vec()))),
    ];
    for (count, taken, reply) in cases {
        let mut keys = Keys::at(semaphore(count, taken, None), NOW);
        assert_eq!(expirable.try_acquire_like_script(&mut keys, (AT, Delay::OVER), AT + 50, &ids), reply, "{count:?}");
        assert!(keys.effects.is_empty(), "{count:?}: {:?}", keys.effects);
    }
}

/// Found by the differential (RLOCK_SEED=1795782711409171792): the
/// reclaim takes as many as asked, and a permit whose lease ran out may
/// stay; its score, already past, is the reply, as the script's ZRANGE
/// tells it (the module said the script's clock).
#[test]
fn a_refused_acquire_tells_an_expiry_already_past_as_it_is() {
    let expirable = PermitSemaphore::new(b"s");
    let taken = [("c", AT - 650), ("a", AT - 200), ("d", AT - 200), ("e", AT - 200)];
    let mut keys = Keys::at(semaphore(Some("-2"), &taken, None), NOW);
    let ids: [&[u8]; 2] = [b"d", b"b"];
    let refused = expirable.try_acquire_like_script(&mut keys, (AT, Delay::OVER), NEVER, &ids);
    assert_eq!(refused, Ok(TryAcquire::FirstExpiry(AT - 200)), "c and a back; d's score");
    let delayed = expirable.try_acquire_like_script(&mut keys, (AT, Delay::left(700)), NEVER, &ids);
    assert_eq!(delayed, Ok(TryAcquire::FirstExpiry(AT + 700)), "not before a lock-delay's end");
}

#[test]
fn the_older_release_of_ids_returns_those_held_after_the_reclaim() {
    let expirable = PermitSemaphore::new(b"s");
    let taken = [("a", AT + 1), ("c", AT), ("p", NOW - 5)];
    let mut keys = Keys::at(semaphore(Some("0"), &taken, None), NOW);
    assert_eq!(expirable.release_any_like_script(&mut keys, AT, &[b"c", b"x"]), Ok(0), "c reclaimed first");
    assert_eq!(after(&keys), (Some("2".to_owned()), vec![("a".to_owned(), AT + 1)]));
    let mut keys = Keys::at(semaphore(Some("0"), &taken, None), NOW);
    assert_eq!(expirable.release_any_like_script(&mut keys, AT, &[b"a", b"x", b"a"]), Ok(1));
    assert!(keys.effects.iter().any(|effect| effect == "PUBLISH redisson_sc:{s} 1"), "{:?}", keys.effects);
    assert_eq!(after(&keys), (Some("3".to_owned()), vec![]));
}

#[test]
fn a_lock_delay_takes_no_permit_and_tells_the_caller_its_end() {
    let expirable = PermitSemaphore::new(b"s");
    let delay = Delay::left(700);
    // (count, taken, reply): available, refused for the delay; short, the
    // earliest expiry but not before the delay's end.
    let cases: [Refused; 3] = [
        (Some("2"), &[], Ok(TryAcquire::FirstExpiry(AT + 700))),
        (Some("1"), &[("a", AT + 9)], Ok(TryAcquire::FirstExpiry(AT + 700))),
        (Some("1"), &[("a", AT + 900)], Ok(TryAcquire::FirstExpiry(AT + 900))),
    ];
    for (count, taken, reply) in cases {
        for like_script in [false, true] {
            let mut keys = Keys::at(semaphore(count, taken, None), NOW);
            let acquired = match like_script {
                true => expirable.try_acquire_like_script(&mut keys, (AT, delay), AT + 50, &[b"n", b"m"]),
                false => expirable.try_acquire(&mut keys, (AT, delay), Lease::Ms(50), &[b"n", b"m"]),
            };
            assert_eq!(acquired, reply, "{count:?} {taken:?} {like_script}");
            assert!(keys.effects.is_empty(), "{count:?}: {:?}", keys.effects);
        }
    }
}
