//! The server's own writes (a timer's grant to a caller blocked with
//! `WAIT`) are refused when Redis would refuse a client's: a primary with
//! fewer good replicas than `min-replicas-to-write`, or whose last save
//! failed (`stop-writes-on-bgsave-error`), grants nothing, and grants once
//! that is over. A primary cut off from its replicas would otherwise hand
//! out locks its replicas never see, which a promoted replica then grants
//! again.

use redis::Value;
use std::thread::JoinHandle;
use std::time::Duration;
use testkit::{eventually, info_field, Server};

fn good_replicas(con: &mut redis::Connection) -> Option<i64> {
    info_field(con, "replication", "min_slaves_good_slaves").and_then(|n| n.parse().ok())
}

/// A caller blocked with `WAIT` on lock `k`, held by another for 2 s.
fn blocked_waiter(primary: &Server, con: &mut redis::Connection) -> JoinHandle<redis::RedisResult<Value>> {
    let held: Value = redis::cmd("RLOCK.ACQUIRE").arg("k").arg("holder").arg(2000).query(con).unwrap();
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
        let clients: String = redis::cmd("CLIENT").arg("LIST").query(con).unwrap();
        clients.lines().any(|line| line.contains("cmd=rlock.acquire") && line.contains("flags=b"))
    });
    waiter
}

/// While a client's write is refused with `code`, the lease runs out and
/// the blocked caller is not granted.
fn not_granted_while_refused(con: &mut redis::Connection, waiter: &JoinHandle<redis::RedisResult<Value>>, code: &str) {
    let refused = redis::cmd("SET").arg("probe").arg("1").query::<Value>(con);
    assert!(refused.is_err_and(|e| e.code() == Some(code)), "a client's write is refused with {code}");
    eventually("the lease ran out", Duration::from_secs(5), || {
        redis::cmd("EXISTS").arg("k").query::<i64>(con).unwrap() == 0
    });
    // A refused attempt leaves no trace (Redis does not count a call it
    // refuses in script mode): several retries' time (every 100 ms) is
    // watched instead.
    std::thread::sleep(Duration::from_millis(400));
    let exists: i64 = redis::cmd("EXISTS").arg("k").query(con).unwrap();
    assert_eq!(exists, 0, "granted while a client's write was refused");
    assert!(!waiter.is_finished(), "the blocked caller was answered");
}

fn granted(con: &mut redis::Connection, waiter: JoinHandle<redis::RedisResult<Value>>) {
    let granted = waiter.join().unwrap().expect("the blocked caller's reply");
    assert_eq!(granted, Value::Nil, "granted once writes are taken again");
    let count: i64 = redis::cmd("HGET").arg("k").arg("waiter").query(con).unwrap();
    assert_eq!(count, 1);
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
    let waiter = blocked_waiter(&primary, &mut con);

    replica.kill();
    eventually("no good replica", Duration::from_secs(5), || good_replicas(&mut con) == Some(0));
    not_granted_while_refused(&mut con, &waiter, "NOREPLICAS");

    let replica = Server::shared();
    replica.replicate(&primary);
    granted(&mut con, waiter);
}

fn last_save(con: &mut redis::Connection, status: &str) -> bool {
    info_field(con, "persistence", "rdb_bgsave_in_progress").as_deref() == Some("0")
        && info_field(con, "persistence", "rdb_last_bgsave_status").as_deref() == Some(status)
}

#[test]
fn a_blocked_caller_is_granted_only_once_a_failed_save_succeeds_again() {
    let primary = Server::builder()
        .config("stop-writes-on-bgsave-error", "yes")
        // Only a server with save points refuses writes after a failed save.
        .config("save", "3600 1")
        .config("enable-protected-configs", "yes")
        .start();
    let mut con = primary.connection();
    let waiter = blocked_waiter(&primary, &mut con);

    // A save into a directory no file can be made in fails.
    let dir: Vec<String> = redis::cmd("CONFIG").arg("GET").arg("dir").query(&mut con).unwrap();
    let () = redis::cmd("CONFIG").arg("SET").arg("dir").arg("/proc").query(&mut con).unwrap();
    let _: Value = redis::cmd("BGSAVE").query(&mut con).unwrap();
    eventually("a failed save", Duration::from_secs(5), || last_save(&mut con, "err"));
    not_granted_while_refused(&mut con, &waiter, "MISCONF");

    let () = redis::cmd("CONFIG").arg("SET").arg("dir").arg(&dir[1]).query(&mut con).unwrap();
    let _: Value = redis::cmd("BGSAVE").query(&mut con).unwrap();
    granted(&mut con, waiter);
}
