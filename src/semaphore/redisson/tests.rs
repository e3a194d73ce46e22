use crate::redisson::scripts::{testing, Rewrite};

const RELEASE: &[u8] = b"ae27582488dd01f4e238cc0733a12146d410eb44";
const RELEASE_OLDER: &[u8] = b"6ef996845b2b97db21c5bc1ed04b8eae2babe56f";
const RELEASE_IF_EXISTS: &[u8] = b"6883802454c09d455e3234c8b01549adf1fb8b4c";
const TRY_SET: &[u8] = b"241ce4e87e652b4f9b39d33cbcd7df9ee8ed906c";
const TRY_SET_OLDER: &[u8] = b"8d41a082c3a98f3e882844af9c9e9f9fbd7f8573";
const TRY_SET_OLDEST: &[u8] = b"44d63d4882cfdb9af87c32c96c24a9e1e15cffd5";
const TRY_SET_EXPIRING: &[u8] = b"38bf99884eb94708a40a9aabacb15b4c5f16e804";
const ADD: &[u8] = b"98238d408c6755085344670d3a2ddaa55cf177a9";
const ADD_OLDER: &[u8] = b"af883fdf25153ad9a41ad1c0d5dfde728728961a";
const TRY_ACQUIRE: &[u8] = b"c7dc9d189c1715465a31a06ddbc008585e0c20be";
const DRAIN: &[u8] = b"c87766d572855e9461c4ecd453db5d1cbab6119e";
const DRAIN_OLDER: &[u8] = b"74e35a16120f0f07ddf9bccd2f3593b769a9fd11";
const CHANNEL: &[u8] = b"redisson_sc:{s}";

/// A text's SHA-1, the call's numkeys, keys and arguments, and what it
/// becomes (the native argv, or why it stays with Lua).
type Case<T> = (&'static [u8], &'static [&'static [u8]], T);

fn rewritten(sha: &[u8], args: &[&[u8]], cluster: bool) -> Option<Rewrite<'static>> {
    testing::rewritten("semaphore", sha, args, cluster)
}

fn native(args: &[&str]) -> Option<Rewrite<'static>> {
    testing::native(args, Some(CHANNEL))
}

#[test]
fn calls_as_redisson_sends_them_become_rsem_commands_via_their_publish_command() {
    let cases: [Case<&[&str]>; 10] = [
        (ADD, &[b"2", b"s", CHANNEL, b"-3", b"spublish"], &["RSEM.ADDPERMITS", "s", "-3", "VIA", "SPUBLISH"]),
        (ADD_OLDER, &[b"2", b"s", CHANNEL, b"4"], &["RSEM.ADDPERMITS", "s", "4", "VIA", "PUBLISH"]),
        (RELEASE, &[b"2", b"s", CHANNEL, b"3", b"publish"], &["RSEM.RELEASE", "s", "3", "VIA", "PUBLISH"]),
        (RELEASE, &[b"2", b"s", CHANNEL, b"1", b"spublish"], &["RSEM.RELEASE", "s", "1", "VIA", "SPUBLISH"]),
        (RELEASE_OLDER, &[b"2", b"s", CHANNEL, b"2"], &["RSEM.RELEASE", "s", "2", "VIA", "PUBLISH"]),
        (
            RELEASE_IF_EXISTS,
            &[b"2", b"s", CHANNEL, b"4", b"PUBLISH"],
            &["RSEM.RELEASE", "s", "4", "IFEXISTS", "VIA", "PUBLISH"],
        ),
        (TRY_SET, &[b"2", b"s", CHANNEL, b"0", b"publish"], &["RSEM.TRYSETPERMITS", "s", "0", "VIA", "PUBLISH"]),
        (TRY_SET_OLDER, &[b"2", b"s", CHANNEL, b"7"], &["RSEM.TRYSETPERMITS", "s", "7", "VIA", "PUBLISH"]),
        (TRY_SET_OLDEST, &[b"2", b"s", CHANNEL, b"7"], &["RSEM.TRYSETPERMITS", "s", "7", "VIA", "PUBLISH"]),
        (
            TRY_SET_EXPIRING,
            &[b"2", b"s", CHANNEL, b"5", b"spublish", b"60000"],
            &["RSEM.TRYSETPERMITS", "s", "5", "PX", "60000", "VIA", "SPUBLISH"],
        ),
    ];
    for (sha, args, expected) in cases {
        assert_eq!(rewritten(sha, args, false), native(expected), "{args:?}");
        assert_eq!(rewritten(sha, args, true), native(expected), "{args:?} in a cluster");
    }
}

#[test]
fn calls_the_commands_would_answer_otherwise_stay_with_lua() {
    let cases: [Case<&str>; 17] = [
        (ADD, &[b"2", b"s", CHANNEL, b"1.5", b"publish"], "a delta Lua adds, the command refuses"),
        (ADD_OLDER, &[b"2", b"s", CHANNEL, b"1", b"publish"], "an argument the text does not take"),
        (RELEASE, &[b"2", b"s", b"redisson_sc:{t}", b"1", b"publish"], "another semaphore's channel"),
        (RELEASE, &[b"2", b"s", b"redisson_sc:s", b"1", b"publish"], "no braces"),
        (RELEASE, &[b"2", b"s", CHANNEL, b"0", b"publish"], "INCRBY 0 writes, the command does not"),
        (RELEASE, &[b"2", b"s", CHANNEL, b"-1", b"publish"], "negative permits"),
        (RELEASE, &[b"2", b"s", CHANNEL, b"01", b"publish"], "permits INCRBY refuses"),
        (RELEASE, &[b"2", b"s", CHANNEL, b"1", b"del"], "not a publish command"),
        (RELEASE, &[b"2", b"s", CHANNEL, b"1"], "no publish command"),
        (RELEASE_OLDER, &[b"2", b"s", CHANNEL, b"1", b"spublish"], "an argument the text does not take"),
        (RELEASE_IF_EXISTS, &[b"2", b"s", CHANNEL, b"1.5", b"publish"], "not an integer"),
        (TRY_SET, &[b"2", b"s", CHANNEL, b"-3", b"publish"], "negative permits, stored as given"),
        (TRY_SET, &[b"2", b"s", CHANNEL, b"+3", b"publish"], "permits written otherwise"),
        (TRY_SET_OLDER, &[b"2", b"s", CHANNEL, b"3", b"publish"], "an argument the text does not take"),
        (TRY_SET_EXPIRING, &[b"2", b"s", CHANNEL, b"3", b"publish", b"0"], "SET PX 0 fails"),
        (TRY_SET_EXPIRING, &[b"2", b"s", CHANNEL, b"3", b"publish", b"031"], "a TTL SET refuses"),
        (TRY_SET_EXPIRING, &[b"2", b"s", CHANNEL, b"3", b"publish", b"99999999999999"], "beyond the command's TTLs"),
    ];
    for (sha, args, why) in cases {
        assert_eq!(rewritten(sha, args, false), None, "{why}: {args:?}");
    }
}

#[test]
fn a_name_whose_channel_is_in_another_slot_stays_with_lua_in_a_cluster() {
    // Empty braces are no hash tag: the whole name and the whole channel
    // are hashed, to other slots.
    let args: &[&[u8]] = &[b"2", b"x{}", b"redisson_sc:x{}", b"1", b"publish"];
    assert!(rewritten(RELEASE, args, false).is_some());
    assert_eq!(rewritten(RELEASE, args, true), None);
}

#[test]
fn a_drain_becomes_rsem_drain_likescript() {
    let expected =
        || Rewrite { argv: vec![b"RSEM.DRAIN".to_vec(), b"s".to_vec(), b"LIKESCRIPT".to_vec()].into(), channel: None };
    for sha in [DRAIN, DRAIN_OLDER] {
        assert_eq!(rewritten(sha, &[b"1", b"s"], true), Some(expected()));
        assert_eq!(rewritten(sha, &[b"1", b"s", b"x"], false), None, "an argument the text does not take");
        assert_eq!(rewritten(sha, &[b"2", b"s", b"t"], false), None, "two keys");
    }
}

#[test]
fn a_try_acquire_becomes_rsem_tryacquire_likescript() {
    let expected = Rewrite {
        argv: ["RSEM.TRYACQUIRE", "s", "2", "LIKESCRIPT"].map(|arg| arg.as_bytes().to_vec()).to_vec().into(),
        channel: None,
    };
    assert_eq!(rewritten(TRY_ACQUIRE, &[b"1", b"s", b"2"], true), Some(expected));
    for permits in [&b"-1"[..], b"02", b"1.5", b"x", b"9223372036854775808"] {
        assert_eq!(rewritten(TRY_ACQUIRE, &[b"1", b"s", permits], false), None, "{permits:?}");
    }
    assert_eq!(rewritten(TRY_ACQUIRE, &[b"2", b"s", b"t", b"1"], false), None);
}

#[test]
fn older_silent_adds_and_reduces_become_rsem_addpermits_likescript() {
    const ADD_SILENT: &[u8] = b"c3c3c87b52a880a2a73e312c1cc9d21f500d80f5";
    const REDUCE: &[u8] = b"6bb281549022225c6d8228b4af1e06c9d6610b90";
    let add = |delta: &str| {
        let argv = ["RSEM.ADDPERMITS", "s", delta, "LIKESCRIPT"].map(|arg| arg.as_bytes().to_vec()).to_vec();
        Some(Rewrite { argv: argv.into(), channel: None })
    };
    assert_eq!(rewritten(ADD_SILENT, &[b"1", b"s", b"-2"], true), add("-2"));
    assert_eq!(rewritten(REDUCE, &[b"1", b"s", b"3"], true), add("-3"));
    assert_eq!(rewritten(REDUCE, &[b"1", b"s", b"-3"], false), add("3"));
    assert_eq!(rewritten(REDUCE, &[b"1", b"s", b"0"], false), add("0"));
    assert_eq!(
        rewritten(REDUCE, &[b"1", b"s", b"-9223372036854775808"], false),
        None,
        "its negation is beyond 64 bits"
    );
    assert_eq!(rewritten(REDUCE, &[b"1", b"s", b"1.5"], false), None);
    assert_eq!(rewritten(ADD_SILENT, &[b"2", b"s", CHANNEL, b"1"], false), None, "the text takes one key");
}
