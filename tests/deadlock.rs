//! Deadlock detection on a real server: a caller about to block
//! (`RLOCK.ACQUIRE … WAIT`, `RFAIR.ACQUIRE … BLOCK`) whose wait would close
//! a cycle of waits is told `DEADLOCK …` at once, naming the cycle, and
//! nothing is written; cycles of 2, 3 and 10 locks across connections,
//! re-entered holds, fair and read-write locks among them; none is reported in a
//! random workload that takes locks in one order; none with detection off.

use redis::{Connection, RedisResult, Value};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};
use testkit::{eventually, rlock_info, Rng, Server, PATIENCE};

const LEASE: &str = "60000";

fn run(con: &mut Connection, args: &[&str]) -> RedisResult<Value> {
    redis::cmd(args[0]).arg(&args[1..]).query(con)
}

/// `owner` waits for `lock` on a connection of its own: a plain lock's
/// `WAIT`, a fair lock's `BLOCK` when the name starts with `fair`, a
/// read-write lock's write side when it starts with `rw`.
fn wait_for(lock: &str, owner: &str, wait_ms: u64) -> Vec<String> {
    let wait = wait_ms.to_string();
    let call: Vec<&str> = match () {
        _ if lock.starts_with("fair") => vec!["RFAIR.ACQUIRE", lock, owner, LEASE, "WAIT", &wait, "BLOCK", &wait],
        _ if lock.starts_with("rw") => vec!["RRW.ACQUIRE", lock, owner, "WRITE", LEASE, "WAIT", &wait],
        _ => vec!["RLOCK.ACQUIRE", lock, owner, LEASE, "WAIT", &wait],
    };
    call.into_iter().map(str::to_owned).collect()
}

/// `owner` takes `lock` (or is refused): a plain or fair lock, or a
/// read-write lock's read side (a writer waiting for it is a cycle's step).
fn take<'a>(lock: &'a str, owner: &'a str) -> Vec<&'a str> {
    match () {
        _ if lock.starts_with("fair") => vec!["RFAIR.ACQUIRE", lock, owner, LEASE],
        _ if lock.starts_with("rw") => vec!["RRW.ACQUIRE", lock, owner, "READ", LEASE],
        _ => vec!["RLOCK.ACQUIRE", lock, owner, LEASE],
    }
}

fn spawn_call(server: &Server, call: Vec<String>) -> JoinHandle<RedisResult<Value>> {
    let mut con = server.connection();
    thread::spawn(move || redis::cmd(&call[0]).arg(&call[1..]).query(&mut con))
}

fn blocked(con: &mut Connection) -> usize {
    let waiters: Vec<Value> = redis::cmd("RLOCK.WAITERS").query(con).unwrap();
    waiters.len()
}

fn until_blocked(con: &mut Connection, count: usize) {
    eventually(&format!("{count} callers blocked"), PATIENCE, || blocked(con) >= count);
}

/// Owner `o{i}` holds `locks[i]` (twice when `reentered`); each but the
/// last waits for the next lock; the last one's wait for the first
/// closes the cycle: its error.
fn close_a_cycle(server: &Server, locks: &[&str], reentered: bool) -> String {
    let mut con = server.connection();
    for (i, lock) in locks.iter().enumerate() {
        for _ in 0..(1 + usize::from(reentered)) {
            run(&mut con, &take(lock, &format!("o{i}"))).unwrap();
        }
    }
    let n = locks.len();
    let waiting: Vec<_> =
        (0..n - 1).map(|i| spawn_call(server, wait_for(locks[i + 1], &format!("o{i}"), 30_000))).collect();
    until_blocked(&mut con, n - 1);
    let before = server_state(&mut con, locks[0]);
    let last = wait_for(locks[0], &format!("o{}", n - 1), 30_000);
    let started = Instant::now();
    let error = redis::cmd(&last[0]).arg(&last[1..]).query::<Value>(&mut con).expect_err("DEADLOCK");
    assert!(started.elapsed() < Duration::from_secs(5), "told at once, not at its wait's end");
    assert_eq!(server_state(&mut con, locks[0]), before, "nothing written");
    assert_eq!(blocked(&mut con), n - 1, "the others still wait");
    // Untangle: each holder lets go, so every waiter is granted.
    for lock in locks {
        let command = match () {
            _ if lock.starts_with("fair") => "RFAIR.FORCERELEASE",
            _ if lock.starts_with("rw") => "RRW.FORCERELEASE",
            _ => "RLOCK.FORCERELEASE",
        };
        run(&mut con, &[command, lock]).unwrap();
    }
    for call in waiting {
        call.join().unwrap().expect("granted once untangled");
    }
    error.to_string()
}

/// The lock's hash and, for a fair lock, its queue.
fn server_state(con: &mut Connection, lock: &str) -> (Value, Value) {
    let hash = run(con, &["HGETALL", lock]).unwrap();
    let queue = run(con, &["LRANGE", &format!("redisson_lock_queue:{{{lock}}}"), "0", "-1"]).unwrap();
    (hash, queue)
}

#[test]
fn cycles_of_two_three_and_ten_locks_are_told_at_once() {
    let server = Server::shared();
    let deadlocks = rlock_info(&mut server.connection(), "deadlocks");
    let ten: Vec<String> = (0..10).map(|i| if i % 3 == 0 { format!("fair{i}") } else { format!("l{i}") }).collect();
    let ten: Vec<&str> = ten.iter().map(String::as_str).collect();
    let cases: [(&[&str], bool); 6] = [
        (&["a", "b"], false),
        (&["c", "fair-d", "e"], false),
        (&ten, false),
        (&["f", "g"], true),
        (&["rw-h", "i"], false),
        (&["j", "rw-k", "fair-l"], true),
    ];
    for (locks, reentered) in cases {
        let error = close_a_cycle(&server, locks, reentered);
        assert!(error.contains("DEADLOCK"), "{error}");
        let last = locks.len() - 1;
        let first_step = format!("o{last} waits for {} held by o0", locks[0]);
        assert!(error.contains(&first_step), "{error}");
        for i in 0..last {
            assert!(error.contains(&format!("o{i} waits for {} held by o{}", locks[i + 1], i + 1)), "{error}");
        }
    }
    let mut con = server.connection();
    assert_eq!(rlock_info(&mut con, "deadlocks") - deadlocks, 6);
}

#[test]
fn with_detection_off_the_closing_wait_just_waits() {
    let server = Server::builder().module_arg("deadlock-detection").module_arg("no").start();
    let mut con = server.connection();
    run(&mut con, &["RLOCK.ACQUIRE", "a", "o0", LEASE]).unwrap();
    run(&mut con, &["RLOCK.ACQUIRE", "b", "o1", LEASE]).unwrap();
    let first = spawn_call(&server, wait_for("b", "o0", 30_000));
    until_blocked(&mut con, 1);
    let pttl = run(&mut con, &wait_for("a", "o1", 200).iter().map(String::as_str).collect::<Vec<_>>()).unwrap();
    assert!(matches!(pttl, Value::Int(ms) if ms > 0), "waited out its 200 ms: {pttl:?}");
    run(&mut con, &["RLOCK.FORCERELEASE", "b"]).unwrap();
    first.join().unwrap().unwrap();
}

/// 64 owners over 16 locks (plain, fair and read-write), each taking
/// locks in one order (a lower lock, then a higher one): waits form no
/// cycle, and none is reported.
#[test]
fn no_deadlock_is_reported_when_locks_are_taken_in_one_order() {
    let server = Server::shared();
    let mut rng = Rng::from_env("no_deadlock_is_reported_when_locks_are_taken_in_one_order");
    let mut con = server.connection();
    let deadlocks = rlock_info(&mut con, "deadlocks");
    let mut calls = Vec::new();
    for owner in 0..64u64 {
        let held = rng.below(15);
        let wanted = held + 1 + rng.below(15 - held);
        let owner = format!("w{owner}");
        // Plain, fair and read-write locks, in one order.
        let lock = |i: u64| ["k", "fair-k", "rw-k"][(i % 3) as usize].to_owned() + &i.to_string();
        // Taken, or held by another: either way it then waits for a higher lock.
        run(&mut con, &take(&lock(held), &owner)).unwrap();
        calls.push(spawn_call(&server, wait_for(&lock(wanted), &owner, 2_000)));
    }
    for call in calls {
        match call.join().unwrap() {
            Ok(_) => {}
            Err(error) => panic!("no cycle, but: {error}"),
        }
    }
    assert_eq!(rlock_info(&mut con, "deadlocks"), deadlocks, "no deadlock told");
}

/// A cycle through a key the caller may not read is not told to it: the
/// reply would name that key and its holders. It waits, as without
/// detection; a caller who may read every key is told.
#[test]
fn a_cycle_through_a_key_the_caller_may_not_read_is_not_told() {
    let server = Server::shared();
    let mut admin = server.connection();
    run(&mut admin, &["ACL", "SETUSER", "lim", "on", "nopass", "~pub:*", "&*", "+@all"]).unwrap();
    run(&mut admin, &["RLOCK.ACQUIRE", "secret:k", "p1", LEASE]).unwrap();
    run(&mut admin, &["RLOCK.ACQUIRE", "pub:b", "p2", LEASE]).unwrap();
    run(&mut admin, &["RLOCK.ACQUIRE", "pub:a", "u1", LEASE]).unwrap();
    let waiting: Vec<_> = [wait_for("pub:a", "p1", 30_000), wait_for("secret:k", "p2", 30_000)]
        .into_iter()
        .map(|call| spawn_call(&server, call))
        .collect();
    until_blocked(&mut admin, 2);
    let mut lim = server.connection();
    run(&mut lim, &["AUTH", "lim", "x"]).unwrap();
    let waited = run(&mut lim, &["RLOCK.ACQUIRE", "pub:b", "u1", LEASE, "WAIT", "200"]);
    assert!(matches!(waited, Ok(Value::Int(_))), "waited out its 200 ms, told nothing: {waited:?}");
    let told = run(&mut admin, &["RLOCK.ACQUIRE", "pub:b", "u1", LEASE, "WAIT", "200"]).unwrap_err();
    assert!(told.to_string().contains("p2 waits for secret:k held by p1"), "{told}");
    for lock in ["secret:k", "pub:b", "pub:a"] {
        run(&mut admin, &["RLOCK.FORCERELEASE", lock]).unwrap();
    }
    for call in waiting {
        call.join().unwrap().unwrap();
    }
}

/// A fair `BLOCK` resend of a request whose grant is recorded replays the
/// grant, even where a new wait would close a cycle.
#[test]
fn a_recorded_fair_grant_is_replayed_not_told_deadlock() {
    let server = Server::shared();
    let mut con = server.connection();
    let resend = ["RFAIR.ACQUIRE", "f2", "o1", LEASE, "WAIT", "30000", "BLOCK", "5000", "ID", "r1"];
    assert_eq!(run(&mut con, &resend).unwrap(), Value::Nil);
    run(&mut con, &["RFAIR.RELEASE", "f2", "o1"]).unwrap();
    run(&mut con, &["RFAIR.ACQUIRE", "f2", "o2", LEASE]).unwrap();
    run(&mut con, &["RFAIR.ACQUIRE", "f1", "o1", LEASE]).unwrap();
    let blocked = spawn_call(
        &server,
        ["RFAIR.ACQUIRE", "f1", "o2", LEASE, "WAIT", "30000", "BLOCK", "20000"].map(str::to_owned).to_vec(),
    );
    until_blocked(&mut con, 1);
    assert_eq!(run(&mut con, &resend).unwrap(), Value::Nil, "the recorded grant, replayed");
    for lock in ["f1", "f2"] {
        run(&mut con, &["RFAIR.FORCERELEASE", lock]).unwrap();
    }
    blocked.join().unwrap().unwrap();
}

/// A plain lock's owner may end with `:write`: it is not read as another
/// owner's write hold (only a read-write lock's field is).
#[test]
fn an_owner_ending_in_write_is_itself() {
    let server = Server::shared();
    let mut con = server.connection();
    run(&mut con, &["RLOCK.ACQUIRE", "a", "o1:write", LEASE]).unwrap();
    run(&mut con, &["RLOCK.ACQUIRE", "b", "o2", LEASE]).unwrap();
    let other = spawn_call(&server, wait_for("a", "o2", 30_000));
    until_blocked(&mut con, 1);
    let waited = run(&mut con, &wait_for("b", "o1", 100).iter().map(String::as_str).collect::<Vec<_>>());
    assert!(matches!(waited, Ok(Value::Int(ms)) if ms > 0), "o1 holds nothing: no cycle: {waited:?}");
    run(&mut con, &["RLOCK.FORCERELEASE", "a"]).unwrap();
    other.join().unwrap().unwrap();
}

/// A wait that ended (its time ran out, or its connection closed) is no
/// longer an edge: closing what would have been its cycle is no deadlock.
#[test]
fn waits_that_ended_close_no_cycle() {
    let server = Server::shared();
    let mut con = server.connection();
    for lock in ["a", "fair-a"] {
        // Someone else waits throughout, so the check has a graph to look at.
        run(&mut con, &["RLOCK.ACQUIRE", "z", "o8", LEASE]).unwrap();
        let other = spawn_call(&server, wait_for("z", "o9", 30_000));
        run(&mut con, &["RLOCK.ACQUIRE", "b", "o2", LEASE]).unwrap();
        let a_command = if lock.starts_with("fair") { "RFAIR.ACQUIRE" } else { "RLOCK.ACQUIRE" };
        run(&mut con, &[a_command, lock, "o1", LEASE]).unwrap();
        // o2 waits for `lock` and gives up; then a connection of o2's waits and leaves.
        until_blocked(&mut con, 1);
        spawn_call(&server, wait_for(lock, "o2", 100)).join().unwrap().unwrap();
        let mut leaving = server.connection();
        let call = wait_for(lock, "o2", 30_000);
        leaving.send_packed_command(&redis::cmd(&call[0]).arg(&call[1..]).get_packed_command()).unwrap();
        until_blocked(&mut con, 2);
        drop(leaving);
        eventually("the closed connection's wait ended", PATIENCE, || blocked(&mut con) <= 1);
        let pttl = run(&mut con, &wait_for("b", "o1", 100).iter().map(String::as_str).collect::<Vec<_>>());
        assert!(matches!(pttl, Ok(Value::Int(ms)) if ms > 0), "{lock}: waited, not told DEADLOCK: {pttl:?}");
        run(&mut con, &["FLUSHALL"]).unwrap();
        other.join().unwrap().unwrap();
        run(&mut con, &["FLUSHALL"]).unwrap();
    }
}
