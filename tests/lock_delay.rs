//! Lock-delay (`rlock.lock-delay-ms`): for the first moments of a term (a
//! start, a restart, a promotion) nothing is granted to a new holder, of
//! any kind, and no holder re-enters (the server cannot tell a hold from
//! one whose release the old primary took); a refusal looks like
//! contention ending with the delay; the holders the server has renew and
//! release; callers blocked
//! meanwhile are granted at its end, and Redisson's semaphore waiters are
//! woken then.

use redis::{Commands, Connection, Value};
use std::thread;
use testkit::{eventually, full_reply, rlock_info, server_time_ms, Server, PATIENCE};

const LONG: i64 = 600_000;
const LEASE: i64 = 60_000;

fn set_delay(con: &mut Connection, delay_ms: i64) {
    let _: () = redis::cmd("CONFIG").arg("SET").arg("rlock.lock-delay-ms").arg(delay_ms).query(con).unwrap();
}

fn acquire(con: &mut Connection, name: &str, owner: &str) -> Option<i64> {
    redis::cmd("RLOCK.ACQUIRE").arg(name).arg(owner).arg(LEASE).query(con).unwrap()
}

/// An acquire's full reply: granted, holds, lease_ms, waited_ms.
type FullReply = (i64, i64, i64, i64);

/// An RLock `WAIT` and a fair `BLOCK` acquire of `o1`, each waiting up
/// to `wait_ms` on a connection of its own: their full replies, and the
/// server's time when each came.
fn blocked_acquires(server: &Server, wait_ms: i64) -> [thread::JoinHandle<(FullReply, i64)>; 3] {
    let mut rlock = redis::cmd("RLOCK.ACQUIRE");
    rlock.arg("lock").arg("o1").arg(LEASE).arg("WAIT").arg(wait_ms).arg("REPLY").arg("FULL");
    let mut fair = redis::cmd("RFAIR.ACQUIRE");
    fair.arg("fair").arg("o1").arg(LEASE).arg("WAIT").arg(wait_ms).arg("BLOCK").arg(wait_ms).arg("REPLY").arg("FULL");
    let mut rw = redis::cmd("RRW.ACQUIRE");
    rw.arg("rw").arg("o1").arg("WRITE").arg(LEASE).arg("WAIT").arg(wait_ms).arg("REPLY").arg("FULL");
    [rlock, fair, rw].map(|command| {
        let mut con = server.connection();
        thread::spawn(move || {
            let reply: Value = command.query(&mut con).unwrap();
            (full_reply(reply), server_time_ms(&mut con))
        })
    })
}

/// A server with 5 permits on `sem`, in a delay of [`LONG`] from its start.
fn permits_in_a_long_delay() -> (Server, Connection) {
    let server = Server::start();
    let mut con = server.connection();
    let _: i64 = redis::cmd("RSEM.TRYSETPERMITS").arg("sem").arg(5).query(&mut con).unwrap();
    set_delay(&mut con, LONG);
    (server, con)
}

/// Subscribes to `sem`'s channel, then `RSEM.TRYACQUIRE sem 1`'s reply.
fn refused_permit(con: &mut Connection, subscriber: &mut redis::PubSub) -> i64 {
    subscriber.subscribe("redisson_sc:{sem}").unwrap();
    redis::cmd("RSEM.TRYACQUIRE").arg("sem").arg(1).query(con).unwrap()
}

/// A PTTL told by a refusal of the long delay: about its whole length.
fn is_rest_of_long_delay(pttl: i64) -> bool {
    (LONG - 60_000..=LONG).contains(&pttl)
}

#[test]
fn a_lock_delay_grants_nothing_of_any_kind_and_keeps_the_holders_there_are() {
    let server = Server::start();
    let mut con = server.connection();
    assert_eq!(acquire(&mut con, "held", "o1"), None);
    let _: (i64, i64) = redis::cmd("RFENCED.ACQUIRE").arg("fheld").arg("o1").arg(LEASE).query(&mut con).unwrap();
    let _: () = redis::cmd("RRW.ACQUIRE").arg("rw").arg("o1").arg("READ").arg(LEASE).query(&mut con).unwrap();
    let _: () = redis::cmd("RFAIR.ACQUIRE").arg("fair").arg("o1").arg(LEASE).query(&mut con).unwrap();
    let _: i64 = redis::cmd("RSEM.TRYSETPERMITS").arg("sem").arg(5).query(&mut con).unwrap();
    let _: i64 = redis::cmd("RPSEM.TRYSETPERMITS").arg("psem").arg(5).query(&mut con).unwrap();
    // The term began when the server started: a long delay lasts from there.
    set_delay(&mut con, LONG);
    let refusals = rlock_info(&mut con, "lock_delay_refusals");
    assert!(is_rest_of_long_delay(rlock_info(&mut con, "lock_delay_left_ms")));

    // RLock: a free lock, a new owner and the holder's re-entry are
    // refused (the holder's, even with WAIT, at once: its own hold keeps
    // it out); the holder renews and releases.
    let refused = acquire(&mut con, "free", "o1").expect("refused");
    assert!(is_rest_of_long_delay(refused), "told the delay's rest: {refused}");
    let behind_holder = acquire(&mut con, "held", "o2").expect("refused");
    assert!(is_rest_of_long_delay(behind_holder), "the delay outlasts the lease: {behind_holder}");
    assert!(acquire(&mut con, "held", "o1").is_some_and(is_rest_of_long_delay), "no re-entry");
    let waited: Option<i64> =
        redis::cmd("RLOCK.ACQUIRE").arg("held").arg("o1").arg(LEASE).arg("WAIT").arg(LONG).query(&mut con).unwrap();
    assert!(waited.is_some_and(is_rest_of_long_delay), "not blocked behind its own hold: {waited:?}");
    let renewed: i64 = redis::cmd("RLOCK.RENEW").arg("held").arg("o1").arg(LEASE).query(&mut con).unwrap();
    assert_eq!(renewed, 1);
    let released: i64 = redis::cmd("RLOCK.RELEASE").arg("held").arg("o1").query(&mut con).unwrap();
    assert_eq!(released, 1, "its one hold released");
    assert!(acquire(&mut con, "held", "o1").is_some(), "released: a new holder now");
    let full = redis::cmd("RLOCK.ACQUIRE").arg("free").arg("o1").arg(LEASE).arg("REPLY").arg("FULL").query(&mut con);
    let (granted, holds, lease_ms, _) = full_reply(full.unwrap());
    assert!(granted == 0 && holds == 0 && is_rest_of_long_delay(lease_ms), "{granted} {holds} {lease_ms}");

    // Fenced: no token for a new holder, nor for the holder's re-entry.
    let (pttl, token): (i64, i64) =
        redis::cmd("RFENCED.ACQUIRE").arg("ffree").arg("o1").arg(LEASE).query(&mut con).unwrap();
    assert!(is_rest_of_long_delay(pttl) && token == -1, "[{pttl}, {token}]");
    let (pttl, token): (i64, i64) =
        redis::cmd("RFENCED.ACQUIRE").arg("fheld").arg("o1").arg(LEASE).query(&mut con).unwrap();
    assert!(is_rest_of_long_delay(pttl) && token == -1, "[{pttl}, {token}]");

    // Read-write: no new reader beside a reader, no writer on a free lock.
    let reader: Option<i64> =
        redis::cmd("RRW.ACQUIRE").arg("rw").arg("o2").arg("READ").arg(LEASE).query(&mut con).unwrap();
    assert!(reader.is_some_and(is_rest_of_long_delay), "{reader:?}");
    let again: Option<i64> =
        redis::cmd("RRW.ACQUIRE").arg("rw").arg("o1").arg("READ").arg(LEASE).query(&mut con).unwrap();
    assert!(again.is_some_and(is_rest_of_long_delay), "no re-entry: {again:?}");
    let writer: Option<i64> =
        redis::cmd("RRW.ACQUIRE").arg("rwfree").arg("o1").arg("WRITE").arg(LEASE).query(&mut con).unwrap();
    assert!(writer.is_some_and(is_rest_of_long_delay), "{writer:?}");

    // Fair: the no-wait form is refused; a waiter queues with the delay's
    // rest as its hint; the holder's re-entry is refused, unqueued, and
    // does not block.
    let no_wait: i64 = redis::cmd("RFAIR.ACQUIRE").arg("ffair").arg("o1").arg(LEASE).query(&mut con).unwrap();
    assert_eq!(no_wait, 1);
    let hint: i64 =
        redis::cmd("RFAIR.ACQUIRE").arg("ffair").arg("o1").arg(LEASE).arg("WAIT").arg(5_000).query(&mut con).unwrap();
    assert!(is_rest_of_long_delay(hint), "{hint}");
    let queued: Vec<String> = con.lrange("redisson_lock_queue:{ffair}", 0, -1).unwrap();
    assert_eq!(queued, ["o1"]);
    let reentry: i64 = redis::cmd("RFAIR.ACQUIRE").arg("fair").arg("o1").arg(LEASE).query(&mut con).unwrap();
    assert_eq!(reentry, 1);
    let mut blocked = redis::cmd("RFAIR.ACQUIRE");
    blocked.arg("fair").arg("o1").arg(LEASE).arg("WAIT").arg(5_000).arg("BLOCK").arg(LONG);
    let hint: i64 = blocked.query(&mut con).unwrap();
    assert!(is_rest_of_long_delay(hint), "{hint}");
    let queued: Vec<String> = con.lrange("redisson_lock_queue:{fair}", 0, -1).unwrap();
    assert!(queued.is_empty(), "{queued:?}");

    // Semaphores: no permit, none drained, and nothing taken.
    let permit: i64 = redis::cmd("RSEM.TRYACQUIRE").arg("sem").arg(1).query(&mut con).unwrap();
    assert_eq!(permit, 0);
    for like_script in [false, true] {
        let mut drain = redis::cmd("RSEM.DRAIN");
        drain.arg("sem");
        if like_script {
            drain.arg("LIKESCRIPT");
        }
        let drained: String = drain.query(&mut con).unwrap();
        assert_eq!(drained, "0", "LIKESCRIPT {like_script}");
    }
    let left: i64 = con.get("sem").unwrap();
    assert_eq!(left, 5);
    let now = server_time_ms(&mut con);
    let retry: String = redis::cmd("RPSEM.TRYACQUIRE").arg("psem").arg(LEASE).arg("id1").query(&mut con).unwrap();
    let retry_at: i64 = retry.strip_prefix(':').expect(":<ms>").parse().unwrap();
    assert!(is_rest_of_long_delay(retry_at - now), "try again at the delay's end: {retry} at {now}");
    let left: i64 = con.get("psem").unwrap();
    assert_eq!(left, 5);

    assert!(rlock_info(&mut con, "lock_delay_refusals") >= refusals + 17);
    // Turned off: every kind grants again.
    set_delay(&mut con, 0);
    assert_eq!(rlock_info(&mut con, "lock_delay_left_ms"), 0);
    assert_eq!(acquire(&mut con, "free", "o1"), None);
    let permit: i64 = redis::cmd("RSEM.TRYACQUIRE").arg("sem").arg(1).query(&mut con).unwrap();
    assert_eq!(permit, 1);
}

/// A restart begins a term: the holds it loaded go on, nothing is granted
/// until the delay ends.
#[test]
fn a_restart_begins_a_lock_delay() {
    let mut server = Server::builder()
        .config("appendonly", "yes")
        .config("appendfsync", "always")
        .module_arg("lock-delay-ms")
        .module_arg(&LONG.to_string())
        .start();
    let mut con = server.connection();
    assert!(acquire(&mut con, "held", "o1").is_some(), "the start began a delay");
    set_delay(&mut con, 0);
    assert_eq!(acquire(&mut con, "held", "o1"), None);
    server.restart();
    let mut con = server.connection();
    let renewed: i64 = redis::cmd("RLOCK.RENEW").arg("held").arg("o1").arg(LEASE).query(&mut con).unwrap();
    assert_eq!(renewed, 1, "the loaded holder renews");
    assert!(acquire(&mut con, "held", "o1").is_some_and(is_rest_of_long_delay), "it re-enters at the end");
    assert!(acquire(&mut con, "held", "o2").is_some_and(is_rest_of_long_delay));
    assert!(acquire(&mut con, "free", "o1").is_some_and(is_rest_of_long_delay));
}

/// `o1` holds `held` on a primary, replicated and acknowledged; the
/// replica (with a long lock-delay) is promoted, and then the old primary,
/// cut off, takes `o1`'s release and grants `held` to `o4`, neither of
/// which the new primary hears of. The servers (kept alive), a connection
/// to the old primary and one to the promoted replica.
fn o1s_release_lost_to_a_promotion() -> ([Server; 2], Connection, Connection) {
    let primary = Server::start();
    let replica = Server::builder().module_arg("lock-delay-ms").module_arg(&LONG.to_string()).start();
    replica.replicate(&primary);
    let mut con = primary.connection();
    assert_eq!(acquire(&mut con, "held", "o1"), None);
    let acknowledged: i64 = redis::cmd("WAIT").arg(1).arg(5_000).query(&mut con).unwrap();
    assert_eq!(acknowledged, 1);
    let mut promoted = replica.connection();
    let _: () = redis::cmd("REPLICAOF").arg("NO").arg("ONE").query(&mut promoted).unwrap();
    let released: i64 = redis::cmd("RLOCK.RELEASE").arg("held").arg("o1").query(&mut con).unwrap();
    assert_eq!(released, 1);
    assert_eq!(acquire(&mut con, "held", "o4"), None);
    ([primary, replica], con, promoted)
}

/// A promoted replica begins a term: the holds it was sent go on; a grant
/// the old primary made that never reached it is not made again, nor is a
/// re-entry of a hold whose release never reached it.
#[test]
fn a_promoted_replica_grants_nothing_new_during_its_lock_delay() {
    let (_servers, mut con, mut promoted) = o1s_release_lost_to_a_promotion();
    assert_eq!(acquire(&mut con, "lost", "o2"), None);
    let renewed: i64 = redis::cmd("RLOCK.RENEW").arg("held").arg("o1").arg(LEASE).query(&mut promoted).unwrap();
    assert_eq!(renewed, 1, "the replicated hold renews");
    assert!(acquire(&mut promoted, "held", "o1").is_some_and(is_rest_of_long_delay), "o4 holds it: no re-entry");
    assert!(acquire(&mut promoted, "lost", "o3").is_some_and(is_rest_of_long_delay), "no second holder");
    assert!(is_rest_of_long_delay(rlock_info(&mut promoted, "lock_delay_left_ms")));
    assert_eq!(rlock_info(&mut promoted, "role_changes"), 2);
}

/// `HOLDS n` on a promoted replica in its lock-delay: a client that counts
/// 0 levels after its release (taken by the old primary, which then granted
/// the lock to another owner) finds the hold whose release never reached
/// the replica, one more than it counts. That level is no grant of this
/// call: answered as a replay it would be a second holder during the delay
/// that exists to refuse one. It is refused as the acquire without `HOLDS`
/// is, and changes nothing.
#[test]
fn a_holds_acquire_finding_one_more_level_is_refused_during_the_lock_delay() {
    let (_servers, _, mut promoted) = o1s_release_lost_to_a_promotion();
    let holds = |con: &mut Connection, extra: &[&str]| -> Value {
        redis::cmd("RLOCK.ACQUIRE").arg("held").arg("o1").arg(LEASE).arg("HOLDS").arg(0).arg(extra).query(con).unwrap()
    };
    let refused = holds(&mut promoted, &[]);
    assert!(matches!(refused, Value::Int(pttl) if is_rest_of_long_delay(pttl)), "granted in the delay: {refused:?}");
    let (granted, levels, lease_ms, _) = full_reply(holds(&mut promoted, &["REPLY", "FULL"]));
    assert!(granted == 0 && levels == 0 && is_rest_of_long_delay(lease_ms), "{granted} {levels} {lease_ms}");
    let count: i64 = promoted.hget("held", "o1").unwrap();
    assert_eq!(count, 1, "nothing changed");
    // Past the delay, one more level is the replay it stands for.
    set_delay(&mut promoted, 0);
    let (granted, levels, _, _) = full_reply(holds(&mut promoted, &[]));
    assert_eq!((granted, levels), (1, 1));
}

/// Callers blocked during the delay are granted at its end: RLock's and
/// the read-write lock's `WAIT`, the fair lock's `BLOCK`; a semaphore's refused caller gets a
/// release message then.
#[test]
fn callers_blocked_during_a_lock_delay_are_granted_at_its_end() {
    let (server, mut con) = permits_in_a_long_delay();
    // A delay ending 1.5 s from now: the term began at the start.
    let elapsed = LONG - rlock_info(&mut con, "lock_delay_left_ms");
    set_delay(&mut con, elapsed + 1_500);
    let ends_at = server_time_ms(&mut con) + rlock_info(&mut con, "lock_delay_left_ms");

    let mut subscriber = server.connection();
    let mut pubsub = subscriber.as_pubsub();
    let permit = refused_permit(&mut con, &mut pubsub);
    for waiter in blocked_acquires(&server, 10_000) {
        let ((granted, holds, _, _), replied_at) = waiter.join().unwrap();
        assert_eq!((granted, holds), (1, 1));
        assert!(replied_at >= ends_at, "granted at {replied_at}, before the delay's end {ends_at}");
    }
    if permit == 0 {
        pubsub.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
        let message = pubsub.get_message().expect("a wake at the delay's end");
        assert_eq!(message.get_payload::<String>().unwrap(), "5");
    }
}

/// A delay made shorter (here: ended) while callers wait for its end:
/// they are granted, and the refused semaphore's callers woken, at the
/// new end, not the old one. A wait that runs out during the delay is
/// told its rest, as a refused acquire is; and the server's own retries
/// for its waiters are not counted as refusals.
#[test]
fn ending_the_delay_early_wakes_what_waits_for_its_end() {
    let (server, mut con) = permits_in_a_long_delay();
    let refusals = rlock_info(&mut con, "lock_delay_refusals");
    let timed_out: i64 =
        redis::cmd("RLOCK.ACQUIRE").arg("free").arg("o1").arg(LEASE).arg("WAIT").arg(200).query(&mut con).unwrap();
    assert!(is_rest_of_long_delay(timed_out), "a wait that ran out is told the delay's rest: {timed_out}");
    assert_eq!(rlock_info(&mut con, "lock_delay_refusals"), refusals + 1, "one acquire, one refusal");

    let mut subscriber = server.connection();
    let mut pubsub = subscriber.as_pubsub();
    assert_eq!(refused_permit(&mut con, &mut pubsub), 0);
    let waiters = blocked_acquires(&server, 60_000);
    eventually("both callers blocked", PATIENCE, || rlock_info(&mut con, "blocked") == 3);
    let ended_at = std::time::Instant::now();
    set_delay(&mut con, 0);
    for waiter in waiters {
        let ((granted, holds, _, waited_ms), _) = waiter.join().unwrap();
        assert_eq!((granted, holds), (1, 1));
        assert!(waited_ms < 30_000, "granted when the delay ended, not at its old end: waited {waited_ms} ms");
    }
    pubsub.set_read_timeout(Some(std::time::Duration::from_secs(30))).unwrap();
    let message = pubsub.get_message().expect("a wake when the delay ended");
    assert_eq!(message.get_payload::<String>().unwrap(), "5");
    assert!(ended_at.elapsed() < std::time::Duration::from_secs(30));
}

/// Redisson's write-lock acquire runs natively (re-entering as the script
/// does), so that a delay refuses it, also when it was queued in MULTI
/// before the delay began.
#[test]
fn redissons_write_lock_acquire_is_refused_during_the_delay_through_the_filter() {
    let server = Server::builder().module_arg("redisson-scripts").module_arg("native").start();
    let mut con = server.connection();
    let texts = testkit::redisson_class_scripts("3.52.0", "org/redisson/RedissonWriteLock").expect("the jar");
    let acquire =
        texts.into_iter().find(|text| text.windows(6).any(|w| w == b"'mode'") && text.starts_with(b"local mode"));
    let acquire = String::from_utf8(acquire.expect("the write acquire text")).unwrap();
    let call = |name: &str| redis::cmd("EVAL").arg(&acquire).arg(1).arg(name).arg(LEASE).arg("u:1:write").clone();
    let eval = |con: &mut Connection| -> Option<i64> { call("rw").query(con).unwrap() };
    set_delay(&mut con, LONG);
    let refused = eval(&mut con).expect("refused");
    assert!(is_rest_of_long_delay(refused), "{refused}");
    assert!(!con.exists::<_, bool>("rw").unwrap(), "no holder");
    // Queued while a delay is set but over, run once it lasts: refused too.
    set_delay(&mut con, 1);
    let _: () = redis::cmd("MULTI").query(&mut con).unwrap();
    let _: () = call("queued").query(&mut con).unwrap();
    set_delay(&mut server.connection(), LONG);
    let replies: Vec<Option<i64>> = redis::cmd("EXEC").query(&mut con).unwrap();
    assert!(replies[0].is_some_and(is_rest_of_long_delay), "{replies:?}");
    assert!(!con.exists::<_, bool>("queued").unwrap(), "no holder");
    set_delay(&mut con, 0);
    assert_eq!(eval(&mut con), None, "granted by the script, as Lua");
    assert_eq!(eval(&mut con), None, "re-entered");
    let pttl: i64 = con.pttl("rw").unwrap();
    assert!(pttl > LEASE + 50_000, "Redisson's re-entry adds the lease (as Lua): {pttl}");
}
