use crate::redisson::scripts::{identify, rewrite, Argv, Rewrite, Server};

const ACQUIRE: &[u8] = b"149c5a8bf18676fd99e9e6e24923bd64d9b62f94";
const RELEASE: &[u8] = b"6866459238a13a701d42f4971f12d9f3a50e2442";
const FORCE: &[u8] = b"605e338249a7a1d40df83b04f7658354f883b41b";
const LATCH: &[u8] = b"redisson_unlock_latch:{n}:0123abcd";
/// RLock's latched release as the filter writes it, before its `VIA`.
const LATCHED_RELEASE: [&str; 8] =
    ["RLOCK.RELEASE", "n", "u:1", "30000", "LATCH", "redisson_unlock_latch:{n}:0123abcd", "PX", "13500"];

fn argv(args: &[&str]) -> Argv<'static> {
    args.iter().map(|arg| arg.as_bytes().to_vec()).collect()
}

/// The SHA-1 of the text a call names.
fn text(args: &[&[u8]]) -> Option<&'static str> {
    identify(args).map(|(family, known)| {
        assert_eq!(family.name, "lock");
        known.sha1
    })
}

fn sha(text: &[u8]) -> &str {
    std::str::from_utf8(text).unwrap()
}

/// The rewrite of a call (`args[1]` names the text).
fn rewritten(args: &[&[u8]], cluster: bool) -> Option<Rewrite<'static>> {
    let (_, known) = identify(&[b"EVALSHA", args[1]]).expect("a known text");
    rewrite(known, args, Server::plain(cluster)).map(Rewrite::into_made)
}

#[test]
fn scripts_are_known_by_sha_in_either_case_and_by_body_length_first() {
    assert_eq!(text(&[b"EVALSHA", ACQUIRE]), Some(sha(ACQUIRE)));
    assert_eq!(text(&[b"evalsha", &ACQUIRE.to_ascii_uppercase()]), Some(sha(ACQUIRE)));
    assert_eq!(text(&[b"EvalSha", RELEASE]), Some(sha(RELEASE)));
    assert_eq!(text(&[b"EVALSHA", FORCE]), Some(sha(FORCE)));
    assert_eq!(text(&[b"EVALSHA", &ACQUIRE[1..]]), None);
    assert_eq!(text(&[b"FCALL", ACQUIRE]), None);
    assert_eq!(text(&[b"EVAL", ACQUIRE]), None, "a sha is no body");
    // A body of a known length whose hash is not known.
    assert_eq!(text(&[b"EVAL", &[b'x'; 234]]), None);
    assert_eq!(text(&[b"EVAL"]), None);
}

#[test]
fn the_acquire_becomes_rlock_acquire() {
    let call: &[&[u8]] = &[b"EVALSHA", ACQUIRE, b"1", b"n", b"30000", b"u:1"];
    let expected = Rewrite { argv: argv(&["RLOCK.ACQUIRE", "n", "u:1", "30000"]), channel: None };
    assert_eq!(rewritten(call, false), Some(expected));
    for lease in [&b"0"[..], b"030000", b"-1", b"1.5", b"", b"31536000001", b"abc"] {
        let call: &[&[u8]] = &[b"EVALSHA", ACQUIRE, b"1", b"n", lease, b"u:1"];
        assert_eq!(rewritten(call, false), None, "lease {lease:?} stays with Lua");
    }
    let call: &[&[u8]] = &[b"EVALSHA", ACQUIRE, b"01", b"n", b"30000", b"u:1"];
    assert_eq!(rewritten(call, false), None, "numkeys as Redisson sends it only");
    let call: &[&[u8]] = &[b"EVALSHA", ACQUIRE, b"1", b"n", b"30000", b"u:1", b"extra"];
    assert_eq!(rewritten(call, false), None);
}

#[test]
fn the_release_declares_the_latch_key_and_takes_its_publish_command() {
    let call: &[&[u8]] = &[
        b"EVALSHA",
        RELEASE,
        b"3",
        b"n",
        b"redisson_lock__channel:{n}",
        LATCH,
        b"0",
        b"30000",
        b"u:1",
        b"spublish",
        b"13500",
    ];
    let expected = Rewrite {
        argv: argv(&[&LATCHED_RELEASE[..], &["VIA", "SPUBLISH"]].concat()),
        channel: Some(b"redisson_lock__channel:{n}".as_slice().into()),
    };
    assert_eq!(rewritten(call, false), Some(expected));
    assert!(rewritten(call, true).is_some(), "one slot");

    let with = |index: usize, value: &'static [u8]| {
        let mut call = call.to_vec();
        call[index] = value;
        rewritten(&call, false)
    };
    assert_eq!(with(4, b"redisson_lock__channel:{m}"), None, "another channel");
    // The script writes whatever latch key it is given: so does the command.
    assert!(with(5, b"redisson_unlock_latch:{n}:").is_some(), "no request id");
    assert!(with(5, b"redisson_unlock_latch:{m}:0123").is_some(), "another lock's latch");
    assert_eq!(with(5, b"n"), None, "the lock's own key: the script fails on the hash");
    assert_eq!(with(5, b""), None, "an empty key");
    let mut other_slot = call.to_vec();
    other_slot[5] = b"redisson_unlock_latch:{m}:0123";
    assert_eq!(rewritten(&other_slot, true), None, "cross-slot in a cluster stays with Lua");
    assert_eq!(with(6, b"1"), None, "another message");
    assert_eq!(with(7, b"0"), None, "a lease Redis would take but the command not");
    assert_eq!(with(9, b"del"), None, "not a publish command");
    assert!(with(9, b"PUBLISH").is_some());
    assert_eq!(with(10, b"0"), None, "a latch time the command does not take");
}

#[test]
fn the_force_release_checks_channel_and_message() {
    let call: &[&[u8]] = &[b"EVALSHA", FORCE, b"2", b"a{t}", b"redisson_lock__channel:a{t}", b"0", b"publish"];
    let expected = Rewrite {
        argv: argv(&["RLOCK.FORCERELEASE", "a{t}", "VIA", "PUBLISH"]),
        channel: Some(b"redisson_lock__channel:a{t}".as_slice().into()),
    };
    assert_eq!(rewritten(call, true), Some(expected));
    let odd: &[&[u8]] = &[b"EVALSHA", FORCE, b"2", b"{}x", b"redisson_lock__channel:{}x", b"0", b"publish"];
    assert!(rewritten(odd, false).is_some());
    assert_eq!(rewritten(odd, true), None, "cross-slot in a cluster stays with Lua");
}

const ACQUIRE_3_12: &[u8] = b"dad0f8d619e548e04f21fb48d50be5034df3adae";
const RELEASE_3_22: &[u8] = b"778cea8aada230ae060b432fc333adaec85f2f4c";
const RELEASE_3_10: &[u8] = b"3ffe249c16dee540ac8ab32e39bd408626b9aff7";
const FORCE_3_10: &[u8] = b"7e9c80b3d786b95d5d4aaf8fd73adb9775fa6fb1";
const RENEW: &[u8] = b"8e19a1ddbdee9138df9f32a480c57addab4353d1";
const CHANNEL: &[u8] = b"redisson_lock__channel:{n}";

/// A call as Redisson sends it, and its native form (`None`: Lua runs it).
type Case = (&'static [&'static [u8]], Option<&'static [&'static str]>);

/// Older texts become the same commands.
#[test]
fn older_texts_become_the_same_commands() {
    let cases: &[Case] = &[
        (&[b"EVALSHA", ACQUIRE_3_12, b"1", b"n", b"30000", b"u:1"], Some(&["RLOCK.ACQUIRE", "n", "u:1", "30000"])),
        (&[b"EVALSHA", RENEW, b"1", b"n", b"30000", b"u:1"], Some(&["RLOCK.RENEW", "n", "u:1", "30000"])),
        (&[b"EVALSHA", RENEW, b"1", b"n", b"0", b"u:1"], None),
        (
            &[b"EVALSHA", RELEASE_3_10, b"2", b"n", CHANNEL, b"0", b"30000", b"u:1"],
            Some(&["RLOCK.RELEASE", "n", "u:1", "30000", "VIA", "PUBLISH"]),
        ),
        (&[b"EVALSHA", RELEASE_3_10, b"2", b"n", CHANNEL, b"1", b"30000", b"u:1"], None),
        (&[b"EVALSHA", RELEASE_3_10, b"2", b"n", b"redisson_lock__channel:{m}", b"0", b"30000", b"u:1"], None),
        (
            &[b"EVALSHA", RELEASE_3_22, b"2", b"n", CHANNEL, b"0", b"30000", b"u:1", b"spublish"],
            Some(&["RLOCK.RELEASE", "n", "u:1", "30000", "VIA", "SPUBLISH"]),
        ),
        (&[b"EVALSHA", RELEASE_3_22, b"2", b"n", CHANNEL, b"0", b"30000", b"u:1", b"hset"], None),
        (&[b"EVALSHA", FORCE_3_10, b"2", b"n", CHANNEL, b"0"], Some(&["RLOCK.FORCERELEASE", "n", "VIA", "PUBLISH"])),
        (&[b"EVALSHA", FORCE_3_10, b"2", b"n", CHANNEL, b"0", b"publish"], None),
    ];
    for (call, expected) in cases {
        let expected = expected.map(argv);
        assert_eq!(rewritten(call, false).map(|r| r.argv), expected, "{call:?}");
    }
}

const RENEW_ALL: &[u8] = b"6a3d31570dc6f4b0bd32bcdc8e75667747c6f635";
const SPIN_RELEASE: &[u8] = b"73ac2729af29ea9a975f95e8097f7ee9a74cce3d";
const SPIN_RELEASE_3_15: &[u8] = b"5b9e58d1bcb8498e14aa1d5b49a1ca5b90748946";
const SPIN_FORCE: &[u8] = b"51b433c3cc9a6ca991b3aefec63d23490c246318";
const NON_REENTRANT: &[u8] = b"3daa7be6cf69d9309ad990442e83bf25094f9b22";

#[test]
fn the_batch_renewal_becomes_one_rlock_renewall_of_every_lock_with_its_owner() {
    let cases: &[Case] = &[
        (&[b"EVALSHA", RENEW_ALL, b"1", b"n", b"30000", b"u:1"], Some(&["RLOCK.RENEWALL", "30000", "n", "u:1"])),
        (
            &[b"EVALSHA", RENEW_ALL, b"3", b"a", b"b", b"a", b"30000", b"u:1", b"u:2", b"u:3"],
            Some(&["RLOCK.RENEWALL", "30000", "a", "u:1", "b", "u:2", "a", "u:3"]),
        ),
        // Lua would fail on a missing owner, and ignore one too many.
        (&[b"EVALSHA", RENEW_ALL, b"2", b"a", b"b", b"30000", b"u:1"], None),
        (&[b"EVALSHA", RENEW_ALL, b"1", b"a", b"30000", b"u:1", b"u:2"], None),
        (&[b"EVALSHA", RENEW_ALL, b"1", b"a", b"0", b"u:1"], None),
        (&[b"EVALSHA", RENEW_ALL, b"1", b"a", b"030000", b"u:1"], None),
        (&[b"EVALSHA", RENEW_ALL, b"0", b"30000"], None),
    ];
    for (call, expected) in cases {
        let expected = expected.map(argv);
        assert_eq!(rewritten(call, false).map(|r| r.argv), expected, "{call:?}");
    }
    // Keys of several slots are Redis's to refuse, as it refuses the script's.
    let call: &[&[u8]] = &[b"EVALSHA", RENEW_ALL, b"2", b"a", b"b", b"30000", b"u:1", b"u:2"];
    assert_eq!(rewritten(call, true).unwrap().channel, None);
}

#[test]
fn the_spin_locks_unlocks_publish_nothing() {
    let call: &[&[u8]] = &[b"EVALSHA", SPIN_RELEASE, b"2", b"n", LATCH, b"30000", b"u:1", b"13500"];
    let expected = Rewrite { argv: argv(&[&LATCHED_RELEASE[..], &["VIA", "NONE"]].concat()), channel: None };
    assert_eq!(rewritten(call, false), Some(expected));
    let cases: &[Case] = &[
        (&[b"EVALSHA", SPIN_RELEASE, b"2", b"n", b"n", b"30000", b"u:1", b"13500"], None),
        (&[b"EVALSHA", SPIN_RELEASE, b"2", b"n", LATCH, b"30000", b"u:1", b"0"], None),
        (
            &[b"EVALSHA", SPIN_RELEASE_3_15, b"1", b"n", b"30000", b"u:1"],
            Some(&["RLOCK.RELEASE", "n", "u:1", "30000", "VIA", "NONE"]),
        ),
        (&[b"EVALSHA", SPIN_RELEASE_3_15, b"1", b"n", b"-1", b"u:1"], None),
        (&[b"EVALSHA", SPIN_FORCE, b"1", b"n"], Some(&["RLOCK.FORCERELEASE", "n", "VIA", "NONE"])),
        (&[b"EVALSHA", SPIN_FORCE, b"1", b"n", b"0"], None),
    ];
    for (call, expected) in cases {
        let rewrite = rewritten(call, false);
        assert!(rewrite.as_ref().is_none_or(|rewrite| rewrite.channel.is_none()), "{call:?} publishes nothing");
        assert_eq!(rewrite.map(|r| r.argv), expected.map(argv), "{call:?}");
    }
    let odd: &[&[u8]] = &[b"EVALSHA", SPIN_RELEASE, b"2", b"{}x", b"redisson_unlock_latch:{}x:r", b"1", b"u", b"1"];
    assert!(rewritten(odd, false).is_some());
    assert_eq!(rewritten(odd, true), None, "cross-slot in a cluster stays with Lua");
}

#[test]
fn the_non_reentrant_acquire_refuses_reentry_with_redissons_error() {
    let cases: &[Case] = &[
        (
            &[b"EVALSHA", NON_REENTRANT, b"1", b"n", b"30000", b"u:1", b"NON_REENTRANT_REACQUIRE"],
            Some(&["RLOCK.ACQUIRE", "n", "u:1", "30000", "NOREENTRY"]),
        ),
        (&[b"EVALSHA", NON_REENTRANT, b"1", b"n", b"30000", b"u:1", b"OTHER_ERROR"], None),
        (&[b"EVALSHA", NON_REENTRANT, b"1", b"n", b"0", b"u:1", b"NON_REENTRANT_REACQUIRE"], None),
        (&[b"EVALSHA", NON_REENTRANT, b"1", b"n", b"30000", b"u:1"], None),
    ];
    for (call, expected) in cases {
        assert_eq!(rewritten(call, false).map(|r| r.argv), expected.map(argv), "{call:?}");
    }
}
