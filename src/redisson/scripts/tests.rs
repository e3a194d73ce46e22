use super::*;
use crate::primitive::{self, Primitive, PRIMITIVES};

static ECHO: Family =
    Family::new("echo", &[Known { sha1: "0000000000000000000000000000000000000001", len: 3, rewrite: echo }]);

#[linkme::distributed_slice(PRIMITIVES)]
static ECHO_PRIMITIVE: Primitive = Primitive { name: "echo", inspect: None, scripts: Some(&ECHO) };

/// The keys and arguments it was given, keys first.
fn echo<'a>(call: &Call<'a>) -> Option<Rewrite<'a>> {
    let mut argv = vec![call.keys.len().to_string().into_bytes()];
    argv.extend(call.keys.iter().chain(call.argv).map(|arg| arg.to_vec()));
    Some(Rewrite { argv: argv.into(), channel: None }.into_made())
}

const SHA: &[u8] = b"0000000000000000000000000000000000000001";

#[test]
fn numkeys_splits_keys_from_arguments_and_is_taken_only_as_redis_writes_it() {
    let (_, known) = identify(&[b"EVALSHA", SHA]).unwrap();
    let cases: &[(&[u8], Option<&[&str]>)] = &[
        (b"2", Some(&["2", "k1", "k2", "a1"])),
        (b"3", Some(&["3", "k1", "k2", "a1"])),
        (b"4", None),
        (b"02", None),
        (b"+2", None),
        (b"-1", None),
        (b"", None),
        (b"99999999999999999999999", None),
        (b"0", None),
    ];
    for (numkeys, expected) in cases {
        let call: &[&[u8]] = &[b"EVALSHA", SHA, numkeys, b"k1", b"k2", b"a1"];
        let expected = expected.map(|args| args.iter().map(|arg| arg.as_bytes()).collect::<Argv>());
        assert_eq!(rewrite(known, call, Server::plain(false)).map(|r| r.argv), expected, "numkeys {numkeys:?}");
    }
}

#[test]
fn texts_are_found_by_sha_in_either_case_or_by_body_of_a_known_length() {
    assert!(identify(&[b"evalsha", &SHA.to_ascii_uppercase()]).is_some());
    assert!(identify(&[b"EVALSHA", &SHA[1..]]).is_none());
    assert!(identify(&[b"EVAL", SHA]).is_none(), "a sha is no body");
    assert!(identify(&[b"FCALL", SHA]).is_none());
    assert!(identify(&[b"EVAL"]).is_none());
}

#[test]
fn every_tables_sha1_is_hex_of_its_own_and_found_by_it() {
    prepare();
    let mut seen = std::collections::HashSet::new();
    for (family, known) in
        primitive::families().flat_map(|family| family.scripts.iter().map(move |known| (family, known)))
    {
        let digest = decode_sha1(known.sha1.as_bytes()).unwrap_or_else(|| panic!("{} is not a SHA-1", known.sha1));
        assert!(seen.insert(digest), "{} twice", known.sha1);
        let (found, found_known) = by_sha(known.sha1.as_bytes()).expect(known.sha1);
        assert!(std::ptr::eq(found, family) && std::ptr::eq(found_known, known), "{}", known.sha1);
    }
    assert_eq!(decode_sha1(b"00000000000000000000000000000000000000g1"), None);
    assert_eq!(decode_sha1(b"+000000000000000000000000000000000000001"), None);
    assert!(by_sha(b"0000000000000000000000000000000000000002").is_none());
    for known in primitive::families().flat_map(|family| family.scripts) {
        let sha = known.sha1.as_bytes();
        let upper = sha.to_ascii_uppercase();
        assert!(std::ptr::eq(by_sha(&upper).expect(known.sha1).1, known), "{} in capitals", known.sha1);
        // The same first 16 digits, the rest another SHA-1's or no hex.
        for tail in [b'0', b'g'] {
            let mut other = sha.to_vec();
            other[39] = if other[39] == tail { b'1' } else { tail };
            assert!(by_sha(&other).is_none(), "{} with another last digit", known.sha1);
        }
        assert!(by_sha(&sha[..39]).is_none() && by_sha(&[sha, b"0"].concat()).is_none());
    }
    assert_eq!(hex_key(b"00000000000000g0"), None);
}

#[test]
fn same_slot_matters_only_in_a_cluster() {
    let call = |cluster| Call { keys: &[], argv: &[], server: Server::plain(cluster) };
    assert!(call(false).same_slot(b"{a}x", b"{b}x"));
    assert!(!call(true).same_slot(b"{a}x", b"{b}x"));
    assert!(call(true).same_slot(b"{a}x", b"y{a}"));
}

#[test]
fn publish_commands_in_any_case() {
    assert_eq!(publish_command(b"publish"), Some(&b"PUBLISH"[..]));
    assert_eq!(publish_command(b"SPublish"), Some(&b"SPUBLISH"[..]));
    assert_eq!(publish_command(b"del"), None);
}

#[test]
fn each_family_counts_its_native_calls() {
    ECHO.record_native();
    assert_eq!(ECHO.native.load(Ordering::Relaxed), 1);
}

#[test]
fn keys_built_from_a_prefix_share_the_names_slot_only_under_a_hash_tag() {
    let call = |cluster| Call { keys: &[], argv: &[], server: Server::plain(cluster) };
    assert!(call(false).prefix_in_slot(b"a{b", b"a{b:u:rwlock_timeout"));
    assert!(call(true).prefix_in_slot(b"n", b"{n}:u:rwlock_timeout"));
    assert!(!call(true).prefix_in_slot(b"a{b", b"a{b:u:rwlock_timeout"), "no tag: the suffix decides");
    assert!(!call(true).prefix_in_slot(b"{a}", b"{b}:u:rwlock_timeout"));
}

#[test]
fn a_latch_key_names_its_request_id() {
    assert_eq!(latch_request_id(b"n", b"redisson_unlock_latch:{n}:r1"), Some(&b"r1"[..]));
    assert_eq!(latch_request_id(b"a{t}", b"redisson_unlock_latch:a{t}:r1"), Some(&b"r1"[..]));
    assert_eq!(latch_request_id(b"n", b"redisson_unlock_latch:{n}:"), None);
    assert_eq!(latch_request_id(b"n", b"redisson_unlock_latch:{m}:r1"), None);
    assert_eq!(latch_request_id(b"n", b"redisson_unlock_latch:{n}r1"), None);
}

#[test]
fn an_argv_reads_each_argument_by_place_as_it_was_pushed() {
    let argv: Argv = [&b"RLOCK.ACQUIRE"[..], b"", b"name"].into_iter().collect();
    assert_eq!(argv.len(), 3);
    assert_eq!((argv.arg(0), argv.arg(1), argv.arg(2)), (&b"RLOCK.ACQUIRE"[..], &b""[..], &b"name"[..]));
    assert!(argv.iter().eq((0..argv.len()).map(|at| argv.arg(at))));
}
