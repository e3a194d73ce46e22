//! The Redis side of the fair and read-write locks: effects replicated to
//! a replica without the module and to the AOF (absolute expiries only),
//! derived keys and channels checked against the caller's ACL and, in
//! cluster mode, the name's slot; bad input refused without a write; the
//! keyspace notifications of the scripts.

use redis::{Connection, Value};
use testkit::{error_text, keyspace_events, FairScripts, RwScripts, Server};

fn run(con: &mut Connection, args: &[&str]) -> redis::RedisResult<Value> {
    redis::cmd(args[0]).arg(&args[1..]).query(con)
}

/// Every key with its type, value and absolute expiry (PEXPIRETIME).
fn dump(con: &mut Connection) -> Vec<(String, String, i64)> {
    let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query(con).unwrap();
    keys.sort();
    keys.into_iter()
        .map(|key| {
            let kind: String = redis::cmd("TYPE").arg(&key).query(con).unwrap();
            let value = match kind.as_str() {
                "hash" => format!("{:?}", redis::cmd("HGETALL").arg(&key).query::<Vec<String>>(con).unwrap()),
                "list" => {
                    format!("{:?}", redis::cmd("LRANGE").arg(&key).arg(0).arg(-1).query::<Vec<String>>(con).unwrap())
                }
                "zset" => format!(
                    "{:?}",
                    redis::cmd("ZRANGE").arg(&key).arg(0).arg(-1).arg("WITHSCORES").query::<Vec<String>>(con).unwrap()
                ),
                _ => format!("{:?}", redis::cmd("GET").arg(&key).query::<Option<String>>(con).unwrap()),
            };
            let at: i64 = redis::cmd("PEXPIRETIME").arg(&key).query(con).unwrap();
            (key, value, at)
        })
        .collect()
}

/// Every kind of write of both primitives: a queue with deadlines, holds,
/// re-entries, releases with latches, renewals, a downgrade, force releases.
const WRITES: &[&[&str]] = &[
    &["RFAIR.ACQUIRE", "fair", "u:1", "600000"],
    &["RFAIR.ACQUIRE", "fair", "u:1", "600000"],
    &["RFAIR.ACQUIRE", "fair", "u:2", "600000", "WAIT", "700000"],
    &["RFAIR.ACQUIRE", "fair", "u:3", "600000", "WAIT", "700000"],
    &["RFAIR.ACQUIRE", "fair", "u:4", "600000", "WAIT", "700000"],
    &["RFAIR.CANCEL", "fair", "u:3", "WAIT", "700000"],
    &["RFAIR.RELEASE", "fair", "u:1", "500000", "ID", "f1"],
    &["RFAIR.RENEW", "fair", "u:1", "800000"],
    &["RFAIR.ACQUIRE", "fair2", "u:1"],
    &["RFAIR.RELEASE", "fair2", "u:1", "ID", "f2", "PX", "900000"],
    &["RFAIR.ACQUIRE", "fair3", "u:1"],
    &["RFAIR.ACQUIRE", "fair3", "u:2", "600000", "WAIT", "100000"],
    &["RFAIR.FORCERELEASE", "fair3"],
    &["RFAIR.ACQUIRE", "fair3", "u:2", "600000", "WAIT", "100000"],
    &["RRW.ACQUIRE", "rw", "u:1", "READ", "600000"],
    &["RRW.ACQUIRE", "rw", "u:1", "READ", "500000"],
    &["RRW.ACQUIRE", "rw", "u:2", "READ", "700000"],
    &["RRW.RELEASE", "rw", "u:2", "READ", "ID", "r1"],
    &["RRW.RENEW", "rw", "u:1", "800000"],
    &["RRW.ACQUIRE", "rw2", "u:1", "WRITE", "600000"],
    &["RRW.ACQUIRE", "rw2", "u:1", "WRITE", "600000"],
    &["RRW.ACQUIRE", "rw2", "u:1", "READ", "600000"],
    &["RRW.RELEASE", "rw2", "u:1", "WRITE", "500000"],
    &["RRW.RELEASE", "rw2", "u:1", "WRITE", "ID", "r2"],
    &["RRW.ACQUIRE", "rw3", "u:1", "WRITE"],
    &["RRW.FORCERELEASE", "rw3"],
    // The last read hold: its timeout key and the hash go in one DEL.
    &["RRW.ACQUIRE", "rw4", "u:1", "READ", "600000"],
    &["RRW.RELEASE", "rw4", "u:1", "READ", "ID", "r4"],
];

fn write_all(con: &mut Connection) {
    for args in WRITES {
        run(con, args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
    }
}

#[test]
fn a_replica_without_the_module_and_an_aof_replay_reproduce_every_state() {
    let master = Server::builder().config("appendonly", "yes").config("appendfsync", "always").start();
    let replica = Server::builder().without_module().start();
    replica.replicate(&master);
    let mut con = master.connection();
    write_all(&mut con);
    let acked: i64 = redis::cmd("WAIT").arg(1).arg(5000).query(&mut con).unwrap();
    assert_eq!(acked, 1);
    let before = dump(&mut con);
    assert!(before.len() >= 10, "queues, deadlines, locks, holds and latches: {before:?}");
    assert_eq!(dump(&mut replica.connection()), before, "the replica differs");
    assert!(!replica.log().contains("CRITICAL"), "{}", replica.log());

    let mut master = master;
    master.restart_without_module();
    assert_eq!(dump(&mut master.connection()), before, "after an AOF replay without the module");
    let mut aof = Vec::new();
    for entry in std::fs::read_dir(master.dir().join("appendonlydir")).unwrap() {
        aof.extend(std::fs::read(entry.unwrap().path()).unwrap());
    }
    let aof = String::from_utf8_lossy(&aof).to_uppercase();
    assert!(!aof.contains("RFAIR") && !aof.contains("RRW") && !aof.contains("\r\nPEXPIRE\r\n"), "{aof}");
}

#[test]
fn derived_keys_are_checked_against_the_callers_acl_and_channels_are_not() {
    let server = Server::shared();
    let mut admin = server.connection();
    let mut limited = server.login("limited", &["~locks:*", "&*"]);
    let refusals: [(&[&str], &str); 4] = [
        (&["RFAIR.ACQUIRE", "locks:f", "u", "1000", "WAIT", "1000"], "'redisson_lock_queue:{locks:f}'"),
        (&["RFAIR.RELEASE", "locks:f", "u"], "'redisson_lock_queue:{locks:f}'"),
        (&["RRW.ACQUIRE", "locks:r", "u", "READ"], "'{locks:r}:u:rwlock_timeout:1'"),
        (&["RRW.RELEASE", "locks:r", "u", "WRITE", "ID", "x"], "'redisson_unlock_latch:{locks:r}:x'"),
    ];
    for (args, key) in refusals {
        let text = error_text(run(&mut limited, args));
        assert!(text.starts_with("NOPERM") && text.contains(key), "{args:?}: {text}");
    }
    assert!(dump(&mut admin).is_empty(), "nothing written");
    // Names with a hash tag keep derived keys under the pattern when the
    // ACL allows Redisson's prefixes; the write side needs no derived key.
    let mut wider = server.login("wider", &["~locks:*", "~redisson_*", "~{locks:*", "&*"]);
    assert_eq!(run(&mut wider, &["RFAIR.ACQUIRE", "locks:f", "u", "1000", "WAIT", "1000"]).unwrap(), Value::Nil);
    assert_eq!(run(&mut wider, &["RRW.ACQUIRE", "locks:r", "u", "READ"]).unwrap(), Value::Nil);
    assert_eq!(run(&mut limited, &["RRW.ACQUIRE", "locks:w", "u", "WRITE"]).unwrap(), Value::Nil);

    // Channels are not checked: a user who may not publish on the lock's
    // channel still releases the lock it took (and its waiters hear it).
    let mut no_publish = server.login("quiet", &["~*", "resetchannels"]);
    assert_eq!(run(&mut no_publish, &["RRW.RELEASE", "locks:w", "u", "WRITE"]).unwrap(), Value::Int(1));
    assert_eq!(run(&mut admin, &["EXISTS", "locks:w"]).unwrap(), Value::Int(0), "released");
}

#[test]
fn in_cluster_mode_names_whose_derived_keys_hash_elsewhere_are_refused() {
    let (_server, mut con) = Server::single_node_cluster();
    let text = error_text(run(&mut con, &["RFAIR.ACQUIRE", "a{b", "u"]));
    assert!(text.starts_with("ERR the derived key 'redisson_lock_queue:a{b'"), "{text}");
    let text = error_text(run(&mut con, &["RRW.ACQUIRE", "a{b", "u", "READ"]));
    assert!(text.contains("another slot"), "{text}");
    for name in ["plain", "{tag}x"] {
        assert_eq!(run(&mut con, &["RFAIR.ACQUIRE", name, "u", "1000", "WAIT", "1000"]).unwrap(), Value::Nil);
        assert_eq!(run(&mut con, &["RRW.ACQUIRE", &format!("rw{name}"), "u", "READ"]).unwrap(), Value::Nil);
    }
}

#[test]
fn bad_input_is_refused_and_changes_nothing() {
    let server = Server::shared();
    let mut con = server.connection();
    write_all(&mut con);
    let _: () = redis::cmd("SET").arg("text").arg("x").query(&mut con).unwrap();
    let _: () = redis::cmd("HSET").arg("plainhash").arg("f").arg("v").query(&mut con).unwrap();
    let _: () = redis::cmd("SET").arg("redisson_lock_queue:{q}").arg("x").query(&mut con).unwrap();
    let before = dump(&mut con);
    // A syntax error names the misfit, then quotes the command's syntax.
    macro_rules! fair_syntax {
        ($misfit:literal) => {
            concat!(
                "ERR syntax error: ",
                $misfit,
                "; syntax: RFAIR.ACQUIRE key owner [lease_ms] [WAIT wait_ms [BLOCK block_ms] [REDISSON PTTL|AHEAD]",
                " | SHIFT shift_ms] [ID request_id [PX window_ms]] [REPLY FULL]"
            )
        };
    }
    const BLOCK_INVALID: &str = "ERR block_ms must be a positive integer of at most 31536000000 (365 days)";
    let cases: [(&[&str], &str); 20] = [
        (&["RFAIR.ACQUIRE", "fair", "u:9", "0"], "ERR lease_ms must be a positive integer"),
        (&["RFAIR.ACQUIRE", "fair", "u:9", "100", "WAIT"], fair_syntax!("'WAIT' needs wait_ms")),
        (&["RFAIR.ACQUIRE", "fair", "u:9", "100", "WAIT", "-1"], "ERR wait_ms must be a positive integer"),
        (&["RFAIR.ACQUIRE", "fair", "u:9", "100", "NOWAIT"], fair_syntax!("unexpected argument 4 ('NOWAIT')")),
        (&["RFAIR.ACQUIRE", "fair", "u:9", "100", "BLOCK", "10"], fair_syntax!("unexpected argument 4 ('BLOCK')")),
        (&["RFAIR.ACQUIRE", "fair", "u:9", "100", "WAIT", "10", "BLOCK"], fair_syntax!("'BLOCK' needs block_ms")),
        (
            &["RFAIR.ACQUIRE", "fair", "u:9", "100", "WAIT", "10", "REDISSON"],
            fair_syntax!("'REDISSON' needs PTTL|AHEAD"),
        ),
        (
            &["RFAIR.ACQUIRE", "fair", "u:9", "100", "WAIT", "10", "REDISSON", "SOON"],
            fair_syntax!("unexpected argument 7 ('SOON')"),
        ),
        (&["RFAIR.ACQUIRE", "fair", "u:9", "100", "WAIT", "10", "BLOCK", "0"], BLOCK_INVALID),
        (
            &["RFAIR.ACQUIRE", "fair", "u:9", "100", "WAIT", "10", "BLOCK", "5", "x"],
            fair_syntax!("unexpected argument 8 ('x')"),
        ),
        (&["RFAIR.ACQUIRE", "text", "u:9"], "WRONGTYPE Operation against a key holding the wrong kind of value"),
        (&["RFAIR.ACQUIRE", "q", "u:9"], "WRONGTYPE Operation against a key holding the wrong kind of value"),
        (&["RFAIR.ACQUIRE", "plainhash", "f"], "ERR key is a hash but not a lock: a hold count is not an integer"),
        (&["RFAIR.FORCERELEASE", "plainhash"], "ERR key is a hash but not a lock: a hold count is not an integer"),
        (&["RFAIR.RELEASE", "fair", "u:1", "ID"], "ERR ID needs a non-empty request_id"),
        (&["RRW.ACQUIRE", "rw", "u:1", "BOTH"], "ERR mode must be READ or WRITE"),
        (
            &["RRW.ACQUIRE", "plainhash", "u:1", "READ"],
            "ERR key is a hash but not a read-write lock: no read/write mode, or a hold count that is not an integer",
        ),
        (&["RRW.ACQUIRE", "text", "u:1", "WRITE"], "WRONGTYPE Operation against a key holding the wrong kind of value"),
        (
            &["RRW.RELEASE", "rw", "u:1", "READ", "PX", "5"],
            "ERR syntax error: unexpected argument 4 ('PX'); syntax: RRW.RELEASE key owner READ|WRITE [lease_ms] \
             [ID request_id [PX latch_ms]] [MISSING NIL|1|NOTHELD] [VIA PUBLISH|SPUBLISH]",
        ),
        (
            &["RRW.FORCERELEASE", "plainhash"],
            "ERR key is a hash but not a read-write lock: no read/write mode, or a hold count that is not an integer",
        ),
    ];
    for (args, expected) in cases {
        assert_eq!(error_text(run(&mut con, args)), expected, "{args:?}");
    }
    for args in [&["RFAIR.ACQUIRE", "fair"][..], &["RRW.ACQUIRE", "rw", "u"], &["RRW.STATUS"]] {
        assert!(error_text(run(&mut con, args)).contains("wrong number of arguments"), "{args:?}");
    }
    // As RLOCK.ACQUIRE: another hash is someone else's lock, held.
    assert_eq!(run(&mut con, &["RFAIR.ACQUIRE", "plainhash", "u:9"]).unwrap(), Value::Int(1));
    assert_eq!(dump(&mut con), before, "an error changed something");
}

#[test]
fn keyspace_notifications_match_the_scripts_on_the_main_paths() {
    let server = Server::builder().config("notify-keyspace-events", "KEA").shared();
    let fair = FairScripts::default();
    let rw = RwScripts::default();
    let events = keyspace_events(&server, |con| {
        fair.load(con).unwrap();
        rw.load(con).unwrap();
        let (seconds, _): (i64, i64) = redis::cmd("TIME").query(con).unwrap();
        let now = seconds * 1000;
        let _: Value = fair.acquire(b"s:f", b"u", 60_000, Some(1000), now).query(con).unwrap();
        let _: Value = fair.release(b"s:f", b"u", 60_000, b"r", now).query(con).unwrap();
        let _: Value = rw.write_acquire(b"s:w", b"u", 60_000).query(con).unwrap();
        let _: Value = rw.write_release(b"s:w", b"u", 60_000, b"r").query(con).unwrap();
        for args in [
            &["RFAIR.ACQUIRE", "c:f", "u", "60000", "WAIT", "1000"][..],
            &["RFAIR.RELEASE", "c:f", "u", "60000", "ID", "r"],
            &["RRW.ACQUIRE", "c:w", "u", "WRITE", "60000"],
            &["RRW.RELEASE", "c:w", "u", "WRITE", "60000", "ID", "r"],
        ] {
            run(con, args).unwrap();
        }
    });
    let of = |key: &str| -> Vec<&str> { events.iter().filter(|(k, _)| k == key).map(|(_, e)| e.as_str()).collect() };
    assert_eq!(of("c:f"), of("s:f"), "fair lock");
    assert_eq!(of("s:f"), ["hset", "expire", "hincrby", "del"]);
    assert_eq!(of("redisson_unlock_latch:{c:f}:r"), of("redisson_unlock_latch:{s:f}:r"), "fair latch");
    assert_eq!(of("s:w"), ["hset", "hset", "expire", "hincrby", "hdel", "del"]);
    assert_eq!(of("c:w"), of("s:w"), "write lock");
}
