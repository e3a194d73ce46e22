//! The Redis glue of the semaphore, the count-down latch and the fenced
//! lock: derived keys checked against the caller's ACL (NOPERM naming
//! them, nothing written, in ACL LOG), derived channels not; bad arguments and keys that are
//! not theirs refused by name, changing nothing; calls that change nothing
//! write nothing (a WATCH survives them).

use redis::{Connection, Value};
use std::collections::BTreeMap;
use testkit::{error_text, Server};

fn run(con: &mut Connection, args: &[&str]) -> redis::RedisResult<Value> {
    redis::cmd(args[0]).arg(&args[1..]).query(con)
}

/// Every key with its type, value and absolute expiry.
fn dump(con: &mut Connection) -> BTreeMap<String, (String, Value, i64)> {
    let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(con).unwrap();
    keys.into_iter()
        .map(|key| {
            let kind: String = redis::cmd("TYPE").arg(&key).query(con).unwrap();
            let value = run(con, &[if kind == "hash" { "HGETALL" } else { "GET" }, &key]).unwrap();
            let expire_at: i64 = redis::cmd("PEXPIRETIME").arg(&key).query(con).unwrap();
            (key, (kind, value, expire_at))
        })
        .collect()
}

/// The newest `ACL LOG` entry's reason and object.
fn last_acl_log_entry(admin: &mut Connection) -> (Value, Value) {
    let log: Vec<Vec<Value>> = redis::cmd("ACL").arg(&["LOG", "1"]).query(admin).unwrap();
    let entry: BTreeMap<String, Value> =
        log[0].chunks(2).map(|pair| (redis::from_redis_value(pair[0].clone()).unwrap(), pair[1].clone())).collect();
    (entry["reason"].clone(), entry["object"].clone())
}

#[test]
fn derived_keys_are_checked_against_the_callers_acl_and_derived_channels_are_not() {
    let server = Server::shared();
    let mut admin = server.connection();
    let mut limited = server.login("limited", &["~locks:*"]);
    let refusals: [(&[&str], &str); 2] = [
        (&["RFENCED.ACQUIRE", "locks:f", "u:1"], "redisson_lock_token:{locks:f}"),
        (&["RFENCED.TOKEN", "locks:f"], "redisson_lock_token:{locks:f}"),
    ];
    let before = dump(&mut admin);
    for (args, key) in refusals {
        let text = error_text(run(&mut limited, args));
        assert!(text.starts_with("NOPERM") && text.contains(&format!("derived key '{key}'")), "{args:?}: {text}");
        let logged = (Value::BulkString(b"key".to_vec()), Value::BulkString(key.as_bytes().to_vec()));
        assert_eq!(last_acl_log_entry(&mut admin), logged, "{args:?}: in ACL LOG");
    }
    assert_eq!(dump(&mut admin), before, "nothing written");
    // A user who may write the name publishes on its derived channel, with
    // no channel permission: it could set a count it could not announce.
    let mut events = admin.as_pubsub();
    events.psubscribe("redisson_*").unwrap();
    let announced: [(&[&str], &str); 7] = [
        (&["RSEM.TRYSETPERMITS", "locks:s", "3"], "redisson_sc:{locks:s}"),
        (&["RSEM.ADDPERMITS", "locks:s", "3"], "redisson_sc:{locks:s}"),
        (&["RSEM.RELEASE", "locks:s"], "redisson_sc:{locks:s}"),
        (&["RLATCH.TRYSETCOUNT", "locks:l", "2"], "redisson_countdownlatch__channel__{locks:l}"),
        (&["RLATCH.DELETE", "locks:l"], "redisson_countdownlatch__channel__{locks:l}"),
        (&["RLATCH.TRYSETCOUNT", "locks:l", "1"], "redisson_countdownlatch__channel__{locks:l}"),
        (&["RLATCH.COUNTDOWN", "locks:l"], "redisson_countdownlatch__channel__{locks:l}"),
    ];
    for (args, channel) in announced {
        run(&mut limited, args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
        let message = events.get_message().unwrap();
        assert_eq!(message.get_channel_name(), channel, "{args:?}");
    }
    drop(events);
    let mut admin = server.connection();
    assert_eq!(run(&mut admin, &["EXISTS", "locks:l"]).unwrap(), Value::Int(0), "deleted");
    // Allowed Redisson's token prefix, the fenced lock works.
    let mut wider = server.login("wider", &["~locks:*", "~redisson_lock_token:*"]);
    let granted = run(&mut wider, &["RFENCED.ACQUIRE", "locks:f", "u:1"]).unwrap();
    let (held, token): (i64, i64) = redis::from_redis_value(granted).unwrap();
    assert!(held == -1 && token > 0, "granted with a token: [{held}, {token}]");
}

/// A latch call that names its channel (`CHANNEL`, as the filter's
/// rewrites of Redisson's scripts do) has it checked by Redis before it
/// runs: Redis asks the command for its channels, which must not run it.
#[test]
fn a_channel_the_call_names_is_checked_by_redis_before_the_call_runs() {
    const CHANNEL: &str = "redisson_countdownlatch__channel__{locks:l}";
    let server = Server::shared();
    let mut admin = server.connection();
    let mut limited = server.login("limited", &["~locks:*"]);
    let text = error_text(run(&mut limited, &["RLATCH.TRYSETCOUNT", "locks:l", "2", "CHANNEL", CHANNEL]));
    assert!(text.starts_with("NOPERM"), "{text}");
    assert!(dump(&mut admin).is_empty(), "nothing written");
    assert_eq!(
        last_acl_log_entry(&mut admin),
        (Value::BulkString(b"channel".to_vec()), Value::BulkString(CHANNEL.as_bytes().to_vec())),
        "Redis refused it"
    );

    // Channels listed one by one, not all: Redis calls the command to ask.
    // Each call runs once: a second run would answer 0, or count down twice.
    let mut allowed = server.login("allowed", &["~locks:*", "&redisson_countdownlatch__channel__*"]);
    let named = |args: &[&'static str]| [args, &["VIA", "publish", "CHANNEL", CHANNEL]].concat();
    assert_eq!(run(&mut allowed, &named(&["RLATCH.TRYSETCOUNT", "locks:l", "3"])).unwrap(), Value::Int(1));
    assert_eq!(run(&mut allowed, &named(&["RLATCH.COUNTDOWN", "locks:l"])).unwrap(), Value::Nil);
    let count = |con: &mut Connection| run(con, &["RLATCH.COUNT", "locks:l"]).unwrap();
    assert_eq!(count(&mut admin), Value::Int(2));
    let checked: String = redis::cmd("ACL")
        .arg(&["DRYRUN", "allowed"])
        .arg(named(&["RLATCH.COUNTDOWN", "locks:l"]))
        .query(&mut admin)
        .unwrap();
    assert_eq!((checked.as_str(), count(&mut admin)), ("OK", Value::Int(2)), "ACL DRYRUN runs nothing");
    let replies: Vec<Value> =
        redis::pipe().atomic().cmd("RLATCH.COUNTDOWN").arg(named(&["locks:l"])).query(&mut allowed).unwrap();
    assert_eq!((replies, count(&mut admin)), (vec![Value::Nil], Value::Int(1)), "MULTI checks again at EXEC");

    // A latch named CHANNEL: its name is no keyword, and declares no channel.
    let mut named = server.login("named", &["~CHANNEL", "~channel", "&redisson_countdownlatch__channel__*"]);
    assert_eq!(run(&mut named, &["RLATCH.TRYSETCOUNT", "CHANNEL", "2"]).unwrap(), Value::Int(1));
    assert_eq!(run(&mut named, &["RLATCH.COUNTDOWN", "channel"]).unwrap(), Value::Nil);

    // The channel must be the latch's own, before anything is written.
    let other = "redisson_countdownlatch__channel__{locks:m}";
    for args in [
        &["RLATCH.COUNTDOWN", "locks:l", "CHANNEL", other][..],
        &["RLATCH.DELETE", "locks:l", "VIA", "publish", "CHANNEL", other],
    ] {
        let text = error_text(run(&mut admin, args));
        assert!(text.contains("CHANNEL must be the latch's channel"), "{args:?}: {text}");
    }
    assert_eq!(count(&mut admin), Value::Int(1));
}

#[test]
fn bad_input_is_refused_by_name_and_changes_nothing() {
    let server = Server::shared();
    let mut con = server.connection();
    for args in [
        &["RSEM.TRYSETPERMITS", "sem", "3", "PX", "600000"][..],
        &["RLATCH.TRYSETCOUNT", "latch", "2"],
        &["RFENCED.ACQUIRE", "fence", "u:1"],
        &["SET", "text", "x"],
        &["SET", "decimal", "5.0"],
        &["HSET", "hash", "f", "v"],
        &["SET", "redisson_lock_token:{badtoken}", "x"],
        &["SET", "full", "9223372036854775807"],
    ] {
        run(&mut con, args).unwrap();
    }
    let before = dump(&mut con);
    let wrong_type = "WRONGTYPE Operation against a key holding the wrong kind of value";
    let cases: [(&[&str], &str); 22] = [
        (&["RSEM.TRYACQUIRE", "sem", "x"], "ERR permits must be an integer"),
        (&["RSEM.TRYACQUIRE", "sem", "-1"], "ERR permits must be a non-negative integer"),
        (&["RSEM.TRYACQUIRE", "sem", "+1"], "ERR permits must be an integer"),
        (&["RSEM.RELEASE", "sem", "1.5"], "ERR permits must be an integer"),
        (
            &["RSEM.RELEASE", "sem", "1", "IFEXIST"],
            concat!(
                "ERR syntax error: unexpected argument 3 ('IFEXIST')",
                "; syntax: RSEM.RELEASE key [permits] [IFEXISTS] [VIA PUBLISH|SPUBLISH]"
            ),
        ),
        (
            &["RSEM.RELEASE", "sem", "1", "IFEXISTS", "x"],
            concat!(
                "ERR syntax error: unexpected argument 4 ('x')",
                "; syntax: RSEM.RELEASE key [permits] [IFEXISTS] [VIA PUBLISH|SPUBLISH]"
            ),
        ),
        (&["RSEM.TRYSETPERMITS", "new", "x"], "ERR permits must be an integer"),
        (
            &["RSEM.TRYSETPERMITS", "new", "3", "PX"],
            concat!(
                "ERR syntax error: 'PX' needs ttl_ms",
                "; syntax: RSEM.TRYSETPERMITS key permits [PX ttl_ms] [VIA PUBLISH|SPUBLISH]"
            ),
        ),
        (&["RSEM.TRYSETPERMITS", "new", "3", "PX", "0"], "ERR ttl_ms must be a positive integer"),
        (
            &["RSEM.TRYSETPERMITS", "new", "3", "EX", "5"],
            concat!(
                "ERR syntax error: unexpected argument 3 ('EX')",
                "; syntax: RSEM.TRYSETPERMITS key permits [PX ttl_ms] [VIA PUBLISH|SPUBLISH]"
            ),
        ),
        (&["RSEM.ADDPERMITS", "sem", "1e3"], "ERR delta must be an integer"),
        (&["RSEM.ADDPERMITS", "full", "1"], "ERR the counter at 'full' would overflow"),
        (&["RSEM.RELEASE", "full"], "ERR the counter at 'full' would overflow"),
        (&["RSEM.TRYACQUIRE", "decimal"], "ERR the value at 'decimal' is not an integer"),
        (&["RSEM.DRAIN", "text"], "ERR the value at 'text' is not an integer"),
        (&["RSEM.RELEASE", "hash"], wrong_type),
        (&["RLATCH.TRYSETCOUNT", "new", "-2"], "ERR count must be a non-negative integer"),
        (&["RLATCH.COUNTDOWN", "text"], "ERR the value at 'text' is not an integer"),
        (&["RLATCH.DELETE", "hash"], wrong_type),
        (&["RFENCED.ACQUIRE", "fence", "u:2", "0"], "ERR lease_ms must be a positive integer"),
        (&["RFENCED.ACQUIRE", "text", "u:2"], wrong_type),
        (
            &["RFENCED.ACQUIRE", "badtoken", "u:2"],
            "ERR the value at 'redisson_lock_token:{badtoken}' is not an integer",
        ),
    ];
    for (args, expected) in cases {
        assert_eq!(error_text(run(&mut con, args)), expected, "{args:?}");
    }
    for args in [&["RSEM.ADDPERMITS", "sem"][..], &["RLATCH.COUNT"], &["RFENCED.TOKEN", "a", "b"]] {
        assert!(error_text(run(&mut con, args)).contains("wrong number of arguments"), "{args:?}");
    }
    assert_eq!(dump(&mut con), before, "an error changed something");
}

#[test]
fn calls_that_change_nothing_write_nothing() {
    let server = Server::shared();
    let mut con = server.connection();
    for args in [&["RSEM.TRYSETPERMITS", "sem", "1"][..], &["RFENCED.ACQUIRE", "fence", "u:1"], &["SET", "empty", "0"]]
    {
        run(&mut con, args).unwrap();
    }
    let no_ops: [&[&str]; 8] = [
        &["RSEM.TRYACQUIRE", "sem", "2"],
        &["RSEM.RELEASE", "missing", "1", "IFEXISTS"],
        &["RSEM.TRYSETPERMITS", "sem", "5"],
        &["RSEM.DRAIN", "empty"],
        &["RLATCH.COUNTDOWN", "missing"],
        &["RLATCH.DELETE", "missing"],
        &["RFENCED.ACQUIRE", "fence", "u:2"],
        &["RSEM.RELEASE", "sem", "0"],
    ];
    for args in no_ops {
        let mut watcher = server.connection();
        let _: () = redis::cmd("WATCH")
            .arg(&["sem", "missing", "empty", "fence", "redisson_lock_token:{fence}"])
            .query(&mut watcher)
            .unwrap();
        run(&mut con, args).unwrap();
        let done: Option<Vec<Value>> = redis::pipe().atomic().cmd("PING").query(&mut watcher).unwrap();
        assert!(done.is_some(), "{args:?} aborted a WATCH");
    }
    assert_eq!(run(&mut con, &["EXISTS", "missing"]).unwrap(), Value::Int(0));
}

/// Counters that later calls read (permits, a latch's count, a fenced
/// token) are written as raw strings, as INCRBY leaves its value: the key
/// API reads only raw strings in place and first copies any other
/// (BENCHMARKS.md, section 9). The values are those SET would write.
#[test]
fn counters_are_written_as_raw_strings() {
    let server = Server::shared();
    let mut con = server.connection();
    let writes: [&[&str]; 3] =
        [&["RSEM.TRYSETPERMITS", "sem", "3"], &["RLATCH.TRYSETCOUNT", "latch", "2"], &["RLATCH.COUNTDOWN", "latch"]];
    for args in writes {
        run(&mut con, args).unwrap();
    }
    let (_, token): (i64, i64) = redis::cmd("RFENCED.ACQUIRE").arg(&["fence", "u:1"]).query(&mut con).unwrap();
    let token = token.to_string();
    for (key, value) in [("sem", "3"), ("latch", "1"), ("redisson_lock_token:{fence}", token.as_str())] {
        let encoding: String = redis::cmd("OBJECT").arg("ENCODING").arg(key).query(&mut con).unwrap();
        assert_eq!(encoding, "raw", "{key}");
        let stored: String = redis::cmd("GET").arg(key).query(&mut con).unwrap();
        assert_eq!(stored, value, "{key}");
    }
}
