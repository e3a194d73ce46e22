//! RRW commands on a real server where they keep Redisson's layout but
//! improve on its TTL rules (renewal of every hold, never shortening the
//! hash; a write re-entry that does not grow the lease), and the keyspace
//! notifications of the read path, which must be the script's; and the
//! options Redisson's scripts imply: `VIA` (the publish command a script
//! names) and `MISSING` (what older scripts reply for a missing lock).

use redis::{Connection, Value};
use testkit::{error_text, keyspace_events, publications, RwScripts, Server};

fn run(con: &mut Connection, args: &[&str]) -> Value {
    redis::cmd(args[0]).arg(&args[1..]).query(con).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

fn pttl(con: &mut Connection, key: &str) -> i64 {
    redis::cmd("PTTL").arg(key).query(con).unwrap()
}

/// `value` is `expected` give or take the milliseconds a test step takes.
fn assert_near(value: i64, expected: i64, what: &str) {
    assert!((expected - 1_000..=expected).contains(&value), "{what}: {value}, expected about {expected}");
}

#[test]
fn renew_resets_every_hold_of_the_owner_and_never_shortens_the_hash() {
    let server = Server::shared();
    let mut con = server.connection();
    run(&mut con, &["RRW.ACQUIRE", "rw", "a", "READ", "2000"]);
    run(&mut con, &["RRW.ACQUIRE", "rw", "a", "READ", "3000"]);
    run(&mut con, &["RRW.ACQUIRE", "rw", "b", "READ", "600000"]);
    assert_eq!(run(&mut con, &["RRW.RENEW", "rw", "a", "50000"]), Value::Int(1));
    assert_near(pttl(&mut con, "{rw}:a:rwlock_timeout:1"), 50_000, "a's first hold");
    assert_near(pttl(&mut con, "{rw}:a:rwlock_timeout:2"), 50_000, "a's second hold");
    assert_near(pttl(&mut con, "{rw}:b:rwlock_timeout:1"), 600_000, "b's hold, untouched");
    assert_near(pttl(&mut con, "rw"), 600_000, "the hash keeps b's longer lease");
    assert_eq!(run(&mut con, &["RRW.RENEW", "rw", "c", "50000"]), Value::Int(0), "c holds nothing");

    run(&mut con, &["RRW.ACQUIRE", "w", "a", "WRITE", "1000"]);
    assert_eq!(run(&mut con, &["RRW.RENEW", "w", "a", "70000"]), Value::Int(1));
    assert_near(pttl(&mut con, "w"), 70_000, "the write hold renewed");
}

#[test]
fn a_write_reentry_takes_the_later_expiry_instead_of_adding_the_lease() {
    let server = Server::shared();
    let mut con = server.connection();
    run(&mut con, &["RRW.ACQUIRE", "w", "a", "WRITE", "600000"]);
    assert_eq!(run(&mut con, &["RRW.ACQUIRE", "w", "a", "WRITE", "1000"]), Value::Nil);
    assert_near(pttl(&mut con, "w"), 600_000, "not shortened, not 601000 as Redisson");
    assert_eq!(run(&mut con, &["RRW.ACQUIRE", "w", "a", "WRITE", "900000"]), Value::Nil);
    assert_near(pttl(&mut con, "w"), 900_000, "extended to the new lease");
    let status = run(&mut con, &["RRW.STATUS", "w", "a"]);
    let Value::Array(fields) = status else { panic!("{status:?}") };
    assert_eq!(fields[9], Value::Int(3), "write_count: three holds");
}

#[test]
fn read_path_keyspace_notifications_match_the_script() {
    let server = Server::builder().config("notify-keyspace-events", "KEA").start();
    let rw = RwScripts::default();
    let events = keyspace_events(&server, |con| {
        rw.load(con).unwrap();
        for (owner, lease) in [(b"u".as_slice(), 60_000), (b"u", 90_000), (b"v", 30_000)] {
            let _: Value = rw.read_acquire(b"s:r", owner, lease).query(con).unwrap();
        }
        for (owner, id) in [(b"u".as_slice(), b"1".as_slice()), (b"v", b"2"), (b"u", b"3")] {
            let _: Value = rw.read_release(b"s:r", owner, id).query(con).unwrap();
        }
        for args in [
            &["RRW.ACQUIRE", "c:r", "u", "READ", "60000"][..],
            &["RRW.ACQUIRE", "c:r", "u", "READ", "90000"],
            &["RRW.ACQUIRE", "c:r", "v", "READ", "30000"],
            &["RRW.RELEASE", "c:r", "u", "READ", "ID", "1"],
            &["RRW.RELEASE", "c:r", "v", "READ", "ID", "2"],
            &["RRW.RELEASE", "c:r", "u", "READ", "ID", "3"],
        ] {
            run(con, args);
        }
    });
    let of = |twin: &str| -> Vec<(String, &str)> {
        events
            .iter()
            .filter(|(key, _)| key.contains(twin))
            .map(|(key, event)| (key.replace(twin, "X"), event.as_str()))
            .collect()
    };
    let script = of("s:r");
    assert!(script.len() >= 20, "holds set, expired, counted down and deleted: {script:?}");
    assert_eq!(of("c:r"), script);
}

#[test]
fn via_names_the_one_command_a_release_publishes_with() {
    let server = Server::shared();
    let messages = publications(&server, |con| {
        run(con, &["RRW.ACQUIRE", "a", "o", "READ", "30000"]);
        // SPUBLISH reaches SSUBSCRIBE only, not the pattern listener.
        assert_eq!(run(con, &["RRW.RELEASE", "a", "o", "READ", "VIA", "spublish"]), Value::Int(1));
        run(con, &["RRW.ACQUIRE", "b", "o", "WRITE", "30000"]);
        let release = ["RRW.RELEASE", "b", "o", "WRITE", "30000", "ID", "r", "PX", "1000", "VIA", "PUBLISH"];
        assert_eq!(run(con, &release), Value::Int(1));
        run(con, &["RRW.ACQUIRE", "c", "o", "READ", "30000"]);
        assert_eq!(run(con, &["RRW.FORCERELEASE", "c", "READ", "VIA", "SPUBLISH"]), Value::Int(1));
        run(con, &["RRW.ACQUIRE", "d", "o", "WRITE", "30000"]);
        assert_eq!(run(con, &["RRW.FORCERELEASE", "d", "VIA", "publish"]), Value::Int(1));
    });
    let expected = [("redisson_rwlock:{b}", "1"), ("redisson_rwlock:{d}", "1")];
    assert_eq!(messages, expected.map(|(channel, message)| (channel.to_owned(), message.to_owned())));
    let mut con = server.connection();
    // The grammar names the argument that is no choice of VIA's.
    let bad_vias: [(&[&str], &str); 2] = [
        (&["RRW.RELEASE", "a", "o", "READ", "VIA", "del"], "unexpected argument 5 ('del'); syntax: RRW.RELEASE"),
        (&["RRW.FORCERELEASE", "a", "VIA", "x"], "unexpected argument 3 ('x'); syntax: RRW.FORCERELEASE"),
    ];
    for (bad, expected) in bad_vias {
        let error = error_text(redis::cmd(bad[0]).arg(&bad[1..]).query::<Value>(&mut con));
        assert!(error.contains(expected), "{bad:?}: {error}");
    }
}

#[test]
fn missing_says_what_a_release_of_a_missing_lock_replies() {
    let server = Server::shared();
    let messages = publications(&server, |con| {
        assert_eq!(run(con, &["RRW.RELEASE", "m", "o", "READ", "MISSING", "1", "VIA", "PUBLISH"]), Value::Int(1));
        assert_eq!(run(con, &["RRW.RELEASE", "m", "o", "WRITE", "30000", "MISSING", "nil"]), Value::Nil);
        let latched = ["RRW.RELEASE", "m", "o", "WRITE", "30000", "ID", "r", "PX", "5000", "MISSING", "1"];
        assert_eq!(run(con, &latched), Value::Int(1));
        assert_eq!(run(con, &["GET", "redisson_unlock_latch:{m}:r"]), Value::BulkString(b"1".to_vec()));
    });
    let expected = [("redisson_rwlock:{m}", "0"), ("redisson_rwlock:{m}", "1"), ("redisson_rwlock:{m}", "1")];
    assert_eq!(messages, expected.map(|(channel, message)| (channel.to_owned(), message.to_owned())));
    let mut con = server.connection();
    run(&mut con, &["RRW.ACQUIRE", "h", "o", "READ", "30000"]);
    assert_eq!(run(&mut con, &["RRW.RELEASE", "h", "p", "READ", "MISSING", "1"]), Value::Nil, "held by another");
    let error = error_text(redis::cmd("RRW.RELEASE").arg(&["m", "o", "READ", "MISSING", "2"]).query::<Value>(&mut con));
    assert!(error.contains("unexpected argument 5 ('2'); syntax: RRW.RELEASE"), "{error}");
}

/// `RRW.FORCERELEASE` deletes the hash alone, as Redisson's force unlock:
/// the read holds' timeout keys are left to expire, and COMMAND DOCS says
/// so (it said they were deleted).
#[test]
fn force_release_leaves_the_timeout_keys_to_expire_as_command_docs_says() {
    let server = Server::shared();
    let mut con = server.connection();
    run(&mut con, &["RRW.ACQUIRE", "f", "o", "READ", "30000"]);
    assert_eq!(run(&mut con, &["RRW.FORCERELEASE", "f"]), Value::Int(1));
    assert_eq!(run(&mut con, &["EXISTS", "f"]), Value::Int(0));
    assert_near(pttl(&mut con, "{f}:o:rwlock_timeout:1"), 30_000, "the read hold's timeout key");
    let docs: Vec<Value> = redis::cmd("COMMAND").arg(&["DOCS", "rrw.forcerelease"]).query(&mut con).unwrap();
    let fields: Vec<Value> = redis::from_redis_value(docs[1].clone()).unwrap();
    let complexity = fields.chunks(2).find(|pair| pair[0] == Value::BulkString(b"complexity".to_vec())).unwrap();
    let complexity: String = redis::from_redis_value(complexity[1].clone()).unwrap();
    assert!(complexity.contains("left to expire"), "{complexity}");
}
