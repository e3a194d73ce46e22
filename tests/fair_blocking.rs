//! `RFAIR.ACQUIRE … WAIT w BLOCK b`: queued callers block until the fair
//! lock is granted to them in queue order, at the moment it frees (release,
//! force release, DEL, lease expiry) or when a head that did not come back
//! loses its turn; a killed blocked waiter leaves the queue at once; a
//! block that runs out replies 1 and keeps the place; Redisson's script
//! waiters in the same queue keep their turns; grants replicate. `REPLY
//! FULL` says what each call did, blocked or not.

mod blocking_support;
mod fair_support;

use fair_support::{blocked, blocked_with, fair_acquire, fair_release, queue, LONG, QUEUE};
use redis::{Commands, Connection, Value};
use std::time::{Duration, Instant};
use testkit::{error_text, eventually, full_reply, rlock_info, server_time_ms, FairScripts, Server, PATIENCE};

#[test]
fn sixteen_blocked_waiters_are_granted_in_queue_order_at_each_release() {
    let server = Server::shared();
    let mut con = server.connection();
    assert_eq!(fair_acquire(&mut con, "holder", LONG, None), Value::Nil);
    let waiters: Vec<_> = (0..16)
        .map(|n| {
            blocked(&server, &format!("w{n}"), (LONG, 5_000, 10_000), move |con, reply| {
                assert_eq!(reply, Value::Nil, "granted");
                let _: i64 = con.rpush("order", n).unwrap();
                assert_eq!(fair_release(con, &format!("w{n}")), Value::Int(1));
            })
        })
        .collect();
    assert_eq!(queue(&mut con).len(), 16);
    assert_eq!(fair_release(&mut con, "holder"), Value::Int(1));
    waiters.into_iter().for_each(|w| w.join().unwrap());
    let order: Vec<i64> = con.lrange("order", 0, -1).unwrap();
    assert_eq!(order, (0..16).collect::<Vec<_>>());
    assert_eq!(rlock_info(&mut con, "blocked"), 0);
    assert!(queue(&mut con).is_empty());
}

#[test]
fn a_blocked_head_is_granted_at_force_release_del_and_lease_expiry() {
    let server = Server::builder().config("enable-debug-command", "yes").shared();
    let mut con = server.connection();
    fair_acquire(&mut con, "a", LONG, None);
    let b = blocked(&server, "b", (LONG, 5_000, 10_000), |_, reply| reply);
    let _: i64 = redis::cmd("RFAIR.FORCERELEASE").arg("f").query(&mut con).unwrap();
    assert_eq!(b.join().unwrap(), Value::Nil);

    let c = blocked(&server, "c", (LONG, 5_000, 10_000), |_, reply| reply);
    let _: i64 = con.del("f").unwrap();
    assert_eq!(c.join().unwrap(), Value::Nil, "a DEL (a script's release) frees it");
    let holder: Option<i64> = con.hget("f", "c").unwrap();
    assert_eq!(holder, Some(1));

    // Without the server's active expiry only the module's timer can free
    // the lock within d's wait, so a loaded machine's lateness is allowed.
    let _: () = redis::cmd("DEBUG").arg("SET-ACTIVE-EXPIRE").arg(0).query(&mut con).unwrap();
    let _: i64 = con.pexpire("f", 300).unwrap();
    let expiry: i64 = redis::cmd("PEXPIRETIME").arg("f").query(&mut con).unwrap();
    let d = blocked(&server, "d", (LONG, 5_000, 10_000), |_, reply| reply);
    assert_eq!(d.join().unwrap(), Value::Nil);
    let granted_at: i64 = redis::cmd("PEXPIRETIME").arg("f").query(&mut con).unwrap();
    let late = granted_at - LONG - expiry;
    assert!((0..=1_000).contains(&late), "granted {late} ms after the lease ran out");
}

#[test]
fn a_head_that_does_not_come_back_loses_its_turn_to_the_blocked_waiter_behind() {
    let server = Server::shared();
    let mut con = server.connection();
    fair_acquire(&mut con, "a", LONG, None);
    // "gone" queues by polling, then never comes back.
    assert!(matches!(fair_acquire(&mut con, "gone", LONG, Some(400)), Value::Int(_)));
    let b = blocked(&server, "b", (LONG, 5_000, 10_000), |_, reply| (reply, Instant::now()));
    let released = Instant::now();
    fair_release(&mut con, "a");
    let (reply, granted) = b.join().unwrap();
    assert_eq!(reply, Value::Nil);
    let waited = granted - released;
    assert!(waited >= Duration::from_millis(390), "gone had its wait from the release: {waited:?}");
    assert!(waited < Duration::from_millis(2_500), "b was granted once gone's turn was over: {waited:?}");
}

#[test]
fn a_killed_blocked_waiter_leaves_the_queue_at_once() {
    let server = Server::shared();
    let mut con = server.connection();
    fair_acquire(&mut con, "a", LONG, None);
    let b = blocked(&server, "b", (LONG, 5_000, 10_000), |_, reply| reply);
    let c = blocked(&server, "c", (LONG, 5_000, 10_000), |_, reply| reply);
    assert_eq!(queue(&mut con), ["b", "c"]);
    let list: String = redis::cmd("CLIENT").arg("LIST").query(&mut con).unwrap();
    let first = list.lines().find(|line| line.contains("cmd=rfair.acquire")).expect("a blocked client");
    let id = first.split_whitespace().find_map(|field| field.strip_prefix("id=")).unwrap();
    let _: i64 = redis::cmd("CLIENT").arg("KILL").arg("ID").arg(id).query(&mut con).unwrap();
    eventually("the killed waiter left the queue", PATIENCE, || queue(&mut con).len() == 1);
    fair_release(&mut con, "a");
    let replies = [b.join().unwrap(), c.join().unwrap()];
    assert!(replies.contains(&Value::Nil), "the survivor was granted: {replies:?}");
    assert!(queue(&mut con).is_empty());
}

#[test]
fn a_block_that_runs_out_keeps_the_place_and_no_block_in_multi() {
    let server = Server::shared();
    let mut con = server.connection();
    fair_acquire(&mut con, "a", LONG, None);
    let b = blocked(&server, "b", (LONG, 5_000, 100), |_, reply| reply);
    assert_eq!(b.join().unwrap(), Value::Int(1), "still queued: ask again");
    assert_eq!(queue(&mut con), ["b"]);
    let (reply,): (Value,) = redis::pipe()
        .atomic()
        .cmd("RFAIR.ACQUIRE")
        .arg("f")
        .arg("b")
        .arg(LONG)
        .arg("WAIT")
        .arg(5_000)
        .arg("BLOCK")
        .arg(10_000)
        .query(&mut con)
        .unwrap();
    assert!(matches!(reply, Value::Int(hint) if hint > 0), "inside MULTI: the hint at once, {reply:?}");
}

#[test]
fn script_waiters_and_blocked_waiters_share_the_queue_in_order() {
    let server = Server::shared();
    let mut con = server.connection();
    let scripts = FairScripts::default();
    scripts.load(&mut con).unwrap();
    let now = |con: &mut Connection| server_time_ms(con);
    fair_acquire(&mut con, "a", LONG, None);
    let script_waiter = |con: &mut Connection, owner: &str| -> Value {
        let at = now(con);
        scripts.acquire(b"f", owner.as_bytes(), LONG, Some(5_000), at).query(con).unwrap()
    };
    assert!(matches!(script_waiter(&mut con, "java:1"), Value::Int(_)));
    let b = blocked(&server, "b", (LONG, 5_000, 10_000), |_, reply| reply);
    assert!(matches!(script_waiter(&mut con, "java:2"), Value::Int(_)));
    assert_eq!(queue(&mut con), ["java:1", "b", "java:2"]);
    // The native release tells the script's head; the blocked waiter waits.
    fair_release(&mut con, "a");
    assert_eq!(rlock_info(&mut con, "blocked"), 1);
    assert_eq!(script_waiter(&mut con, "java:2"), Value::Int(0), "java:2 is not next");
    assert_eq!(script_waiter(&mut con, "java:1"), Value::Nil, "java:1 takes its turn");
    // The script's release (a DEL) hands over to the blocked waiter.
    let at = now(&mut con);
    let released: i64 = scripts.release(b"f", b"java:1", LONG, b"r1", at).query(&mut con).unwrap();
    assert_eq!(released, 1);
    assert_eq!(b.join().unwrap(), Value::Nil);
    assert_eq!(queue(&mut con), ["java:2"]);
    fair_release(&mut con, "b");
    assert_eq!(script_waiter(&mut con, "java:2"), Value::Nil);
}

#[test]
fn a_grant_to_a_blocked_waiter_replicates() {
    let primary = Server::shared();
    let replica = Server::shared();
    replica.replicate(&primary);
    let mut con = primary.connection();
    fair_acquire(&mut con, "a", LONG, None);
    let b = blocked(&primary, "b", (LONG, 5_000, 10_000), |_, reply| reply);
    fair_release(&mut con, "a");
    assert_eq!(b.join().unwrap(), Value::Nil);
    let _: i64 = redis::cmd("WAIT").arg(1).arg(5_000).query(&mut con).unwrap();
    let mut replica_con = replica.connection();
    let holder: Option<i64> = replica_con.hget("f", "b").unwrap();
    assert_eq!(holder, Some(1));
    let queued: i64 = replica_con.exists(QUEUE).unwrap();
    assert_eq!(queued, 0);
    let primary_expiry: i64 = redis::cmd("PEXPIRETIME").arg("f").query(&mut con).unwrap();
    let replica_expiry: i64 = redis::cmd("PEXPIRETIME").arg("f").query(&mut replica_con).unwrap();
    assert_eq!(primary_expiry, replica_expiry, "absolute expiry");
}

#[test]
fn blocked_waiters_survive_attacks_on_their_lock() {
    let server = Server::builder().config("enable-debug-command", "yes").shared();
    let mut con = server.connection();
    // An overwrite: every blocked waiter gets the error an acquire would.
    fair_acquire(&mut con, "a", LONG, None);
    let b = blocked(&server, "b", (LONG, 5_000, 10_000), |_, reply| reply);
    let _: () = con.set("f", "text").unwrap();
    let reply = b.join().unwrap();
    assert!(format!("{reply:?}").contains("WRONGTYPE"), "{reply:?}");
    let _: i64 = con.del(&["f", QUEUE, "redisson_lock_timeout:{f}"]).unwrap();

    // A FLUSHALL: the waiter is no longer queued and is told to ask again.
    fair_acquire(&mut con, "a", LONG, None);
    let b = blocked(&server, "b", (LONG, 5_000, 10_000), |_, reply| reply);
    let _: () = redis::cmd("FLUSHALL").query(&mut con).unwrap();
    assert_eq!(b.join().unwrap(), Value::Int(1));

    // Writes paused while the lease runs out: granted once they resume.
    // The lease is set once b blocks, and ends within the pause sent with it.
    fair_acquire(&mut con, "a", LONG, None);
    let b = blocked(&server, "b", (LONG, 5_000, 10_000), |_, reply| reply);
    let mut pause = redis::pipe();
    pause.cmd("TIME").cmd("PEXPIRE").arg("f").arg(200).ignore().cmd("CLIENT").arg(&["PAUSE", "600", "WRITE"]).ignore();
    let ((seconds, micros),): ((i64, i64),) = pause.query(&mut con).unwrap();
    let paused_at = seconds * 1000 + micros / 1000;
    assert_eq!(b.join().unwrap(), Value::Nil);
    let granted_at = redis::cmd("PEXPIRETIME").arg("f").query::<i64>(&mut con).unwrap() - LONG;
    // (50 ms for the server's cached clock, which may time the pause.)
    assert!(granted_at >= paused_at + 550, "a grant {} ms into the 600 ms pause", granted_at - paused_at);
    // A stalled server: the grant comes after the stall, once.
    let c = blocked(&server, "c", (LONG, 5_000, 10_000), |_, reply| reply);
    let _: () = redis::cmd("PEXPIRE").arg("f").arg(100).query(&mut con).unwrap();
    let _: () = redis::cmd("DEBUG").arg("SLEEP").arg("0.3").query(&mut con).unwrap();
    assert_eq!(c.join().unwrap(), Value::Nil);
    let holders: Vec<String> = con.hkeys("f").unwrap();
    assert_eq!(holders, ["c"]);
    assert_eq!(rlock_info(&mut con, "blocked"), 0);
    blocking_support::assert_no_crash(&server);
}

#[test]
fn the_full_reply_says_what_each_call_did() {
    let server = Server::shared();
    let mut con = server.connection();
    let acquire = |con: &mut Connection, owner: &str, extra: &[&str]| -> (i64, i64, i64, i64) {
        let cmd = redis::cmd("RFAIR.ACQUIRE").arg("f").arg(owner).arg(LONG).arg(extra).arg("REPLY").arg("FULL").clone();
        full_reply(cmd.query(con).unwrap())
    };
    assert_eq!(acquire(&mut con, "a", &[]), (1, 1, LONG, 0), "taken");
    assert_eq!(acquire(&mut con, "a", &[]), (1, 2, LONG, 0), "re-entered");
    assert_eq!(acquire(&mut con, "b", &[]), (0, 0, 1, 0), "refused, not queued");
    let (granted, holds, hint_ms, _) = acquire(&mut con, "b", &["WAIT", "5000"]);
    assert_eq!((granted, holds), (0, 0), "queued");
    assert!(hint_ms >= 1, "the wait hint: {hint_ms}");
    assert_eq!(queue(&mut con).len(), 1);

    // A block that runs out: still queued, ask again.
    let (granted, holds, again, waited_ms) = acquire(&mut con, "b", &["WAIT", "5000", "BLOCK", "50"]);
    assert_eq!((granted, holds, again), (0, 0, 1));
    assert!(waited_ms >= 50, "blocked {waited_ms} ms");
    // A blocked grant: the whole lease, and how long the caller waited.
    let blocked_at = Instant::now();
    let grant = blocked_with(&server, "b", (LONG, 5_000, 10_000), &["REPLY", "FULL"], |_, reply| full_reply(reply));
    blocking_support::until_waited(&mut con, "f", 30);
    assert_eq!(fair_release(&mut con, "a"), Value::Int(0));
    assert_eq!(fair_release(&mut con, "a"), Value::Int(1));
    let (granted, holds, lease_ms, waited_ms) = grant.join().unwrap();
    assert_eq!((granted, holds, lease_ms), (1, 1, LONG));
    let most = blocked_at.elapsed().as_millis() as i64 + 1;
    assert!((30..=most).contains(&waited_ms), "waited {waited_ms} ms of at most {most}");

    for (extra, error) in [
        (vec!["REPLY"], "'REPLY' needs FULL"),
        (vec!["REPLY", "SHORT"], "unexpected argument 5 ('SHORT')"),
        (vec!["REPLY", "FULL", "WAIT", "10"], "then REPLY FULL"),
        (vec!["REPLY", "FULL", "REPLY", "FULL"], "unexpected argument 6 ('REPLY')"),
    ] {
        let reply = redis::cmd("RFAIR.ACQUIRE").arg("f").arg("c").arg(LONG).arg(&extra).query::<Value>(&mut con);
        assert!(error_text(reply).contains(error), "{extra:?}");
    }
}

/// A key clobbered under blocked waiters: each gets the error an acquire
/// would, and none keeps its place once the key is deleted: the next
/// caller takes the free lock at once instead of waiting out the
/// deadlines of callers who are not coming back.
#[test]
fn waiters_told_the_key_is_no_lock_leave_the_queue() {
    let server = Server::shared();
    let mut con = server.connection();
    assert_eq!(fair_acquire(&mut con, "a", LONG, None), Value::Nil);
    let waiters: Vec<_> =
        ["b", "c"].iter().map(|owner| blocked(&server, owner, (LONG, 5_000, 10_000), |_, reply| reply)).collect();
    let _: () = con.set("f", "clobbered").unwrap();
    for waiter in waiters {
        let reply = waiter.join().unwrap();
        assert!(matches!(&reply, Value::SimpleString(text) if text.starts_with("WRONGTYPE")), "{reply:?}");
    }
    let _: i64 = con.del("f").unwrap();
    assert_eq!(fair_acquire(&mut con, "d", LONG, Some(5_000)), Value::Nil, "the lock is free and nobody waits");
    assert!(queue(&mut con).is_empty());
    assert_eq!(rlock_info(&mut con, "blocked"), 0);
}
