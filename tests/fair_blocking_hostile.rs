//! Attacks on the fair lock's blocking hand-off from a hostile review
//! (issue 20): each test is a failure it reproduced, fixed since.

mod fair_support;

use fair_support::{fair_acquire, queue, LONG};
use redis::{Commands, Connection, Value};
use std::thread::JoinHandle;
use std::time::Duration;
use testkit::{eventually, rlock_info, Server, PATIENCE};

/// A fair waiter blocked on `f`; the thread returns the reply.
fn blocked(server: &Server, owner: &str, times: (i64, i64, i64)) -> JoinHandle<Value> {
    fair_support::blocked(server, owner, times, |_, reply| reply)
}

/// Finding 1: another user's command ends every blocked waiter of the lock
/// with *its* ACL error. A user allowed the lock's name but not the derived
/// keys (refused itself, as documented) - or a user with every key but no
/// channel rights, whose own command succeeds - makes the server's look at
/// the queue run under that user's ACL; the error goes to all blocked
/// waiters of other users, who lose their wait.
#[test]
fn another_users_acl_error_ends_every_blocked_waiter() {
    let server = Server::shared();
    let mut con = server.connection();
    assert_eq!(fair_acquire(&mut con, "holder", LONG, None), Value::Nil);
    let a = blocked(&server, "a", (LONG, 5_000, 20_000));
    let b = blocked(&server, "b", (LONG, 5_000, 20_000));
    // Only the name: its own call is refused with NOPERM (fine) ...
    let mut intruder = server.login("intruder", &["~f"]);
    let reply = fair_acquire(&mut intruder, "intruder", 1_000, None);
    assert!(matches!(&reply, Value::SimpleString(text) if text.contains("NOPERM")), "{reply:?}");
    // ... and nothing happened to the others' waits (the server wrote that
    // reply after the command's look at the queue and its 0 ms timers).
    assert_eq!(rlock_info(&mut con, "blocked"), 2, "the blocked waiters were ended by another user's NOPERM");
    drop((a, b));
}

#[test]
fn a_user_without_channel_rights_ends_every_blocked_waiter_with_a_successful_command() {
    let server = Server::shared();
    let mut con = server.connection();
    assert_eq!(fair_acquire(&mut con, "holder", LONG, None), Value::Nil);
    let a = blocked(&server, "a", (LONG, 5_000, 20_000));
    // Every key, no channel: its own no-wait acquire succeeds (refused: 1).
    let mut app = server.login("app", &["~*"]);
    assert_eq!(fair_acquire(&mut app, "other", LONG, None), Value::Int(1));
    // Replied after the command's look at the queue and its 0 ms timers.
    let still_blocked = rlock_info(&mut con, "blocked");
    if still_blocked == 0 {
        let reply = a.join().unwrap();
        panic!("the blocked waiter got {reply:?} from another user's successful command");
    }
}

/// Finding 2: a blocked waiter is alive while it blocks, and the server is
/// to keep its deadline up, but a stall longer than its wait (here CLIENT
/// PAUSE ALL, as FAILOVER does, or DEBUG SLEEP / any slow command) lets its
/// deadline pass: the first command after the stall purges it as dead. A
/// caller that arrived later (during the stall) is granted first, and the
/// blocked waiter is told `1` ("still queued") though it is no longer
/// queued.
#[test]
fn a_stall_longer_than_the_wait_drops_live_blocked_waiters_and_a_later_caller_overtakes() {
    let server = Server::shared();
    let mut con = server.connection();
    assert_eq!(fair_acquire(&mut con, "holder", 300, None), Value::Nil);
    let first = blocked(&server, "first", (LONG, 300, 5_000));
    let _: () = redis::cmd("CLIENT").arg("PAUSE").arg(1_000).arg("ALL").query(&mut con).unwrap();
    // A later caller, postponed by the pause, runs at its end.
    let mut later = server.connection();
    let later = std::thread::spawn(move || fair_acquire(&mut later, "later", LONG, Some(300)));
    let later = later.join().unwrap();
    let first = first.join().unwrap();
    let holder: Vec<String> = con.hkeys("f").unwrap();
    assert_eq!(
        (first.clone(), holder.clone()),
        (Value::Nil, vec!["first".to_string()]),
        "first (blocked all along) got {first:?}, later got {later:?}, the lock is held by {holder:?}, queue {:?}",
        queue(&mut con)
    );
}

#[test]
fn debug_sleep_drops_live_blocked_waiters_and_a_newcomer_takes_the_lock() {
    let server = Server::builder().config("enable-debug-command", "yes").shared();
    let mut con = server.connection();
    assert_eq!(fair_acquire(&mut con, "holder", LONG, None), Value::Nil);
    let a = blocked(&server, "a", (LONG, 200, 10_000));
    let b = blocked(&server, "b", (LONG, 200, 10_000));
    // The lease ends within the stall (set only now: a loaded machine may
    // take long to block the waiters).
    let _: bool = con.pexpire("f", 300).unwrap();
    // Sent with the stall, behind it: it runs first thing after the stall.
    let (newcomer,): (Value,) = redis::pipe()
        .cmd("DEBUG")
        .arg("SLEEP")
        .arg(1)
        .ignore()
        .cmd("RFAIR.ACQUIRE")
        .arg("f")
        .arg("newcomer")
        .arg(LONG)
        .query(&mut con)
        .unwrap();
    let (a, b) = (a.join().unwrap(), b.join().unwrap());
    let queued = queue(&mut con);
    assert_eq!(
        newcomer,
        Value::Int(1),
        "a newcomer took the lock ahead of 2 blocked waiters; they got {a:?} and {b:?} (\"still queued\"), queue {queued:?}"
    );
}

fn status_position(con: &mut Connection, owner: &str) -> i64 {
    let fields: Vec<Value> = redis::cmd("RFAIR.STATUS").arg("f").arg(owner).query(con).unwrap();
    let at = fields.iter().position(|field| matches!(field, Value::BulkString(b) if b == b"position")).unwrap();
    match &fields[at + 1] {
        Value::Int(position) => *position,
        other => panic!("position: {other:?}"),
    }
}

/// Finding 3: the head's deadline jumps when it polls after the holder's
/// lease was extended (watchdog renewal, re-entry with a longer lease):
/// heartbeat = lease end + its wait. The waiters behind keep the deadline
/// chained after the head's *old* one until their next poll (up to half
/// their wait later). An early release in that window moves every
/// deadline by (now + head's wait - head's deadline), which is the whole
/// extension: the waiters behind land in the past and are purged while
/// live. A newcomer then queues ahead of them.
#[test]
fn an_early_release_after_a_lease_extension_purges_live_pubsub_waiters() {
    let server = Server::shared();
    let mut con = server.connection();
    assert_eq!(fair_acquire(&mut con, "holder", 1_000, None), Value::Nil);
    assert!(matches!(fair_acquire(&mut con, "a", LONG, Some(500)), Value::Int(_)));
    // b is told to poll again in at most 250 ms (half its wait).
    let Value::Int(hint_b) = fair_acquire(&mut con, "b", LONG, Some(500)) else { panic!() };
    assert!(hint_b <= 250);
    // The holder's watchdog extends the lease; the head polls and is kept
    // alive until after the new lease.
    let _: Value = redis::cmd("RFAIR.RENEW").arg("f").arg("holder").arg(10_000).query(&mut con).unwrap();
    assert!(matches!(fair_acquire(&mut con, "a", LONG, Some(500)), Value::Int(_)));
    // The holder finishes early, well within b's hint.
    assert_eq!(redis::cmd("RFAIR.RELEASE").arg("f").arg("holder").query::<Value>(&mut con).unwrap(), Value::Int(1));
    let position = status_position(&mut con, "b");
    // A newcomer, then b polls back on time (0 ms into its 250 ms hint).
    fair_acquire(&mut con, "newcomer", LONG, Some(500));
    fair_acquire(&mut con, "b", LONG, Some(500));
    assert_eq!(
        (position, queue(&mut con)),
        (2, vec!["a".to_string(), "b".to_string(), "newcomer".to_string()]),
        "live waiter b was purged by the release (its position right after it: {position})"
    );
}

/// Finding 4: in a queue mixed with Redisson's script waiters, a native
/// waiter that polls on time is purged when a script waiter ahead of it,
/// with a longer wait, takes its turn late (but within its own wait): the
/// script takes the taker's wait off every deadline, which puts the native
/// waiter's in the past. The native waiter behind it (a longer wait)
/// survives, so the native order breaks.
#[test]
fn a_script_waiter_taking_its_turn_late_purges_a_live_native_waiter_behind_it() {
    use testkit::{server_time_ms, FairScripts};
    let server = Server::shared();
    let mut con = server.connection();
    let scripts = FairScripts::default();
    scripts.load(&mut con).unwrap();
    assert_eq!(fair_acquire(&mut con, "holder", 300, None), Value::Nil);
    let at = server_time_ms(&mut con);
    let java: Value = scripts.acquire(b"f", b"java:1", LONG, Some(3_000), at).query(&mut con).unwrap();
    assert!(matches!(java, Value::Int(_)));
    assert!(matches!(fair_acquire(&mut con, "b", LONG, Some(600)), Value::Int(_)));
    assert!(matches!(fair_acquire(&mut con, "c", LONG, Some(5_000)), Value::Int(_)));
    // b and c poll back at their hints (at most half their waits); the
    // lease ends at 300 ms; the Java waiter comes back at 1 s, 700 ms after
    // its turn came, well within its 3 s wait.
    let started = std::time::Instant::now();
    let mut java_took = false;
    // (The Java waiter always takes its turn, also when a loaded machine
    // stretches the loop past its end.)
    while !java_took || started.elapsed() < Duration::from_millis(1_600) {
        // (Polling every 50 ms, far more often than their hints ask: the
        // clients' own pace is the scenario, there is no event to wait on.)
        assert!(matches!(fair_acquire(&mut con, "b", LONG, Some(600)), Value::Int(_)));
        assert!(matches!(fair_acquire(&mut con, "c", LONG, Some(5_000)), Value::Int(_)));
        if !java_took && started.elapsed() >= Duration::from_millis(1_000) {
            let at = server_time_ms(&mut con);
            let took: Value = scripts.acquire(b"f", b"java:1", LONG, Some(3_000), at).query(&mut con).unwrap();
            assert_eq!(took, Value::Nil, "the Java waiter takes its turn");
            java_took = true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(queue(&mut con), vec!["b".to_string(), "c".to_string()], "b polled every 50 ms yet lost its place");
}

/// Whether `CLIENT LIST` no longer shows client `id` (its disconnect handled).
fn client_gone(con: &mut Connection, id: i64) -> bool {
    redis::cmd("CLIENT").arg("LIST").arg("ID").arg(id).query::<String>(con).unwrap().trim().is_empty()
}

/// The server's `used_memory` once nothing waits to be freed: a FLUSHALL
/// frees in a background thread where `lazyfree-lazy-user-flush` is on
/// (Valkey's default), and what it has not freed yet still counts.
fn used_memory(con: &mut Connection) -> i64 {
    let field = |con: &mut Connection, name: &str| -> i64 {
        let info: String = redis::cmd("INFO").arg("memory").query(con).unwrap();
        let prefix = format!("{name}:");
        info.lines()
            .find_map(|line| line.strip_prefix(prefix.as_str()))
            .map_or(0, |value| value.trim().parse().unwrap())
    };
    eventually("nothing left to free", PATIENCE, || field(con, "lazyfree_pending_objects") == 0);
    field(con, "used_memory")
}

/// Finding 5: the server's memory of native waits (owner -> wait_ms, per
/// lock) outlives the data: a lock whose queued (pub/sub) waiters never
/// come back keeps its entry until a command touches that lock again; a
/// FLUSHALL (or DEL of the keys) leaves every entry behind. Many names
/// grow the module's memory without bound (about 450 bytes per lock).
#[test]
fn the_memory_of_waits_survives_flushall_and_grows_with_every_name() {
    let server = Server::shared();
    let mut con = server.connection();
    let round = |con: &mut Connection, round: usize| {
        let mut pipe = redis::pipe();
        for n in 0..10_000 {
            let name = format!("r{round}:{n}");
            pipe.cmd("RFAIR.ACQUIRE").arg(&name).arg("holder").arg(LONG).ignore();
            pipe.cmd("RFAIR.ACQUIRE")
                .arg(&name)
                .arg("waiter-0123456789abcdef:1")
                .arg(LONG)
                .arg("WAIT")
                .arg(1_000)
                .ignore();
        }
        let _: () = pipe.query(con).unwrap();
        let _: () = redis::cmd("FLUSHALL").query(con).unwrap();
    };
    round(&mut con, 0);
    let before = used_memory(&mut con);
    for n in 1..=3 {
        round(&mut con, n);
    }
    let grown = used_memory(&mut con) - before;
    assert!(grown < 1_000_000, "after 3 x (10,000 locks, FLUSHALL) the empty server holds {grown} more bytes");
}

/// Finding 6 (low): an owner blocked on two connections (a8b0f22 made
/// that grant once); one connection is killed (a cancelled call: the
/// client kills it). The give-up takes the owner out of the queue though
/// its other call still blocks: that call is told 1 ("still queued") while
/// it is not, and its owner's place goes to the waiter behind.
#[test]
fn killing_one_of_two_blocked_calls_of_an_owner_gives_up_the_place_of_the_other() {
    let server = Server::shared();
    let mut con = server.connection();
    assert_eq!(fair_acquire(&mut con, "holder", LONG, None), Value::Nil);
    let mut killed = server.connection();
    let killed_id: i64 = redis::cmd("CLIENT").arg("ID").query(&mut killed).unwrap();
    let before = rlock_info(&mut con, "blocked");
    let first = std::thread::spawn(move || {
        redis::cmd("RFAIR.ACQUIRE")
            .arg("f")
            .arg("x")
            .arg(LONG)
            .arg("WAIT")
            .arg(5_000)
            .arg("BLOCK")
            .arg(20_000)
            .query::<Value>(&mut killed)
    });
    eventually("blocked", PATIENCE, || rlock_info(&mut con, "blocked") == before + 1);
    let _y = blocked(&server, "y", (LONG, 5_000, 20_000));
    let second = blocked(&server, "x", (LONG, 5_000, 20_000));
    let _: Value = redis::cmd("CLIENT").arg("KILL").arg("ID").arg(killed_id).query(&mut con).unwrap();
    assert!(first.join().unwrap().is_err());
    eventually("the killed call gone", PATIENCE, || client_gone(&mut con, killed_id));
    let queued = queue(&mut con);
    if rlock_info(&mut con, "blocked") == 1 {
        let reply = second.join().unwrap();
        panic!("x's other call got {reply:?} and x is out of the queue: {queued:?}");
    }
    assert_eq!(queued, vec!["x".to_string(), "y".to_string()]);
}
