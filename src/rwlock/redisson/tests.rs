use crate::redisson::scripts::{identify, rewrite, Rewrite, Server};

const READ_ACQUIRE: &str = "95553a6ff11176c18e71344e89d116b06fd6f753";
const READ_RELEASE: &str = "6e1b10e11ac0a3ed8e902562ecd32ce01b553039";
const WRITE_RELEASE: &str = "21f5fb0f8ddfa9be5c3e0c9757c128796add75c6";
const READ_FORCE: &str = "27dbe744e95c1d854a7f556cc6817030de2d0d01";
const WRITE_FORCE: &str = "2e2cb2a3b13e2e80e4236ef6a25beaf365dba608";
const READ_FORCE_BY_PUBLISH: &str = "23f9bc91439172625235ce2ee06d6647f08a7e27";
const WRITE_FORCE_BY_PUBLISH: &str = "23639b0b2d18d26ce352e148ff4ac5b8e984b696";
/// The releases of 3.24.0 .. 3.43.0, of 3.22.0 .. 3.23.5, of 3.10.0 .. 3.21.3.
const READ_RELEASE_3_24: &str = "5947c0fee6ca25ae094ec1b3e7a2559a9273d29f";
const WRITE_RELEASE_3_24: &str = "d29c5559782035515d32e926762830b3304b49be";
const READ_RELEASE_3_22: &str = "92a54c31a4dc3b46f81e24a6dd5bb7d677c6f882";
const WRITE_RELEASE_3_22: &str = "319a1cdf1b56c767a0a9adf2224250bf811f110c";
const READ_RELEASE_3_10: &str = "f5469be4bfe5232d519471092634b3ee84e5ee6f";
const WRITE_RELEASE_3_10: &str = "baa634f6184acc1b8f145e810a0e0e00967a3cbe";

const CHANNEL: &str = "redisson_rwlock:{n}";
const LATCH: &str = "redisson_unlock_latch:{n}:0123abcd";

/// A call of the text `sha` as Redisson sends it: keys, then arguments.
fn call<'a>(sha: &'a str, keys: &[&'a str], args: &[&'a str]) -> Vec<String> {
    let mut call = vec!["EVALSHA".to_owned(), sha.to_owned(), keys.len().to_string()];
    call.extend(keys.iter().chain(args).map(|arg| arg.to_string()));
    call
}

/// Its rewrite outside a cluster (`cluster`: within one).
fn rewritten(call: &[String], cluster: bool) -> Option<Rewrite> {
    let args: Vec<&[u8]> = call.iter().map(|arg| arg.as_bytes()).collect();
    let (family, known) = identify(&args).expect("a known text");
    assert_eq!(family.name, "rwlock");
    rewrite(known, &args, Server::plain(cluster))
}

/// The call with argument `index` (of the whole call) replaced.
fn with(call: &[String], index: usize, value: &str) -> Vec<String> {
    let mut call = call.to_vec();
    call[index] = value.to_owned();
    call
}

fn expected(argv: &[&str], channel: Option<&str>) -> Option<Rewrite> {
    Some(Rewrite {
        argv: argv.iter().map(|arg| arg.as_bytes().to_vec()).collect(),
        channel: channel.map(|channel| channel.as_bytes().into()),
    })
}

/// Each change of the call that leaves it with Lua.
fn assert_left_to_lua(call: &[String], changes: &[(usize, &str, &str)]) {
    for (index, value, why) in changes {
        assert_eq!(rewritten(&with(call, *index, value), false), None, "{why}: argument {index} = {value:?}");
    }
}

const WRITE_ACQUIRE: &str = "6306ba3bf1f563b284bed52d305fce615c6664d9";

#[test]
fn every_text_is_known_by_sha() {
    for sha in [
        WRITE_ACQUIRE,
        READ_ACQUIRE,
        READ_RELEASE,
        WRITE_RELEASE,
        READ_FORCE,
        WRITE_FORCE,
        READ_FORCE_BY_PUBLISH,
        WRITE_FORCE_BY_PUBLISH,
        READ_RELEASE_3_24,
        WRITE_RELEASE_3_24,
        READ_RELEASE_3_22,
        WRITE_RELEASE_3_22,
        READ_RELEASE_3_10,
        WRITE_RELEASE_3_10,
    ] {
        let (family, known) = identify(&[b"EVALSHA", sha.as_bytes()]).expect(sha);
        assert_eq!((family.name, known.sha1), ("rwlock", sha));
    }
}

/// The write acquire runs natively only while a lock-delay lasts.
#[test]
fn the_write_acquire_is_native_only_during_a_lock_delay() {
    let call = call(WRITE_ACQUIRE, &["rw"], &["30000", "u:1:write"]);
    let args: Vec<&[u8]> = call.iter().map(|arg| arg.as_bytes()).collect();
    let (family, known) = identify(&args).expect("a known text");
    assert_eq!(family.name, "rwlock");
    assert_eq!(rewrite(known, &args, Server::plain(false)), None, "outside the delay: Lua");
    let delay = Server { cluster: false, lock_delay: true };
    let native = expected(&["RRW.ACQUIRE", "rw", "u:1", "WRITE", "30000"], None);
    assert_eq!(rewrite(known, &args, delay), native);
    for (index, value) in [(5, "u:1"), (5, "mode:write"), (5, "u:1:read"), (4, "0"), (4, "-5")] {
        let changed: Vec<String> = with(&call, index, value);
        let args: Vec<&[u8]> = changed.iter().map(|arg| arg.as_bytes()).collect();
        assert_eq!(rewrite(known, &args, delay), None, "argument {index} = {value:?}");
    }
}

#[test]
fn the_read_acquire_becomes_rrw_acquire_read() {
    let call = call(READ_ACQUIRE, &["n", "{n}:u:1:rwlock_timeout"], &["30000", "u:1", "u:1:write"]);
    assert_eq!(rewritten(&call, false), expected(&["RRW.ACQUIRE", "n", "u:1", "READ", "30000"], None));
    assert!(rewritten(&call, true).is_some(), "one slot");
    assert_left_to_lua(
        &call,
        &[
            (4, "{n}:u:2:rwlock_timeout", "another owner's holds"),
            (4, "{m}:u:1:rwlock_timeout", "another lock's holds"),
            (5, "0", "a lease Redis takes but the command not"),
            (5, "030000", "a lease Redis would not take"),
            (5, "1e3", "a lease only Lua's math.max takes"),
            (7, "u:2:write", "another owner's write field"),
            (7, "u:1", "not a write field"),
        ],
    );
    let reserved = self::call(READ_ACQUIRE, &["n", "{n}:mode:rwlock_timeout"], &["30000", "mode", "mode:write"]);
    assert_eq!(rewritten(&reserved, false), None, "an owner RRW refuses");
    let extra = self::call(READ_ACQUIRE, &["n", "{n}:u:1:rwlock_timeout"], &["30000", "u:1", "u:1:write", "x"]);
    assert_eq!(rewritten(&extra, false), None);
}

#[test]
fn hold_keys_stay_in_the_names_slot_or_the_call_stays_with_lua() {
    let tagged = call(READ_ACQUIRE, &["a{t}b", "a{t}b:u:1:rwlock_timeout"], &["30000", "u:1", "u:1:write"]);
    assert!(rewritten(&tagged, true).is_some());
    // `a{b` has no hash tag: its hold keys hash whole, each to its own slot.
    let untagged = call(READ_ACQUIRE, &["a{b", "a{b:u:1:rwlock_timeout"], &["30000", "u:1", "u:1:write"]);
    assert!(rewritten(&untagged, false).is_some());
    assert_eq!(rewritten(&untagged, true), None);
}

#[test]
fn the_read_release_takes_its_request_id_from_the_latch_and_its_publish_command() {
    let keys = ["n", CHANNEL, "{n}:u:1:rwlock_timeout", "{n}", LATCH];
    let call = call(READ_RELEASE, &keys, &["0", "u:1", "spublish", "13500"]);
    let argv = ["RRW.RELEASE", "n", "u:1", "READ", "ID", "0123abcd", "PX", "13500", "VIA", "SPUBLISH"];
    assert_eq!(rewritten(&call, false), expected(&argv, Some(CHANNEL)));
    assert!(rewritten(&call, true).is_some(), "one slot");
    assert!(rewritten(&with(&call, 10, "PUBLISH"), false).is_some());
    assert_left_to_lua(
        &call,
        &[
            (4, "redisson_rwlock:{m}", "another channel"),
            (4, "redisson_lock__channel:{n}", "RLock's channel"),
            (5, "{n}:u:2:rwlock_timeout", "another owner's holds"),
            (6, "{m}", "another lock's hold prefix"),
            (7, "redisson_unlock_latch:{n}:", "no request id"),
            (7, "redisson_unlock_latch:{m}:0123abcd", "another lock's latch"),
            (8, "1", "the write side's message"),
            (9, "mode", "an owner RRW refuses"),
            (10, "del", "not a publish command"),
            (11, "0", "a latch time the command does not take"),
        ],
    );
}

#[test]
fn the_write_release_takes_the_owner_from_its_write_field() {
    let call = call(WRITE_RELEASE, &["n", CHANNEL, LATCH], &["1", "30000", "u:1:write", "publish", "20000"]);
    let argv = ["RRW.RELEASE", "n", "u:1", "WRITE", "30000", "ID", "0123abcd", "PX", "20000", "VIA", "PUBLISH"];
    assert_eq!(rewritten(&call, false), expected(&argv, Some(CHANNEL)));
    assert_left_to_lua(
        &call,
        &[
            (4, "redisson_rwlock:{m}", "another channel"),
            (5, "redisson_unlock_latch:{m}:0123abcd", "another lock's latch"),
            (6, "0", "the read side's message"),
            (7, "0", "a lease that would delete the lock in Lua"),
            (8, "u:1", "not a write field"),
            (8, "u:1:write:write", "an owner RRW refuses"),
            (8, "mode:write", "an owner RRW refuses"),
            (9, "eval", "not a publish command"),
            (10, "-1", "a latch time Redis refuses"),
        ],
    );
}

#[test]
fn force_releases_check_channel_and_message_per_side() {
    let cases = [
        (READ_FORCE, &["0", "spublish"][..], "READ", "SPUBLISH"),
        (WRITE_FORCE, &["1", "publish"][..], "WRITE", "PUBLISH"),
        (READ_FORCE_BY_PUBLISH, &["0"][..], "READ", "PUBLISH"),
        (WRITE_FORCE_BY_PUBLISH, &["1"][..], "WRITE", "PUBLISH"),
    ];
    for (sha, args, side, publish) in cases {
        let call = call(sha, &["a{t}", "redisson_rwlock:a{t}"], args);
        let argv = ["RRW.FORCERELEASE", "a{t}", side, "VIA", publish];
        assert_eq!(rewritten(&call, true), expected(&argv, Some("redisson_rwlock:a{t}")), "{sha}");
        let other_message = if side == "READ" { "1" } else { "0" };
        assert_left_to_lua(&call, &[(4, "redisson_rwlock:{a{t}}", "another channel"), (5, other_message, "message")]);
        let odd = self::call(sha, &["{}x", "redisson_rwlock:{}x"], args);
        assert!(rewritten(&odd, false).is_some());
        assert_eq!(rewritten(&odd, true), None, "cross-slot in a cluster stays with Lua");
    }
    let extra = call(READ_FORCE_BY_PUBLISH, &["n", CHANNEL], &["0", "publish"]);
    assert_eq!(rewritten(&extra, false), None, "the old text takes no publish command");
}

#[test]
fn older_releases_reply_1_for_a_missing_lock_and_take_fewer_arguments() {
    let read_keys = ["n", CHANNEL, "{n}:u:1:rwlock_timeout", "{n}"];
    let read_latched = ["n", CHANNEL, "{n}:u:1:rwlock_timeout", "{n}", LATCH];
    let write_latched = ["n", CHANNEL, LATCH];
    let read = |tail: &[&'static str]| [&["RRW.RELEASE", "n", "u:1", "READ"][..], tail].concat();
    let write = |tail: &[&'static str]| [&["RRW.RELEASE", "n", "u:1", "WRITE", "30000"][..], tail].concat();
    let latched = ["ID", "0123abcd", "PX", "20000", "MISSING", "1", "VIA", "SPUBLISH"];
    let cases: [(Vec<String>, Vec<&str>); 6] = [
        (call(READ_RELEASE_3_24, &read_latched, &["0", "u:1", "spublish", "20000"]), read(&latched)),
        (call(WRITE_RELEASE_3_24, &write_latched, &["1", "30000", "u:1:write", "spublish", "20000"]), write(&latched)),
        (call(READ_RELEASE_3_22, &read_keys, &["0", "u:1", "publish"]), read(&["MISSING", "1", "VIA", "PUBLISH"])),
        (
            call(WRITE_RELEASE_3_22, &["n", CHANNEL], &["1", "30000", "u:1:write", "spublish"]),
            write(&["MISSING", "1", "VIA", "SPUBLISH"]),
        ),
        (call(READ_RELEASE_3_10, &read_keys, &["0", "u:1"]), read(&["MISSING", "1", "VIA", "PUBLISH"])),
        (
            call(WRITE_RELEASE_3_10, &["n", CHANNEL], &["1", "30000", "u:1:write"]),
            write(&["MISSING", "1", "VIA", "PUBLISH"]),
        ),
    ];
    for (call, argv) in cases {
        assert_eq!(rewritten(&call, false), expected(&argv, Some(CHANNEL)), "{call:?}");
        let mut longer = call.clone();
        longer.push("x".to_owned());
        assert_eq!(rewritten(&longer, false), None, "{call:?} with one more argument");
        // The message is the first argument, after the keys.
        let (message_at, other_message) =
            (3 + call[2].parse::<usize>().unwrap(), if argv[3] == "READ" { "1" } else { "0" });
        assert_left_to_lua(
            &call,
            &[(4, "redisson_rwlock:{m}", "another channel"), (message_at, other_message, "message")],
        );
    }
    // The 3.24 texts' latch is checked as the 3.44 ones'.
    let call = call(READ_RELEASE_3_24, &read_latched, &["0", "u:1", "publish", "20000"]);
    assert_left_to_lua(&call, &[(7, "redisson_unlock_latch:{m}:0123abcd", "another lock's latch"), (11, "0", "latch")]);
}
