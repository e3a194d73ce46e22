//! `RRW.ACQUIRE … WAIT` on a real server: refused callers block in arrival
//! order and are granted when the lock frees for their side (readers
//! together, a writer alone), by a release, a release that only changes
//! the mode, or a lease that runs out; a wait that runs out is told the
//! PTTL (-1 without expiry); a holder refused does not block; a resend
//! takes over its place, on its side only; `RRW.CANCEL` ends a wait; a
//! replica gets the grants' writes.

use redis::{Connection, RedisResult, Value};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};
use testkit::{eventually, rlock_info, Server, PATIENCE};

const LEASE: &str = "60000";

fn run(con: &mut Connection, args: &[&str]) -> RedisResult<Value> {
    redis::cmd(args[0]).arg(&args[1..]).query(con)
}

/// `owner` asks for `side` of `rw` with `WAIT wait_ms` (and `extra`), on a
/// connection of its own.
fn wait_for(server: &Server, owner: &str, side: &str, wait_ms: u64, extra: &[&str]) -> JoinHandle<RedisResult<Value>> {
    let mut con = server.connection();
    let mut call: Vec<String> =
        ["RRW.ACQUIRE", "rw", owner, side, LEASE, "WAIT", &wait_ms.to_string()].map(str::to_owned).to_vec();
    call.extend(extra.iter().map(|arg| arg.to_string()));
    thread::spawn(move || redis::cmd(&call[0]).arg(&call[1..]).query(&mut con))
}

/// Waits until `count` callers are blocked on the server.
fn until_blocked(con: &mut Connection, count: usize) {
    eventually(&format!("{count} callers blocked"), PATIENCE, || {
        redis::cmd("RLOCK.WAITERS").arg("rw").query::<Vec<Value>>(con).unwrap().len() == count
    });
}

fn granted(call: JoinHandle<RedisResult<Value>>) {
    assert_eq!(call.join().unwrap().unwrap(), Value::Nil, "granted");
}

#[test]
fn readers_are_granted_together_and_a_writer_after_them() {
    let server = Server::shared();
    let replica = Server::start();
    replica.replicate(&server);
    let mut con = server.connection();
    let grants_before = rlock_info(&mut con, "read_write_waiter_grants");
    run(&mut con, &["RRW.ACQUIRE", "rw", "w", "WRITE", LEASE]).unwrap();
    let r1 = wait_for(&server, "r1", "READ", 10_000, &[]);
    until_blocked(&mut con, 1);
    let r2 = wait_for(&server, "r2", "READ", 10_000, &[]);
    until_blocked(&mut con, 2);
    let w2 = wait_for(&server, "w2", "WRITE", 10_000, &[]);
    until_blocked(&mut con, 3);
    run(&mut con, &["RRW.RELEASE", "rw", "w", "WRITE"]).unwrap();
    granted(r1);
    granted(r2);
    until_blocked(&mut con, 1);
    run(&mut con, &["RRW.RELEASE", "rw", "r1", "READ"]).unwrap();
    run(&mut con, &["RRW.RELEASE", "rw", "r2", "READ"]).unwrap();
    granted(w2);
    let fields: Vec<String> = redis::cmd("HKEYS").arg("rw").query(&mut con).unwrap();
    assert!(fields.contains(&"w2:write".to_owned()), "{fields:?}");
    assert_eq!(rlock_info(&mut con, "read_write_waiter_grants"), grants_before + 3);
    // The grants were written by the server: the replica has them.
    let _: i64 = redis::cmd("WAIT").arg(1).arg(5000).query(&mut con).unwrap();
    let on_replica: Vec<String> = redis::cmd("HKEYS").arg("rw").query(&mut replica.connection()).unwrap();
    assert_eq!(on_replica, fields);
}

#[test]
fn a_writer_keeping_its_reads_lets_waiting_readers_in_at_once() {
    let server = Server::shared();
    let mut con = server.connection();
    run(&mut con, &["RRW.ACQUIRE", "rw", "w", "WRITE", LEASE]).unwrap();
    run(&mut con, &["RRW.ACQUIRE", "rw", "w", "READ", LEASE]).unwrap();
    let reader = wait_for(&server, "r", "READ", 30_000, &[]);
    until_blocked(&mut con, 1);
    let started = Instant::now();
    run(&mut con, &["RRW.RELEASE", "rw", "w", "WRITE"]).unwrap();
    granted(reader);
    assert!(started.elapsed() < Duration::from_secs(5), "told at the release, not at its wait's end");
}

#[test]
fn a_lease_that_runs_out_grants_and_a_wait_that_runs_out_is_told_the_pttl() {
    let server = Server::shared();
    let mut con = server.connection();
    let timeouts_before = rlock_info(&mut con, "read_write_wait_timeouts");
    run(&mut con, &["RRW.ACQUIRE", "rw", "w", "WRITE", "300"]).unwrap();
    let started = Instant::now();
    granted(wait_for(&server, "r", "READ", 10_000, &[]));
    assert!(started.elapsed() < Duration::from_secs(5), "granted at the lease's end");

    let reply = wait_for(&server, "w2", "WRITE", 100, &[]).join().unwrap().unwrap();
    assert!(matches!(reply, Value::Int(pttl) if pttl > 50_000), "the readers' PTTL: {reply:?}");
    let full = wait_for(&server, "w2", "WRITE", 100, &["REPLY", "FULL"]).join().unwrap().unwrap();
    let (granted, _, lease_ms, waited_ms) = testkit::full_reply(full);
    assert_eq!(granted, 0);
    assert!(lease_ms > 50_000 && waited_ms >= 100, "{lease_ms} {waited_ms}");
    assert_eq!(rlock_info(&mut con, "read_write_wait_timeouts"), timeouts_before + 2);
}

#[test]
fn a_wait_on_a_lock_without_expiry_is_told_minus_one_as_without_wait() {
    let server = Server::shared();
    let mut con = server.connection();
    run(&mut con, &["RRW.ACQUIRE", "rw", "r", "READ", LEASE]).unwrap();
    run(&mut con, &["PERSIST", "rw"]).unwrap();
    let refused = run(&mut con, &["RRW.ACQUIRE", "rw", "w", "WRITE", LEASE]).unwrap();
    let waited = wait_for(&server, "w", "WRITE", 100, &[]).join().unwrap().unwrap();
    assert_eq!((refused, waited), (Value::Int(-1), Value::Int(-1)));
    run(&mut con, &["RLOCK.ACQUIRE", "plain", "p", LEASE]).unwrap();
    run(&mut con, &["PERSIST", "plain"]).unwrap();
    let plain = run(&mut con, &["RLOCK.ACQUIRE", "plain", "q", LEASE, "WAIT", "100"]).unwrap();
    assert_eq!(plain, Value::Int(-1), "RLock's WAIT too");
}

#[test]
fn a_holder_refused_does_not_block() {
    let server = Server::shared();
    let mut con = server.connection();
    run(&mut con, &["RRW.ACQUIRE", "rw", "r", "READ", LEASE]).unwrap();
    // Readers may not upgrade: told at once, not blocked behind itself.
    let reply = run(&mut con, &["RRW.ACQUIRE", "rw", "r", "WRITE", LEASE, "WAIT", "30000"]).unwrap();
    assert!(matches!(reply, Value::Int(pttl) if pttl > 0), "{reply:?}");
    until_blocked(&mut con, 0);
}

#[test]
fn a_resend_takes_over_the_waiting_call_and_is_granted_once() {
    let server = Server::shared();
    let mut con = server.connection();
    run(&mut con, &["RRW.ACQUIRE", "rw", "w", "WRITE", LEASE]).unwrap();
    let first = wait_for(&server, "r", "READ", 30_000, &["ID", "req-1"]);
    until_blocked(&mut con, 1);
    let resend = wait_for(&server, "r", "READ", 30_000, &["ID", "req-1"]);
    let error = first.join().unwrap().expect_err("taken over");
    assert!(error.to_string().contains("resend"), "{error}");
    until_blocked(&mut con, 1);
    run(&mut con, &["RRW.RELEASE", "rw", "w", "WRITE"]).unwrap();
    granted(resend);
    // A third send of the request replays the grant: still one read hold.
    granted(wait_for(&server, "r", "READ", 30_000, &["ID", "req-1"]));
    let holds: i64 = redis::cmd("HGET").arg("rw").arg("r").query(&mut con).unwrap();
    assert_eq!(holds, 1);
}

#[test]
fn a_waiting_request_keeps_its_side_and_rrw_cancel_ends_it() {
    let server = Server::shared();
    let mut con = server.connection();
    run(&mut con, &["RRW.ACQUIRE", "rw", "w", "WRITE", LEASE]).unwrap();
    let waiting = wait_for(&server, "r", "READ", 30_000, &["ID", "req-1"]);
    until_blocked(&mut con, 1);
    let other_side = wait_for(&server, "r", "WRITE", 30_000, &["ID", "req-1"]).join().unwrap();
    assert!(error_of(other_side).contains("recorded for another owner or lock"));
    until_blocked(&mut con, 1);
    let cancel = |con: &mut Connection| run(con, &["RRW.CANCEL", "rw", "r", "req-1"]).unwrap();
    assert_eq!(cancel(&mut con), Value::Int(1));
    assert!(error_of(waiting.join().unwrap()).contains("cancelled"));
    assert_eq!(cancel(&mut con), Value::Int(0), "none waits now");
    until_blocked(&mut con, 0);
    run(&mut con, &["RRW.RELEASE", "rw", "w", "WRITE"]).unwrap();
    assert_eq!(run(&mut con, &["EXISTS", "rw"]).unwrap(), Value::Int(0), "nothing granted to the cancelled call");
}

fn error_of(reply: RedisResult<Value>) -> String {
    reply.expect_err("an error reply").to_string()
}
