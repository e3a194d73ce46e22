//! The RLOCK commands against a real redis-server: replies, data layout,
//! errors without side effects, metadata, configuration and INFO.

use redis::{Commands, Connection, RedisResult, Value};
use std::collections::HashMap;
use testkit::{error_text, release_channel, rlock_info, Server};

fn rlock(con: &mut Connection, command: &str, args: &[&[u8]]) -> RedisResult<Value> {
    redis::cmd(command).arg(args).query(con)
}

fn fields(con: &mut Connection, key: &[u8]) -> HashMap<Vec<u8>, Vec<u8>> {
    con.hgetall(key).expect("HGETALL")
}

fn pttl(con: &mut Connection, key: &[u8]) -> i64 {
    con.pttl(key).expect("PTTL")
}

fn dump(con: &mut Connection, key: &[u8]) -> (Option<Vec<u8>>, i64) {
    (redis::cmd("DUMP").arg(key).query(con).expect("DUMP"), pttl(con, key))
}

fn assert_pttl_near(con: &mut Connection, key: &[u8], lease_ms: i64) {
    let left = pttl(con, key);
    assert!(lease_ms - 1000 < left && left <= lease_ms, "PTTL {left}, expected about {lease_ms}");
}

#[test]
fn acquire_reenter_contend_and_release_keep_redissons_layout() {
    let server = Server::shared();
    let mut con = server.connection();

    assert_eq!(rlock(&mut con, "RLOCK.ACQUIRE", &[b"res", b"a:1", b"10000"]).unwrap(), Value::Nil);
    assert_eq!(fields(&mut con, b"res"), HashMap::from([(b"a:1".to_vec(), b"1".to_vec())]));
    assert_pttl_near(&mut con, b"res", 10_000);
    let key_type: String = redis::cmd("TYPE").arg("res").query(&mut con).unwrap();
    assert_eq!(key_type, "hash");

    assert_eq!(rlock(&mut con, "RLOCK.ACQUIRE", &[b"res", b"a:1", b"20000"]).unwrap(), Value::Nil);
    assert_eq!(fields(&mut con, b"res"), HashMap::from([(b"a:1".to_vec(), b"2".to_vec())]));
    assert_pttl_near(&mut con, b"res", 20_000);

    let Value::Int(ttl) = rlock(&mut con, "RLOCK.ACQUIRE", &[b"res", b"b:1", b"5000"]).unwrap() else {
        panic!("contended acquire must reply the PTTL");
    };
    assert!(19_000 < ttl && ttl <= 20_000, "PTTL reply {ttl}");
    assert_eq!(fields(&mut con, b"res").len(), 1, "a contended acquire writes nothing");

    assert_eq!(rlock(&mut con, "RLOCK.RELEASE", &[b"res", b"b:1"]).unwrap(), Value::Nil);
    assert_eq!(rlock(&mut con, "RLOCK.RELEASE", &[b"res", b"a:1", b"7000"]).unwrap(), Value::Int(0));
    assert_eq!(fields(&mut con, b"res"), HashMap::from([(b"a:1".to_vec(), b"1".to_vec())]));
    assert_pttl_near(&mut con, b"res", 7000);
    assert_eq!(rlock(&mut con, "RLOCK.RELEASE", &[b"res", b"a:1"]).unwrap(), Value::Int(1));
    assert_eq!(pttl(&mut con, b"res"), -2, "full release deletes the key");
    assert_eq!(rlock(&mut con, "RLOCK.RELEASE", &[b"res", b"a:1"]).unwrap(), Value::Nil);
}

#[test]
fn renew_resets_the_lease_only_for_the_holder_and_never_creates_a_key() {
    let server = Server::shared();
    let mut con = server.connection();

    assert_eq!(rlock(&mut con, "RLOCK.RENEW", &[b"res", b"a", b"9000"]).unwrap(), Value::Int(0));
    assert_eq!(pttl(&mut con, b"res"), -2);

    rlock(&mut con, "RLOCK.ACQUIRE", &[b"res", b"a", b"1000"]).unwrap();
    assert_eq!(rlock(&mut con, "RLOCK.RENEW", &[b"res", b"b", b"9000"]).unwrap(), Value::Int(0));
    assert!(pttl(&mut con, b"res") <= 1000);
    assert_eq!(rlock(&mut con, "RLOCK.RENEW", &[b"res", b"a", b"9000"]).unwrap(), Value::Int(1));
    assert_pttl_near(&mut con, b"res", 9000);
    assert_eq!(fields(&mut con, b"res"), HashMap::from([(b"a".to_vec(), b"1".to_vec())]));
}

#[test]
fn lease_defaults_to_the_configured_value() {
    let server = Server::builder().module_arg("default-lease-ms").module_arg("5000").start();
    let mut con = server.connection();
    let configured: Vec<String> = redis::cmd("CONFIG").arg(&["GET", "rlock.default-lease-ms"]).query(&mut con).unwrap();
    assert_eq!(configured, ["rlock.default-lease-ms", "5000"]);

    rlock(&mut con, "RLOCK.ACQUIRE", &[b"res", b"a"]).unwrap();
    assert_pttl_near(&mut con, b"res", 5000);

    let _: () = redis::cmd("CONFIG").arg(&["SET", "rlock.default-lease-ms", "60000"]).query(&mut con).unwrap();
    rlock(&mut con, "RLOCK.RENEW", &[b"res", b"a"]).unwrap();
    assert_pttl_near(&mut con, b"res", 60_000);
    rlock(&mut con, "RLOCK.ACQUIRE", &[b"res", b"a"]).unwrap();
    rlock(&mut con, "RLOCK.RELEASE", &[b"res", b"a"]).unwrap();
    assert_pttl_near(&mut con, b"res", 60_000);

    for bad in ["0", "-1", "abc", "31536000001"] {
        let result: RedisResult<()> = redis::cmd("CONFIG").arg(&["SET", "rlock.default-lease-ms", bad]).query(&mut con);
        assert!(result.is_err(), "CONFIG SET rlock.default-lease-ms {bad} must fail");
    }
    let configured: Vec<String> = redis::cmd("CONFIG").arg(&["GET", "rlock.default-lease-ms"]).query(&mut con).unwrap();
    assert_eq!(configured[1], "60000");
}

#[test]
fn the_default_lease_is_redissons_watchdog_timeout() {
    let server = Server::shared();
    let mut con = server.connection();
    rlock(&mut con, "RLOCK.ACQUIRE", &[b"res", b"a"]).unwrap();
    assert_pttl_near(&mut con, b"res", 30_000);
}

#[test]
fn full_releases_publish_on_redissons_channel() {
    let server = Server::shared();
    let mut con = server.connection();
    let mut subscriber = server.connection();
    let mut pubsub = subscriber.as_pubsub();
    pubsub.subscribe(release_channel(b"plain")).unwrap();
    pubsub.subscribe(release_channel(b"{tag}name")).unwrap();
    pubsub.subscribe(release_channel(b"forced")).unwrap();

    rlock(&mut con, "RLOCK.ACQUIRE", &[b"plain", b"a"]).unwrap();
    rlock(&mut con, "RLOCK.ACQUIRE", &[b"plain", b"a"]).unwrap();
    rlock(&mut con, "RLOCK.RELEASE", &[b"plain", b"a"]).unwrap();
    rlock(&mut con, "RLOCK.RELEASE", &[b"plain", b"a"]).unwrap();
    rlock(&mut con, "RLOCK.ACQUIRE", &[b"{tag}name", b"a"]).unwrap();
    rlock(&mut con, "RLOCK.RELEASE", &[b"{tag}name", b"a"]).unwrap();
    rlock(&mut con, "RLOCK.ACQUIRE", &[b"forced", b"a"]).unwrap();
    assert_eq!(rlock(&mut con, "RLOCK.FORCERELEASE", &[b"forced"]).unwrap(), Value::Int(1));
    assert_eq!(rlock(&mut con, "RLOCK.FORCERELEASE", &[b"forced"]).unwrap(), Value::Int(0));

    pubsub.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
    let mut received = vec![];
    for _ in 0..3 {
        let message = pubsub.get_message().expect("a release message");
        received.push((message.get_channel_name().to_owned(), message.get_payload::<String>().unwrap()));
    }
    assert_eq!(
        received,
        [
            ("redisson_lock__channel:{plain}".to_owned(), "0".to_owned()),
            ("redisson_lock__channel:{tag}name".to_owned(), "0".to_owned()),
            ("redisson_lock__channel:{forced}".to_owned(), "0".to_owned()),
        ],
        "exactly one message per full release, none for a partial one or a missing lock"
    );
}

#[test]
fn status_reports_everything_redisson_can_ask() {
    let server = Server::shared();
    let mut con = server.connection();
    let status = |con: &mut Connection, args: &[&[u8]]| -> Vec<Value> {
        redis::cmd("RLOCK.STATUS").arg(args).query(con).unwrap()
    };
    let pairs = |values: Vec<Value>| -> Vec<(String, Value)> {
        values
            .chunks(2)
            .map(|pair| match &pair[0] {
                Value::BulkString(name) => (String::from_utf8(name.clone()).unwrap(), pair[1].clone()),
                other => panic!("field name {other:?}"),
            })
            .collect()
    };
    let entry = |name: &str, value: Value| (name.to_owned(), value);

    assert_eq!(
        pairs(status(&mut con, &[b"res"])),
        [
            entry("locked", Value::Int(0)),
            entry("ttl_ms", Value::Int(-2)),
            entry("holders", Value::Int(0)),
            entry("held", Value::Nil),
            entry("hold_count", Value::Nil),
        ]
    );
    rlock(&mut con, "RLOCK.ACQUIRE", &[b"res", b"a", b"10000"]).unwrap();
    rlock(&mut con, "RLOCK.ACQUIRE", &[b"res", b"a", b"10000"]).unwrap();
    let held = pairs(status(&mut con, &[b"res", b"a"]));
    let Value::Int(ttl) = held[1].1 else { panic!("ttl_ms {:?}", held[1]) };
    assert!(9000 < ttl && ttl <= 10_000);
    assert_eq!(held[0], entry("locked", Value::Int(1)));
    assert_eq!(
        held[2..],
        [entry("holders", Value::Int(1)), entry("held", Value::Int(1)), entry("hold_count", Value::Int(2))]
    );
    let other = pairs(status(&mut con, &[b"res", b"b"]));
    assert_eq!(other[3..], [entry("held", Value::Int(0)), entry("hold_count", Value::Int(0))]);
}

#[test]
fn keys_and_owners_are_binary_safe() {
    let server = Server::shared();
    let mut con = server.connection();
    let key: &[u8] = b"lock\x00\xff\r\n{x";
    let owner: &[u8] = b"\x00owner\xfe\r\n:7";
    let mut subscriber = server.connection();
    let mut pubsub = subscriber.as_pubsub();
    pubsub.subscribe(release_channel(key)).unwrap();

    assert_eq!(rlock(&mut con, "RLOCK.ACQUIRE", &[key, owner]).unwrap(), Value::Nil);
    assert_eq!(fields(&mut con, key), HashMap::from([(owner.to_vec(), b"1".to_vec())]));
    assert!(matches!(rlock(&mut con, "RLOCK.ACQUIRE", &[key, b"\x00owner\xfe\r\n:8"]).unwrap(), Value::Int(_)));
    assert_eq!(rlock(&mut con, "RLOCK.RENEW", &[key, owner]).unwrap(), Value::Int(1));
    assert_eq!(rlock(&mut con, "RLOCK.RELEASE", &[key, owner]).unwrap(), Value::Int(1));
    pubsub.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
    let message = pubsub.get_message().unwrap();
    assert_eq!(message.get_channel::<Vec<u8>>().unwrap(), b"redisson_lock__channel:lock\x00\xff\r\n{x");
}

/// Every bad input gets its error reply and leaves every key as it was.
#[test]
fn bad_input_is_refused_without_touching_anything() {
    let server = Server::shared();
    let mut con = server.connection();
    let acquired = rlock_info(&mut con, "acquired");
    let _: () = con.set("string", "v").unwrap();
    let _: () = con.rpush("list", "v").unwrap();
    let _: () = con.sadd("set", "v").unwrap();
    let _: () = con.zadd("zset", "v", 1).unwrap();
    let _: () = redis::cmd("XADD").arg(&["stream", "*", "f", "v"]).query(&mut con).unwrap();
    let _: () = con.hset_multiple("user", &[("name", "bob"), ("a", "1")]).unwrap();
    let _: () = con.hset("badcount", "a", "1.5").unwrap();
    let _: () = con.hset("maxcount", "a", "9223372036854775807").unwrap();
    rlock(&mut con, "RLOCK.ACQUIRE", &[b"held", b"a", b"60000"]).unwrap();

    const ARITY: &str = "wrong number of arguments";
    const NOT_POSITIVE: &str = "ERR lease_ms must be a positive integer";
    const TOO_LONG: &str = "ERR lease_ms is above the maximum of 31536000000 (365 days)";
    const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
    const NOT_A_LOCK: &str = "ERR key is a hash but not a lock: a hold count is not an integer";
    const OVERFLOW: &str = "ERR hold count would overflow";
    // A syntax error names the argument and quotes the command's syntax.
    const EXTRA_4: &str = "ERR syntax error: unexpected argument 4 ('extra'); syntax: RLOCK.";

    let mut cases: Vec<(Vec<&[u8]>, &str)> = vec![];
    for command in ["RLOCK.ACQUIRE", "RLOCK.RENEW", "RLOCK.RELEASE"] {
        let c = command.as_bytes();
        cases.extend([
            (vec![c], ARITY),
            (vec![c, b"held"], ARITY),
            (vec![c, b"held", b"a", b"1000", b"extra"], EXTRA_4),
            (vec![c, b"held", b"a", b"0"], NOT_POSITIVE),
            (vec![c, b"held", b"a", b"-1"], NOT_POSITIVE),
            (vec![c, b"held", b"a", b"abc"], NOT_POSITIVE),
            (vec![c, b"held", b"a", b"1.5"], NOT_POSITIVE),
            (vec![c, b"held", b"a", b"1e3"], NOT_POSITIVE),
            (vec![c, b"held", b"a", b""], NOT_POSITIVE),
            (vec![c, b"held", b"a", b" 100"], NOT_POSITIVE),
            (vec![c, b"held", b"a", b"99999999999999999999999999"], TOO_LONG),
            (vec![c, b"held", b"a", b"31536000001"], TOO_LONG),
            (vec![c, b"fresh", b"a", b"0"], NOT_POSITIVE),
            (vec![c, b"badcount", b"a"], NOT_A_LOCK),
        ]);
        for other in ["string", "list", "set", "zset", "stream"] {
            cases.push((vec![c, other.as_bytes(), b"a"], WRONGTYPE));
        }
    }
    cases.extend([
        (vec![b"RLOCK.ACQUIRE".as_slice(), b"maxcount", b"a"], OVERFLOW),
        (vec![b"RLOCK.FORCERELEASE"], ARITY),
        (
            vec![b"RLOCK.FORCERELEASE", b"held", b"extra"],
            "ERR syntax error: unexpected argument 2 ('extra'); syntax: RLOCK.FORCERELEASE key [VIA PUBLISH|SPUBLISH|NONE]",
        ),
        (vec![b"RLOCK.FORCERELEASE", b"user"], NOT_A_LOCK),
        (vec![b"RLOCK.FORCERELEASE", b"badcount"], NOT_A_LOCK),
        (vec![b"RLOCK.STATUS"], ARITY),
        (
            vec![b"RLOCK.STATUS", b"held", b"a", b"extra"],
            "ERR syntax error: unexpected argument 3 ('extra'); syntax: RLOCK.STATUS key [owner]",
        ),
        (vec![b"RLOCK.STATUS", b"badcount", b"a"], NOT_A_LOCK),
    ]);
    for other in ["string", "list", "set", "zset", "stream"] {
        cases.push((vec![b"RLOCK.FORCERELEASE", other.as_bytes()], WRONGTYPE));
        cases.push((vec![b"RLOCK.STATUS", other.as_bytes()], WRONGTYPE));
    }

    let keys: [&[u8]; 11] =
        [b"string", b"list", b"set", b"zset", b"stream", b"user", b"badcount", b"maxcount", b"held", b"fresh", b"a"];
    let before: Vec<_> = keys.iter().map(|k| dump(&mut con, k)).collect();
    for (args, expected) in &cases {
        let reply = redis::cmd(std::str::from_utf8(args[0]).unwrap()).arg(&args[1..]).query::<Value>(&mut con);
        let text = error_text(reply);
        assert!(
            text.contains(expected),
            "{:?}: got {text:?}, expected {expected:?}",
            String::from_utf8_lossy(&args.concat())
        );
        let after: Vec<_> = keys.iter().map(|k| dump(&mut con, k)).collect();
        for ((key, was), now) in keys.iter().zip(&before).zip(&after) {
            assert_eq!(
                was.0,
                now.0,
                "{:?} changed {:?}",
                String::from_utf8_lossy(&args.concat()),
                String::from_utf8_lossy(key)
            );
            assert!((was.1 - now.1).abs() < 1000, "{:?} changed the TTL of {:?}", args, String::from_utf8_lossy(key));
        }
    }
    assert_eq!(rlock_info(&mut con, "acquired") - acquired, 1, "errors are not counted as outcomes");
}

/// The value after `name` in a RESP2 field/value array.
#[test]
fn commands_work_inside_multi_exec() {
    let server = Server::shared();
    let mut con = server.connection();
    let replies: Vec<Value> = redis::pipe()
        .atomic()
        .cmd("RLOCK.ACQUIRE")
        .arg(&["k", "a"])
        .cmd("RLOCK.ACQUIRE")
        .arg(&["k", "b"])
        .cmd("RLOCK.RELEASE")
        .arg(&["k", "a"])
        .query(&mut con)
        .unwrap();
    assert_eq!(replies[0], Value::Nil);
    assert!(matches!(replies[1], Value::Int(ttl) if ttl > 29_000));
    assert_eq!(replies[2], Value::Int(1));
}
