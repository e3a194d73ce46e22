use crate::redisson::scripts::{testing, Rewrite};

const AVAILABLE: &[u8] = b"26b3972b2c9e617556282f404cb79709d746a713";
const ACQUIRED: &[u8] = b"6f0b0be79a0c146c778cb14f40c10eb5b706e574";
const PERMITS: &[u8] = b"e242db5c1c68811b0d26a41937dcf22415b6d872";
const RELEASE: &[u8] = b"4ce079451bee2993ce00c8a4e205b536c6ccad67";
const RELEASE_ALL: &[u8] = b"cf3ab77b1c0ae1226ae0e06e5cb18ee75f56c96b";
const LEASE: &[u8] = b"8be95cb5221cc7ee883cacb8859a8b32ef501a0e";
const UPDATE_LEASE: &[u8] = b"2298b02cc67a89f2a638e47503db3675c73d77f5";
const TRY_ACQUIRE: &[u8] = b"992c96b09a3d8ea0b37f5dc12e5347a44d93909d";
const ADD: &[u8] = b"ec6fb1cd5f66817424e8fe70fee7929391b7c6f0";
const SET: &[u8] = b"494d8561fee0cdb033f6c28d74c052c52189a578";
const TIMEOUTS: &[u8] = b"{s}:timeout";
const CHANNEL: &[u8] = b"redisson_sc:{s}";
const NOW: &[u8] = b"1700000000000";

/// A text's SHA-1, the call's numkeys, keys and arguments, and the native
/// argv before its `VIA`.
type Case = (&'static [u8], &'static [&'static [u8]], &'static [&'static str]);

fn rewritten(sha: &[u8], args: &[&[u8]], cluster: bool) -> Option<Rewrite<'static>> {
    testing::rewritten("permit_semaphore", sha, args, cluster)
}

fn native(args: &[&str]) -> Option<Rewrite<'static>> {
    testing::native(args, Some(CHANNEL))
}

#[test]
fn calls_as_redisson_sends_them_become_rpsem_commands_at_the_scripts_clock() {
    let cases: [Case; 17] = [
        (
            b"d47a2fd3852467e5e7f2d1618c92a1ca719fcf7a",
            &[b"3", b"s", TIMEOUTS, CHANNEL, b"1", b"9", b"a1", NOW, b"922337203685477", b"publish"],
            &["RPSEM.TRYACQUIRE", "s", "9", "a1", "REPLYID", "AT", "1700000000000"],
        ),
        (
            b"055e71dede7c0d07958c639e4661ab8bd36c4ab9",
            &[b"3", b"s", CHANNEL, TIMEOUTS, b"4", b"publish"],
            &["RPSEM.SETPERMITS", "s", "4", "ALWAYS"],
        ),
        (
            b"bb41a8ec1cd921c89e9d8f2ddde38ad13a2e8b74",
            &[b"3", b"s", CHANNEL, TIMEOUTS, b"2", NOW, b"publish", b"a1", b"b2"],
            &["RPSEM.RELEASE", "s", "a1", "b2", "ANY", "AT", "1700000000000"],
        ),
        (
            TRY_ACQUIRE,
            &[b"3", b"s", TIMEOUTS, CHANNEL, b"2", b"1700000005000", NOW, b"922337203685477", b"publish", b"a1", b"b2"],
            &["RPSEM.TRYACQUIRE", "s", "1700000005000", "a1", "b2", "AT", "1700000000000"],
        ),
        (ADD, &[b"2", b"s", CHANNEL, b"-3", b"publish"], &["RPSEM.ADDPERMITS", "s", "-3"]),
        (ADD, &[b"2", b"s", CHANNEL, b"9007199254740993", b"spublish"], &["RPSEM.ADDPERMITS", "s", "9007199254740993"]),
        (SET, &[b"3", b"s", CHANNEL, TIMEOUTS, b"5", b"publish"], &["RPSEM.SETPERMITS", "s", "5"]),
        (
            RELEASE,
            &[b"3", b"s", CHANNEL, TIMEOUTS, b"a1", b"1", NOW, b"publish"],
            &["RPSEM.RELEASE", "s", "a1", "AT", "1700000000000"],
        ),
        (
            RELEASE_ALL,
            &[b"3", b"s", CHANNEL, TIMEOUTS, b"2", NOW, b"publish", b"a1", b"b2"],
            &["RPSEM.RELEASE", "s", "a1", "b2", "ALL", "AT", "1700000000000"],
        ),
        (
            RELEASE_ALL,
            &[b"3", b"s", CHANNEL, TIMEOUTS, b"1", NOW, b"publish", b"a1"],
            &["RPSEM.RELEASE", "s", "a1", "ALL", "AT", "1700000000000"],
        ),
        (
            LEASE,
            &[b"3", b"s", TIMEOUTS, CHANNEL, b"a1", b"922337203685477", NOW, b"publish"],
            &["RPSEM.LEASE", "s", "a1", "AT", "1700000000000"],
        ),
        (
            UPDATE_LEASE,
            &[b"3", b"s", TIMEOUTS, CHANNEL, b"a1", b"1700000005000", NOW, b"publish"],
            &["RPSEM.UPDATELEASE", "s", "a1", "1700000005000", "AT", "1700000000000"],
        ),
        (
            AVAILABLE,
            &[b"3", b"s", TIMEOUTS, CHANNEL, NOW, b"publish"],
            &["RPSEM.AVAILABLE", "s", "AT", "1700000000000"],
        ),
        (ACQUIRED, &[b"3", b"s", TIMEOUTS, CHANNEL, NOW, b"SPUBLISH"], &["RPSEM.ACQUIRED", "s", "AT", "1700000000000"]),
        (PERMITS, &[b"3", b"s", TIMEOUTS, CHANNEL, NOW, b"publish"], &["RPSEM.PERMITS", "s", "AT", "1700000000000"]),
        (PERMITS, &[b"3", b"s", TIMEOUTS, CHANNEL, b"0", b"publish"], &["RPSEM.PERMITS", "s", "AT", "0"]),
        (
            AVAILABLE,
            &[b"3", b"s", TIMEOUTS, CHANNEL, b"9007199254740992", b"publish"],
            &["RPSEM.AVAILABLE", "s", "AT", "9007199254740992"],
        ),
    ];
    for (sha, args, expected) in cases {
        let spublish = args.iter().any(|arg| arg.eq_ignore_ascii_case(b"spublish"));
        let publish = if spublish { "SPUBLISH" } else { "PUBLISH" };
        let expected: Vec<&str> = expected.iter().copied().chain(["VIA", publish]).collect();
        assert_eq!(rewritten(sha, args, false), native(&expected), "{args:?}");
        assert_eq!(rewritten(sha, args, true), native(&expected), "{args:?} in a cluster");
    }
}

#[test]
fn calls_the_command_would_answer_otherwise_stay_with_lua() {
    let cases: [(&[u8], bool); 13] = [
        (b"3 s {s}:timeout redisson_sc:{s} 1700000000000 del", false),
        (b"3 s {s}:timeout redisson_sc:{s} 1700000000000", false),
        (b"3 s {s}:timeout redisson_sc:{s} 1700000000000 publish x", false),
        (b"3 s {t}:timeout redisson_sc:{s} 1700000000000 publish", false),
        (b"3 s s:timeout redisson_sc:{s} 1700000000000 publish", false),
        (b"3 s {s}:timeout redisson_sc:s 1700000000000 publish", false),
        (b"2 s {s}:timeout 1700000000000 publish", false),
        (b"3 s {s}:timeout redisson_sc:{s} 01700000000000 publish", false),
        (b"3 s {s}:timeout redisson_sc:{s} -1 publish", false),
        (b"3 s {s}:timeout redisson_sc:{s} 1.5 publish", false),
        (b"3 s {s}:timeout redisson_sc:{s} +5 publish", false),
        (b"3 s {s}:timeout redisson_sc:{s} 9007199254740993 publish", false),
        (b"3 s {s}:timeout redisson_sc:{s} inf publish", false),
    ];
    for sha in [AVAILABLE, ACQUIRED, PERMITS] {
        for (call, cluster) in cases {
            let args: Vec<&[u8]> = call.split(|byte| *byte == b' ').collect();
            assert_eq!(rewritten(sha, &args, cluster), None, "{}", String::from_utf8_lossy(call));
        }
    }
}

#[test]
fn release_and_lease_calls_the_command_would_answer_otherwise_stay_with_lua() {
    let cases: [(&[u8], &[u8]); 19] = [
        (TRY_ACQUIRE, b"3 s {s}:timeout redisson_sc:{s} 1 1700000005000 1700000000000 922337203685477 publish a1 b2"),
        (TRY_ACQUIRE, b"3 s {s}:timeout redisson_sc:{s} 0 1700000005000 1700000000000 922337203685477 publish"),
        (TRY_ACQUIRE, b"3 s {s}:timeout redisson_sc:{s} 1 1700000005000 1700000000000 922337203685476 publish a1"),
        (TRY_ACQUIRE, b"3 s {s}:timeout redisson_sc:{s} 1 -1 1700000000000 922337203685477 publish a1"),
        (ADD, b"2 s redisson_sc:{s} +3 publish"),
        (ADD, b"2 s redisson_sc:{s} 03 publish"),
        (ADD, b"2 s redisson_sc:{s} 1.5 publish"),
        (ADD, b"2 s redisson_sc:{t} 3 publish"),
        (SET, b"3 s redisson_sc:{s} {s}:timeout -1 publish"),
        (SET, b"3 s {s}:timeout redisson_sc:{s} 5 publish"),
        (RELEASE, b"3 s redisson_sc:{s} {s}:timeout a1 2 1700000000000 publish"),
        (RELEASE, b"3 s {s}:timeout redisson_sc:{s} a1 1 1700000000000 publish"),
        (RELEASE, b"3 s redisson_sc:{s} {s}:timeout a1 1 1.7e12 publish"),
        (RELEASE_ALL, b"3 s redisson_sc:{s} {s}:timeout 0 1700000000000 publish"),
        (RELEASE_ALL, b"3 s redisson_sc:{s} {s}:timeout 1 1700000000000 del a1"),
        (LEASE, b"3 s {s}:timeout redisson_sc:{s} a1 922337203685478 1700000000000 publish"),
        (LEASE, b"3 s {s}:timeout redisson_sc:{s} a1 9.22337203685477e14 1700000000000 publish"),
        (UPDATE_LEASE, b"3 s {s}:timeout redisson_sc:{s} a1 -1 1700000000000 publish"),
        (UPDATE_LEASE, b"3 s {s}:timeout redisson_sc:{s} a1 17e11 1700000000000 publish"),
    ];
    for (sha, call) in cases {
        let args: Vec<&[u8]> = call.split(|byte| *byte == b' ').collect();
        assert_eq!(rewritten(sha, &args, false), None, "{}", String::from_utf8_lossy(call));
    }
}

#[test]
fn older_texts_naming_publish_become_the_same_commands_via_publish() {
    let cases: [Case; 8] = [
        (
            b"9dd7dc38c905805c04c8f14cb8aae2bd5dd529b0",
            &[b"3", b"s", TIMEOUTS, CHANNEL, b"1", b"9", b"a1", NOW, b"922337203685477"],
            &["RPSEM.TRYACQUIRE", "s", "9", "a1", "REPLYID"],
        ),
        (
            b"f753b3fd2954a5f1ed4d8f95a9c41819ecc27f41",
            &[b"3", b"s", CHANNEL, TIMEOUTS, b"4"],
            &["RPSEM.SETPERMITS", "s", "4", "ALWAYS"],
        ),
        (b"6aee5085c7e0b3ff5d8612116a9b5f2ceb1fdab2", &[b"3", b"s", TIMEOUTS, CHANNEL, NOW], &["RPSEM.AVAILABLE", "s"]),
        (b"dd0e62727caf54b589ae8e4bf22c32ec5ec33250", &[b"3", b"s", TIMEOUTS, CHANNEL, NOW], &["RPSEM.ACQUIRED", "s"]),
        (b"795a15adb7654812d3711bed0f526f84076f8f4e", &[b"3", b"s", TIMEOUTS, CHANNEL, NOW], &["RPSEM.PERMITS", "s"]),
        (
            b"2eac39f9e36394f850326ea7cd240d6ebc715ae2",
            &[b"3", b"s", CHANNEL, TIMEOUTS, b"a1", b"1", NOW],
            &["RPSEM.RELEASE", "s", "a1"],
        ),
        (
            b"5100a65fefa9ca6c9ed0977c06c41c68e2e847e8",
            &[b"3", b"s", TIMEOUTS, CHANNEL, b"a1", b"5", NOW],
            &["RPSEM.UPDATELEASE", "s", "a1", "5"],
        ),
        (b"575a088d37e6b44b707ce3103c04a03c2cd504bd", &[b"2", b"s", CHANNEL, b"3"], &["RPSEM.ADDPERMITS", "s", "3"]),
    ];
    for (sha, args, expected) in cases {
        let clock: &[&str] =
            if sha.starts_with(b"575a") || sha.starts_with(b"f753") { &[] } else { &["AT", "1700000000000"] };
        let expected: Vec<&str> = expected.iter().chain(clock).chain(&["VIA", "PUBLISH"]).copied().collect();
        assert_eq!(rewritten(sha, args, false), native(&expected), "{args:?}");
        let with_publish: Vec<&[u8]> = args.iter().copied().chain([&b"publish"[..]]).collect();
        assert_eq!(rewritten(sha, &with_publish, false), None, "{args:?}: one argument too many");
        if sha.starts_with(b"9dd7") {
            let two: Vec<&[u8]> = args.iter().map(|arg| if *arg == b"1" { &b"2"[..] } else { arg }).collect();
            assert_eq!(rewritten(sha, &two, false), None, "{two:?}: one id, one permit");
        }
    }
}
