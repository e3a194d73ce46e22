//! The RLOCK commands' metadata, ACL and INFO against a real redis-server:
//! key positions, flags, arity and docs; key patterns on lock keys; every
//! outcome counted.

use redis::{Connection, RedisResult, Value};
use testkit::{error_text, eventually, Server, PATIENCE};

fn rlock(con: &mut Connection, command: &str, args: &[&[u8]]) -> RedisResult<Value> {
    redis::cmd(command).arg(args).query(con)
}

fn field<'a>(pairs: &'a [Value], name: &str) -> &'a Value {
    pairs
        .chunks(2)
        .find(|pair| redis::from_redis_value::<String>(pair[0].clone()).is_ok_and(|n| n == name))
        .map(|pair| &pair[1])
        .unwrap_or_else(|| panic!("no field {name} in {pairs:?}"))
}

#[test]
fn command_metadata_gives_key_positions_flags_arity_and_docs() {
    let server = Server::start();
    let mut con = server.connection();
    // name, sample arguments, flags, arity, key spec flags, documented arguments
    type Expected<'a> = (&'a str, &'a [&'a str], &'a [&'a str], i64, &'a [&'a str], &'a [&'a str]);
    let commands: [Expected; 6] = [
        (
            "RLOCK.ACQUIRE",
            &["k", "owner", "1000"],
            &["write", "denyoom", "fast"],
            -3,
            &["RW", "access", "update"],
            &["key", "owner", "lease_ms", "noreentry", "n", "wait_ms", "request", "reply"],
        ),
        ("RLOCK.RENEW", &["k", "owner"], &["write", "fast"], -3, &["RW", "update"], &["key", "owner", "lease_ms"]),
        (
            "RLOCK.RELEASE",
            &["k", "owner", "1000"],
            &["write", "fast"],
            -3,
            &["RW", "delete"],
            &["key", "owner", "lease_ms", "latch", "publisher"],
        ),
        ("RLOCK.FORCERELEASE", &["k"], &["write"], -2, &["RW", "delete"], &["key", "publisher"]),
        ("RLOCK.STATUS", &["k", "owner"], &["readonly", "fast"], -2, &["RO", "access"], &["key", "owner"]),
        ("RLOCK.INSPECT", &["k"], &["readonly"], 2, &["RO", "access"], &["key"]),
    ];
    let strings = |value: &Value| -> Vec<String> { redis::from_redis_value(value.clone()).unwrap() };
    for (name, args, flags, arity, key_flags, documented) in commands {
        let keys: Vec<String> = redis::cmd("COMMAND").arg("GETKEYS").arg(name).arg(args).query(&mut con).unwrap();
        assert_eq!(keys, ["k"], "{name}");
        let info: Vec<Vec<Value>> = redis::cmd("COMMAND").arg("INFO").arg(name).query(&mut con).unwrap();
        let [entry] = info.as_slice() else { panic!("COMMAND INFO {name}: {info:?}") };
        assert_eq!(entry[1], Value::Int(arity), "{name} arity");
        let reported = strings(&entry[2]);
        for flag in flags {
            assert!(reported.iter().any(|f| f == flag), "{name} lacks flag {flag}: {reported:?}");
        }
        assert_eq!(
            (entry[3].clone(), entry[4].clone(), entry[5].clone()),
            (Value::Int(1), Value::Int(1), Value::Int(1))
        );
        let key_specs: Vec<Vec<Value>> = redis::from_redis_value(entry[8].clone()).unwrap();
        let (key_spec, latch) = match key_specs.as_slice() {
            [key_spec] => (key_spec, None),
            [key_spec, latch] if name == "RLOCK.RELEASE" => (key_spec, Some(latch)),
            _ => panic!("{name}: one key spec, got {key_specs:?}"),
        };
        assert_eq!(strings(field(key_spec, "flags")), key_flags, "{name} key spec flags");
        if let Some(latch) = latch {
            // `LATCH latch_key`: found after the keyword, read and written.
            assert_eq!(strings(field(latch, "flags")), ["RW", "access", "insert"], "{name} latch key spec");
            let search: Vec<Value> = redis::from_redis_value(field(latch, "begin_search").clone()).unwrap();
            let search_type: String = redis::from_redis_value(field(&search, "type").clone()).unwrap();
            assert_eq!(search_type, "keyword", "{name} latch key spec");
        }

        let docs: Vec<Value> = redis::cmd("COMMAND").arg("DOCS").arg(name).query(&mut con).unwrap();
        let docs: Vec<Value> = redis::from_redis_value(docs[1].clone()).unwrap();
        let summary: String = redis::from_redis_value(field(&docs, "summary").clone()).unwrap();
        assert!(!summary.is_empty(), "{name} has a summary");
        let arguments: Vec<Vec<Value>> = redis::from_redis_value(field(&docs, "arguments").clone()).unwrap();
        let names: Vec<String> =
            arguments.iter().map(|a| redis::from_redis_value(field(a, "name").clone()).unwrap()).collect();
        assert_eq!(names, documented, "{name} documented arguments");
    }
    let text = error_text(redis::cmd("RLOCK.ACQUIRE").arg("k").query::<Value>(&mut con));
    assert!(text.contains("wrong number of arguments for 'rlock.acquire'"), "{text}");

    // RLOCK.WAITERS lists the waiters on many keys: it declares none.
    let info: Vec<Vec<Value>> = redis::cmd("COMMAND").arg("INFO").arg("RLOCK.WAITERS").query(&mut con).unwrap();
    let [entry] = info.as_slice() else { panic!("{info:?}") };
    assert_eq!((entry[1].clone(), entry[3].clone()), (Value::Int(-1), Value::Int(0)), "{entry:?}");
    assert_eq!(entry[8], Value::Array(vec![]), "no key spec");
}

fn dirty(con: &mut Connection) -> i64 {
    let info: String = redis::cmd("INFO").arg("persistence").query(con).unwrap();
    let field = info.lines().find_map(|line| line.strip_prefix("rdb_changes_since_last_save:"));
    field.expect(&info).trim().parse().unwrap()
}

/// Each call is refused with an error that starts with its text, and
/// none of them writes anything.
fn refused_writing_nothing(con: &mut Connection, cases: &[(&[&str], &str)]) {
    let before = (dirty(con), redis::cmd("DBSIZE").query::<i64>(con).unwrap());
    for (args, expected) in cases {
        let text = error_text(redis::cmd(args[0]).arg(&args[1..]).query::<Value>(con));
        assert!(text.starts_with(expected), "{args:?}: {text}");
    }
    let after = (dirty(con), redis::cmd("DBSIZE").query::<i64>(con).unwrap());
    assert_eq!(after, before, "an error wrote something");
}

/// The bad input issue 40 found: each refused with a message that names
/// what is wrong and the command's real syntax, and nothing written.
#[test]
fn bad_input_gets_the_grammar_and_writes_nothing() {
    let server = Server::start();
    let mut con = server.connection();
    let _: () = redis::cmd("SET").arg(&["Q", "1"]).query(&mut con).unwrap();
    let cases: [(&[&str], &str); 24] = [
        (
            &["RLOCK.FORCERELEASE", "K", "VAI", "PUBLISH"],
            "ERR syntax error: unexpected argument 2 ('VAI'); syntax: RLOCK.FORCERELEASE key [VIA PUBLISH|SPUBLISH|NONE]",
        ),
        (
            &["RRW.FORCERELEASE", "K", "WRITE", "VAI", "PUBLISH"],
            "ERR syntax error: unexpected argument 3 ('VAI'); syntax: RRW.FORCERELEASE key [READ|WRITE] [VIA PUBLISH|SPUBLISH]",
        ),
        (&["RSEM.ADDPERMITS", "K", "1", "VAI", "PUBLISH"], "ERR syntax error: unexpected argument 3 ('VAI'); syntax: RSEM.ADDPERMITS key delta"),
        (&["RLATCH.COUNTDOWN", "K", "VAI", "PUBLISH"], "ERR syntax error: unexpected argument 2 ('VAI'); syntax: RLATCH.COUNTDOWN key"),
        (&["RLATCH.DELETE", "K", "VAI", "PUBLISH"], "ERR syntax error: unexpected argument 2 ('VAI'); syntax: RLATCH.DELETE key"),
        (&["RLATCH.TRYSETCOUNT", "K", "1", "VAI", "PUBLISH"], "ERR syntax error: unexpected argument 3 ('VAI'); syntax: RLATCH.TRYSETCOUNT"),
        (&["RPSEM.SETPERMITS", "Q", "5", "VAI", "PUBLISH"], "ERR syntax error: unexpected argument 3 ('VAI'); syntax: RPSEM.SETPERMITS"),
        (&["RPSEM.ADDPERMITS", "Q", "1", "VAI", "PUBLISH"], "ERR syntax error: unexpected argument 3 ('VAI'); syntax: RPSEM.ADDPERMITS"),
        (
            &["RPSEM.SETPERMITS", "Q", "5", "ALWAYS"],
            "ERR syntax error: 'ALWAYS' needs VIA PUBLISH|SPUBLISH; syntax: RPSEM.SETPERMITS key permits [[ALWAYS] VIA PUBLISH|SPUBLISH]",
        ),
        (
            &["RSEM.ADDPERMITS", "K", "1", "VIA", "PUBLISH", "LIKESCRIPT"],
            "ERR syntax error: unexpected argument 5 ('LIKESCRIPT'); syntax: RSEM.ADDPERMITS key delta [VIA PUBLISH|SPUBLISH | LIKESCRIPT]",
        ),
        (&["RFAIR.CANCEL", "K", "o", "OR", "x", "WAIT", "5"], "ERR syntax error: after owner, only WAIT wait_ms, then OR other last; syntax: RFAIR.CANCEL"),
        (&["RFAIR.CANCEL", "K", "o", "WAIT"], "ERR syntax error: 'WAIT' needs wait_ms; syntax: RFAIR.CANCEL key owner [WAIT wait_ms] [OR other]"),
        (&["RSEM.RELEASE", "K", "1", "IFEXISTS", "VIA"], "ERR syntax error: 'VIA' needs PUBLISH|SPUBLISH; syntax: RSEM.RELEASE key"),
        (&["RLOCK.LIST", "0", "COUNT", "+5"], "ERR syntax error: COUNT must be a positive integer; syntax: RLOCK.LIST cursor"),
        (&["RPSEM.SETPERMITS", "Q", "9223372036854775807", "ALWAYS", "VIA", "PUBLISH"], "ERR permits: permits minus the current count"),
        (&["RLOCK.ACQUIRE", "free", "", "30000"], "ERR owner must not be empty"),
        (&["RLOCK.STATUS", "free", ""], "ERR owner must not be empty"),
        (&["RLOCK.RENEWALL", "1000", "a", "o", "b", ""], "ERR owner must not be empty"),
        (&["RRW.ACQUIRE", "rw", "", "WRITE"], "ERR owner must not be empty"),
        (&["RFASTMULTI.RENEW", "g", "", "1000", "FIELDS", "a"], "ERR owner must not be empty"),
        (&["RRW.RENEWREADS", "1", "rw", "1000", "2", "o", ""], "ERR owner must not be empty"),
        (&["RLOCK.CANCEL", "free", "o", ""], "ERR request_id must not be empty"),
        (
            &["RLATCH.TRYSETCOUNT", "L", "1", "CHANNEL", "x", "VIA", "PUBLISH"],
            "ERR syntax error: options out of order: give them in the order of the syntax; syntax: RLATCH.TRYSETCOUNT",
        ),
        (&["RRW.CANCEL", "rw", "o", ""], "ERR request_id must not be empty"),
    ];
    refused_writing_nothing(&mut con, &cases);
}

/// A keyword of the command alone where an optional value may stand (a
/// lease, permits, a side) is read as the keyword, as the grammar reads it: the error says
/// what the keyword needs, not that it is a bad value; a trailing keyword
/// that needs what stands before it is placed inside that value's block.
#[test]
fn a_keyword_where_an_optional_value_may_stand_is_read_as_the_keyword() {
    let server = Server::start();
    let mut con = server.connection();
    // Permits to take: a cut-short script tail read as ids took them.
    let _: i64 = redis::cmd("RPSEM.TRYSETPERMITS").arg(&["p", "10"]).query(&mut con).unwrap();
    let cases: [(&[&str], &str); 12] = [
        (&["RPSEM.TRYACQUIRE", "p", "1000", "a", "AT", "5", "VIA"], "ERR syntax error: 'VIA' needs PUBLISH|SPUBLISH"),
        (&["RPSEM.TRYACQUIRE", "p", "1000", "a", "REPLYID", "AT"], "ERR syntax error: 'AT' needs now_ms"),
        (&["RPSEM.RELEASE", "p", "a", "AT"], "ERR syntax error: 'AT' needs now_ms"),
        // Another command's keyword is no keyword here: a bad lease.
        (&["RLOCK.ACQUIRE", "k", "o", "VIA", "PUBLISH"], "ERR lease_ms must be a positive integer"),
        (
            &["RLOCK.RELEASE", "k", "o", "VIA"],
            "ERR syntax error: 'VIA' needs PUBLISH|SPUBLISH|NONE; syntax: RLOCK.RELEASE",
        ),
        (
            &["RRW.RELEASE", "rw", "o", "WRITE", "VIA"],
            "ERR syntax error: 'VIA' needs PUBLISH|SPUBLISH; syntax: RRW.RELEASE",
        ),
        (
            &["RRW.RELEASE", "rw", "o", "WRITE", "MISSING"],
            "ERR syntax error: 'MISSING' needs NIL|1|NOTHELD; syntax: RRW.RELEASE",
        ),
        (
            &["RFENCED.ACQUIRE", "f", "o", "LIKESCRIPT"],
            "ERR syntax error: 'LIKESCRIPT' needs TOKEN|LOCK; syntax: RFENCED.ACQUIRE",
        ),
        (&["RSEM.RELEASE", "s", "VIA"], "ERR syntax error: 'VIA' needs PUBLISH|SPUBLISH; syntax: RSEM.RELEASE"),
        (
            &["RRW.FORCERELEASE", "rw", "VIA"],
            "ERR syntax error: 'VIA' needs PUBLISH|SPUBLISH; syntax: RRW.FORCERELEASE",
        ),
        // LIKESCRIPT is taken only after the value it follows.
        (
            &["RSEM.TRYACQUIRE", "s", "1", "LIKESCRIPT", "x"],
            "ERR syntax error: unexpected argument 4 ('x'); syntax: RSEM.TRYACQUIRE key [permits [LIKESCRIPT]]",
        ),
        (
            &["RRW.RENEW", "rw", "o", "1000", "LIKESCRIPT", "x"],
            "ERR syntax error: unexpected argument 5 ('x'); syntax: RRW.RENEW key owner [lease_ms [LIKESCRIPT]]",
        ),
    ];
    refused_writing_nothing(&mut con, &cases);
}

#[test]
fn acl_key_patterns_apply_to_lock_keys() {
    let server = Server::start();
    let mut admin = server.connection();
    let _: () = redis::cmd("ACL").arg(&["SETUSER", "svc", "on", ">pw", "~locks:*", "+@all"]).query(&mut admin).unwrap();
    let mut con = server.connection();
    let _: () = redis::cmd("AUTH").arg(&["svc", "pw"]).query(&mut con).unwrap();
    assert_eq!(rlock(&mut con, "RLOCK.ACQUIRE", &[b"locks:a", b"o"]).unwrap(), Value::Nil);
    for command in ["RLOCK.ACQUIRE", "RLOCK.RENEW", "RLOCK.RELEASE", "RLOCK.STATUS"] {
        let text = error_text(rlock(&mut con, command, &[b"other", b"o"]));
        assert!(text.starts_with("NOPERM"), "{command}: {text}");
    }
    assert!(error_text(rlock(&mut con, "RLOCK.FORCERELEASE", &[b"other"])).starts_with("NOPERM"));

    // A read-only selector: STATUS is a read, the others write.
    let _: () =
        redis::cmd("ACL").arg(&["SETUSER", "watcher", "on", ">pw", "%R~locks:*", "+@all"]).query(&mut admin).unwrap();
    let mut watcher = server.connection();
    let _: () = redis::cmd("AUTH").arg(&["watcher", "pw"]).query(&mut watcher).unwrap();
    assert!(rlock(&mut watcher, "RLOCK.STATUS", &[b"locks:a", b"o"]).is_ok(), "read access suffices for STATUS");
    for command in ["RLOCK.ACQUIRE", "RLOCK.RENEW", "RLOCK.RELEASE"] {
        let text = error_text(rlock(&mut watcher, command, &[b"locks:a", b"o"]));
        assert!(text.starts_with("NOPERM"), "{command} needs write access: {text}");
    }
}

#[test]
fn info_counts_every_outcome() {
    let server = Server::start();
    let mut con = server.connection();
    for args in [&[b"k".as_slice(), b"a"][..], &[b"k", b"a"], &[b"k", b"b"]] {
        rlock(&mut con, "RLOCK.ACQUIRE", args).unwrap();
    }
    rlock(&mut con, "RLOCK.RENEW", &[b"k", b"a"]).unwrap();
    rlock(&mut con, "RLOCK.RENEW", &[b"k", b"b"]).unwrap();
    rlock(&mut con, "RLOCK.RELEASE", &[b"k", b"b"]).unwrap();
    rlock(&mut con, "RLOCK.RELEASE", &[b"k", b"a"]).unwrap();
    rlock(&mut con, "RLOCK.RELEASE", &[b"k", b"a"]).unwrap();
    rlock(&mut con, "RLOCK.ACQUIRE", &[b"k", b"a"]).unwrap();
    rlock(&mut con, "RLOCK.FORCERELEASE", &[b"k"]).unwrap();
    rlock(&mut con, "RLOCK.FORCERELEASE", &[b"k"]).unwrap();

    let info: String = redis::cmd("INFO").arg("rlock").query(&mut con).unwrap();
    let expected = [
        ("acquired", 2),
        ("reentered", 1),
        ("contended", 1),
        ("released", 1),
        ("released_reentry", 1),
        ("release_not_held", 1),
        ("force_released", 1),
        ("renewed", 1),
        ("renew_missed", 1),
    ];
    assert!(info.contains("# rlock\r\n"), "{info}");
    for (field, count) in expected {
        assert!(info.contains(&format!("rlock_{field}:{count}\r\n")), "rlock_{field} should be {count}:\n{info}");
    }
}

/// `INFO rlock` per kind of lock (`rlock_<kind>_<counter>`), and the
/// server-side waits by how long they took.
#[test]
fn info_counts_per_kind_and_the_waits_by_length() {
    let server = Server::start();
    let mut con = server.connection();
    rlock(&mut con, "RLOCK.ACQUIRE", &[b"k", b"a"]).unwrap();
    rlock(&mut con, "RLOCK.ACQUIRE", &[b"k", b"b"]).unwrap();
    rlock(&mut con, "RLOCK.RENEW", &[b"k", b"b"]).unwrap();
    let waiter = {
        let mut con = server.connection();
        std::thread::spawn(move || rlock(&mut con, "RLOCK.ACQUIRE", &[b"k", b"b", b"60000", b"WAIT", b"10000"]))
    };
    let blocked = |con: &mut Connection| !redis::cmd("RLOCK.WAITERS").query::<Vec<Value>>(con).unwrap().is_empty();
    eventually("the waiter blocked", PATIENCE, || blocked(&mut con));
    rlock(&mut con, "RLOCK.RELEASE", &[b"k", b"a"]).unwrap();
    assert_eq!(waiter.join().unwrap().unwrap(), Value::Nil, "granted");
    // A lease that runs out while a caller waits: the granted waiter's, cut to 50 ms.
    let lapsed = {
        let mut con = server.connection();
        std::thread::spawn(move || rlock(&mut con, "RLOCK.ACQUIRE", &[b"k", b"c", b"60000", b"WAIT", b"10000"]))
    };
    eventually("the second waiter blocked", PATIENCE, || blocked(&mut con));
    rlock(&mut con, "PEXPIRE", &[b"k", b"50"]).unwrap();
    assert_eq!(lapsed.join().unwrap().unwrap(), Value::Nil, "granted at the lease's end");
    rlock(&mut con, "RFAIR.ACQUIRE", &[b"f", b"a"]).unwrap();
    rlock(&mut con, "RFAIR.ACQUIRE", &[b"f", b"b"]).unwrap();
    rlock(&mut con, "RRW.RENEW", &[b"rw", b"a"]).unwrap();
    rlock(&mut con, "RSEM.TRYACQUIRE", &[b"s"]).unwrap();

    let info: String = redis::cmd("INFO").arg("rlock").query(&mut con).unwrap();
    let expected = [
        ("plain_acquired", 1), // the waiter's grant is a waiter grant
        ("plain_refused", 3),
        ("plain_renew_refused", 1),
        ("plain_waiter_grants", 2),
        ("plain_lapsed_with_waiters", 1),
        ("fair_acquired", 1),
        ("fair_refused", 1),
        ("read_write_renew_refused", 1),
        ("semaphore_refused", 1),
        ("permit_semaphore_acquired", 0),
    ];
    for (field, count) in expected {
        assert!(info.contains(&format!("rlock_{field}:{count}\r\n")), "rlock_{field} should be {count}:\n{info}");
    }
    let histogram = info.lines().find_map(|line| line.strip_prefix("rlock_wait_ms_histogram:")).expect(&info);
    let waits: u64 = histogram.split(',').map(|bucket| bucket.split('=').nth(1).unwrap().parse::<u64>().unwrap()).sum();
    assert_eq!(waits, 2, "{histogram}");
}
