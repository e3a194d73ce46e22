//! `RLOCK.ACQUIRE … ID request_id [PX window_ms]` and `REPLY FULL`: a
//! resent acquire (its reply was lost) gets its first grant again and adds
//! no level; a resend while the first call is blocked takes over its place
//! in the queue; the full reply says what happened; the record replicates.

mod blocking_support;

use blocking_support::{release, until_waited, waiter, waiter_with, LONG_LEASE};
use redis::{Commands, Connection, Value};
use testkit::{error_text, full_reply as full, rlock_info, Server};

/// `RLOCK.ACQUIRE key owner 60000 extra…`
fn acquire(con: &mut Connection, key: &str, owner: &str, extra: &[&str]) -> Value {
    redis::cmd("RLOCK.ACQUIRE").arg(key).arg(owner).arg(LONG_LEASE).arg(extra).query(con).unwrap()
}

fn holds(con: &mut Connection, key: &str, owner: &str) -> Option<i64> {
    con.hget(key, owner).unwrap()
}

const RECORD: &str = "rlock_acquire_record:{k}:r1";

#[test]
fn a_resent_acquire_replays_its_grant_and_adds_no_level() {
    let server = Server::shared();
    let mut con = server.connection();
    assert_eq!(acquire(&mut con, "k", "a", &["ID", "r1"]), Value::Nil);
    assert_eq!(acquire(&mut con, "k", "a", &["ID", "r1"]), Value::Nil, "the resend");
    assert_eq!(holds(&mut con, "k", "a"), Some(1));
    let recorded: String = con.get(RECORD).unwrap();
    assert_eq!(recorded, "1:1:ak", "the count, the owner, the lock");
    let pttl: i64 = con.pttl(RECORD).unwrap();
    assert!((19_000..=20_000).contains(&pttl), "the default window: {pttl}");

    // A re-entry records its level; its resend replies that level.
    let (granted, levels, lease_ms, waited_ms) = full(acquire(&mut con, "k", "a", &["ID", "r2", "REPLY", "FULL"]));
    assert_eq!((granted, levels, waited_ms), (1, 2, 0));
    assert!((59_000..=60_000).contains(&lease_ms), "{lease_ms}");
    let resend = full(acquire(&mut con, "k", "a", &["REPLY", "FULL", "ID", "r2", "PX", "5000"]));
    assert_eq!((resend.0, resend.1), (1, 2));
    assert_eq!(holds(&mut con, "k", "a"), Some(2));

    // Without ID, every call counts.
    assert_eq!(acquire(&mut con, "k", "a", &[]), Value::Nil);
    assert_eq!(holds(&mut con, "k", "a"), Some(3));
}

#[test]
fn a_refusal_records_nothing_and_its_resend_tries_again() {
    let server = Server::shared();
    let mut con = server.connection();
    acquire(&mut con, "k", "holder", &[]);
    let Value::Int(pttl) = acquire(&mut con, "k", "a", &["ID", "r1", "PX", "5000"]) else { panic!("refused") };
    assert!(pttl > 59_000);
    let recorded: bool = con.exists(RECORD).unwrap();
    assert!(!recorded);
    let (granted, levels, lease_ms, _) = full(acquire(&mut con, "k", "a", &["ID", "r1", "REPLY", "FULL"]));
    assert_eq!((granted, levels), (0, 0));
    assert!(lease_ms > 59_000, "the holder's lease: {lease_ms}");

    release(&mut con, "k", "holder");
    assert_eq!(acquire(&mut con, "k", "a", &["ID", "r1", "PX", "5000"]), Value::Nil);
    let pttl: i64 = con.pttl(RECORD).unwrap();
    assert!((4_000..=5_000).contains(&pttl), "PX sets the window: {pttl}");
}

#[test]
fn a_blocked_grant_is_recorded_and_its_full_reply_says_how_long_it_waited() {
    let server = Server::shared();
    let mut con = server.connection();
    acquire(&mut con, "k", "holder", &[]);
    let args = ["k", "a", LONG_LEASE, "WAIT", "10000", "ID", "r1", "REPLY", "FULL"];
    let blocked = waiter_with(&server, &args, |_, reply| reply);
    until_waited(&mut con, "k", 50);
    release(&mut con, "k", "holder");
    let (granted, levels, lease_ms, waited_ms) = full(blocked.join().unwrap());
    assert_eq!((granted, levels), (1, 1));
    assert!((59_000..=60_000).contains(&lease_ms), "{lease_ms}");
    assert!(waited_ms >= 50, "waited {waited_ms} ms");
    let recorded: String = con.get(RECORD).unwrap();
    assert_eq!(recorded, "1:1:ak", "the count, the owner, the lock");
    // The resend after a lost reply: the grant again.
    assert_eq!(acquire(&mut con, "k", "a", &["ID", "r1", "WAIT", "1000"]), Value::Nil);
    assert_eq!(holds(&mut con, "k", "a"), Some(1));

    // A wait that runs out, in full.
    let (granted, levels, lease_ms, waited_ms) = full(acquire(&mut con, "k", "b", &["WAIT", "100", "REPLY", "FULL"]));
    assert_eq!((granted, levels), (0, 0));
    assert!(lease_ms > 59_000 && waited_ms >= 100, "{lease_ms} {waited_ms}");
}

#[test]
fn a_resend_takes_over_the_blocked_call_and_its_place() {
    let server = Server::shared();
    let mut con = server.connection();
    acquire(&mut con, "k", "holder", &[]);
    let first = waiter_with(&server, &["k", "a", LONG_LEASE, "WAIT", "10000", "ID", "r1"], |_, reply| reply);
    let behind = waiter(&server, "k", "b", 10_000, |_, reply| reply);
    // The resend (as from another connection after a timeout): the first
    // call ends with an error, the resend waits in its place.
    let mut admin = server.connection();
    let blocked_before = rlock_info(&mut admin, "blocked");
    let mut resend_con = server.connection();
    let resend = std::thread::spawn(move || acquire(&mut resend_con, "k", "a", &["WAIT", "10000", "ID", "r1"]));
    let ended = first.join().unwrap();
    assert!(matches!(&ended, Value::SimpleString(text) if text.contains("resend")), "{ended:?}");
    assert_eq!(rlock_info(&mut admin, "blocked"), blocked_before, "one call waits for the request");

    release(&mut con, "k", "holder");
    assert_eq!(resend.join().unwrap(), Value::Nil, "granted first, in the first call's place");
    assert_eq!(holds(&mut con, "k", "a"), Some(1));
    release(&mut con, "k", "a");
    assert_eq!(behind.join().unwrap(), Value::Nil);
}

#[test]
fn the_record_replicates_with_its_absolute_expiry() {
    let primary = Server::shared();
    let replica = Server::builder().without_module().start();
    replica.replicate(&primary);
    let mut con = primary.connection();
    acquire(&mut con, "k", "a", &["ID", "r1"]);
    let acked: i64 = redis::cmd("WAIT").arg(1).arg(5000).query(&mut con).unwrap();
    assert_eq!(acked, 1);
    let mut on_replica = replica.connection();
    let expire_at = |con: &mut Connection| -> i64 { redis::cmd("PEXPIRETIME").arg(RECORD).query(con).unwrap() };
    let recorded: String = on_replica.get(RECORD).unwrap();
    assert_eq!(recorded, "1:1:ak");
    assert_eq!(expire_at(&mut on_replica), expire_at(&mut con));
}

#[test]
fn bad_options_are_refused_by_name_and_write_nothing() {
    let server = Server::shared();
    let mut con = server.connection();
    for (args, names) in [
        (vec!["ID"], "request_id"),
        (vec!["ID", ""], "request_id"),
        (vec!["ID", "r1", "PX"], "window_ms"),
        (vec!["ID", "r1", "PX", "0"], "window_ms"),
        (vec!["ID", "r1", "PX", "soon"], "window_ms"),
        (vec!["REPLY"], "FULL"),
        (vec!["REPLY", "SHORT"], "FULL"),
        (vec!["ID", "r1", "ID", "r2"], "unexpected argument 5 ('ID')"),
        (vec!["REPLY", "FULL", "REPLY", "FULL"], "unexpected argument 5 ('REPLY')"),
        (vec!["WAIT", "100", "WAIT", "100"], "unexpected argument 5 ('WAIT')"),
        (vec!["60000", "FULL"], "REPLY FULL"),
        (vec!["FULL"], "lease_ms"),
    ] {
        let err = error_text(redis::cmd("RLOCK.ACQUIRE").arg("k").arg("a").arg(&args).query::<Value>(&mut con));
        assert!(err.contains(names), "{args:?}: {err}");
    }
    // A record key that is not a record of a grant: an error, and the lock untouched.
    for value in ["yes", "1", "0:1:ak", "-5:1:ak"] {
        let _: () = con.set(RECORD, value).unwrap();
        let err =
            error_text(redis::cmd("RLOCK.ACQUIRE").arg("k").arg("a").arg("ID").arg("r1").query::<Value>(&mut con));
        assert!(err.contains("acquire record key holds something other"), "{value}: {err}");
    }
    let keys: Vec<String> = con.keys("*").unwrap();
    assert_eq!(keys, [RECORD]);
    // A user who may not touch the record key.
    let mut limited = server.login("limited", &["on", "nopass", "+@all", "~k"]);
    let err =
        error_text(redis::cmd("RLOCK.ACQUIRE").arg("k").arg("a").arg("ID").arg("r9").query::<Value>(&mut limited));
    assert!(err.starts_with("NOPERM") && err.contains("acquire record key"), "{err}");
    let exists: bool = con.exists("k").unwrap();
    assert!(!exists);
}

#[test]
fn a_record_of_another_owner_or_lock_is_refused_never_taken_for_a_grant() {
    let server = Server::shared();
    let mut con = server.connection();
    acquire(&mut con, "k", "a", &["ID", "1"]);
    // Another owner reusing the id.
    let err = error_text(redis::cmd("RLOCK.ACQUIRE").arg("k").arg("b").arg("ID").arg("1").query::<Value>(&mut con));
    assert!(err.contains("another owner or lock"), "{err}");
    // `{k}` shares `k`'s record keys: its own grant is not `k`'s.
    acquire(&mut con, "{k}", "z", &[]);
    let err = error_text(redis::cmd("RLOCK.ACQUIRE").arg("{k}").arg("a").arg("ID").arg("1").query::<Value>(&mut con));
    assert!(err.contains("another owner or lock"), "{err}");
    let holders: Vec<String> = con.hkeys("{k}").unwrap();
    assert_eq!(holders, ["z"]);
    assert_eq!(holds(&mut con, "k", "b"), None);
}

/// A resend refused because its record belongs to another lock (`k` and
/// `{k}` share record keys) changes nothing: the first call of the request
/// still waits, and is granted when the lock frees.
#[test]
fn a_refused_resend_leaves_the_blocked_call_alone() {
    let server = Server::shared();
    let mut con = server.connection();
    acquire(&mut con, "k", "holder", &[]);
    let first = waiter_with(&server, &["k", "a", LONG_LEASE, "WAIT", "10000", "ID", "r1"], |_, reply| reply);
    assert_eq!(acquire(&mut con, "{k}", "a", &["ID", "r1"]), Value::Nil, "another lock's grant, same record key");
    let err = error_text(redis::cmd("RLOCK.ACQUIRE").arg("k").arg("a").arg("ID").arg("r1").query::<Value>(&mut con));
    assert!(err.contains("another owner or lock"), "{err}");
    assert_eq!(rlock_info(&mut con, "blocked"), 1, "the first call still waits");
    release(&mut con, "k", "holder");
    assert_eq!(first.join().unwrap(), Value::Nil);
    assert_eq!(holds(&mut con, "k", "a"), Some(1));
}

#[test]
fn a_resend_while_the_first_call_waits_is_granted_once() {
    let server = Server::shared();
    let mut con = server.connection();
    // The lock frees (a DEL: the grant comes on a timer) and the resend
    // arrives first, in the same write: one call is granted, one level.
    acquire(&mut con, "k", "holder", &[]);
    let args = ["k", "a", LONG_LEASE, "WAIT", "10000", "ID", "r1", "REPLY", "FULL"];
    let first = waiter_with(&server, &args, |_, reply| reply);
    let mut both = redis::pipe();
    both.cmd("DEL").arg("k").cmd("RLOCK.ACQUIRE").arg(&args);
    let (_, resend): (i64, Value) = both.query(&mut con).unwrap();
    let first = first.join().unwrap();
    assert!(matches!(&first, Value::SimpleString(text) if text.contains("resend")), "{first:?}");
    assert_eq!(full(resend).1, 1);
    assert_eq!(holds(&mut con, "k", "a"), Some(1));

    // A resend that does not wait ends the waiting call and runs now.
    let first = waiter_with(&server, &["k", "b", LONG_LEASE, "WAIT", "10000", "ID", "r2"], |_, reply| reply);
    let Value::Int(_) = acquire(&mut con, "k", "b", &["ID", "r2"]) else { panic!("refused: a holds it") };
    let first = first.join().unwrap();
    assert!(matches!(&first, Value::SimpleString(text) if text.contains("resend")), "{first:?}");
    assert_eq!(rlock_info(&mut con, "blocked"), 0);
    release(&mut con, "k", "a");
    assert_eq!(holds(&mut con, "k", "b"), None, "nobody waits for b");
}

#[test]
fn rlock_cancel_ends_a_waiting_call_by_its_request_id() {
    let server = Server::shared();
    let mut con = server.connection();
    acquire(&mut con, "k", "holder", &[]);
    let blocked = waiter_with(&server, &["k", "a", LONG_LEASE, "WAIT", "10000", "ID", "r1"], |_, reply| reply);
    let cancel = |con: &mut Connection, owner: &str, id: &str| -> i64 {
        redis::cmd("RLOCK.CANCEL").arg("k").arg(owner).arg(id).query(con).unwrap()
    };
    assert_eq!(cancel(&mut con, "b", "r1"), 0, "another owner's request");
    assert_eq!(cancel(&mut con, "a", "r2"), 0, "another request");
    assert_eq!(cancel(&mut con, "a", "r1"), 1);
    let ended = blocked.join().unwrap();
    assert!(matches!(&ended, Value::SimpleString(text) if text.contains("cancelled")), "{ended:?}");
    assert_eq!(rlock_info(&mut con, "blocked"), 0);
    assert_eq!(cancel(&mut con, "a", "r1"), 0, "no longer waits");
    release(&mut con, "k", "holder");
    let exists: bool = con.exists("k").unwrap();
    assert!(!exists, "nothing granted to the cancelled call");
    let err = error_text(redis::cmd("RLOCK.CANCEL").arg("k").arg("a").query::<Value>(&mut con));
    assert!(err.contains("wrong number of arguments"), "{err}");
}

#[test]
fn an_acquire_with_holds_replays_its_grant_with_no_record() {
    let server = Server::shared();
    let mut con = server.connection();
    let records = |con: &mut Connection| -> Vec<String> { con.keys("rlock_acquire_record:{held}*").unwrap() };
    assert_eq!(acquire(&mut con, "held", "a", &["HOLDS", "0"]), Value::Nil);
    // A replay replies in full even when asked short: its lease is the
    // earlier grant's, not the one asked for.
    let _: () = con.pexpire("held", 7_000).unwrap();
    let (granted, levels, lease_ms, _) = full(acquire(&mut con, "held", "a", &["HOLDS", "0"]));
    assert_eq!((granted, levels), (1, 1), "the resend");
    assert!((1..=7_000).contains(&lease_ms), "the lease as it stands: {lease_ms}");
    assert_eq!(holds(&mut con, "held", "a"), Some(1));
    let (granted, levels, lease_ms, _) = full(acquire(&mut con, "held", "a", &["HOLDS", "1", "REPLY", "FULL"]));
    assert_eq!((granted, levels), (1, 2));
    assert!((59_000..=60_000).contains(&lease_ms), "{lease_ms}");
    let _: () = con.pexpire("held", 5_000).unwrap();
    let (granted, levels, lease_ms, _) = full(acquire(&mut con, "held", "a", &["HOLDS", "1", "REPLY", "FULL"]));
    assert_eq!((granted, levels), (1, 2), "the re-entry's resend");
    assert!(lease_ms <= 5_000, "a replay changes nothing, the lease neither: {lease_ms}");
    assert_eq!(holds(&mut con, "held", "a"), Some(2));
    assert!(records(&mut con).is_empty(), "no record: {:?}", records(&mut con));

    // Neither the caller's count nor one more: its holds ended, nothing changes.
    let stale =
        redis::cmd("RLOCK.ACQUIRE").arg("held").arg("a").arg(LONG_LEASE).arg(&["HOLDS", "5"]).query::<Value>(&mut con);
    assert_eq!(error_text(stale), "STALEHOLDS the owner holds 2 levels, not 5 or one more");
    assert_eq!(holds(&mut con, "held", "a"), Some(2));
    let _: () = con.del("held").unwrap();
    let stale =
        redis::cmd("RLOCK.ACQUIRE").arg("held").arg("a").arg(LONG_LEASE).arg(&["HOLDS", "2"]).query::<Value>(&mut con);
    assert_eq!(error_text(stale), "STALEHOLDS the owner holds 0 levels, not 2 or one more");
    assert_eq!(holds(&mut con, "held", "a"), None);

    // Another holder: refused as without HOLDS.
    acquire(&mut con, "held", "b", &[]);
    let Value::Int(pttl) = acquire(&mut con, "held", "a", &["HOLDS", "0"]) else { panic!("refused") };
    assert!(pttl > 59_000, "{pttl}");
}

#[test]
fn holds_is_a_count_and_takes_no_other_way_to_resend_or_wait() {
    let server = Server::shared();
    let mut con = server.connection();
    let reply = |con: &mut Connection, extra: &[&str]| {
        error_text(
            redis::cmd("RLOCK.ACQUIRE").arg("holds-syntax").arg("a").arg(LONG_LEASE).arg(extra).query::<Value>(con),
        )
    };
    for count in ["-1", "x", "1.5", "", "+1", "01", " 1"] {
        assert_eq!(reply(&mut con, &["HOLDS", count]), "ERR n must be a non-negative integer", "{count}");
    }
    assert_eq!(reply(&mut con, &["HOLDS"]), "ERR n must be a non-negative integer");
    for extra in [&["HOLDS", "0", "ID", "r1"][..], &["HOLDS", "0", "WAIT", "100"], &["NOREENTRY", "HOLDS", "0"]] {
        let syntax =
            "ERR syntax error: HOLDS takes no NOREENTRY, WAIT or ID; syntax: RLOCK.ACQUIRE key owner [lease_ms] \
                      [NOREENTRY] [HOLDS n] [WAIT wait_ms] [ID request_id [PX window_ms]] [REPLY FULL]";
        assert_eq!(reply(&mut con, extra), syntax, "{extra:?}");
    }
    let exists: bool = con.exists("holds-syntax").unwrap();
    assert!(!exists, "a refused call writes nothing");
}
