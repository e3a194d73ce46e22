//! `RLOCK.ACQUIRE … WAIT`: callers refused a lock block until it is granted
//! to them, in arrival order, at the moment it frees (release, force
//! release, DEL, overwrite, lease expiry), or their wait runs out; dead
//! waiters leave the queue at once; no blocking in MULTI, scripts or on a
//! replica; grants replicate as acquires.

mod blocking_support;

use blocking_support::{acquire, waiter, LONG_LEASE};
use redis::{Commands, Connection, Value};
use testkit::{error_text, eventually, rlock_info, Server, PATIENCE};

#[test]
fn thirty_two_waiters_get_the_lock_in_arrival_order() {
    let server = Server::shared();
    let mut con = server.connection();
    let granted = rlock_info(&mut con, "granted");
    assert_eq!(acquire(&mut con, "fifo", "holder", LONG_LEASE), Value::Nil);
    let waiters: Vec<_> = (0..32)
        .map(|n| {
            waiter(&server, "fifo", &format!("w{n}"), 10_000, move |con, reply| {
                assert_eq!(reply, Value::Nil, "granted");
                let _: i64 = con.rpush("order", n).unwrap();
                let released: i64 = redis::cmd("RLOCK.RELEASE").arg("fifo").arg(format!("w{n}")).query(con).unwrap();
                assert_eq!(released, 1);
            })
        })
        .collect();
    let _: i64 = redis::cmd("RLOCK.RELEASE").arg("fifo").arg("holder").query(&mut con).unwrap();
    waiters.into_iter().for_each(|w| w.join().unwrap());
    let order: Vec<i64> = con.lrange("order", 0, -1).unwrap();
    assert_eq!(order, (0..32).collect::<Vec<_>>());
    assert_eq!(rlock_info(&mut con, "granted") - granted, 32);
    assert_eq!(rlock_info(&mut con, "blocked"), 0);
    let exists: bool = con.exists("fifo").unwrap();
    assert!(!exists);
}

fn pexpiretime(con: &mut Connection, key: &str) -> i64 {
    redis::cmd("PEXPIRETIME").arg(key).query(con).unwrap()
}

#[test]
fn the_lock_is_granted_at_force_release_del_and_expiry_and_an_overwrite_refuses_the_waiter() {
    let server = Server::builder().config("enable-debug-command", "yes").start();
    let mut con = server.connection();
    let holds = |con: &mut Connection, owner: &str| -> Option<i64> { con.hget("k", owner).unwrap() };

    acquire(&mut con, "k", "a", LONG_LEASE);
    let b = waiter(&server, "k", "b", 10_000, |_, reply| reply);
    let _: i64 = redis::cmd("RLOCK.FORCERELEASE").arg("k").query(&mut con).unwrap();
    assert_eq!(b.join().unwrap(), Value::Nil);
    assert_eq!(holds(&mut con, "b"), Some(1));

    let c = waiter(&server, "k", "c", 10_000, |_, reply| reply);
    let _: i64 = con.del("k").unwrap();
    assert_eq!(c.join().unwrap(), Value::Nil);
    assert_eq!(holds(&mut con, "c"), Some(1));
    let pttl: i64 = con.pttl("k").unwrap();
    assert!(pttl > 50_000, "the waiter's own lease: {pttl}");

    // Expiry: granted at the lease's end, not at Redis's lazy or sampled
    // expiry: with the sampled one off and nobody touching the key, only
    // the module's timer grants within the wait, so a loaded machine's
    // lateness is allowed. The lease is cut once the waiter blocked.
    // Both times are the server's: the grant's is its expiry less the
    // waiter's lease (the waiter thread may be slow to read its reply).
    let _: () = redis::cmd("DEBUG").arg("SET-ACTIVE-EXPIRE").arg(0).query(&mut con).unwrap();
    let _: i64 = con.del("k").unwrap();
    acquire(&mut con, "k", "short", LONG_LEASE);
    let d = waiter(&server, "k", "d", 10_000, |_, reply| reply);
    let _: i64 = con.pexpire("k", 300).unwrap();
    let lease_end = pexpiretime(&mut con, "k");
    assert_eq!(d.join().unwrap(), Value::Nil);
    let granted_at = pexpiretime(&mut con, "k") - LONG_LEASE.parse::<i64>().unwrap();
    let late = granted_at - lease_end;
    eprintln!("blocking: granted {late} ms after the lease's end");
    assert!((0..=500).contains(&late), "granted {late} ms after the lease's end");

    // Overwritten with another type: the waiter gets an acquire's error.
    let e = waiter(&server, "k", "e", 10_000, |_, reply| reply);
    let _: () = con.set("k", "not a lock").unwrap();
    assert!(matches!(e.join().unwrap(), Value::SimpleString(text) if text.contains("WRONGTYPE")));
    let value: String = con.get("k").unwrap();
    assert_eq!(value, "not a lock", "other people's data is left alone");
}

#[test]
fn timed_out_disconnected_and_killed_waiters_leave_the_queue_at_once() {
    let server = Server::shared();
    let mut con = server.connection();
    let timeouts = rlock_info(&mut con, "wait_timeouts");
    acquire(&mut con, "k", "holder", LONG_LEASE);

    let timed_out = waiter(&server, "k", "t", 500, |_, reply| reply);
    match timed_out.join().unwrap() {
        Value::Int(pttl) => assert!(pttl > 50_000, "the holder's PTTL: {pttl}"),
        other => panic!("a wait that ran out replies the PTTL, not {other:?}"),
    }
    assert_eq!(rlock_info(&mut con, "wait_timeouts") - timeouts, 1);
    assert_eq!(rlock_info(&mut con, "blocked"), 0);

    // A waiter whose connection closes.
    let mut gone = server.connection();
    let acquire_waiting =
        redis::cmd("RLOCK.ACQUIRE").arg("k").arg("gone").arg(LONG_LEASE).arg("WAIT").arg(10_000).get_packed_command();
    gone.send_packed_command(&acquire_waiting).unwrap();
    eventually("it blocked", PATIENCE, || rlock_info(&mut con, "blocked") == 1);
    drop(gone);
    eventually("it left", PATIENCE, || rlock_info(&mut con, "blocked") == 0);

    // A killed waiter, then a live one: the release goes to the live one.
    let killed = waiter(&server, "k", "killed", 10_000, |_, reply| reply);
    let live = waiter(&server, "k", "live", 10_000, |_, reply| reply);
    let clients: String = redis::cmd("CLIENT").arg("LIST").query(&mut con).unwrap();
    let id = testkit::blocked_acquire_client_id(&clients).expect("a blocked client");
    let _: i64 = redis::cmd("CLIENT").arg("KILL").arg("ID").arg(&id).query(&mut con).unwrap();
    eventually("the killed waiter left", PATIENCE, || rlock_info(&mut con, "blocked") == 1);
    let _: i64 = redis::cmd("RLOCK.RELEASE").arg("k").arg("holder").query(&mut con).unwrap();
    assert_eq!(live.join().unwrap(), Value::Nil);
    assert!(matches!(killed.join().unwrap(), Value::SimpleString(_)), "the killed one saw its connection go");
    let holds: Option<i64> = con.hget("k", "live").unwrap();
    assert_eq!(holds, Some(1));
    let nobody: Option<i64> = con.hget("k", "killed").unwrap();
    assert_eq!(nobody, None);
}

#[test]
fn multi_scripts_and_replicas_do_not_block_and_bad_input_changes_nothing() {
    let server = Server::shared();
    let mut con = server.connection();
    acquire(&mut con, "k", "holder", LONG_LEASE);
    let (in_multi,): (i64,) = redis::pipe()
        .atomic()
        .cmd("RLOCK.ACQUIRE")
        .arg("k")
        .arg("b")
        .arg(1000)
        .arg("WAIT")
        .arg(10_000)
        .query(&mut con)
        .unwrap();
    assert!(in_multi > 50_000, "the PTTL at once: {in_multi}");
    let in_script: i64 = redis::cmd("EVAL")
        .arg("return redis.call('RLOCK.ACQUIRE', KEYS[1], 'b', 1000, 'WAIT', 10000)")
        .arg(1)
        .arg("k")
        .query(&mut con)
        .unwrap();
    assert!(in_script > 50_000);
    assert_eq!(rlock_info(&mut con, "blocked"), 0);

    for (args, names) in [
        (vec!["k", "b", "1000", "WAIT"], "WAIT"),
        (vec!["k", "b", "1000", "WAIT", "0"], "wait"),
        (vec!["k", "b", "1000", "WAIT", "-5"], "wait"),
        (vec!["k", "b", "1000", "WAIT", "soon"], "wait"),
        (vec!["k", "b", "WAIT", "100", "extra"], "WAIT"),
        (vec!["k", "b", "1000", "LATER", "100"], "WAIT"),
    ] {
        let err = error_text(redis::cmd("RLOCK.ACQUIRE").arg(&args).query::<Value>(&mut con));
        assert!(err.contains(names), "{args:?}: {err}");
    }
    let fields: Vec<String> = con.hkeys("k").unwrap();
    assert_eq!(fields, ["holder"]);

    let replica = Server::start();
    replica.replicate(&server);
    let mut on_replica = replica.connection();
    let refused = error_text(
        redis::cmd("RLOCK.ACQUIRE").arg("k").arg("b").arg(1000).arg("WAIT").arg(100).query::<Value>(&mut on_replica),
    );
    assert!(refused.contains("READONLY"), "{refused}");
}

#[test]
fn grants_replicate_as_acquires_to_a_replica_without_the_module_and_to_the_aof() {
    let mut primary = Server::builder().config("appendonly", "yes").config("appendfsync", "always").start();
    let replica = Server::builder().without_module().start();
    replica.replicate(&primary);
    let mut con = primary.connection();
    acquire(&mut con, "by-release", "a", LONG_LEASE);
    let granted = waiter(&primary, "by-release", "b", 10_000, |_, reply| reply);
    let _: i64 = redis::cmd("RLOCK.RELEASE").arg("by-release").arg("a").query(&mut con).unwrap();
    assert_eq!(granted.join().unwrap(), Value::Nil);
    acquire(&mut con, "by-expiry", "a", LONG_LEASE);
    let granted = waiter(&primary, "by-expiry", "b", 10_000, |_, reply| reply);
    let _: i64 = con.pexpire("by-expiry", 200).unwrap();
    assert_eq!(granted.join().unwrap(), Value::Nil);

    let state = |con: &mut Connection, key: &str| -> (Vec<(String, String)>, bool) {
        let fields: Vec<(String, String)> = con.hgetall(key).unwrap();
        let expire_at: i64 = redis::cmd("PEXPIRETIME").arg(key).query(con).unwrap();
        (fields, expire_at > 0)
    };
    let expected = (vec![("b".to_string(), "1".to_string())], true);
    let _: i64 = redis::cmd("WAIT").arg(1).arg(5000).query(&mut con).unwrap();
    let mut on_replica = replica.connection();
    for key in ["by-release", "by-expiry"] {
        assert_eq!(state(&mut on_replica, key), expected, "{key} on the replica");
        let on_primary: i64 = redis::cmd("PEXPIRETIME").arg(key).query(&mut con).unwrap();
        let replicated: i64 = redis::cmd("PEXPIRETIME").arg(key).query(&mut on_replica).unwrap();
        assert_eq!(replicated, on_primary, "{key}: the absolute expiry");
    }
    primary.restart();
    let mut con = primary.connection();
    for key in ["by-release", "by-expiry"] {
        assert_eq!(state(&mut con, key), expected, "{key} after an AOF restart");
    }
}

#[test]
fn sixteen_blocking_clients_never_hold_the_lock_together() {
    let server = Server::shared();
    let threads: Vec<_> = (0..16)
        .map(|n| {
            let mut con = server.connection();
            std::thread::spawn(move || {
                let owner = format!("t{n}");
                for _ in 0..50 {
                    let reply: Value = redis::cmd("RLOCK.ACQUIRE")
                        .arg("shared")
                        .arg(&owner)
                        .arg(LONG_LEASE)
                        .arg("WAIT")
                        .arg(30_000)
                        .query(&mut con)
                        .unwrap();
                    assert_eq!(reply, Value::Nil);
                    let inside: i64 = con.incr("inside", 1).unwrap();
                    assert_eq!(inside, 1, "two holders at once");
                    let counter: i64 = con.get::<_, Option<i64>>("counter").unwrap().unwrap_or(0);
                    let _: () = con.set("counter", counter + 1).unwrap();
                    let _: i64 = con.decr("inside", 1).unwrap();
                    let _: i64 = redis::cmd("RLOCK.RELEASE").arg("shared").arg(&owner).query(&mut con).unwrap();
                }
            })
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    let mut con = server.connection();
    let counter: i64 = con.get("counter").unwrap();
    assert_eq!(counter, 16 * 50);
    assert_eq!(rlock_info(&mut con, "blocked"), 0);
}

#[test]
fn locks_of_one_name_in_two_databases_are_two_locks_and_a_flush_grants() {
    let server = Server::shared();
    let mut db0 = server.connection();
    let mut db1 = server.connection();
    let _: () = redis::cmd("SELECT").arg(1).query(&mut db1).unwrap();
    acquire(&mut db0, "k", "holder", LONG_LEASE);
    acquire(&mut db1, "k", "holder", LONG_LEASE);
    let waiting = waiter(&server, "k", "w", 10_000, |_, reply| reply);
    let _: i64 = redis::cmd("RLOCK.RELEASE").arg("k").arg("holder").query(&mut db1).unwrap();
    let exists: bool = db1.exists("k").unwrap();
    assert!(!exists, "db 1's lock is free and nobody waits for it");
    assert_eq!(rlock_info(&mut db0, "blocked"), 1, "db 0's waiter still waits");
    let _: () = redis::cmd("FLUSHDB").query(&mut db0).unwrap();
    assert_eq!(waiting.join().unwrap(), Value::Nil, "a flush frees the lock");
    let holds: Option<i64> = db0.hget("k", "w").unwrap();
    assert_eq!(holds, Some(1));
}

#[test]
fn a_lock_renamed_away_is_granted_to_its_waiters() {
    let server = Server::shared();
    let mut con = server.connection();
    acquire(&mut con, "k", "holder", LONG_LEASE);
    let renamed = waiter(&server, "k", "a", 10_000, |_, reply| reply);
    let _: () = redis::cmd("RENAME").arg("k").arg("elsewhere").query(&mut con).unwrap();
    assert_eq!(renamed.join().unwrap(), Value::Nil);
    let holds: Option<i64> = con.hget("k", "a").unwrap();
    assert_eq!(holds, Some(1));
}
