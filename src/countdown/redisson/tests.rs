use crate::redisson::scripts::{identify, testing, Rewrite};

const COUNT_DOWN: &[u8] = b"38060fab26b0e7c5982a5cfd7ad542e44d3da19b";
const COUNT_DOWN_OLDER: &[u8] = b"c103a1b27e5635c206edc800af5851a8c4cc8305";
const TRY_SET: &[u8] = b"2a52d54a6f35bc8af5e84a2930b2ca1aa2a15892";
const TRY_SET_OLDER: &[u8] = b"956d64ccf21d1feed0339006db8295e2aa04a8d8";
const DELETE: &[u8] = b"47aed1b8133417c9bc009ffc08602e37ed4a1bb3";
const DELETE_OLDER: &[u8] = b"23bcabf6e8e3267791df8ea2e9ed607944b28658";
const CHANNEL: &[u8] = b"redisson_countdownlatch__channel__{l}";
const OTHER_CHANNEL: &[u8] = b"redisson_countdownlatch__channel__{m}";

/// A text's SHA-1, the call's numkeys, keys and arguments, and what it
/// becomes (the native argv, or why it stays with Lua).
type Case<T> = (&'static [u8], &'static [&'static [u8]], T);

fn rewritten(sha: &[u8], args: &[&[u8]], cluster: bool) -> Option<Rewrite<'static>> {
    testing::rewritten("latch", sha, args, cluster)
}

/// The native call `args`, naming the script's `channel` last.
fn native(args: &[&str], channel: &[u8]) -> Option<Rewrite<'static>> {
    let named = std::str::from_utf8(channel).expect("an ASCII channel");
    testing::native(&[args, &["CHANNEL", named]].concat(), Some(channel))
}

#[test]
fn every_latch_text_is_known_by_its_sha() {
    for sha in [COUNT_DOWN, COUNT_DOWN_OLDER, TRY_SET, TRY_SET_OLDER, DELETE, DELETE_OLDER] {
        let (family, known) = identify(&[b"evalsha", &sha.to_ascii_uppercase()]).expect("known");
        assert_eq!((family.name, known.sha1.as_bytes()), ("latch", sha));
    }
}

#[test]
fn calls_as_redisson_sends_them_become_rlatch_commands_via_their_publish_command() {
    let cases: [Case<&[&str]>; 9] = [
        (COUNT_DOWN, &[b"2", b"l", CHANNEL, b"0", b"publish"], &["RLATCH.COUNTDOWN", "l", "VIA", "PUBLISH"]),
        (COUNT_DOWN, &[b"2", b"l", CHANNEL, b"0", b"SPUBLISH"], &["RLATCH.COUNTDOWN", "l", "VIA", "SPUBLISH"]),
        (COUNT_DOWN_OLDER, &[b"2", b"l", CHANNEL, b"0"], &["RLATCH.COUNTDOWN", "l", "VIA", "PUBLISH"]),
        (
            TRY_SET,
            &[b"2", b"l", CHANNEL, b"1", b"5", b"spublish"],
            &["RLATCH.TRYSETCOUNT", "l", "5", "VIA", "SPUBLISH"],
        ),
        (TRY_SET, &[b"2", b"l", CHANNEL, b"1", b"0", b"publish"], &["RLATCH.TRYSETCOUNT", "l", "0", "VIA", "PUBLISH"]),
        (TRY_SET_OLDER, &[b"2", b"l", CHANNEL, b"1", b"12"], &["RLATCH.TRYSETCOUNT", "l", "12", "VIA", "PUBLISH"]),
        (DELETE, &[b"2", b"l", CHANNEL, b"1", b"publish"], &["RLATCH.DELETE", "l", "VIA", "PUBLISH"]),
        (DELETE_OLDER, &[b"2", b"l", CHANNEL, b"1"], &["RLATCH.DELETE", "l", "VIA", "PUBLISH"]),
        (COUNT_DOWN, &[b"2", b"l", CHANNEL, b"0", b"PUBLISH"], &["RLATCH.COUNTDOWN", "l", "VIA", "PUBLISH"]),
    ];
    for (sha, args, expected) in cases {
        assert_eq!(rewritten(sha, args, false), native(expected, CHANNEL), "{args:?}");
        assert_eq!(rewritten(sha, args, true), native(expected, CHANNEL), "{args:?} in a cluster");
    }
}

#[test]
fn calls_the_commands_would_answer_otherwise_stay_with_lua() {
    let cases: [Case<&str>; 16] = [
        (COUNT_DOWN, &[b"2", b"l", OTHER_CHANNEL, b"0", b"publish"], "another latch's channel"),
        (COUNT_DOWN, &[b"2", b"l", b"redisson_countdownlatch__channel__l", b"0", b"publish"], "no braces"),
        (COUNT_DOWN, &[b"2", b"l", CHANNEL, b"1", b"publish"], "another message"),
        (COUNT_DOWN, &[b"2", b"l", CHANNEL, b"0", b"del"], "not a publish command"),
        (COUNT_DOWN, &[b"2", b"l", CHANNEL, b"0"], "no publish command"),
        (COUNT_DOWN, &[b"1", b"l", CHANNEL, b"0", b"publish"], "one key"),
        (COUNT_DOWN_OLDER, &[b"2", b"l", CHANNEL, b"0", b"spublish"], "an argument the text does not take"),
        (TRY_SET, &[b"2", b"l", CHANNEL, b"1", b"-1", b"publish"], "a negative count, stored as given"),
        (TRY_SET, &[b"2", b"l", CHANNEL, b"1", b"05", b"publish"], "a count written otherwise"),
        (TRY_SET, &[b"2", b"l", CHANNEL, b"1", b"x", b"publish"], "not a count"),
        (TRY_SET, &[b"2", b"l", CHANNEL, b"1", b"9223372036854775808", b"publish"], "beyond 64 bits"),
        (TRY_SET, &[b"2", b"l", CHANNEL, b"0", b"5", b"publish"], "another message"),
        (TRY_SET_OLDER, &[b"2", b"l", CHANNEL, b"1", b"5", b"publish"], "an argument the text does not take"),
        (DELETE, &[b"2", b"l", CHANNEL, b"0", b"publish"], "the module's message, not the script's"),
        (DELETE_OLDER, &[b"2", b"l", CHANNEL, b"1", b"publish"], "an argument the text does not take"),
        (DELETE, &[b"2", b"l", CHANNEL, b"1", b"publish", b"x"], "one argument too many"),
    ];
    for (sha, args, why) in cases {
        assert_eq!(rewritten(sha, args, false), None, "{why}: {args:?}");
    }
}

#[test]
fn a_name_whose_channel_is_in_another_slot_stays_with_lua_in_a_cluster() {
    // The channel's braces make `a{b` its hash tag: another slot than `b`.
    let args: &[&[u8]] = &[b"2", b"a{b}", b"redisson_countdownlatch__channel__{a{b}}", b"0", b"publish"];
    assert!(rewritten(COUNT_DOWN, args, false).is_some());
    assert_eq!(rewritten(COUNT_DOWN, args, true), None);
}
