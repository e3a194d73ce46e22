//! A stall of `rlock.stall-ms` or more (here `DEBUG SLEEP`; in production
//! a SIGSTOP, a VM pause, a slow command) starts the lock-delay again: a
//! failover may have replaced the server meanwhile, and the leases that
//! ran out during the stall may be held on the new primary. So a caller
//! blocked behind a lease that ran out during the stall is granted only
//! at the delay's new end, and a new acquire is refused until then.

use redis::{Connection, Value};
use std::thread;
use std::time::Duration;
use testkit::{full_reply, server_time_ms, Server};

const DELAY_MS: i64 = 1_000;

fn info(con: &mut Connection, field: &str) -> i64 {
    let info: String = redis::cmd("INFO").arg("rlock").query(con).unwrap();
    let line = info.lines().find_map(|line| line.strip_prefix(&format!("rlock_{field}:")));
    line.unwrap_or_else(|| panic!("no {field} in {info}")).trim().parse().unwrap()
}

fn acquire(con: &mut Connection, name: &str) -> Option<i64> {
    redis::cmd("RLOCK.ACQUIRE").arg(name).arg("o9").arg(60_000).query(con).unwrap()
}

/// The server stalls for `ms` (answered once it is over).
fn stall(con: &mut Connection, ms: u64) {
    let _: () = redis::cmd("DEBUG").arg("SLEEP").arg(ms as f64 / 1000.0).query(con).unwrap();
}

/// A server with a lock-delay of [`DELAY_MS`] and `rlock.stall-ms 500`,
/// its start's delay over.
fn server() -> (Server, Connection) {
    let server = Server::builder()
        .module_arg("lock-delay-ms")
        .module_arg(&DELAY_MS.to_string())
        .module_arg("stall-ms")
        .module_arg("500")
        .config("enable-debug-command", "yes")
        .start();
    let mut con = server.connection();
    testkit::eventually("the start's delay over", Duration::from_secs(10), || {
        info(&mut con, "lock_delay_left_ms") == 0
    });
    (server, con)
}

#[test]
fn a_stall_starts_the_lock_delay_again_for_the_leases_that_ran_out_during_it() {
    let (server, mut con) = server();
    let mut holder = server.connection();
    assert_eq!(acquire(&mut holder, "lock"), None);
    let mut waiter = server.connection();
    let blocked = thread::spawn(move || {
        let mut command = redis::cmd("RLOCK.ACQUIRE");
        command.arg("lock").arg("o2").arg(60_000).arg("WAIT").arg(30_000).arg("REPLY").arg("FULL");
        let reply: Value = command.query(&mut waiter).unwrap();
        (full_reply(reply), server_time_ms(&mut waiter))
    });
    testkit::eventually("the waiter blocked", Duration::from_secs(10), || info(&mut con, "blocked") == 1);

    // The holder's lease runs out while the server stands still.
    let renewed: i64 = redis::cmd("RLOCK.RENEW").arg("lock").arg("o9").arg(200).query(&mut holder).unwrap();
    assert_eq!(renewed, 1);
    stall(&mut holder, 800);
    let resumed_at = server_time_ms(&mut con);
    assert_eq!(info(&mut con, "stalls"), 1);
    let refused = acquire(&mut con, "free").expect("refused: the delay started again");
    assert!(refused > 0 && refused <= DELAY_MS, "told the rest of the new delay: {refused}");

    let ((granted, holds, _, _), granted_at) = blocked.join().unwrap();
    assert_eq!((granted, holds), (1, 1));
    // The delay started when the server resumed, just before `resumed_at`.
    assert!(granted_at >= resumed_at + DELAY_MS - 100, "granted at {granted_at}, resumed at {resumed_at}");
    assert!(server.log().contains("the lock-delay starts again"), "the stall is logged");
}

#[test]
fn a_shorter_stall_or_stall_ms_0_changes_nothing() {
    let (_server, mut con) = server();
    stall(&mut con, 200);
    assert_eq!(acquire(&mut con, "a"), None, "granted after a stall below rlock.stall-ms");
    let _: () = redis::cmd("CONFIG").arg("SET").arg("rlock.stall-ms").arg(0).query(&mut con).unwrap();
    stall(&mut con, 800);
    assert_eq!(acquire(&mut con, "b"), None, "granted: stall-ms 0 never restarts the delay");
    assert_eq!(info(&mut con, "stalls"), 0);
}

/// Stalls are watched from the server's cron, not a timer of the module's
/// own, which would keep MODULE UNLOAD from unloading an idle module.
#[test]
fn watching_for_stalls_keeps_no_timer_that_would_block_module_unload() {
    let server = Server::builder().config("enable-module-command", "yes").start();
    let mut con = server.connection();
    let unloaded: String = redis::cmd("MODULE").arg("UNLOAD").arg("rlock").query(&mut con).unwrap();
    assert_eq!(unloaded, "OK");
}
