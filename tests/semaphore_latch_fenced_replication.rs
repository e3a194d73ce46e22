//! Replication and persistence of the semaphore, the count-down latch and
//! the fenced lock: the commands propagate their effects (INCRBY, SET with
//! PXAT, DEL, HINCRBY, PEXPIREAT), so a replica without the module and an
//! AOF replay (with or without the module) hold every state the primary
//! holds, absolute expiries included.

use redis::{Connection, Value};
use std::collections::BTreeMap;
use testkit::Server;

/// Each key: its type, its value as read for that type, its PEXPIRETIME.
type Snapshot = BTreeMap<Vec<u8>, (String, Value, i64)>;

fn snapshot(con: &mut Connection) -> Snapshot {
    let keys: Vec<Vec<u8>> = redis::cmd("KEYS").arg("*").query(con).unwrap();
    keys.into_iter()
        .map(|key| {
            let kind: String = redis::cmd("TYPE").arg(&key).query(con).unwrap();
            let read = if kind == "hash" { "HGETALL" } else { "GET" };
            let value: Value = redis::cmd(read).arg(&key).query(con).unwrap();
            let expire_at: i64 = redis::cmd("PEXPIRETIME").arg(&key).query(con).unwrap();
            (key, (kind, value, expire_at))
        })
        .collect()
}

/// Every write of the three primitives, on plain, tagged and binary names.
fn write_all(con: &mut Connection) {
    let commands: &[&[&[u8]]] = &[
        &[b"RSEM.TRYSETPERMITS", b"sem", b"5"],
        &[b"RSEM.TRYACQUIRE", b"sem", b"2"],
        &[b"RSEM.RELEASE", b"sem"],
        &[b"RSEM.TRYSETPERMITS", b"{tag}ttl", b"3", b"PX", b"600000"],
        &[b"RSEM.ADDPERMITS", b"{tag}ttl", b"-4"],
        &[b"RSEM.RELEASE", b"{tag}ttl", b"2", b"IFEXISTS"],
        &[b"RSEM.TRYSETPERMITS", b"drained", b"7", b"PX", b"500000"],
        &[b"RSEM.DRAIN", b"drained"],
        &[b"RSEM.RELEASE", b"bin\x00\xff", b"4"],
        &[b"RLATCH.TRYSETCOUNT", b"latch", b"3"],
        &[b"RLATCH.COUNTDOWN", b"latch"],
        &[b"RLATCH.TRYSETCOUNT", b"opened", b"1"],
        &[b"RLATCH.COUNTDOWN", b"opened"],
        &[b"RLATCH.TRYSETCOUNT", b"deleted", b"2"],
        &[b"RLATCH.DELETE", b"deleted"],
        &[b"RFENCED.ACQUIRE", b"fence", b"u:1", b"600000"],
        &[b"RFENCED.ACQUIRE", b"fence", b"u:1", b"500000"],
        &[b"RLOCK.RELEASE", b"fence", b"u:1", b"400000"],
        &[b"RFENCED.ACQUIRE", b"{tag}fence", b"u:2", b"600000"],
        &[b"RLOCK.FORCERELEASE", b"{tag}fence"],
        &[b"RFENCED.ACQUIRE", b"{tag}fence", b"\x00u:3\xff", b"700000"],
    ];
    for args in commands {
        let name = std::str::from_utf8(args[0]).unwrap();
        let _: Value = redis::cmd(name).arg(&args[1..]).query(con).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

fn assert_expected(snapshot: &Snapshot) {
    let get = |key: &[u8]| snapshot.get(key).unwrap_or_else(|| panic!("{key:?} missing: {snapshot:?}"));
    let string = |key: &[u8]| match &get(key).1 {
        Value::BulkString(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        other => panic!("{other:?}"),
    };
    assert_eq!(string(b"sem"), "4");
    assert_eq!(string(b"{tag}ttl"), "1");
    assert_eq!(string(b"drained"), "0");
    assert_eq!(string(b"bin\x00\xff"), "4");
    assert_eq!(string(b"latch"), "2");
    // Two tokens each, the first at least the term's floor (a jump, replicated as INCRBY).
    for counter in [b"redisson_lock_token:{fence}".as_slice(), b"redisson_lock_token:{tag}fence"] {
        assert!(string(counter).parse::<i64>().unwrap() > 1_000_000_000_000_000, "{counter:?}");
    }
    for gone in [b"opened".as_slice(), b"deleted"] {
        assert!(!snapshot.contains_key(gone), "{gone:?} was deleted");
    }
    for kept in [b"{tag}ttl".as_slice(), b"drained", b"fence", b"{tag}fence"] {
        assert!(get(kept).2 > 0, "{kept:?} has an absolute expiry");
    }
    assert!(get(b"drained").2 - get(b"{tag}ttl").2 < 0, "each kept its own TTL");
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
    for module_command in ["RSEM", "RLATCH", "RFENCED", "RLOCK"] {
        assert!(!aof.contains(module_command), "{module_command} in the AOF:\n{aof}");
    }
    assert!(!aof.contains("\r\nPX\r\n") && !aof.contains("\r\nPEXPIRE\r\n"), "a relative TTL in the AOF:\n{aof}");
}
