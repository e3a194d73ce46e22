use crate::redisson::scripts::{testing, Rewrite};

const WITH_TOKEN: &[u8] = b"49babb5a1e6a0c5f188c2ae62b93b51cdfd63e45";
const AS_LOCK: &[u8] = b"46b5551ba403d6152a7a6eca122e08728d6c8c66";
const TOKEN_KEY: &[u8] = b"redisson_lock_token:{f}";

fn rewritten(sha: &[u8], args: &[&[u8]], cluster: bool) -> Option<Rewrite<'static>> {
    testing::rewritten("fenced", sha, args, cluster)
}

fn native(args: &[&str]) -> Option<Rewrite<'static>> {
    testing::native(args, None)
}

#[test]
fn acquires_become_rfenced_acquire_likescript() {
    let args: &[&[u8]] = &[b"2", b"f", TOKEN_KEY, b"30000", b"u:1"];
    let expected = ["RFENCED.ACQUIRE", "f", "u:1", "30000", "LIKESCRIPT", "TOKEN"];
    assert_eq!(rewritten(WITH_TOKEN, args, true), native(&expected));
    let expected = ["RFENCED.ACQUIRE", "f", "u:1", "30000", "LIKESCRIPT", "LOCK"];
    assert_eq!(rewritten(AS_LOCK, args, false), native(&expected));
}

#[test]
fn acquires_the_command_would_answer_otherwise_stay_with_lua() {
    let cases: [(&[&[u8]], &str); 7] = [
        (&[b"2", b"f", b"redisson_lock_token:{g}", b"30000", b"u:1"], "another lock's token"),
        (&[b"2", b"f", b"redisson_lock_token:f", b"30000", b"u:1"], "no braces"),
        (&[b"2", b"f", TOKEN_KEY, b"0", b"u:1"], "PEXPIRE 0 deletes, the command refuses it"),
        (&[b"2", b"f", TOKEN_KEY, b"030000", b"u:1"], "a lease written otherwise"),
        (&[b"2", b"f", TOKEN_KEY, b"31536000001", b"u:1"], "beyond the command's leases"),
        (&[b"1", b"f", TOKEN_KEY, b"30000", b"u:1"], "one key"),
        (&[b"2", b"f", TOKEN_KEY, b"30000", b"u:1", b"x"], "an argument too many"),
    ];
    for sha in [WITH_TOKEN, AS_LOCK] {
        for (args, why) in cases {
            assert_eq!(rewritten(sha, args, false), None, "{why}: {args:?}");
        }
    }
    // Empty braces are no hash tag: name and token key in other slots.
    let args: &[&[u8]] = &[b"2", b"x{}", b"redisson_lock_token:x{}", b"30000", b"u:1"];
    assert!(rewritten(WITH_TOKEN, args, false).is_some());
    assert_eq!(rewritten(WITH_TOKEN, args, true), None);
}
