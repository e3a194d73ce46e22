//! A stall of `rlock.stall-ms` or more (here `DEBUG SLEEP`; in production
//! a SIGSTOP, a VM pause, a slow command) starts the lock-delay again: a
//! failover may have replaced the server meanwhile, and the leases that
//! ran out during the stall may be held on the new primary. So a caller
//! blocked behind a lease that ran out during the stall is granted only
//! at the delay's new end, and a new acquire is refused until then.

use redis::{Cmd, Connection, Value};
use std::thread;
use std::time::Duration;
use testkit::{eventually, full_reply, info_field, rlock_info, server_time_ms, Server, PATIENCE};

const DELAY_MS: i64 = 1_000;

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
    eventually("the start's delay over", PATIENCE, || rlock_info(&mut con, "lock_delay_left_ms") == 0);
    (server, con)
}

/// Waits for a run of the server's cron that moves its LRU clock (whole
/// seconds, set by the cron alone): every run at hz 1, and at hz 100 the
/// first after a second's turn. Idle otherwise: no look at the delay.
fn until_cron(con: &mut Connection) {
    let lru_clock = |con: &mut Connection| info_field(con, "server", "lru_clock").expect("lru_clock");
    let before = lru_clock(con);
    eventually("a cron run", PATIENCE, || lru_clock(con) != before);
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
    eventually("the waiter blocked", PATIENCE, || rlock_info(&mut con, "blocked") == 1);

    // The holder's lease runs out while the server stands still.
    let renewed: i64 = redis::cmd("RLOCK.RENEW").arg("lock").arg("o9").arg(200).query(&mut holder).unwrap();
    assert_eq!(renewed, 1);
    stall(&mut holder, 800);
    let resumed_at = server_time_ms(&mut con);
    assert_eq!(rlock_info(&mut con, "stalls"), 1);
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
    assert_eq!(rlock_info(&mut con, "stalls"), 0);
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

/// The first cron after `CONFIG SET hz` (here 1 to 100) comes one old
/// period after the one before: that gap is no stall (it was, judged by
/// the new period, with the default `rlock.stall-ms` of 1000).
#[test]
fn raising_hz_is_not_a_stall() {
    let (_server, mut con) = server();
    let _: () = redis::cmd("CONFIG").arg("SET").arg("rlock.stall-ms").arg(1_000).query(&mut con).unwrap();
    let _: () = redis::cmd("CONFIG").arg("SET").arg("hz").arg(1).query(&mut con).unwrap();
    // A cron at hz 1: the next one comes a second after it.
    until_cron(&mut con);
    let _: () = redis::cmd("CONFIG").arg("SET").arg("hz").arg(100).query(&mut con).unwrap();
    // The first cron at hz 100, up to a second after the last at hz 1.
    until_cron(&mut con);
    assert_eq!(rlock_info(&mut con, "stalls"), 0, "no stall, only CONFIG SET hz");
    assert_eq!(acquire(&mut con, "a"), None, "granted");
}

/// A SIGSTOP of 1.5 s: an acquire sent during it, handled on resumption
/// before any cron runs, is refused with the new delay's rest; callers of
/// every kind blocked behind leases that ran out during it are granted at
/// the new delay's end; a semaphore refused then is woken at that end.
#[test]
fn after_a_sigstop_every_kind_waits_for_the_new_delay_end() {
    let (server, mut con) = server();
    let mut holder = server.connection();
    let _: i64 = redis::cmd("RSEM.TRYSETPERMITS").arg("sem").arg(5).query(&mut holder).unwrap();
    let _: Option<i64> = redis::cmd("RLOCK.ACQUIRE").arg("lock").arg("h").arg(300).query(&mut holder).unwrap();
    let _: Value = redis::cmd("RFAIR.ACQUIRE").arg("fair").arg("h").arg(300).query(&mut holder).unwrap();
    let _: Value = redis::cmd("RRW.ACQUIRE").arg("rw").arg("h").arg("WRITE").arg(300).query(&mut holder).unwrap();
    let mut rlock = redis::cmd("RLOCK.ACQUIRE");
    rlock.arg("lock").arg("o1").arg(60_000).arg("WAIT").arg(30_000).arg("REPLY").arg("FULL");
    let mut fair = redis::cmd("RFAIR.ACQUIRE");
    fair.arg("fair").arg("o1").arg(60_000).arg("WAIT").arg(30_000).arg("BLOCK").arg(30_000).arg("REPLY").arg("FULL");
    let mut rw = redis::cmd("RRW.ACQUIRE");
    rw.arg("rw").arg("o1").arg("WRITE").arg(60_000).arg("WAIT").arg(30_000).arg("REPLY").arg("FULL");
    let waiters = [rlock, fair, rw].map(|command: Cmd| {
        let mut con = server.connection();
        thread::spawn(move || {
            let reply: Value = command.query(&mut con).unwrap();
            (full_reply(reply), server_time_ms(&mut con))
        })
    });
    eventually("all blocked", PATIENCE, || rlock_info(&mut con, "blocked") == 3);
    let mut subscriber = server.connection();
    let mut pubsub = subscriber.as_pubsub();
    pubsub.subscribe("redisson_sc:{sem}").unwrap();

    let mut queued = server.connection();
    server.pause();
    let queued = thread::spawn(move || acquire(&mut queued, "free"));
    // The stall itself, time a stopped server cannot show.
    thread::sleep(Duration::from_millis(1_500));
    server.resume();
    let resumed_at = server_time_ms(&mut con);
    let refused = queued.join().unwrap().expect("refused: the delay started again");
    assert!(refused > DELAY_MS - 200 && refused <= DELAY_MS, "told the new delay's rest: {refused}");
    let permit: i64 = redis::cmd("RSEM.TRYACQUIRE").arg("sem").arg(1).query(&mut con).unwrap();
    assert_eq!(permit, 0, "no permit during the new delay");
    for (kind, waiter) in ["rlock", "fair", "read-write"].into_iter().zip(waiters) {
        let ((granted, holds, _, _), at) = waiter.join().unwrap();
        assert_eq!((granted, holds), (1, 1), "{kind}");
        assert!(at >= resumed_at + DELAY_MS - 200, "{kind} granted at {at}, resumed at {resumed_at}");
    }
    pubsub.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let message = pubsub.get_message().expect("a semaphore wake at the new delay end");
    assert_eq!(message.get_payload::<String>().unwrap(), "5");
    assert_eq!(rlock_info(&mut con, "stalls"), 1);
}
