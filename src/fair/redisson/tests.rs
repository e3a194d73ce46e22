use crate::redisson::scripts::{identify, rewrite, Channel, Rewrite, Server};

const NO_WAIT: &str = "d20501c26a30adf6fb0fe9883bbbcc497e6157e2";
const NO_WAIT_3_11: &str = "aa0a28d2eb7cbeb50151315a58eb75302d8dfa40";
const WAITING: &str = "8f6ed299ffd259f0539c20f89253998c0777ea75";
const WAITING_3_11: &str = "762bfafa6be221431a0b668685dd15c926483619";
const GIVE_UP: &str = "d1ddef65ad80886b5d36e023c99930044ddd653a";
const RELEASE: &str = "367f80bd2e300e411fb0936d9b601e5bcb3fd4b6";
const RELEASE_3_22: &str = "14f85250fb2a386500bf8e4b25a8e95db140ff0c";
const RELEASE_3_10: &str = "35d32367b21753c39b55dc64d1906fee627cc9a8";
const FORCE: &str = "71ed11d4e4818119ac560b3d670a7f08256afc46";
const FORCE_3_10: &str = "95cdf4b03f82c82edf987c7d216b4b67d861b14f";

const NAME: &str = "n";
const QUEUE: &str = "redisson_lock_queue:{n}";
const DEADLINES: &str = "redisson_lock_timeout:{n}";
const CHANNEL: &str = "redisson_lock__channel:{n}";
const LATCH: &str = "redisson_unlock_latch:{n}:0123abcd";
const NOW: &str = "1764000000000";
const ANY_WAITER: &str = "redisson_lock__channel:{n}:*";

/// `EVALSHA sha numkeys keys... argv...`
fn call(sha: &'static str, keys: &[&'static str], argv: &[&'static str]) -> Vec<Vec<u8>> {
    let mut call = vec![b"EVALSHA".to_vec(), sha.as_bytes().to_vec(), keys.len().to_string().into_bytes()];
    call.extend(keys.iter().chain(argv).map(|arg| arg.as_bytes().to_vec()));
    call
}

fn rewritten(call: &[Vec<u8>], cluster: bool) -> Option<Rewrite<'static>> {
    let args: Vec<&[u8]> = call.iter().map(Vec::as_slice).collect();
    let (family, known) = identify(&args).expect("a known text");
    assert_eq!(family.name, "fair");
    rewrite(known, &args, Server::plain(cluster)).map(Rewrite::into_made)
}

fn expected(argv: &[&str], channel: Option<&str>) -> Option<Rewrite<'static>> {
    Some(Rewrite {
        argv: argv.iter().map(|arg| arg.as_bytes().to_vec()).collect(),
        channel: channel.map(|channel| Channel::joined(&[channel.as_bytes()])),
    })
}

/// `call` with the argument at `index` (counted as in the call) replaced.
fn with(call: &[Vec<u8>], index: usize, value: &str) -> Vec<Vec<u8>> {
    let mut call = call.to_vec();
    call[index] = value.as_bytes().to_vec();
    call
}

#[test]
fn every_text_becomes_its_rfair_command() {
    let keys = [NAME, QUEUE, DEADLINES];
    let cases: &[(Vec<Vec<u8>>, Option<Rewrite>)] = &[
        (
            call(NO_WAIT, &keys, &["30000", "u:1", NOW, "300000"]),
            expected(&["RFAIR.ACQUIRE", "n", "u:1", "30000"], None),
        ),
        (
            call(NO_WAIT_3_11, &keys, &["30000", "u:1", NOW, "300000"]),
            expected(&["RFAIR.ACQUIRE", "n", "u:1", "30000"], None),
        ),
        (
            call(NO_WAIT, &keys, &["30000", "u:1", NOW, "5000"]),
            expected(&["RFAIR.ACQUIRE", "n", "u:1", "30000", "SHIFT", "5000"], None),
        ),
        (
            call(WAITING, &keys, &["30000", "u:1", "20000", NOW]),
            expected(&["RFAIR.ACQUIRE", "n", "u:1", "30000", "WAIT", "20000", "REDISSON", "PTTL"], None),
        ),
        // tryLock(20, SECONDS) without a lease sends 20: Redisson's wait, as sent.
        (
            call(WAITING, &keys, &["30000", "u:1", "20", NOW]),
            expected(&["RFAIR.ACQUIRE", "n", "u:1", "30000", "WAIT", "20", "REDISSON", "PTTL"], None),
        ),
        (
            call(WAITING_3_11, &keys, &["30000", "u:1", "300000", NOW]),
            expected(&["RFAIR.ACQUIRE", "n", "u:1", "30000", "WAIT", "300000", "REDISSON", "AHEAD"], None),
        ),
        (
            call(GIVE_UP, &["redisson_lock_queue:a{t}", "redisson_lock_timeout:a{t}"], &["u:1", "1500"]),
            expected(&["RFAIR.CANCEL", "a{t}", "u:1", "WAIT", "1500"], Some("redisson_lock__channel:a{t}:*")),
        ),
        (
            call(RELEASE, &[NAME, QUEUE, DEADLINES, CHANNEL, LATCH], &["0", "30000", "u:1", NOW, "publish", "13500"]),
            expected(&["RFAIR.RELEASE", "n", "u:1", "30000", "ID", "0123abcd", "PX", "13500"], Some(ANY_WAITER)),
        ),
        (
            call(RELEASE_3_22, &[NAME, QUEUE, DEADLINES, CHANNEL], &["0", "30000", "u:1", NOW, "PUBLISH"]),
            expected(&["RFAIR.RELEASE", "n", "u:1", "30000"], Some(ANY_WAITER)),
        ),
        (
            call(RELEASE_3_10, &[NAME, QUEUE, DEADLINES, CHANNEL], &["0", "30000", "u:1", NOW]),
            expected(&["RFAIR.RELEASE", "n", "u:1", "30000"], Some(ANY_WAITER)),
        ),
        (
            call(FORCE, &[NAME, QUEUE, DEADLINES, CHANNEL], &["0", NOW, "publish"]),
            expected(&["RFAIR.FORCERELEASE", "n"], Some(ANY_WAITER)),
        ),
        (
            call(FORCE_3_10, &[NAME, QUEUE, DEADLINES, CHANNEL], &["0", NOW]),
            expected(&["RFAIR.FORCERELEASE", "n"], Some(ANY_WAITER)),
        ),
    ];
    for (call, expected) in cases {
        assert_eq!(&rewritten(call, false), expected, "{:?}", String::from_utf8_lossy(&call[1]));
    }
}

#[test]
fn keys_and_channels_must_be_the_ones_derived_from_the_name() {
    let acquire = call(WAITING, &[NAME, QUEUE, DEADLINES], &["30000", "u:1", "5000", NOW]);
    let release = call(RELEASE, &[NAME, QUEUE, DEADLINES, CHANNEL, LATCH], &["0", "30000", "u:1", NOW, "publish", "1"]);
    let cases: &[(&[Vec<u8>], usize, &str, &str)] = &[
        (&acquire, 4, "redisson_lock_queue:{m}", "another lock's queue"),
        (&acquire, 5, "redisson_lock_queue:{n}", "the queue as deadlines"),
        (&release, 6, "redisson_lock__channel:{m}", "another channel"),
        (&release, 7, "redisson_unlock_latch:{n}:", "no request id"),
        (&release, 7, "redisson_unlock_latch:{m}:0123", "another lock's latch"),
        (&release, 8, "1", "another message"),
    ];
    for (call, index, value, why) in cases {
        assert_eq!(rewritten(&with(call, *index, value), false), None, "{why}");
    }
}

#[test]
fn numbers_the_native_command_would_not_take_stay_with_lua() {
    let acquire = call(WAITING, &[NAME, QUEUE, DEADLINES], &["30000", "u:1", "5000", NOW]);
    let no_wait = call(NO_WAIT, &[NAME, QUEUE, DEADLINES], &["30000", "u:1", NOW, "300000"]);
    let give_up = call(GIVE_UP, &["redisson_lock_queue:a{t}", "redisson_lock_timeout:a{t}"], &["u:1", "1500"]);
    let cases: &[(&[Vec<u8>], usize, &str, &str)] = &[
        (&acquire, 6, "0", "a lease of 0"),
        (&acquire, 6, "-1", "a negative lease"),
        (&acquire, 8, "0", "a wait of 0"),
        (&acquire, 8, "31536000001", "a wait longer than a year"),
        (&acquire, 9, "", "no clock"),
        (&acquire, 9, "1.5e12", "a clock Lua reads but Redisson never sends"),
        (&acquire, 9, "-5", "a negative clock"),
        (&no_wait, 9, "0", "a taker's wait of 0"),
        (&no_wait, 9, "-5000", "a negative taker's wait"),
        (&no_wait, 9, "31536000001", "a taker's wait longer than a year"),
        (&give_up, 6, "-1500", "a negative wait"),
    ];
    for (call, index, value, why) in cases {
        assert_eq!(rewritten(&with(call, *index, value), false), None, "{why}");
    }
    let mut extra = acquire.clone();
    extra.push(b"extra".to_vec());
    assert_eq!(rewritten(&extra, false), None, "one argument too many");
}

#[test]
fn the_give_up_names_its_lock_or_both_when_the_queue_key_tells_two() {
    let rewrite = rewritten(&call(GIVE_UP, &[QUEUE, DEADLINES], &["u:1", "1500"]), false);
    // `n` and `{n}` both have this queue: the command tells them apart.
    let native = expected(&["RFAIR.CANCEL", "n", "u:1", "WAIT", "1500", "OR", "{n}"], None).unwrap().argv;
    assert_eq!(rewrite.map(|rewrite| rewrite.argv), Some(native));
    let give_up = |queue: &'static str, deadlines: &'static str| {
        let rewrite = rewritten(&call(GIVE_UP, &[queue, deadlines], &["u:1", "1500"]), false)?;
        assert_eq!(rewrite.argv.len(), 5, "one name");
        let name = rewrite.argv.iter().nth(1).unwrap().to_vec();
        Some(name)
    };
    assert_eq!(give_up("redisson_lock_queue:{a}b", "redisson_lock_timeout:{a}b"), Some(b"{a}b".to_vec()));
    assert_eq!(give_up("redisson_lock_queue:{a{b}", "redisson_lock_timeout:{a{b}"), Some(b"{a{b}".to_vec()));
    assert_eq!(give_up("redisson_lock_queue:plain", "redisson_lock_timeout:plain"), None, "not derived");
    assert_eq!(give_up("redisson_lock_queue:{a}b", "redisson_lock_timeout:{a}c"), None, "another lock's deadlines");
}

#[test]
fn spublish_only_in_a_cluster_where_the_native_command_publishes_sharded_too() {
    let release = call(RELEASE_3_22, &[NAME, QUEUE, DEADLINES, CHANNEL], &["0", "30000", "u:1", NOW, "spublish"]);
    assert_eq!(rewritten(&release, false), None);
    assert!(rewritten(&release, true).is_some());
    let force = call(FORCE, &[NAME, QUEUE, DEADLINES, CHANNEL], &["0", NOW, "SPUBLISH"]);
    assert_eq!(rewritten(&force, false), None);
    assert!(rewritten(&force, true).is_some());
    assert_eq!(rewritten(&with(&force, 9, "del"), true), None, "not a publish command");
}

#[test]
fn keys_of_another_slot_stay_with_lua_in_a_cluster() {
    // A name with a `{` but no hash tag: its derived keys hash elsewhere.
    let odd = |sha| {
        call(sha, &["{}x", "redisson_lock_queue:{}x", "redisson_lock_timeout:{}x"], &["30000", "u:1", "5000", NOW])
    };
    assert!(rewritten(&odd(WAITING), false).is_some());
    assert_eq!(rewritten(&odd(WAITING), true), None);
}
