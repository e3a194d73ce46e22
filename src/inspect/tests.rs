use super::*;
use crate::keyspace::memory::MemoryKeyspace as Keys;
use crate::primitive;

const NOW: i64 = 1_000_000;

fn holder(owner: &str, holds: i64, lease_ms: i64, side: Option<&'static str>) -> Holder {
    Holder { owner: owner.as_bytes().to_vec(), holds, lease_ms, side }
}

#[test]
fn each_kind_is_told_by_its_keys() {
    let at = |ms| Some(NOW + ms);
    let queue = |owners: &[(&str, i64)]| owners.iter().map(|(owner, ms)| (owner.as_bytes().to_vec(), *ms)).collect();
    // (keys, kind, ttl_ms, holders, details)
    #[allow(clippy::type_complexity)]
    let cases: Vec<(Vec<(&str, _, _)>, &str, i64, Vec<Holder>, Vec<(&str, Detail)>)> = vec![
        (vec![], "none", -2, vec![], vec![]),
        (vec![("k", Keys::hash(&[("o1", "2")]), at(500))], "lock", 500, vec![holder("o1", 2, 500, None)], vec![]),
        (
            vec![("k", Keys::hash(&[("o1", "1"), ("junk", "x")]), None)],
            "lock",
            -1,
            vec![holder("o1", 1, -1, None)],
            vec![],
        ),
        (
            vec![
                ("k", Keys::hash(&[("o1", "1")]), at(500)),
                ("redisson_lock_queue:{k}", Keys::list(&["o2", "o3", "o4"]), None),
                ("redisson_lock_timeout:{k}", Keys::zset(&[("o2", NOW + 900), ("o4", NOW - 5)]), None),
            ],
            "fair",
            500,
            vec![holder("o1", 1, 500, None)],
            vec![
                ("queue", Detail::Queue(queue(&[("o2", 900), ("o3", -1), ("o4", 0)]))),
                ("queued", Detail::Integer(3)),
            ],
        ),
        (
            vec![("redisson_lock_token:{k}", Keys::string("7"), None)],
            "fenced",
            -2,
            vec![],
            vec![("token", Detail::Integer(7))],
        ),
        (
            vec![
                ("k", Keys::hash(&[("mode", "read"), ("o1", "2"), ("o2", "1")]), at(900)),
                ("{k}:o1:rwlock_timeout:1", Keys::string("1"), at(600)),
                ("{k}:o1:rwlock_timeout:2", Keys::string("1"), at(300)),
            ],
            "read-write",
            900,
            vec![holder("o1", 2, 600, Some("read")), holder("o2", 1, 900, Some("read"))],
            vec![("mode", Detail::Text("read"))],
        ),
        (
            vec![("k", Keys::hash(&[("mode", "write"), ("o1:write", "3")]), at(900))],
            "read-write",
            900,
            vec![holder("o1", 3, 900, Some("write"))],
            vec![("mode", Detail::Text("write"))],
        ),
        (
            vec![
                ("k", Keys::string("2"), None),
                (
                    "{k}:timeout",
                    Keys::zset(&[("id0", NOW - 1), ("id1", NOW + 400), ("id2", 922_337_203_685_477)]),
                    None,
                ),
            ],
            "permit-semaphore",
            -1,
            vec![holder("id1", 1, 400, None), holder("id2", 1, -1, None)],
            vec![("permits", Detail::Integer(3)), ("taken", Detail::Integer(2))],
        ),
        (vec![("k", Keys::string("5"), at(100))], "counter", 100, vec![], vec![("count", Detail::Integer(5))]),
        (vec![("k", Keys::string("abc"), None)], "other", -1, vec![], vec![]),
        (vec![("k", Keys::hash(&[("f", "v")]), None)], "other", -1, vec![], vec![]),
        (
            vec![("k", Keys::hash(&[("o1", "0"), ("o2", "-5"), ("o3", "2")]), None)],
            "lock",
            -1,
            vec![holder("o3", 2, -1, None)],
            vec![],
        ),
        (vec![("k", Keys::list(&["a"]), None)], "other", -1, vec![], vec![]),
    ];
    for (state, kind, ttl_ms, holders, details) in cases {
        let mut keys = Keys::at(state.clone(), NOW);
        let expected = Inspection { kind, ttl_ms, holders, details };
        assert_eq!(inspect(&mut keys, b"k", NOW, primitive::inspectors()), Ok(expected), "{state:?}");
        assert!(keys.effects.is_empty(), "reads only: {:?}", keys.effects);
    }
}

#[test]
fn owners_are_the_holders_of_any_kind_with_owners() {
    let cases: [(Vec<(&str, _, _)>, Vec<&str>); 4] = [
        (vec![("k", Keys::hash(&[("o1", "2"), ("o2", "0")]), None)], vec!["o1"]),
        (vec![("k", Keys::hash(&[("mode", "write"), ("o1:write", "1"), ("o1", "1")]), None)], vec!["o1", "o1"]),
        (vec![("k", Keys::string("3"), None)], vec![]),
        (vec![], vec![]),
    ];
    for (state, expected) in cases {
        let mut keys = Keys::at(state.clone(), NOW);
        let mut found = owners(&mut keys, b"k").unwrap();
        found.sort();
        let expected: Vec<Vec<u8>> = expected.iter().map(|owner| owner.as_bytes().to_vec()).collect();
        assert_eq!(found, expected, "{state:?}");
    }
}
