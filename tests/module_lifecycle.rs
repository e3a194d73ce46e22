//! `MODULE UNLOAD` and `MODULE LOAD` at run time: refused while callers are
//! queued (blocked on the server, or a fair lock's queue the server
//! watches, or semaphore callers the lock-delay refused, until its end),
//! possible as soon as the last one is gone (no timer outlives its lock's
//! waiters, however long the lease); a load/unload/load cycle leaves a
//! working module; `MODULE LIST` shows the crate's version.

use redis::{Commands, Connection, RedisResult, Value};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use testkit::{error_text, eventually, listed_module, module_path, rlock_info, Server, PATIENCE};

/// Far shorter than any lease below (60 s): the unload must not wait for
/// a lease to run out.
const PROMPTLY: Duration = Duration::from_secs(3);

/// A server that allows `MODULE LOAD`/`UNLOAD`, and a connection to it.
fn started() -> (Server, Connection) {
    let server = Server::builder().config("enable-module-command", "yes").start();
    let con = server.connection();
    (server, con)
}

fn unload(con: &mut Connection) -> RedisResult<()> {
    redis::cmd("MODULE").arg("UNLOAD").arg("rlock").query(con)
}

/// Unloads the module, polling until the server allows it, within
/// [`PROMPTLY`]; returns how long that took.
fn unloads_promptly(con: &mut Connection) -> Duration {
    let started = Instant::now();
    let mut refusal = String::new();
    eventually("MODULE UNLOAD to succeed", PROMPTLY, || match unload(con) {
        Ok(()) => true,
        Err(err) => {
            refusal = err.to_string();
            false
        }
    });
    let took = started.elapsed();
    eprintln!("module_lifecycle: unloaded {took:?} after the last waiter went (last refusal: {refusal:?})");
    took
}

/// Refused, with the server's reason: `reason` is part of it.
fn unload_refused(con: &mut Connection, reason: &str) {
    let refusal = error_text(unload(con));
    assert!(refusal.contains(reason), "refused for another reason: {refusal}");
    assert!(listed_module(con, "rlock").is_some(), "still loaded");
}

/// Sends `args` on a connection of its own in a thread, and returns once
/// the server counts one more caller blocked. The thread replies the
/// call's reply, or its error as a simple string.
fn blocked_call(server: &Server, args: &[&str]) -> JoinHandle<Value> {
    let mut admin = server.connection();
    let before = rlock_info(&mut admin, "blocked");
    let mut con = server.connection();
    let command = redis::cmd(args[0]).arg(&args[1..]).clone();
    let handle = std::thread::spawn(move || {
        command.query(&mut con).unwrap_or_else(|err| Value::SimpleString(format!("failed: {err}")))
    });
    eventually("the caller blocked", PATIENCE, || rlock_info(&mut admin, "blocked") == before + 1);
    handle
}

fn call(con: &mut Connection, args: &[&str]) -> Value {
    redis::cmd(args[0]).arg(&args[1..]).query(con).unwrap()
}

/// A lock taken with `hold`, and a caller blocked on it with `wait`: the
/// unload is refused while it waits; `free` (replying 1) frees the lock,
/// and the caller is granted it.
fn blocked_then_granted(server: &Server, con: &mut Connection, [hold, wait, free]: [&[&str]; 3]) {
    call(con, hold);
    let waiter = blocked_call(server, wait);
    unload_refused(con, "blocked clients");
    assert_eq!(call(con, free), Value::Int(1));
    assert_eq!(waiter.join().unwrap(), Value::Nil, "granted");
}

#[test]
fn an_rlock_waiter_keeps_unload_refused_and_nothing_outlives_it() {
    let (server, mut con) = started();
    let hold: &[&str] = &["RLOCK.ACQUIRE", "k", "a", "60000"];
    let wait: &[&str] = &["RLOCK.ACQUIRE", "k", "b", "60000", "WAIT", "30000"];
    blocked_then_granted(&server, &mut con, [hold, wait, &["RLOCK.FORCERELEASE", "k"]]);
    assert_eq!(call(&mut con, &["RLOCK.RELEASE", "k", "b"]), Value::Int(1));
    unloads_promptly(&mut con);
}

#[test]
fn rlock_waiters_that_time_out_or_disconnect_leave_no_timer_behind() {
    let (server, mut con) = started();
    call(&mut con, &["RLOCK.ACQUIRE", "k", "a", "60000"]);
    let timed_out = blocked_call(&server, &["RLOCK.ACQUIRE", "k", "b", "60000", "WAIT", "200"]);
    assert!(matches!(timed_out.join().unwrap(), Value::Int(pttl) if pttl > 50_000), "the holder's PTTL");
    // A caller killed while it waits.
    let killed = blocked_call(&server, &["RLOCK.ACQUIRE", "k", "c", "60000", "WAIT", "30000"]);
    let _: i64 = redis::cmd("CLIENT").arg(&["KILL", "TYPE", "normal", "SKIPME", "yes"]).query(&mut con).unwrap();
    let killed = killed.join().unwrap();
    assert!(matches!(&killed, Value::SimpleString(text) if text.starts_with("failed")), "{killed:?}");
    eventually("nobody blocked", PATIENCE, || rlock_info(&mut con, "blocked") == 0);
    let _: i64 = redis::cmd("RLOCK.FORCERELEASE").arg("k").query(&mut con).unwrap();
    unloads_promptly(&mut con);
}

#[test]
fn a_read_write_waiter_keeps_unload_refused_and_nothing_outlives_it() {
    let (server, mut con) = started();
    let hold: &[&str] = &["RRW.ACQUIRE", "rw", "a", "WRITE", "60000"];
    let wait: &[&str] = &["RRW.ACQUIRE", "rw", "b", "READ", "60000", "WAIT", "30000"];
    blocked_then_granted(&server, &mut con, [hold, wait, &["RRW.RELEASE", "rw", "a", "WRITE"]]);
    assert_eq!(call(&mut con, &["RRW.RELEASE", "rw", "b", "READ"]), Value::Int(1));
    unloads_promptly(&mut con);
}

#[test]
fn fair_waiters_blocked_or_polling_keep_unload_refused_until_the_queue_empties() {
    let (server, mut con) = started();
    let hold: &[&str] = &["RFAIR.ACQUIRE", "f", "a", "60000"];
    let wait: &[&str] = &["RFAIR.ACQUIRE", "f", "b", "60000", "WAIT", "5000", "BLOCK", "30000"];
    blocked_then_granted(&server, &mut con, [hold, wait, &["RFAIR.RELEASE", "f", "a"]]);
    // A waiter that polls (no BLOCK): the server watches its place.
    assert!(matches!(call(&mut con, &["RFAIR.ACQUIRE", "f", "c", "60000", "WAIT", "60000"]), Value::Int(_)));
    unload_refused(&mut con, "timer");
    assert_eq!(call(&mut con, &["RFAIR.RELEASE", "f", "b"]), Value::Int(1));
    assert_eq!(call(&mut con, &["RFAIR.ACQUIRE", "f", "c", "60000", "WAIT", "60000"]), Value::Nil, "its turn");
    assert_eq!(call(&mut con, &["RFAIR.RELEASE", "f", "c"]), Value::Int(1));
    unloads_promptly(&mut con);
}

#[test]
fn a_semaphore_refused_by_the_lock_delay_holds_unload_only_until_the_delay_ends() {
    let delay = Duration::from_secs(5); // well past the server's start
    let server = Server::builder()
        .config("enable-module-command", "yes")
        .module_arg("lock-delay-ms")
        .module_arg(&delay.as_millis().to_string())
        .start();
    let mut con = server.connection();
    assert_eq!(call(&mut con, &["RSEM.TRYSETPERMITS", "s", "1"]), Value::Int(1));
    // Refused: its callers are woken at the delay's end (a timer).
    assert_eq!(call(&mut con, &["RSEM.TRYACQUIRE", "s"]), Value::Int(0));
    unload_refused(&mut con, "timer");
    eventually("the lock-delay's end", delay + PATIENCE, || rlock_info(&mut con, "lock_delay_left_ms") == 0);
    unloads_promptly(&mut con);
}

#[test]
fn a_load_unload_load_cycle_leaves_a_working_module() {
    let (server, mut con) = started();
    for _ in 0..2 {
        unloads_promptly(&mut con);
        let refused = error_text(redis::cmd("RLOCK.ACQUIRE").arg(&["k", "a", "60000"]).query::<Value>(&mut con));
        assert!(refused.contains("unknown command"), "unloaded: {refused}");
        let _: () = redis::cmd("MODULE").arg("LOAD").arg(module_path().to_str().unwrap()).query(&mut con).unwrap();
        // What needs the server's callbacks works again: a DEL (a keyspace
        // event) frees a blocked waiter at once.
        call(&mut con, &["RLOCK.ACQUIRE", "k", "a", "60000"]);
        let b = blocked_call(&server, &["RLOCK.ACQUIRE", "k", "b", "60000", "WAIT", "30000"]);
        let _: i64 = con.del("k").unwrap();
        assert_eq!(b.join().unwrap(), Value::Nil, "granted at the DEL");
        assert_eq!(call(&mut con, &["RLOCK.RELEASE", "k", "b"]), Value::Int(1));
    }
    unloads_promptly(&mut con);
}

#[test]
fn module_list_shows_the_crates_version() {
    let server = Server::start();
    let mut con = server.connection();
    let fields = listed_module(&mut con, "rlock").expect("rlock in MODULE LIST");
    let version = fields.iter().position(|field| field == "ver").map(|at| fields[at + 1].clone());
    let parts: Vec<u32> = env!("CARGO_PKG_VERSION").split('.').map(|part| part.parse().unwrap()).collect();
    let expected = parts[0] * 10_000 + parts[1] * 100 + parts[2];
    assert_eq!(version, Some(expected.to_string()), "MODULE LIST: {fields:?}");
}
