//! `RLOCK.ACQUIRE … WAIT` under faults: a wait ends in exactly one way
//! (granted, run out, or its client gone), also when a stalled server
//! resumes with several of them due at once, when a server dies under its
//! waiters, and when someone tries `CLIENT UNBLOCK` on a waiter.

mod blocking_support;

use blocking_support::{acquire, waiter, LONG_LEASE};
use redis::{Commands, Value};
use std::time::Duration;
use testkit::{eventually, rlock_info, Server, PATIENCE};

/// A server stopped (SIGSTOP) past a lease's end and past some waits:
/// when it runs again, one waiter gets the lock, and only after every
/// waiter ahead of it has timed out (FIFO); a timed-out waiter holds
/// nothing; the next release goes to the next in line.
#[test]
fn a_stopped_server_grants_in_order_once_and_timed_out_waiters_hold_nothing() {
    let server = Server::shared();
    let mut con = server.connection();
    acquire(&mut con, "k", "holder", LONG_LEASE);
    // Waits long enough to be seen blocked on a loaded machine; the lease,
    // cut once all wait, ends after the two short ones, within the stall.
    let waits = [500, 600, 10_000, 10_000];
    let waiters: Vec<_> = waits
        .iter()
        .enumerate()
        .map(|(n, wait)| waiter(&server, "k", &format!("w{n}"), *wait, |_, reply| reply))
        .collect();
    let _: i64 = con.pexpire("k", 700).unwrap();
    server.pause();
    // The stall itself (a stopped server shows nothing): the lease and two waits pass.
    std::thread::sleep(Duration::from_secs(1));
    server.resume();
    let mut holders: Vec<String> = vec![];
    eventually("a grant of the expired lock", PATIENCE, || {
        holders = con.hkeys("k").unwrap();
        assert!(holders.len() <= 1, "one holder at most: {holders:?}");
        holders.len() == 1
    });
    let granted = holders.remove(0);
    let first: usize = granted[1..].parse().unwrap();
    let _: i64 = redis::cmd("RLOCK.RELEASE").arg("k").arg(&granted).query(&mut con).unwrap();
    let replies: Vec<Value> = waiters.into_iter().map(|w| w.join().unwrap()).collect();
    for (n, reply) in replies.iter().enumerate() {
        match n.cmp(&first) {
            std::cmp::Ordering::Less => assert!(matches!(reply, Value::Int(_)), "w{n} ahead timed out: {reply:?}"),
            std::cmp::Ordering::Equal => assert_eq!(reply, &Value::Nil, "w{n} was granted"),
            std::cmp::Ordering::Greater if n == first + 1 => assert_eq!(reply, &Value::Nil, "w{n} is next in line"),
            std::cmp::Ordering::Greater => assert!(matches!(reply, Value::Int(_)), "w{n} timed out: {reply:?}"),
        }
    }
    let holders: Vec<String> = con.hkeys("k").unwrap();
    assert_eq!(holders, vec![format!("w{}", first + 1)], "only the second grant holds");
    assert_eq!(rlock_info(&mut con, "blocked"), 0);
}

/// A server killed with waiters blocked: they see their connection fail;
/// the restarted server (AOF) has the holder only, and an empty queue.
#[test]
fn waiters_blocked_on_a_killed_server_see_it_fail_and_leave_no_trace() {
    let mut server = Server::builder().config("appendonly", "yes").config("appendfsync", "always").start();
    let mut con = server.connection();
    acquire(&mut con, "k", "holder", LONG_LEASE);
    let waiters: Vec<_> = (0..4).map(|n| waiter(&server, "k", &format!("w{n}"), 10_000, |_, reply| reply)).collect();
    server.restart();
    for waiter in waiters {
        assert!(matches!(waiter.join().unwrap(), Value::SimpleString(_)), "an error, not a grant");
    }
    let mut con = server.connection();
    let holders: Vec<String> = con.hkeys("k").unwrap();
    assert_eq!(holders, vec!["holder"]);
    assert_eq!(rlock_info(&mut con, "blocked"), 0);
    let next = waiter(&server, "k", "next", 10_000, |_, reply| reply);
    let _: i64 = redis::cmd("RLOCK.RELEASE").arg("k").arg("holder").query(&mut con).unwrap();
    assert_eq!(next.join().unwrap(), Value::Nil, "the new queue serves");
}

/// `CLIENT UNBLOCK` would race with a grant (processed after it in the same
/// turn, it leaves the granted caller with no reply at all), so it refuses
/// an `RLOCK.ACQUIRE … WAIT` caller: the wait goes on, and is granted.
#[test]
fn client_unblock_leaves_a_waiter_blocked_and_it_is_granted_later() {
    let server = Server::shared();
    let mut con = server.connection();
    acquire(&mut con, "k", "holder", LONG_LEASE);
    let blocked = waiter(&server, "k", "w", 10_000, |_, reply| reply);
    let list: String = redis::cmd("CLIENT").arg("LIST").query(&mut con).unwrap();
    let id = testkit::blocked_acquire_client_id(&list).expect("the waiter in CLIENT LIST");
    for how in ["TIMEOUT", "ERROR"] {
        let unblocked: i64 = redis::cmd("CLIENT").arg("UNBLOCK").arg(&id).arg(how).query(&mut con).unwrap();
        assert_eq!(unblocked, 0, "CLIENT UNBLOCK {how} refused");
    }
    assert_eq!(rlock_info(&mut con, "blocked"), 1, "still waiting");
    let _: i64 = redis::cmd("RLOCK.RELEASE").arg("k").arg("holder").query(&mut con).unwrap();
    assert_eq!(blocked.join().unwrap(), Value::Nil, "granted");
    let holders: Vec<String> = con.hkeys("k").unwrap();
    assert_eq!(holders, vec!["w"]);
}
