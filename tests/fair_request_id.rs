//! `RFAIR.ACQUIRE … ID request_id [PX window_ms]`: a resent acquire (its
//! reply was lost) gets its first grant again and adds no level; a blocked
//! caller's grant is recorded; a resend while the first call is blocked
//! ends that call and goes on in the owner's place in the queue.

mod fair_support;

use fair_support::{blocked_with, fair_acquire, fair_release, queue, LONG};
use redis::{Commands, Connection, Value};
use testkit::{error_text, full_reply, Server};

fn acquire_with_id(con: &mut Connection, owner: &str, extra: &[&str]) -> redis::RedisResult<Value> {
    redis::cmd("RFAIR.ACQUIRE").arg("f").arg(owner).arg(LONG).arg(extra).query(con)
}

#[test]
fn a_resent_fair_acquire_replays_its_grant_and_adds_no_level() {
    let server = Server::shared();
    let mut con = server.connection();
    let (granted, holds, lease_ms, _) =
        full_reply(acquire_with_id(&mut con, "a", &["ID", "x", "REPLY", "FULL"]).unwrap());
    assert_eq!((granted, holds, lease_ms), (1, 1, LONG));
    assert_eq!(acquire_with_id(&mut con, "a", &["ID", "x"]).unwrap(), Value::Nil, "the resend");
    assert_eq!(con.hget::<_, _, i64>("f", "a").unwrap(), 1);
    let recorded: String = con.get("rlock_acquire_record:{f}:x").unwrap();
    assert_eq!(recorded, "1:1:af");
    // A queued caller records nothing; its resend keeps its place.
    let hint = acquire_with_id(&mut con, "b", &["WAIT", "60000", "ID", "y"]).unwrap();
    assert!(matches!(hint, Value::Int(ms) if ms > 0), "{hint:?}");
    let again = acquire_with_id(&mut con, "b", &["WAIT", "60000", "ID", "y"]).unwrap();
    assert!(matches!(again, Value::Int(ms) if ms > 0), "queued still: {again:?}");
    assert_eq!(queue(&mut con), ["b"]);
    assert!(!con.exists::<_, bool>("rlock_acquire_record:{f}:y").unwrap());
    // A replayed grant whose hold is gone since has no lease left.
    fair_release(&mut con, "a");
    let (granted, holds, lease_ms, _) =
        full_reply(acquire_with_id(&mut con, "a", &["ID", "x", "REPLY", "FULL"]).unwrap());
    assert_eq!((granted, holds, lease_ms), (1, 1, 0));
    assert_eq!(con.hget::<_, _, Option<i64>>("f", "a").unwrap(), None, "the replay took nothing");
    // Also when the key is no lock any more: the grant happened, its hold is gone.
    let _: () = con.set("f", "text").unwrap();
    let (granted, holds, lease_ms, _) =
        full_reply(acquire_with_id(&mut con, "a", &["ID", "x", "REPLY", "FULL"]).unwrap());
    assert_eq!((granted, holds, lease_ms), (1, 1, 0));
    assert_eq!(con.get::<_, String>("f").unwrap(), "text", "left alone");
}

#[test]
fn a_resend_takes_over_the_blocked_call_and_its_grant_is_recorded() {
    let server = Server::shared();
    let mut con = server.connection();
    assert_eq!(fair_acquire(&mut con, "holder", LONG, None), Value::Nil);
    let times = (LONG, LONG, 10_000);
    let first = blocked_with(&server, "b", times, &["ID", "y", "REPLY", "FULL"], |_, reply| reply);
    let resend = blocked_with(&server, "b", times, &["ID", "y", "REPLY", "FULL"], |_, reply| reply);
    let taken_over = first.join().unwrap();
    assert!(format!("{taken_over:?}").contains("the wait goes on in a resend"), "{taken_over:?}");
    assert_eq!(queue(&mut con), ["b"], "one place, kept");
    fair_release(&mut con, "holder");
    let (granted, holds, lease_ms, waited_ms) = full_reply(resend.join().unwrap());
    assert_eq!((granted, holds, lease_ms), (1, 1, LONG));
    assert!(waited_ms >= 0);
    let recorded: String = con.get("rlock_acquire_record:{f}:y").unwrap();
    assert_eq!(recorded, "1:1:bf", "the blocked grant is recorded");
    // Its resend (the reply was lost) replays it.
    assert_eq!(acquire_with_id(&mut con, "b", &["WAIT", "60000", "ID", "y"]).unwrap(), Value::Nil);
    assert_eq!(con.hget::<_, _, i64>("f", "b").unwrap(), 1);
}

#[test]
fn bad_ids_are_refused_by_name_and_write_nothing() {
    let server = Server::shared();
    let mut con = server.connection();
    let cases: [(&[&str], &str); 5] = [
        (&["ID"], "request_id"),
        (&["ID", ""], "request_id"),
        (&["ID", "x", "PX", "0"], "window_ms"),
        (&["REPLY", "FULL", "ID", "x"], "then ID request_id"),
        (&["ID", "x", "WAIT", "100"], "then ID request_id"),
    ];
    for (extra, says) in cases {
        let err = error_text(acquire_with_id(&mut con, "a", extra));
        assert!(err.contains(says), "{extra:?}: {err}");
    }
    let keys: Vec<String> = con.keys("*").unwrap();
    assert!(keys.is_empty(), "{keys:?}");
}
