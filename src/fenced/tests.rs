use super::*;
use crate::keyspace::memory::{MemoryKeyspace as Keys, Value};

const NOW: i64 = 1_000_000;
const LEASE: i64 = 30_000;
const T: &str = "redisson_lock_token:{f}";

type Key = (&'static str, Value, Option<i64>);

fn held_by(owner: &str, count: &str, expire_at: Option<i64>) -> Key {
    ("f", Keys::hash(&[(owner, count)]), expire_at)
}

fn token_at(token: &str) -> Key {
    (T, Keys::string(token), None)
}

struct Case {
    name: &'static str,
    keys: Vec<Key>,
    owner: &'static str,
    reply: Result<FencedAcquire>,
    effects: &'static [&'static str],
}

#[test]
fn acquires_follow_redissons_script_and_its_fix() {
    let cases = [
        Case {
            name: "a free lock is taken with the first token",
            keys: vec![],
            owner: "a",
            reply: Ok(FencedAcquire::Granted { token: 1, count: 1 }),
            effects: &["HINCRBY f a 1", "PEXPIREAT f 1030000", "INCRBY redisson_lock_token:{f} 1"],
        },
        Case {
            name: "a free lock takes the token after the last one",
            keys: vec![token_at("41")],
            owner: "a",
            reply: Ok(FencedAcquire::Granted { token: 42, count: 1 }),
            effects: &["HINCRBY f a 1", "PEXPIREAT f 1030000", "INCRBY redisson_lock_token:{f} 1"],
        },
        Case {
            name: "a re-entry also takes a new token",
            keys: vec![held_by("a", "1", Some(NOW + 5)), token_at("7")],
            owner: "a",
            reply: Ok(FencedAcquire::Granted { token: 8, count: 2 }),
            effects: &["HINCRBY f a 1", "PEXPIREAT f 1030000", "INCRBY redisson_lock_token:{f} 1"],
        },
        Case {
            name: "contended: the holder's PTTL, no token",
            keys: vec![held_by("a", "1", Some(NOW + 5_000)), token_at("7")],
            owner: "b",
            reply: Ok(FencedAcquire::Contended { pttl_ms: 5_000 }),
            effects: &[],
        },
        Case {
            name: "contended by a lock without TTL: the lease, never -1 (Java would read -1 as acquired)",
            keys: vec![held_by("a", "1", None)],
            owner: "b",
            reply: Ok(FencedAcquire::Contended { pttl_ms: LEASE }),
            effects: &[],
        },
        Case {
            name: "a token counter that is not an integer is refused",
            keys: vec![(T, Keys::string("x"), None)],
            owner: "a",
            reply: Err(LockError::StoredNotInteger(T.as_bytes().to_vec())),
            effects: &[],
        },
        Case {
            name: "a token counter of another type is refused",
            keys: vec![(T, Keys::hash(&[("a", "1")]), None)],
            owner: "a",
            reply: Err(LockError::WrongType),
            effects: &[],
        },
        Case {
            name: "a token counter at the end of the range is refused before any write",
            keys: vec![token_at("9223372036854775807")],
            owner: "a",
            reply: Err(LockError::CounterOverflow(T.as_bytes().to_vec())),
            effects: &[],
        },
        Case {
            name: "a lock key that is not a hash is refused",
            keys: vec![("f", Keys::string("1"), None)],
            owner: "a",
            reply: Err(LockError::WrongType),
            effects: &[],
        },
        Case {
            name: "a hash that is not a lock is refused",
            keys: vec![("f", Keys::hash(&[("a", "x")]), None)],
            owner: "a",
            reply: Err(LockError::NotALock),
            effects: &[],
        },
    ];
    for case in cases {
        let mut keys = Keys::at(case.keys, NOW);
        let before = keys.keys.clone();
        assert_eq!(
            acquire(&mut keys, b"f", case.owner.as_bytes(), LEASE, (NOW, 0, Delay::OVER)),
            case.reply,
            "{}: reply",
            case.name
        );
        assert_eq!(keys.effects, case.effects, "{}: effects", case.name);
        if case.effects.is_empty() {
            assert_eq!(keys.keys, before, "{}: changed", case.name);
        }
    }
}

#[test]
fn tokens_strictly_increase_across_holders_releases_and_expiries() {
    let mut keys = Keys::default();
    let mut last = 0;
    for (step, owner) in [b"a", b"a", b"b", b"a", b"b", b"b"].iter().enumerate() {
        let now = NOW + step as i64 * LEASE;
        // Each step comes a lease later: the previous hold has expired.
        keys.keys.retain(|_, (_, at)| at.is_none_or(|at| at > now));
        let FencedAcquire::Granted { token, .. } =
            acquire(&mut keys, b"f", *owner, LEASE, (now, 0, Delay::OVER)).unwrap()
        else {
            panic!("step {step}: not granted");
        };
        assert!(token > last, "step {step}: {token} after {last}");
        last = token;
        assert_eq!(super::token(&mut keys, b"f"), Ok(token));
    }
}

#[test]
fn the_token_of_a_lock_never_taken_is_0() {
    assert_eq!(token(&mut Keys::default(), b"f"), Ok(0));
}

#[test]
fn like_the_script_the_token_comes_first_and_pttl_may_be_minus_1() {
    let granted = &["INCRBY redisson_lock_token:{f} 1", "HINCRBY f a 1", "PEXPIREAT f 1030000"][..];
    let case = |name, keys, reply, effects| Case { name, keys, owner: "a", reply, effects };
    let cases = [
        case("a free lock", vec![], Ok(FencedAcquire::Granted { token: 1, count: 1 }), granted),
        case(
            "a re-entry",
            vec![held_by("a", "2", None), token_at("4")],
            Ok(FencedAcquire::Granted { token: 5, count: 3 }),
            granted,
        ),
        case(
            "held without a TTL: -1",
            vec![held_by("b", "1", None)],
            Ok(FencedAcquire::Contended { pttl_ms: -1 }),
            &[],
        ),
        case("held", vec![held_by("b", "1", Some(NOW + 7))], Ok(FencedAcquire::Contended { pttl_ms: 7 }), &[]),
        case(
            "a hold count that is no integer fails after the token was taken",
            vec![held_by("a", "x", None)],
            Err(LockError::NotALock),
            &["INCRBY redisson_lock_token:{f} 1"],
        ),
        case(
            "a token that is no integer",
            vec![token_at("x")],
            Err(LockError::StoredNotInteger(T.as_bytes().to_vec())),
            &[],
        ),
        case("a lock of another type", vec![("f", Keys::string("x"), None)], Err(LockError::WrongType), &[]),
    ];
    for case in cases {
        let mut keys = Keys::at(case.keys, NOW);
        let reply = acquire_like_script(&mut keys, b"f", case.owner.as_bytes(), LEASE, (NOW, 0, Delay::OVER));
        assert_eq!(reply, case.reply, "{}: reply", case.name);
        assert_eq!(keys.effects, case.effects, "{}: effects", case.name);
    }
}

#[test]
fn a_token_is_never_below_the_terms_floor() {
    let floor = term_floor(NOW);
    // (stored token, floor, token given, INCRBY by)
    let cases = [
        (None, floor, floor, floor),
        (Some("7"), floor, floor, floor - 7),
        (Some("7"), 0, 8, 1),
        (Some(&*(floor + 5).to_string()), floor, floor + 6, 1),
    ];
    for (stored, floor, token, by) in cases {
        for like_script in [false, true] {
            let mut keys = Keys::at(stored.map(token_at).into_iter().collect(), NOW);
            let acquired = match like_script {
                false => acquire(&mut keys, b"f", b"a", LEASE, (NOW, floor, Delay::OVER)),
                true => acquire_like_script(&mut keys, b"f", b"a", LEASE, (NOW, floor, Delay::OVER)),
            };
            assert_eq!(acquired, Ok(FencedAcquire::Granted { token, count: 1 }), "{stored:?} {floor}");
            assert!(keys.effects.contains(&format!("INCRBY {T} {by}")), "{stored:?} {floor}: {:?}", keys.effects);
            assert_eq!(super::token(&mut keys, b"f"), Ok(token));
        }
    }
}

#[test]
fn a_counter_too_far_below_the_floor_to_step_to_it_is_refused_before_any_write() {
    let floor = term_floor(NOW);
    for like_script in [false, true] {
        let mut keys = Keys::at(vec![token_at(&i64::MIN.to_string())], NOW);
        let acquired = match like_script {
            false => acquire(&mut keys, b"f", b"a", LEASE, (NOW, floor, Delay::OVER)),
            true => acquire_like_script(&mut keys, b"f", b"a", LEASE, (NOW, floor, Delay::OVER)),
        };
        assert_eq!(acquired, Err(LockError::CounterOverflow(T.as_bytes().to_vec())), "{like_script}");
        assert!(keys.effects.is_empty(), "{like_script}: {:?}", keys.effects);
    }
}

#[test]
fn a_later_terms_floor_is_above_every_token_of_an_earlier_term() {
    // An earlier term that began a second before, and gave tokens as fast
    // as a server could: fewer than TOKENS_PER_MS a millisecond.
    let (earlier, later) = (NOW - 1_000, NOW);
    let most_given = term_floor(earlier) + 1_000 * TOKENS_PER_MS - 1;
    assert!(term_floor(later) > most_given);
    assert_eq!(term_floor(-5), 0, "never negative");
    assert_eq!(term_floor(i64::MAX), i64::MAX, "saturates");
}

#[test]
fn a_lock_delay_gives_no_token_not_even_to_a_holder_re_entering() {
    let delay = Delay::left(700);
    // (lock before, owner, told to retry after)
    let cases = [
        (None, "a", 700),
        (Some(held_by("b", "1", Some(NOW + 900))), "a", 900),
        (Some(held_by("a", "1", Some(NOW + 900))), "a", 700), // at the delay's end
    ];
    for (lock, owner, pttl_ms) in cases {
        let outcome = FencedAcquire::Contended { pttl_ms };
        for like_script in [false, true] {
            let mut keys = Keys::at(lock.clone().into_iter().chain([token_at("7")]).collect(), NOW);
            let acquired = match like_script {
                false => acquire(&mut keys, b"f", owner.as_bytes(), LEASE, (NOW, 0, delay)),
                true => acquire_like_script(&mut keys, b"f", owner.as_bytes(), LEASE, (NOW, 0, delay)),
            };
            assert_eq!(acquired, Ok(outcome), "{lock:?} {owner} {like_script}");
            assert!(keys.effects.is_empty(), "{like_script}: {:?}", keys.effects);
        }
    }
}

#[test]
fn a_lock_delay_refusal_like_the_script_still_refuses_a_counter_that_is_no_integer() {
    let mut keys = Keys::at(vec![(T, Keys::string("abc"), None)], NOW);
    let acquired = acquire_like_script(&mut keys, b"f", b"o", LEASE, (NOW, 0, Delay::left(700)));
    assert_eq!(acquired, Err(LockError::StoredNotInteger(T.as_bytes().to_vec())));
    assert!(keys.effects.is_empty());
}
