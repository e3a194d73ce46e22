//! The Redis glue of the permit-expirable semaphore: its derived permits
//! key and channel are checked against the caller's ACL (NOPERM naming
//! them, nothing written); bad arguments and keys that are not its own are
//! refused by name, changing nothing (not even a reclaim); calls that
//! change nothing write nothing (no keyspace event, nothing replicated, a
//! WATCH survives); a replica without the module and an AOF replay (with
//! or without it) hold every state, absolute expiries included.

use redis::{Cmd, Connection, Value};
use std::collections::BTreeMap;
use std::time::Duration;
use testkit::{error_text, eventually, keyspace_events, server_time_ms, PermitSemaphoreScripts, Server};

fn run(con: &mut Connection, args: &[&[u8]]) -> redis::RedisResult<Value> {
    redis::cmd(std::str::from_utf8(args[0]).unwrap()).arg(&args[1..]).query(con)
}

/// Each key: its type, its value as read for that type, its PEXPIRETIME.
type Snapshot = BTreeMap<Vec<u8>, (String, Value, i64)>;

fn snapshot(con: &mut Connection) -> Snapshot {
    let keys: Vec<Vec<u8>> = redis::cmd("KEYS").arg("*").query(con).unwrap();
    keys.into_iter()
        .map(|key| {
            let kind: String = redis::cmd("TYPE").arg(&key).query(con).unwrap();
            let value: Value = match kind.as_str() {
                "hash" => redis::cmd("HGETALL").arg(&key).query(con),
                "zset" => redis::cmd("ZRANGE").arg(&key).arg(0).arg(-1).arg("WITHSCORES").query(con),
                _ => redis::cmd("GET").arg(&key).query(con),
            }
            .unwrap();
            let expire_at: i64 = redis::cmd("PEXPIRETIME").arg(&key).query(con).unwrap();
            (key, (kind, value, expire_at))
        })
        .collect()
}

/// Polls until the server's clock is past `at_ms`, touching no key.
fn wait_until(con: &mut Connection, at_ms: i64) {
    eventually("the server's clock", Duration::from_secs(5), || server_time_ms(con) > at_ms);
}

fn score(con: &mut Connection, name: &[u8], id: &[u8]) -> i64 {
    let score: f64 = redis::cmd("ZSCORE").arg(rlock_protocol::permit_timeout_key(name)).arg(id).query(con).unwrap();
    score as i64
}

#[test]
fn the_permits_key_is_checked_against_the_callers_acl_and_the_channel_is_not() {
    let server = Server::shared();
    let mut admin = server.connection();
    run(&mut admin, &[b"RPSEM.TRYSETPERMITS", b"locks:p", b"3"]).unwrap();
    run(&mut admin, &[b"RPSEM.TRYACQUIRE", b"locks:p", b"-1", b"held"]).unwrap();
    let calls: [&[&[u8]]; 10] = [
        &[b"RPSEM.TRYACQUIRE", b"locks:p", b"1000", b"a"],
        &[b"RPSEM.RELEASE", b"locks:p", b"held"],
        &[b"RPSEM.RELEASE", b"locks:p", b"held", b"b"],
        &[b"RPSEM.UPDATELEASE", b"locks:p", b"held", b"1000"],
        &[b"RPSEM.LEASE", b"locks:p", b"held"],
        &[b"RPSEM.AVAILABLE", b"locks:p"],
        &[b"RPSEM.PERMITS", b"locks:p"],
        &[b"RPSEM.ACQUIRED", b"locks:p"],
        &[b"RPSEM.SETPERMITS", b"locks:p", b"9"],
        &[b"RPSEM.ADDPERMITS", b"locks:p", b"1"],
    ];
    let before = snapshot(&mut admin);
    let mut no_permits_key = server.login("no_permits_key", &["~locks:*", "&*"]);
    // Reclaiming may write: reading the permits is not enough.
    let mut read_only = server.login("read_only", &["~locks:*", "%R~{locks:*", "&*"]);
    for args in calls {
        for con in [&mut no_permits_key, &mut read_only] {
            let text = error_text(run(con, args));
            assert!(text.starts_with("NOPERM") && text.contains("derived key '{locks:p}:timeout'"), "{args:?}: {text}");
        }
    }
    assert_eq!(snapshot(&mut admin), before, "nothing written");
    // Allowed the permits key, the same calls go through, with no channel
    // permission: the derived channel is not checked.
    let mut no_channel = server.login("no_channel", &["~locks:*", "~{locks:*"]);
    for args in calls {
        run(&mut no_channel, args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
    }
    run(&mut no_channel, &[b"RPSEM.TRYSETPERMITS", b"locks:q", b"2"]).unwrap();
}

#[test]
fn bad_input_is_refused_by_name_and_changes_nothing() {
    let server = Server::shared();
    let mut con = server.connection();
    let setup: [&[&[u8]]; 9] = [
        &[b"RPSEM.TRYSETPERMITS", b"p", b"5", b"PX", b"600000"],
        &[b"RPSEM.TRYACQUIRE", b"p", b"-1", b"live"],
        &[b"RPSEM.TRYACQUIRE", b"p", b"1", b"lapsed"],
        &[b"SET", b"text", b"x"],
        &[b"HSET", b"hash", b"f", b"v"],
        &[b"SET", b"zbad", b"1"],
        &[b"SET", b"{zbad}:timeout", b"x"],
        &[b"SET", b"full", b"9223372036854775807"],
        &[b"ZADD", b"{full}:timeout", b"1", b"old"],
    ];
    for args in setup {
        run(&mut con, args).unwrap();
    }
    // An expired permit: any call that got as far as the reclaim would
    // return it.
    let lapsed_at = score(&mut con, b"p", b"lapsed");
    wait_until(&mut con, lapsed_at);
    let before = snapshot(&mut con);
    let lease = "ERR lease_ms must be a positive integer, or -1 for a permit that never expires";
    let twice = "ERR id: the same permit id is given twice (each id is one permit)";
    let cases: [(&[&[u8]], &str); 24] = [
        (&[b"RPSEM.TRYACQUIRE", b"p", b"0", b"a"], lease),
        (&[b"RPSEM.TRYACQUIRE", b"p", b"-2", b"a"], lease),
        (&[b"RPSEM.TRYACQUIRE", b"p", b"1.5", b"a"], lease),
        (&[b"RPSEM.TRYACQUIRE", b"p", b"", b"a"], lease),
        (
            &[b"RPSEM.TRYACQUIRE", b"p", b"31536000001", b"a"],
            "ERR lease_ms is above the maximum of 31536000000 (365 days)",
        ),
        (&[b"RPSEM.TRYACQUIRE", b"p", b"100", b"a", b"b", b"a"], twice),
        (&[b"RPSEM.TRYACQUIRE", b"p", b"100", b""], "ERR id must not be empty"),
        (&[b"RPSEM.TRYACQUIRE", b"p", b"100", b"b", b"live"], "ERR id: a permit with this id is held already"),
        (&[b"RPSEM.RELEASE", b"p", b"live", b"live"], twice),
        (&[b"RPSEM.RELEASE", b"p", b""], "ERR id must not be empty"),
        (&[b"RPSEM.UPDATELEASE", b"p", b"live", b"0"], lease),
        (
            &[b"RPSEM.UPDATELEASE", b"p", b"live", b"-1", b"x"],
            "ERR syntax error: unexpected argument 4 ('x'); syntax: RPSEM.UPDATELEASE key id lease_ms [AT now_ms \
             [VIA PUBLISH|SPUBLISH]]",
        ),
        (&[b"RPSEM.TRYSETPERMITS", b"new", b"x"], "ERR permits must be an integer"),
        (&[b"RPSEM.TRYSETPERMITS", b"new", b"-1"], "ERR permits must be a non-negative integer"),
        (&[b"RPSEM.TRYSETPERMITS", b"new", b"3", b"PX", b"0"], "ERR ttl_ms must be a positive integer"),
        (
            &[b"RPSEM.TRYSETPERMITS", b"new", b"3", b"EX", b"5"],
            "ERR syntax error: unexpected argument 3 ('EX'); syntax: RPSEM.TRYSETPERMITS key permits [PX ttl_ms]",
        ),
        (&[b"RPSEM.SETPERMITS", b"p", b"-1"], "ERR permits must be a non-negative integer"),
        (&[b"RPSEM.SETPERMITS", b"p", b"3x"], "ERR permits must be an integer"),
        (&[b"RPSEM.ADDPERMITS", b"p", b"1e3"], "ERR delta must be an integer"),
        (&[b"RPSEM.ADDPERMITS", b"full", b"1"], "ERR the counter at 'full' would overflow"),
        (&[b"RPSEM.AVAILABLE", b"text"], "ERR the value at 'text' is not an integer"),
        (&[b"RPSEM.RELEASE", b"hash", b"a"], "WRONGTYPE Operation against a key holding the wrong kind of value"),
        (&[b"RPSEM.PERMITS", b"zbad"], "WRONGTYPE the derived key '{zbad}:timeout' holds the wrong kind of value"),
        (&[b"RPSEM.TRYACQUIRE", b"p", b"100"], "ERR wrong number of arguments for 'rpsem.tryacquire' command"),
    ];
    for (args, expected) in cases {
        assert_eq!(error_text(run(&mut con, args)), expected, "{args:?}");
    }
    assert_eq!(snapshot(&mut con), before, "an error changed something");
}

#[test]
fn calls_that_change_nothing_write_nothing() {
    // No PING to the replica during the test: the offset moves only with writes.
    let primary =
        Server::builder().config("notify-keyspace-events", "KEA").config("repl-ping-replica-period", "3600").start();
    let replica = Server::builder().without_module().start();
    replica.replicate(&primary);
    let mut con = primary.connection();
    for args in [
        &[b"RPSEM.TRYSETPERMITS".as_slice(), b"p", b"1"][..],
        &[b"RPSEM.TRYACQUIRE", b"p", b"-1", b"never"],
        &[b"RPSEM.TRYSETPERMITS", b"q", b"0"],
    ] {
        run(&mut con, args).unwrap();
    }
    let no_ops: [&[&[u8]]; 15] = [
        &[b"RPSEM.TRYACQUIRE", b"p", b"100", b"a"],
        &[b"RPSEM.TRYACQUIRE", b"missing", b"100", b"a"],
        &[b"RPSEM.RELEASE", b"p", b"unknown"],
        &[b"RPSEM.RELEASE", b"p", b"never", b"unknown"],
        &[b"RPSEM.RELEASE", b"missing", b"a"],
        &[b"RPSEM.UPDATELEASE", b"p", b"unknown", b"100"],
        &[b"RPSEM.UPDATELEASE", b"p", b"never", b"-1"],
        &[b"RPSEM.LEASE", b"p", b"never"],
        &[b"RPSEM.AVAILABLE", b"p"],
        &[b"RPSEM.PERMITS", b"p"],
        &[b"RPSEM.ACQUIRED", b"missing"],
        &[b"RPSEM.TRYSETPERMITS", b"p", b"5"],
        &[b"RPSEM.SETPERMITS", b"p", b"1"],
        &[b"RPSEM.ADDPERMITS", b"p", b"0"],
        &[b"RPSEM.ADDPERMITS", b"q", b"0"],
    ];
    let offset = |con: &mut Connection| -> i64 {
        let info: String = redis::cmd("INFO").arg("replication").query(con).unwrap();
        let line = info.lines().find(|line| line.starts_with("master_repl_offset:")).unwrap();
        line["master_repl_offset:".len()..].trim().parse().unwrap()
    };
    for args in no_ops {
        let mut watcher = primary.connection();
        let watched: [&[u8]; 5] = [b"p", b"{p}:timeout", b"q", b"missing", b"{missing}:timeout"];
        let _: () = redis::cmd("WATCH").arg(&watched[..]).query(&mut watcher).unwrap();
        let mut moved = 0;
        let events = keyspace_events(&primary, |con| {
            let before = offset(con);
            run(con, args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
            moved = offset(con) - before;
        });
        assert_eq!(events, [] as [(String, String); 0], "{args:?} announced a write");
        assert_eq!(moved, 0, "{args:?} replicated something");
        let done: Option<Vec<Value>> = redis::pipe().atomic().cmd("PING").query(&mut watcher).unwrap();
        assert!(done.is_some(), "{args:?} aborted a WATCH");
    }
    assert_eq!(run(&mut con, &[b"EXISTS", b"missing", b"{missing}:timeout"]).unwrap(), Value::Int(0));
}

/// Every write of the permit-expirable semaphore, on plain, tagged and
/// binary names and ids; leases that run out and are reclaimed, or
/// released late (-1).
fn write_all(con: &mut Connection) {
    let commands: &[&[&[u8]]] = &[
        &[b"RPSEM.TRYSETPERMITS", b"p", b"5"],
        &[b"RPSEM.TRYACQUIRE", b"p", b"600000", b"a", b"\x00\xffid\r\n"],
        &[b"RPSEM.TRYACQUIRE", b"p", b"-1", b"never"],
        &[b"RPSEM.UPDATELEASE", b"p", b"a", b"700000"],
        &[b"RPSEM.RELEASE", b"p", b"never"],
        &[b"RPSEM.TRYSETPERMITS", b"{tag}ttl", b"4", b"PX", b"600000"],
        &[b"RPSEM.TRYACQUIRE", b"{tag}ttl", b"500000", b"x", b"y", b"z"],
        &[b"RPSEM.RELEASE", b"{tag}ttl", b"x", b"y"],
        &[b"RPSEM.ADDPERMITS", b"{tag}ttl", b"3"],
        &[b"RPSEM.SETPERMITS", b"{tag}ttl", b"2"],
        &[b"RPSEM.SETPERMITS", b"set", b"7"],
        &[b"RPSEM.ADDPERMITS", b"bin\x00\xff", b"-2"],
        &[b"RPSEM.TRYSETPERMITS", b"short", b"3"],
        &[b"RPSEM.TRYACQUIRE", b"short", b"1", b"reclaimed", b"late"],
    ];
    for args in commands {
        run(con, args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
    }
    let late_at = score(con, b"short", b"late");
    wait_until(con, late_at);
    assert_eq!(run(con, &[b"RPSEM.RELEASE", b"short", b"late"]).unwrap(), Value::Int(-1));
}

fn assert_expected(snapshot: &Snapshot) {
    let get = |key: &[u8]| snapshot.get(key).unwrap_or_else(|| panic!("{key:?} missing: {snapshot:?}"));
    let string = |key: &[u8]| match &get(key).1 {
        Value::BulkString(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        other => panic!("{other:?}"),
    };
    let members = |key: &[u8]| match &get(key).1 {
        Value::Array(items) => {
            items.iter().step_by(2).map(|item| redis::from_redis_value(item.clone()).unwrap()).collect::<Vec<Vec<u8>>>()
        }
        other => panic!("{other:?}"),
    };
    assert_eq!(string(b"p"), "3");
    assert_eq!(members(b"{p}:timeout"), [b"\x00\xffid\r\n".to_vec(), b"a".to_vec()]);
    assert_eq!(string(b"{tag}ttl"), "1", "set to 2 in all, z taken");
    assert_eq!(members(b"{tag}ttl:timeout"), [b"z".to_vec()]);
    assert_eq!(string(b"set"), "7");
    assert_eq!(string(b"bin\x00\xff"), "-2");
    assert_eq!(string(b"short"), "3", "both permits came back");
    assert!(!snapshot.contains_key(b"{short}:timeout".as_slice()));
    let ttl = get(b"{tag}ttl").2;
    assert!(ttl > 0 && get(b"{tag}ttl:timeout").2 == ttl, "the permits take the count's absolute expiry");
    assert_eq!(get(b"{p}:timeout").2, -1);
}

#[test]
fn a_replica_without_the_module_holds_every_state() {
    let primary = Server::shared();
    let replica = Server::builder().without_module().start();
    replica.replicate(&primary);
    let mut con = primary.connection();
    write_all(&mut con);
    let acked: i64 = redis::cmd("WAIT").arg(1).arg(5000).query(&mut con).unwrap();
    assert_eq!(acked, 1, "the replica acknowledged");
    let on_primary = snapshot(&mut con);
    assert_expected(&on_primary);
    assert_eq!(snapshot(&mut replica.connection()), on_primary, "the replica differs");
    assert!(!replica.log().contains("CRITICAL"), "the replica refused part of the stream:\n{}", replica.log());
}

#[test]
fn an_aof_replay_holds_every_state_with_or_without_the_module() {
    let mut server = Server::builder().config("appendonly", "yes").config("appendfsync", "always").start();
    let mut con = server.connection();
    write_all(&mut con);
    let before = snapshot(&mut con);
    assert_expected(&before);
    server.restart();
    assert_eq!(snapshot(&mut server.connection()), before, "after an AOF replay with the module");
    server.restart_without_module();
    assert_eq!(snapshot(&mut server.connection()), before, "after an AOF replay without the module");

    let mut aof = Vec::new();
    for entry in std::fs::read_dir(server.dir().join("appendonlydir")).unwrap() {
        aof.extend(std::fs::read(entry.unwrap().path()).unwrap());
    }
    let aof = String::from_utf8_lossy(&aof).to_uppercase();
    assert!(!aof.contains("RPSEM"), "a module command in the AOF:\n{aof}");
    assert!(!aof.contains("\r\nPX\r\n") && !aof.contains("\r\nPEXPIRE\r\n"), "a relative TTL in the AOF:\n{aof}");
}

/// One scenario through the scripts (each step after Redisson's
/// availablePermits: the commands reclaim first) and through the commands,
/// on twin names: the same keyspace events, in order.
#[test]
fn the_commands_announce_what_the_scripts_announce() {
    let server = Server::builder().config("notify-keyspace-events", "KEA").shared();
    let scripts = PermitSemaphoreScripts::default();
    scripts.load(&mut server.connection()).unwrap();
    type Step = fn(&PermitSemaphoreScripts, &[u8], i64) -> (Cmd, Vec<Vec<u8>>);
    let steps: [Step; 10] = [
        |s, n, _| (s.try_set_permits(n, 3, None), args(&["RPSEM.TRYSETPERMITS", "3"])),
        |s, n, now| (s.try_acquire(n, &[b"a", b"b"], Some(50), now), args(&["RPSEM.TRYACQUIRE", "50", "a", "b"])),
        |s, n, now| (s.try_acquire(n, &[b"c"], None, now), args(&["RPSEM.TRYACQUIRE", "-1", "c"])),
        |s, n, now| (s.release(n, b"c", now), args(&["RPSEM.RELEASE", "c"])),
        |s, n, now| (s.available(n, now), args(&["RPSEM.AVAILABLE"])),
        |s, n, now| {
            (s.try_acquire(n, &[b"d", b"e"], Some(60_000), now), args(&["RPSEM.TRYACQUIRE", "60000", "d", "e"]))
        },
        |s, n, now| (s.release_all(n, &[b"d", b"e"], now), args(&["RPSEM.RELEASE", "d", "e"])),
        |s, n, now| (s.update_lease(n, b"f", Some(1000), now), args(&["RPSEM.UPDATELEASE", "f", "1000"])),
        |s, n, _| (s.set_permits(n, 5), args(&["RPSEM.SETPERMITS", "5"])),
        |s, n, _| (s.add_permits(n, 2), args(&["RPSEM.ADDPERMITS", "2"])),
    ];
    let mut by_side = Vec::new();
    for (prefix, name) in [("s:", b"s:psem".as_slice()), ("c:", b"c:psem")] {
        let events = keyspace_events(&server, |con| {
            for (index, step) in steps.iter().enumerate() {
                if index == 4 {
                    let expires_at = score(con, name, b"a");
                    wait_until(con, expires_at);
                }
                let now = server_time_ms(con);
                let (script, command) = step(&scripts, name, now);
                if prefix == "s:" {
                    let _: Value = scripts.available(name, now).query(con).unwrap();
                    let _: Value = script.query(con).unwrap();
                } else {
                    let _: Value = redis::cmd(std::str::from_utf8(&command[0]).unwrap())
                        .arg(name)
                        .arg(&command[1..])
                        .query(con)
                        .unwrap();
                }
            }
        });
        let untwinned: Vec<(String, String)> =
            events.into_iter().map(|(key, event)| (key.replacen(prefix, "", 1), event)).collect();
        by_side.push(untwinned);
    }
    assert!(by_side[0].iter().any(|(_, event)| event == "zrem"), "{:?}", by_side[0]);
    assert_eq!(by_side[0], by_side[1], "scripts' events, then the commands'");
}

fn args(words: &[&str]) -> Vec<Vec<u8>> {
    words.iter().map(|word| word.as_bytes().to_vec()).collect()
}

#[test]
fn command_metadata_names_the_key_and_flags_every_command_a_writer() {
    let server = Server::shared();
    let mut con = server.connection();
    let commands: [(&str, &[&str], i64, &[&str]); 10] = [
        ("RPSEM.TRYACQUIRE", &["100", "a", "b"], -4, &["key", "lease_ms", "id", "now_ms", "publisher"]),
        ("RPSEM.RELEASE", &["a", "b"], -3, &["key", "id", "all", "now_ms", "publisher"]),
        ("RPSEM.UPDATELEASE", &["a", "-1"], -4, &["key", "id", "lease_ms", "now_ms", "publisher"]),
        ("RPSEM.LEASE", &["a"], -3, &["key", "id", "now_ms", "publisher"]),
        ("RPSEM.AVAILABLE", &[], -2, &["key", "now_ms", "publisher"]),
        ("RPSEM.PERMITS", &[], -2, &["key", "now_ms", "publisher"]),
        ("RPSEM.ACQUIRED", &[], -2, &["key", "now_ms", "publisher"]),
        ("RPSEM.TRYSETPERMITS", &["3", "PX", "10"], -3, &["key", "permits", "ttl_ms"]),
        ("RPSEM.SETPERMITS", &["3"], -3, &["key", "permits", "publisher"]),
        ("RPSEM.ADDPERMITS", &["-3"], -3, &["key", "delta", "publisher"]),
    ];
    for (name, args, arity, documented) in commands {
        let keys: Vec<String> =
            redis::cmd("COMMAND").arg("GETKEYS").arg(name).arg("k").arg(args).query(&mut con).unwrap();
        assert_eq!(keys, ["k"], "{name}");
        let info: Vec<Vec<Value>> = redis::cmd("COMMAND").arg("INFO").arg(name).query(&mut con).unwrap();
        let [entry] = info.as_slice() else { panic!("COMMAND INFO {name}: {info:?}") };
        assert_eq!(entry[1], Value::Int(arity), "{name} arity");
        let flags: Vec<String> = redis::from_redis_value(entry[2].clone()).unwrap();
        assert!(flags.iter().any(|flag| flag == "write"), "{name}: a reclaim writes: {flags:?}");
        let docs: Vec<Value> = redis::cmd("COMMAND").arg("DOCS").arg(name).query(&mut con).unwrap();
        let docs = format!("{docs:?}");
        for argument in documented {
            assert!(docs.contains(argument), "{name} documents {argument}: {docs}");
        }
    }
}
