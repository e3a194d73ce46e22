//! The server's own writes (a timer's grant to a caller blocked with
//! `WAIT`) are refused when Redis would refuse a client's: a primary with
//! fewer good replicas than `min-replicas-to-write` grants nothing, and
//! grants once a replica is back. A primary cut off from its replicas
//! would otherwise hand out locks its replicas never see, which a
//! promoted replica then grants again.

use redis::Value;
use std::time::Duration;
use testkit::{eventually, Server};

fn good_replicas(con: &mut redis::Connection) -> Option<i64> {
    let info: String = redis::cmd("INFO").arg("replication").query(con).unwrap();
    info.lines().find_map(|line| line.strip_prefix("min_slaves_good_slaves:")).and_then(|n| n.trim().parse().ok())
}

#[test]
fn a_blocked_caller_is_granted_only_while_the_primary_has_its_good_replicas() {
    let primary = Server::builder()
        .config("min-replicas-to-write", "1")
        .config("min-replicas-max-lag", "10")
        .config("repl-diskless-sync-delay", "0")
        .start();
    let mut replica = Server::start();
    replica.replicate(&primary);
    let mut con = primary.connection();
    eventually("a good replica", Duration::from_secs(5), || good_replicas(&mut con) == Some(1));

    let held: Value = redis::cmd("RLOCK.ACQUIRE").arg("k").arg("holder").arg(2000).query(&mut con).unwrap();
    assert_eq!(held, Value::Nil);
    let waiter = {
        let mut con = primary.connection();
        std::thread::spawn(move || {
            redis::cmd("RLOCK.ACQUIRE")
                .arg("k")
                .arg("waiter")
                .arg(30_000)
                .arg("WAIT")
                .arg(20_000)
                .query::<Value>(&mut con)
        })
    };
    eventually("the caller blocked", Duration::from_secs(5), || {
        let clients: String = redis::cmd("CLIENT").arg("LIST").query(&mut con).unwrap();
        clients.lines().any(|line| line.contains("cmd=rlock.acquire") && line.contains("flags=b"))
    });

    // The replica goes: a client's write is refused now.
    replica.kill();
    eventually("no good replica", Duration::from_secs(5), || good_replicas(&mut con) == Some(0));
    let refused = redis::cmd("SET").arg("probe").arg("1").query::<Value>(&mut con);
    assert!(refused.is_err_and(|e| e.code() == Some("NOREPLICAS")), "a client's write is refused");

    // The lease runs out: the blocked caller is not granted meanwhile.
    eventually("the lease ran out", Duration::from_secs(5), || {
        redis::cmd("EXISTS").arg("k").query::<i64>(&mut con).unwrap() == 0
    });
    // A refused attempt leaves no trace (Redis does not count a call it
    // refuses in script mode): several retries' time (every 100 ms) is
    // watched instead.
    std::thread::sleep(Duration::from_millis(400));
    let exists: i64 = redis::cmd("EXISTS").arg("k").query(&mut con).unwrap();
    assert_eq!(exists, 0, "granted while the primary had no good replica");
    assert!(!waiter.is_finished(), "the blocked caller was answered");

    // A replica again: the caller is granted.
    let replica = Server::start();
    replica.replicate(&primary);
    let granted = waiter.join().unwrap().expect("the blocked caller's reply");
    assert_eq!(granted, Value::Nil, "granted once a good replica is back");
    let count: i64 = redis::cmd("HGET").arg("k").arg("waiter").query(&mut con).unwrap();
    assert_eq!(count, 1);
}
