//! Replication and persistence: the commands propagate their effects
//! (HINCRBY, PEXPIREAT with the absolute expiry, DEL, PUBLISH, SET .. PXAT
//! for unlock latches), so a replica without the module and an AOF replay
//! end up with the same fields, latch values and absolute expiries.

use redis::{Commands, Connection};
use std::collections::HashMap;
use testkit::{unlock_latch_key, Server};

type Fields = HashMap<Vec<u8>, Vec<u8>>;

#[derive(Debug, PartialEq)]
struct Snapshot {
    /// HGETALL and PEXPIRETIME (absolute, ms) of each lock.
    locks: HashMap<Vec<u8>, (Fields, i64)>,
    /// GET and PEXPIRETIME of each latch key.
    latches: Vec<(Option<Vec<u8>>, i64)>,
}

fn snapshot(con: &mut Connection, keys: &[&[u8]]) -> Snapshot {
    let locks = keys
        .iter()
        .map(|key| {
            let fields: Fields = con.hgetall(*key).unwrap();
            let expire_at: i64 = redis::cmd("PEXPIRETIME").arg(*key).query(con).unwrap();
            (key.to_vec(), (fields, expire_at))
        })
        .collect();
    let latches = LATCHES
        .iter()
        .map(|(name, id)| {
            let key = unlock_latch_key(name, id);
            (con.get(&key).unwrap(), redis::cmd("PEXPIRETIME").arg(&key).query(con).unwrap())
        })
        .collect();
    Snapshot { locks, latches }
}

fn run(con: &mut Connection, args: &[&[u8]]) {
    let _: redis::Value = redis::cmd(std::str::from_utf8(args[0]).unwrap()).arg(&args[1..]).query(con).unwrap();
}

/// A mix of every write: acquire, reentry, renew (one lock and a batch),
/// partial and full release, force release, on plain, hash-tagged and
/// binary names.
fn write_locks(con: &mut Connection) {
    for args in [
        &[b"RLOCK.ACQUIRE".as_slice(), b"held", b"uuid:1", b"600000"][..],
        &[b"RLOCK.ACQUIRE", b"held", b"uuid:1", b"500000"],
        &[b"RLOCK.ACQUIRE", b"reentered", b"uuid:2", b"400000"],
        &[b"RLOCK.ACQUIRE", b"reentered", b"uuid:2", b"400000"],
        &[b"RLOCK.ACQUIRE", b"reentered", b"uuid:2", b"400000"],
        &[b"RLOCK.RELEASE", b"reentered", b"uuid:2", b"300000"],
        &[b"RLOCK.ACQUIRE", b"{tag}renewed", b"uuid:3", b"1000"],
        &[b"RLOCK.RENEW", b"{tag}renewed", b"uuid:3", b"700000"],
        &[b"RLOCK.ACQUIRE", b"{tag}batch", b"uuid:7", b"1000"],
        &[b"RLOCK.RENEWALL", b"900000", b"{tag}batch", b"uuid:7", b"held", b"nobody", b"{tag}renewed", b"uuid:3"],
        &[b"RLOCK.ACQUIRE", b"bin\x00\xff", b"\x00owner\xff", b"800000"],
        &[b"RLOCK.ACQUIRE", b"released", b"uuid:4", b"600000"],
        &[b"RLOCK.RELEASE", b"released", b"uuid:4"],
        &[b"RLOCK.ACQUIRE", b"forced", b"uuid:5", b"600000"],
        &[b"RLOCK.FORCERELEASE", b"forced"],
        &[b"RLOCK.ACQUIRE", b"latched", b"uuid:6", b"600000"],
        &[b"RLOCK.ACQUIRE", b"latched", b"uuid:6", b"600000"],
        &[b"RLOCK.RELEASE", b"latched", b"uuid:6", b"500000", b"ID", b"req:1", b"PX", b"700000"],
        &[b"RLOCK.RELEASE", b"latched", b"uuid:6", b"500000", b"ID", b"req:1", b"PX", b"1000"],
        &[b"RLOCK.RELEASE", b"latched", b"uuid:6", b"ID", b"req:2"],
    ] {
        run(con, args);
    }
}

const KEYS: [&[u8]; 8] =
    [b"held", b"reentered", b"{tag}renewed", b"{tag}batch", b"bin\x00\xff", b"released", b"forced", b"latched"];

/// The unlock latches written: (lock name, request id).
const LATCHES: [(&[u8], &[u8]); 2] = [(b"latched", b"req:1"), (b"latched", b"req:2")];

fn assert_expected_layout(snapshot: &Snapshot) {
    let locks = &snapshot.locks;
    let fields = |key: &[u8]| locks[key].0.clone();
    assert_eq!(fields(b"held"), HashMap::from([(b"uuid:1".to_vec(), b"2".to_vec())]));
    assert_eq!(fields(b"reentered"), HashMap::from([(b"uuid:2".to_vec(), b"2".to_vec())]));
    assert_eq!(fields(b"bin\x00\xff"), HashMap::from([(b"\x00owner\xff".to_vec(), b"1".to_vec())]));
    assert!(fields(b"released").is_empty() && fields(b"forced").is_empty() && fields(b"latched").is_empty());
    assert_eq!(locks[b"released".as_slice()].1, -2);
    for key in [b"held".as_slice(), b"reentered", b"{tag}renewed", b"{tag}batch", b"bin\x00\xff"] {
        assert!(locks[key].1 > 0, "{key:?} has an absolute expiry");
    }
    let [(first, first_at), (second, second_at)] = &snapshot.latches[..] else { panic!("two latches") };
    assert_eq!((first.as_deref(), second.as_deref()), (Some(b"0".as_slice()), Some(b"1".as_slice())));
    assert!(*first_at > 0 && *second_at > 0, "latches have an absolute expiry");
    assert!(first_at - second_at > 600_000, "the replay changed nothing: PX 700000, then the default 20000");
}

#[test]
fn a_replica_without_the_module_mirrors_fields_and_absolute_expiry() {
    let master = Server::shared();
    let replica = Server::builder().without_module().start();
    replica.replicate(&master);
    let mut replica_con = replica.connection();

    let mut con = master.connection();
    write_locks(&mut con);
    let acked: i64 = redis::cmd("WAIT").arg(1).arg(5000).query(&mut con).unwrap();
    assert_eq!(acked, 1, "the replica acknowledged");

    let on_master = snapshot(&mut con, &KEYS);
    assert_expected_layout(&on_master);
    assert_eq!(snapshot(&mut replica_con, &KEYS), on_master, "the replica differs");
    assert!(!replica.log().contains("CRITICAL"), "the replica refused part of the stream:\n{}", replica.log());
}

#[test]
fn an_aof_restart_keeps_the_remaining_lease() {
    let mut server = Server::builder().config("appendonly", "yes").config("appendfsync", "always").start();
    let mut con = server.connection();
    write_locks(&mut con);
    let before = snapshot(&mut con, &KEYS);
    assert_expected_layout(&before);

    // With a relative TTL in the AOF, every lease would restart from the
    // moment of loading, later than before.
    server.restart();
    assert_eq!(snapshot(&mut server.connection(), &KEYS), before, "after an AOF replay with the module");

    server.restart_without_module();
    assert_eq!(snapshot(&mut server.connection(), &KEYS), before, "after an AOF replay without the module");

    let mut aof = Vec::new();
    for entry in std::fs::read_dir(server.dir().join("appendonlydir")).unwrap() {
        aof.extend(std::fs::read(entry.unwrap().path()).unwrap());
    }
    let aof = String::from_utf8_lossy(&aof);
    assert!(aof.contains("PEXPIREAT"), "the AOF holds absolute expiries");
    assert!(aof.contains("PXAT"), "the AOF holds latches with absolute expiries");
    assert!(
        !aof.contains("RLOCK") && !aof.to_uppercase().contains("\r\nPEXPIRE\r\n") && !aof.contains("\r\nPX\r\n"),
        "no module command, no relative TTL:\n{aof}"
    );
}
