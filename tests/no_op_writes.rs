//! Commands that change nothing leave no trace: another client's WATCH
//! still executes and RESP3 client tracking sends no invalidation, as
//! with Redisson's scripts. Commands that write do both.

use redis::{Connection, Value};
use testkit::{invalidated, unlock_latch_key, Server, Tracker};

const LOCK: &[u8] = b"lock";
const MISSING: &[u8] = b"missing";

/// Each no-op command, on a lock held once by `a` whose request `replayed`
/// has a latch.
fn no_ops() -> Vec<(&'static str, Vec<&'static [u8]>)> {
    vec![
        ("contended acquire", vec![b"RLOCK.ACQUIRE", LOCK, b"b"]),
        ("renew by a non-holder", vec![b"RLOCK.RENEW", LOCK, b"b"]),
        ("release by a non-holder", vec![b"RLOCK.RELEASE", LOCK, b"b"]),
        ("release by a non-holder with an id", vec![b"RLOCK.RELEASE", LOCK, b"b", b"ID", b"fresh"]),
        ("latch hit", vec![b"RLOCK.RELEASE", LOCK, b"a", b"ID", b"replayed"]),
        ("renew of a missing lock", vec![b"RLOCK.RENEW", MISSING, b"a"]),
        ("release of a missing lock", vec![b"RLOCK.RELEASE", MISSING, b"a"]),
        ("force release of a missing lock", vec![b"RLOCK.FORCERELEASE", MISSING]),
        ("status", vec![b"RLOCK.STATUS", LOCK, b"a"]),
    ]
}

/// Keys a no-op must not touch: the locks and the latch keys involved.
fn watched() -> Vec<Vec<u8>> {
    vec![LOCK.to_vec(), MISSING.to_vec(), unlock_latch_key(LOCK, b"fresh"), unlock_latch_key(LOCK, b"replayed")]
}

fn run(con: &mut Connection, args: &[&[u8]]) -> Value {
    redis::cmd(std::str::from_utf8(args[0]).unwrap()).arg(&args[1..]).query(con).unwrap()
}

fn setup(con: &mut Connection) {
    run(con, &[b"RLOCK.ACQUIRE", LOCK, b"a", b"60000"]);
    run(con, &[b"SET", &unlock_latch_key(LOCK, b"replayed"), b"1", b"PX", b"60000"]);
}

/// WATCH the keys, let `other` run `args`, then MULTI/EXEC: true when the
/// transaction ran (nothing was marked modified).
fn exec_survives(watcher: &mut Connection, other: &mut Connection, args: &[&[u8]]) -> bool {
    let _: () = redis::cmd("WATCH").arg(watched()).query(watcher).unwrap();
    run(other, args);
    let _: () = redis::cmd("MULTI").query(watcher).unwrap();
    let _: Value = redis::cmd("PING").query(watcher).unwrap();
    let exec: Value = redis::cmd("EXEC").query(watcher).unwrap();
    exec != Value::Nil
}

#[test]
fn no_op_commands_do_not_abort_watch() {
    let server = Server::shared();
    let (mut watcher, mut other) = (server.connection(), server.connection());
    setup(&mut other);
    for (what, args) in no_ops() {
        assert!(exec_survives(&mut watcher, &mut other, &args), "{what} aborted a WATCH transaction");
    }
    assert!(!exec_survives(&mut watcher, &mut other, &[b"RLOCK.RENEW", LOCK, b"a"]), "a renewal is a write");
}

/// Reads the watched keys, so that a change to them is announced.
fn track(tracker: &mut Tracker) {
    for key in watched() {
        tracker.send(&[b"EXISTS".as_slice(), &key]);
    }
    tracker.sync();
}

#[test]
fn no_op_commands_send_no_tracking_invalidation() {
    let server = Server::shared();
    let mut other = server.connection();
    setup(&mut other);
    let mut tracker = Tracker::connect(&server);
    for (what, args) in no_ops() {
        track(&mut tracker);
        run(&mut other, &args);
        let received = tracker.sync();
        assert!(!invalidated(&received), "{what} sent an invalidation: {}", received.escape_ascii());
    }
    track(&mut tracker);
    run(&mut other, &[b"RLOCK.RENEW", LOCK, b"a"]);
    assert!(invalidated(&tracker.sync()), "a renewal is a write and invalidates");
}
