use crate::redisson::scripts::{identify, rewrite, Channel, Rewrite, Server};

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
fn rewritten(call: &[String], cluster: bool) -> Option<Rewrite<'static>> {
    let args: Vec<&[u8]> = call.iter().map(|arg| arg.as_bytes()).collect();
    let (family, known) = identify(&args).expect("a known text");
    assert_eq!(family.name, "rwlock");
    rewrite(known, &args, Server::plain(cluster)).map(Rewrite::into_made)
}

/// The call with argument `index` (of the whole call) replaced.
fn with(call: &[String], index: usize, value: &str) -> Vec<String> {
    let mut call = call.to_vec();
    call[index] = value.to_owned();
    call
}

fn expected(argv: &[&str], channel: Option<&str>) -> Option<Rewrite<'static>> {
    Some(Rewrite {
        argv: argv.iter().map(|arg| arg.as_bytes().to_vec()).collect(),
        channel: channel.map(|channel| Channel::joined(&[channel.as_bytes()])),
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

/// The write acquire runs as `RRW.ACQUIRE … LIKESCRIPT` (a lock-delay
/// refuses it as any native acquire: `tests/lock_delay.rs`).
#[test]
fn the_write_acquire_becomes_rrw_acquire_write_likescript() {
    let call = call(WRITE_ACQUIRE, &["rw"], &["30000", "u:1:write"]);
    let native = expected(&["RRW.ACQUIRE", "rw", "u:1", "WRITE", "30000", "LIKESCRIPT"], None);
    assert_eq!(rewritten(&call, false), native);
    assert_eq!(rewritten(&call, true), native, "one key");
    assert_left_to_lua(
        &call,
        &[
            (5, "u:1", "no write field"),
            (5, "mode:write", "the mode's field as owner"),
            (5, "u:1:read", "no write field"),
            (5, "u:1:write:write", "a write field as owner"),
            (4, "0", "a lease Redis takes but the command not"),
            (4, "-5", "a negative lease"),
        ],
    );
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

const IS_LOCKED: &str = "8ad44f1ba014938c20da38206b6d496c85ec1aed";
const RENEW_READS: &str = "38d2b478dfbe264ab67c221b7e4be62245f00ba0";
const RENEW_ALL: &str = "6563941ff57e01b8cf61e86907b80686438a2f74";

#[test]
fn the_read_locks_is_locked_becomes_rrw_readlocked() {
    let call = call(IS_LOCKED, &["n"], &[]);
    assert_eq!(rewritten(&call, false), expected(&["RRW.READLOCKED", "n"], None));
    assert_eq!(rewritten(&call, true), expected(&["RRW.READLOCKED", "n"], None));
    let mut extra = call.clone();
    extra.push("x".into());
    assert_eq!(rewritten(&extra, false), None, "an argument the text does not take");
}

#[test]
fn redisson_3s_read_renewal_becomes_rrw_renew_likescript() {
    let call = call(RENEW_ALL, &["n", "{n}"], &["30000", "u:1"]);
    assert_eq!(rewritten(&call, false), expected(&["RRW.RENEW", "n", "u:1", "30000", "LIKESCRIPT"], None));
    assert!(rewritten(&call, true).is_some(), "one slot");
    assert_left_to_lua(
        &call,
        &[
            (4, "{m}", "another lock's holds"),
            (4, "n", "not the holds' prefix"),
            (5, "0", "a lease Redis takes but the command not"),
            (6, "mode", "the mode's field as owner"),
            (6, "u:1:write", "a write field as owner"),
            (6, "", "an empty owner, which the command refuses"),
        ],
    );
}

#[test]
fn the_batch_read_renewal_becomes_rrw_renewreads() {
    let call = call(RENEW_READS, &["n", "{n}", "m", "{m}"], &["30000", "2", "u:1", "u:2", "1", "u:3"]);
    let native = ["RRW.RENEWREADS", "2", "n", "m", "30000", "2", "u:1", "u:2", "1", "u:3"];
    assert_eq!(rewritten(&call, false), expected(&native, None));
    assert_eq!(rewritten(&call, true), None, "two slots in a cluster: Lua, which Redis refuses");
    let prefix = |name: &str| String::from_utf8(rlock_protocol::rwlock_key_prefix(name.as_bytes())).unwrap();
    let (n, m) = (prefix("{t}n"), prefix("{t}m"));
    let tagged = self::call(RENEW_READS, &["{t}n", &n, "{t}m", &m], &["30000", "2", "u:1", "u:2", "1", "u:3"]);
    assert!(rewritten(&tagged, true).is_some(), "one slot");
    assert_left_to_lua(
        &call,
        &[
            (4, "{m}", "another lock's holds"),
            (7, "0", "a lease Redis takes but the command not"),
            (8, "3", "more owners than given"),
            (8, "1", "an owner left over"),
            (8, "0", "a count Lua takes but the command not"),
            (8, "02", "a count Lua reads, written otherwise"),
            (9, "mode", "the mode's field as owner"),
            (12, "u:3:write", "a write field as owner"),
            (12, "", "an empty owner, which the command refuses"),
        ],
    );
    let odd = self::call(RENEW_READS, &["n", "{n}", "m"], &["30000", "1", "u:1", "1", "u:3"]);
    assert_eq!(rewritten(&odd, false), None, "a lock without its holds' prefix");
    let one = self::call(RENEW_READS, &["n", "{n}"], &["30000", "1", "u:1"]);
    assert_eq!(rewritten(&one, false), expected(&["RRW.RENEWREADS", "1", "n", "30000", "1", "u:1"], None));
}

#[test]
fn the_read_acquire_of_3_10_becomes_rrw_acquire_read_likescript() {
    let sha = "3e6597e1d1157c59ac0d6efa2ba7e92ef418c41e";
    let call = call(sha, &["n", "{n}:u:1:rwlock_timeout"], &["30000", "u:1", "u:1:write"]);
    assert_eq!(rewritten(&call, false), expected(&["RRW.ACQUIRE", "n", "u:1", "READ", "30000", "LIKESCRIPT"], None));
    assert_left_to_lua(&call, &[(4, "{n}:u:2:rwlock_timeout", "another owner's holds"), (5, "0", "a lease of 0")]);
}
