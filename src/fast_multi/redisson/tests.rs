use crate::redisson::scripts::{identify, testing, Rewrite};

const TASK: &[u8] = b"935362a31ac5b3d6f7c5c3f1e26d9a012f87f2bd";
const OWNER_FIRST: &[u8] = b"9cdf4e206c51f838a9e65cf6e84613f0de3559cf";

fn rewritten(sha: &[u8], args: &[&[u8]], cluster: bool) -> Option<Rewrite<'static>> {
    testing::rewritten("fast_multi", sha, args, cluster)
}

#[test]
fn both_renewal_texts_are_known_by_their_sha() {
    for sha in [TASK, OWNER_FIRST] {
        let (family, known) = identify(&[b"EVALSHA", &sha.to_ascii_uppercase()]).expect("known");
        assert_eq!((family.name, known.sha1.as_bytes()), ("fast_multi", sha));
    }
}

#[test]
fn renewals_as_redisson_sends_them_become_rfastmulti_renew_on_the_callers_clock() {
    let native = ["RFASTMULTI.RENEW", "g", "u:1", "30000", "AT", "1700000000000", "FIELDS", "a", "b"];
    let task: &[&[u8]] = &[b"1", b"g", b"30000", b"1700000000000", b"u:1", b"a", b"b"];
    let owner_first: &[&[u8]] = &[b"1", b"g", b"u:1", b"30000", b"1700000000000", b"a", b"b"];
    for cluster in [false, true] {
        assert_eq!(rewritten(TASK, task, cluster), testing::native(&native, None));
        assert_eq!(rewritten(OWNER_FIRST, owner_first, cluster), testing::native(&native, None));
    }
    let odd_fields: &[&[u8]] = &[b"1", b"g", b"1", b"0", b"AT", b"FIELDS", b""];
    assert_eq!(
        rewritten(TASK, odd_fields, false),
        testing::native(&["RFASTMULTI.RENEW", "g", "AT", "1", "AT", "0", "FIELDS", "FIELDS", ""], None),
        "fields and owners that read as keywords stay in their places"
    );
}

#[test]
fn calls_the_native_command_would_not_answer_alike_stay_with_lua() {
    let cases: [(&str, &[&[u8]]); 10] = [
        ("no field", &[b"1", b"g", b"30000", b"1", b"u:1"]),
        (
            "two groups: the script renews the first only",
            &[b"2", b"g", b"h", b"30000", b"1", b"u:1", b"a", b"u:2", b"b"],
        ),
        ("no group", &[b"0", b"30000", b"1", b"u:1", b"a"]),
        ("a lease of 0 (PEXPIRE would delete)", &[b"1", b"g", b"0", b"1", b"u:1", b"a"]),
        ("a fractional lease", &[b"1", b"g", b"1.5", b"1", b"u:1", b"a"]),
        ("a lease with a leading zero", &[b"1", b"g", b"030000", b"1", b"u:1", b"a"]),
        ("a clock Lua reads otherwise", &[b"1", b"g", b"30000", b"0x10", b"u:1", b"a"]),
        ("a negative clock", &[b"1", b"g", b"30000", b"-1", b"u:1", b"a"]),
        ("a clock past 2^53", &[b"1", b"g", b"30000", b"9007199254740993", b"u:1", b"a"]),
        ("a clock with a space", &[b"1", b"g", b"30000", b" 1", b"u:1", b"a"]),
    ];
    for (why, args) in cases {
        assert_eq!(rewritten(TASK, args, false), None, "{why}");
    }
}
