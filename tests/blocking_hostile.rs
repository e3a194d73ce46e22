//! `RLOCK.ACQUIRE … WAIT` under operators' commands: a write pause, a
//! primary turned replica, SWAPDB, a shortened or removed lease, DELs in
//! transactions and scripts, flushes, DEBUG RELOAD and SLEEP, MODULE UNLOAD.

mod blocking_support;

use blocking_support::*;
use redis::{Commands, Connection, Value};
use std::time::Instant;
use testkit::{eventually, lease_end_ms, rlock_info, until_server_time_past, Server, PATIENCE};

/// CLIENT PAUSE WRITE (as FAILOVER does) while a lease ends under a waiter:
/// Redis keeps the logically expired key while paused, and the module's
/// lease timer grants (writes) into it.
#[test]
fn a_lease_ending_during_client_pause_write_does_not_crash_the_server() {
    for mode in ["WRITE", "ALL"] {
        let server = Server::shared();
        let mut con = server.connection();
        acquire(&mut con, "k", "holder", LONG_LEASE);
        let blocked = waiter(&server, "k", "w", 5_000, |con, reply| {
            in_step(con);
            reply
        });
        // The lease cut once the waiter blocked, to end 300 ms into the pause.
        let mut pause = redis::pipe();
        pause.pexpire("k", 300).ignore().cmd("CLIENT").arg("PAUSE").arg(1_000).arg(mode).ignore();
        let _: () = pause.query(&mut con).unwrap();
        let reply = blocked.join().unwrap();
        assert_no_crash(&server);
        assert_eq!(reply, Value::Nil, "{mode}: granted after the lease");
        let mut con = server.connection();
        let pttl: i64 = con.pttl("k").unwrap();
        let held = holders(&mut con, "k");
        assert_eq!(held, vec!["w"], "{mode}: w was replied nil (granted), but the lock is {held:?} with PTTL {pttl}");
        assert_eq!(rlock_info(&mut con, "blocked"), 0);
    }
}

/// MODULE UNLOAD with nobody waiting, but a lease timer still armed for a
/// lock whose waiters all timed out: the timer must not outlive the code.
#[test]
fn module_unload_with_an_armed_lease_timer_does_not_crash() {
    let server = debug_server();
    let mut con = server.connection();
    // A wait long enough to be seen blocked on a loaded machine, within the lease.
    acquire(&mut con, "k", "holder", "1500");
    let lease_end = lease_end_ms(&mut con, "k").expect("a lease");
    let w = waiter(&server, "k", "w", 300, |_, reply| reply);
    assert!(matches!(w.join().unwrap(), Value::Int(_)));
    assert_eq!(rlock_info(&mut con, "blocked"), 0);
    let unloaded: redis::RedisResult<String> = redis::cmd("MODULE").arg("UNLOAD").arg("rlock").query(&mut con);
    eprintln!("MODULE UNLOAD: {unloaded:?}");
    if unloaded.is_err() {
        return; // refused: nothing to attack
    }
    // Past the lease's end, where the timer fires.
    until_server_time_past(&mut con, lease_end);
    assert_no_crash(&server);
}

/// REPLICAOF host port with waiters blocked: each gets exactly one reply
/// (an error), nothing stays queued; promoted back, the queue works again.
#[test]
fn waiters_on_a_primary_turned_replica_get_one_error_and_leave() {
    let primary = Server::shared();
    let server = Server::shared();
    let mut con = server.connection();
    // A lease long enough for three waiters to block first on a loaded machine.
    acquire(&mut con, "k", "holder", "1500");
    let lease_end = lease_end_ms(&mut con, "k").expect("a lease");
    let waiters: Vec<_> = (0..3).map(|n| waiter(&server, "k", &format!("w{n}"), 5_000, |_, reply| reply)).collect();
    server.replicate(&primary);
    for w in waiters {
        let reply = w.join().unwrap();
        assert!(matches!(reply, Value::SimpleString(ref e) if e.contains("UNBLOCKED")), "{reply:?}");
    }
    let mut con = server.connection();
    assert_eq!(rlock_info(&mut con, "blocked"), 0);
    // The lease timer fires on the replica: nothing happens.
    until_server_time_past(&mut con, lease_end);
    assert_no_crash(&server);
    let _: () = redis::cmd("REPLICAOF").arg("NO").arg("ONE").query(&mut con).unwrap();
    acquire(&mut con, "k2", "holder", LONG_LEASE);
    let next = waiter(&server, "k2", "next", 5_000, |con, reply| {
        in_step(con);
        reply
    });
    assert_eq!(release(&mut con, "k2", "holder"), Value::Int(1));
    assert_eq!(next.join().unwrap(), Value::Nil);
    assert_eq!(holders(&mut con, "k2"), vec!["next"]);
    assert_no_crash(&server);
}

/// SWAPDB with a waiter: the lock it waits for (database 0, "k") is free
/// after the swap, and a plain acquire takes it at once.
#[test]
fn swapdb_frees_the_waited_lock_and_the_waiter_is_granted() {
    let server = Server::shared();
    let mut con = server.connection();
    acquire(&mut con, "k", "holder", LONG_LEASE);
    let w = waiter(&server, "k", "w", 2_000, |_, reply| reply);
    let _: () = redis::cmd("SWAPDB").arg(0).arg(1).query(&mut con).unwrap();
    let reply = w.join().unwrap();
    let mut con = server.connection();
    assert_eq!(rlock_info(&mut con, "blocked"), 0);
    assert_eq!(reply, Value::Nil, "the lock in database 0 was free for 2 s, yet the waiter timed out");
}

/// 100 000 volatile cache keys: Redis's sampled active expiry then takes
/// minutes to find one expired lock, as on any busy server.
fn busy_keyspace(con: &mut Connection) {
    let script = "for i = 1, 100000 do redis.call('SET', 'cache:' .. i, 'x', 'EX', 3600) end";
    let _: () = redis::cmd("EVAL").arg(script).arg(0).query(con).unwrap();
}

/// A holder's lease shortened under a waiter, by each way a holder can
/// shorten it: RLOCK.RENEW, a re-entry, a partial RLOCK.RELEASE (all with a
/// shorter lease), and Redisson's own PEXPIRE (its renewal and its unlock
/// of a re-entered lock). The lock frees at the new end; the waiter should
/// be granted then, as the table in docs/commands.md promises for "its
/// lease running out". The module's expiry timer stays at the old end.
#[test]
fn a_lease_shortened_under_a_waiter_is_granted_at_its_new_end() {
    let server = Server::shared();
    let mut con = server.connection();
    busy_keyspace(&mut con);
    let mut failures = vec![];
    for how in ["renew", "reenter", "partial-release", "pexpire"] {
        let key = format!("k-{how}");
        acquire(&mut con, &key, "holder", LONG_LEASE);
        if how == "partial-release" {
            acquire(&mut con, &key, "holder", LONG_LEASE);
        }
        let w = waiter(&server, &key, "w", 3_000, |con, reply| {
            in_step(con);
            reply
        });
        let started = Instant::now();
        match how {
            "renew" => assert_eq!(
                redis::cmd("RLOCK.RENEW").arg(&key).arg("holder").arg(100).query::<i64>(&mut con).unwrap(),
                1
            ),
            "reenter" => assert_eq!(acquire(&mut con, &key, "holder", "100"), Value::Nil),
            "partial-release" => {
                let r: i64 = redis::cmd("RLOCK.RELEASE").arg(&key).arg("holder").arg(100).query(&mut con).unwrap();
                assert_eq!(r, 0);
            }
            _ => assert_eq!(con.pexpire::<_, i64>(&key, 100).unwrap(), 1),
        }
        let reply = w.join().unwrap();
        if reply != Value::Nil {
            failures
                .push(format!("{how}: lock free after 100 ms, waiter replied {reply:?} after {:?}", started.elapsed()));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// PERSIST under a waiter, then a release: granted at the release.
#[test]
fn a_lease_made_persistent_then_released_is_granted() {
    let server = Server::shared();
    let mut con = server.connection();
    acquire(&mut con, "k", "holder", "1000");
    let w = waiter(&server, "k", "w", 5_000, |con, reply| {
        in_step(con);
        reply
    });
    let old_end = lease_end_ms(&mut con, "k").expect("a lease");
    let _: bool = con.persist("k").unwrap();
    until_server_time_past(&mut con, old_end); // the timer armed at the old end fires
    assert_eq!(holders(&mut con, "k"), vec!["holder"], "persisted: still held");
    assert_eq!(rlock_info(&mut con, "blocked"), 1);
    assert_eq!(release(&mut con, "k", "holder"), Value::Int(1));
    assert_eq!(w.join().unwrap(), Value::Nil);
    assert_eq!(holders(&mut con, "k"), vec!["w"]);
}

/// DEL in MULTI/EXEC and in a Lua script: the waiter is granted, once.
#[test]
fn del_in_multi_and_in_a_script_grants_the_waiter() {
    let server = Server::shared();
    let mut con = server.connection();
    for how in ["multi", "script"] {
        let key = format!("k-{how}");
        acquire(&mut con, &key, "holder", LONG_LEASE);
        let w = waiter(&server, &key, "w", 5_000, |con, reply| {
            in_step(con);
            reply
        });
        if how == "multi" {
            let _: Value = redis::pipe().atomic().del(&key).query(&mut con).unwrap();
        } else {
            let _: i64 =
                redis::cmd("EVAL").arg("return redis.call('DEL', KEYS[1])").arg(1).arg(&key).query(&mut con).unwrap();
        }
        assert_eq!(w.join().unwrap(), Value::Nil, "{how}");
        assert_eq!(holders(&mut con, &key), vec!["w"], "{how}");
    }
    assert_eq!(rlock_info(&mut con, "blocked"), 0);
}

/// FLUSHALL ASYNC and FLUSHDB ASYNC: waiters granted.
#[test]
fn flush_async_grants_waiters() {
    let server = Server::shared();
    let mut con = server.connection();
    for flush in ["FLUSHALL", "FLUSHDB"] {
        acquire(&mut con, "k", "holder", LONG_LEASE);
        let w = waiter(&server, "k", "w", 5_000, |con, reply| {
            in_step(con);
            reply
        });
        let _: () = redis::cmd(flush).arg("ASYNC").query(&mut con).unwrap();
        assert_eq!(w.join().unwrap(), Value::Nil, "{flush}");
        assert_eq!(holders(&mut con, "k"), vec!["w"], "{flush}");
        let _: () = redis::cmd("FLUSHALL").query(&mut con).unwrap();
    }
    assert_eq!(rlock_info(&mut con, "blocked"), 0);
}

/// DEBUG RELOAD under waiters: they keep waiting, the release grants.
#[test]
fn debug_reload_keeps_waiters_and_the_release_grants() {
    let server = debug_server();
    let mut con = server.connection();
    acquire(&mut con, "k", "holder", LONG_LEASE);
    let w = waiter(&server, "k", "w", 10_000, |con, reply| {
        in_step(con);
        reply
    });
    let _: () = redis::cmd("DEBUG").arg("RELOAD").query(&mut con).unwrap();
    assert_eq!(holders(&mut con, "k"), vec!["holder"]);
    assert_eq!(rlock_info(&mut con, "blocked"), 1);
    assert_eq!(release(&mut con, "k", "holder"), Value::Int(1));
    assert_eq!(w.join().unwrap(), Value::Nil);
    assert_eq!(holders(&mut con, "k"), vec!["w"]);
    assert_no_crash(&server);
}

/// DEBUG SLEEP past a lease and some waits: one grant, in time order.
#[test]
fn debug_sleep_past_lease_and_waits_settles_once() {
    let server = debug_server();
    let mut con = server.connection();
    acquire(&mut con, "k", "holder", LONG_LEASE);
    // w0's wait long enough to be seen blocked on a loaded machine; the
    // lease, cut once all wait, ends after it, within the stall.
    let waiters: Vec<_> = [500u64, 10_000, 10_000]
        .iter()
        .enumerate()
        .map(|(n, wait)| {
            waiter(&server, "k", &format!("w{n}"), *wait, |con, reply| {
                in_step(con);
                reply
            })
        })
        .collect();
    // (Apart from the stall: the grant check PEXPIRE schedules runs first.)
    let _: i64 = con.pexpire("k", 600).unwrap();
    let _: () = redis::cmd("DEBUG").arg("SLEEP").arg(1).query(&mut con).unwrap();
    eventually("a grant", PATIENCE, || holders(&mut con, "k").len() == 1);
    assert_eq!(holders(&mut con, "k"), vec!["w1"]);
    assert_eq!(release(&mut con, "k", "w1"), Value::Int(1));
    let replies: Vec<Value> = waiters.into_iter().map(|w| w.join().unwrap()).collect();
    assert!(matches!(replies[0], Value::Int(_)), "{replies:?}");
    assert_eq!(replies[1..], [Value::Nil, Value::Nil]);
    assert_eq!(holders(&mut con, "k"), vec!["w2"]);
}
