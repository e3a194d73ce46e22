//! The read-write-lock Lua transcriptions walk each branch of protocol
//! page §3 on a plain redis-server, with Redisson's keys and arguments.

use redis::{Commands, Connection, Value};
use rlock_protocol::{rwlock_channel, rwlock_timeout_key, rwlock_write_field, unlock_latch_key};
use testkit::{publications, RedissonScripts, RwScripts, Server};

const NAME: &[u8] = b"rw";
const LEASE: i64 = 30_000;

fn setup() -> (Server, Connection, RwScripts) {
    let server = Server::builder().without_module().start();
    let mut con = server.connection();
    let scripts = RwScripts::default();
    scripts.load(&mut con).unwrap();
    (server, con, scripts)
}

fn pttl(con: &mut Connection, key: &[u8]) -> i64 {
    con.pttl(key).unwrap()
}

fn channel() -> String {
    String::from_utf8(rwlock_channel(NAME)).unwrap()
}

#[test]
fn readers_share_with_a_timeout_key_per_hold_and_exclude_a_writer() {
    let (_server, mut con, rw) = setup();
    for owner in [b"r1", b"r2", b"r1"] {
        assert_eq!(rw.read_acquire(NAME, owner, LEASE).query::<Value>(&mut con).unwrap(), Value::Nil);
    }
    assert_eq!(con.hget::<_, _, String>(NAME, "mode").unwrap(), "read");
    assert_eq!(con.hget::<_, _, i64>(NAME, "r1").unwrap(), 2);
    for n in [1, 2] {
        assert!(pttl(&mut con, &rwlock_timeout_key(NAME, b"r1", n)) > 0, "hold {n} has its lease");
    }
    let ttl: i64 = rw.write_acquire(NAME, b"w", LEASE).query(&mut con).unwrap();
    assert!(ttl > 0, "the writer gets the PTTL: {ttl}");
}

#[test]
fn a_writer_excludes_readers_takes_reads_itself_and_downgrades_silently() {
    let (server, mut con, rw) = setup();
    assert_eq!(rw.write_acquire(NAME, b"w", LEASE).query::<Value>(&mut con).unwrap(), Value::Nil);
    assert!(rw.read_acquire(NAME, b"r", LEASE).query::<i64>(&mut con).unwrap() > 0);
    assert_eq!(rw.read_acquire(NAME, b"w", LEASE).query::<Value>(&mut con).unwrap(), Value::Nil);
    let published = publications(&server, |con| {
        assert_eq!(rw.write_release(NAME, b"w", LEASE, b"r1").query::<i64>(con).unwrap(), 1);
    });
    assert_eq!(published, [], "a downgrade publishes nothing");
    assert_eq!(con.hget::<_, _, String>(NAME, "mode").unwrap(), "read");
    assert_eq!(rw.read_acquire(NAME, b"r", LEASE).query::<Value>(&mut con).unwrap(), Value::Nil);
}

#[test]
fn a_read_release_publishes_0_and_a_write_release_1() {
    let (server, mut con, rw) = setup();
    let published = publications(&server, |con| {
        let _: Value = rw.read_acquire(NAME, b"r", LEASE).query(con).unwrap();
        assert_eq!(rw.read_release(NAME, b"r", b"q1").query::<i64>(con).unwrap(), 1);
        let _: Value = rw.write_acquire(NAME, b"w", LEASE).query(con).unwrap();
        assert_eq!(rw.write_release(NAME, b"w", LEASE, b"q2").query::<i64>(con).unwrap(), 1);
    });
    assert_eq!(published, [(channel(), "0".into()), (channel(), "1".into())]);
    assert!(!con.exists::<_, bool>(NAME).unwrap());
}

#[test]
fn a_release_of_a_missing_lock_publishes_and_latches_1_but_replies_nil() {
    let (server, mut con, rw) = setup();
    let published = publications(&server, |con| {
        assert_eq!(rw.read_release(NAME, b"r", b"q1").query::<Value>(con).unwrap(), Value::Nil);
        assert_eq!(rw.read_release(NAME, b"r", b"q1").query::<i64>(con).unwrap(), 1, "the retry");
        assert_eq!(rw.write_release(NAME, b"w", LEASE, b"q2").query::<Value>(con).unwrap(), Value::Nil);
    });
    assert_eq!(published, [(channel(), "0".into()), (channel(), "1".into())]);
    assert_eq!(con.get::<_, i64>(unlock_latch_key(NAME, b"q2")).unwrap(), 1);
}

#[test]
fn a_read_release_keeps_the_lock_for_the_longest_other_hold() {
    let (_server, mut con, rw) = setup();
    let _: Value = rw.read_acquire(NAME, b"r1", 60_000).query(&mut con).unwrap();
    let _: Value = rw.read_acquire(NAME, b"r2", 10_000).query(&mut con).unwrap();
    assert!(pttl(&mut con, NAME) > 10_000, "the hash lives as long as its longest hold");
    assert_eq!(rw.read_release(NAME, b"r1", b"q1").query::<i64>(&mut con).unwrap(), 0);
    assert!(pttl(&mut con, NAME) <= 10_000, "cut to r2's hold");
    assert!(!con.exists::<_, bool>(rwlock_timeout_key(NAME, b"r1", 1)).unwrap(), "r1's hold key is gone");

    let _: Value = rw.read_acquire(NAME, b"r1", 60_000).query(&mut con).unwrap();
    let _: () = con.del(rwlock_timeout_key(NAME, b"r2", 1)).unwrap();
    assert_eq!(rw.read_release(NAME, b"r1", b"q2").query::<i64>(&mut con).unwrap(), 1, "r2's hold expired");
    assert!(!con.exists::<_, bool>(NAME).unwrap());
}

#[test]
fn write_reentry_adds_the_lease_and_the_latch_replays() {
    let (_server, mut con, rw) = setup();
    let _: Value = rw.write_acquire(NAME, b"w", 10_000).query(&mut con).unwrap();
    let _: Value = rw.write_acquire(NAME, b"w", 10_000).query(&mut con).unwrap();
    assert!(pttl(&mut con, NAME) > 10_000, "PTTL + lease");
    assert_eq!(rw.read_release(NAME, b"w", b"q0").query::<Value>(&mut con).unwrap(), Value::Nil, "no read hold");
    for _ in 0..2 {
        assert_eq!(rw.write_release(NAME, b"w", LEASE, b"q1").query::<i64>(&mut con).unwrap(), 0);
    }
    assert_eq!(rw.write_release(NAME, b"x", LEASE, b"q2").query::<Value>(&mut con).unwrap(), Value::Nil);
    assert_eq!(rw.write_release(NAME, b"w", LEASE, b"q3").query::<i64>(&mut con).unwrap(), 1);
}

#[test]
fn each_force_release_deletes_its_own_mode_only() {
    let (server, mut con, rw) = setup();
    let published = publications(&server, |con| {
        let _: Value = rw.read_acquire(NAME, b"r", LEASE).query(con).unwrap();
        assert_eq!(rw.force_release(NAME, true).query::<i64>(con).unwrap(), 0);
        assert_eq!(rw.force_release(NAME, false).query::<i64>(con).unwrap(), 1);
        let _: Value = rw.write_acquire(NAME, b"w", LEASE).query(con).unwrap();
        assert_eq!(rw.force_release(NAME, false).query::<i64>(con).unwrap(), 0);
        assert_eq!(rw.force_release(NAME, true).query::<i64>(con).unwrap(), 1);
    });
    assert_eq!(published, [(channel(), "0".into()), (channel(), "1".into())]);
    assert!(!con.exists::<_, bool>(NAME).unwrap());
}

#[test]
fn the_read_renew_renews_the_listed_owners_holds_and_the_write_side_the_rlock_way() {
    let (_server, mut con, rw) = setup();
    for owner in [b"r1", b"r1", b"r2"] {
        let _: Value = rw.read_acquire(NAME, owner, 5_000).query(&mut con).unwrap();
    }
    let owners: [&[u8]; 2] = [b"r1", b"gone"];
    let renewed: Vec<i64> = rw.read_renew(LEASE, &[(NAME, &owners), (b"other", &[b"r1"])]).query(&mut con).unwrap();
    assert_eq!(renewed, [1, 0]);
    for n in [1, 2] {
        assert!(pttl(&mut con, &rwlock_timeout_key(NAME, b"r1", n)) > 5_000, "r1's hold {n}");
    }
    assert!(pttl(&mut con, &rwlock_timeout_key(NAME, b"r2", 1)) <= 5_000, "r2 is not listed");
    assert!(pttl(&mut con, NAME) > 5_000);

    let rlock = RedissonScripts::default();
    rlock.load(&mut con).unwrap();
    let _: Value = rw.write_acquire(b"w", b"w", 5_000).query(&mut con).unwrap();
    let renewed: Vec<i64> = rlock.renew_batch(LEASE, &[(b"w", &rwlock_write_field(b"w"))]).query(&mut con).unwrap();
    assert_eq!(renewed, [1]);
    assert!(pttl(&mut con, b"w") > 5_000);
}
