//! `RRW.ACQUIRE` and `RFENCED.ACQUIRE` with `ID request_id [PX window_ms]`
//! and `REPLY FULL`: a resent acquire (its reply was lost) gets its first
//! grant again (a fenced lock's token too) and adds no level; the full
//! reply says what happened; one id serves one side of a read-write lock.

use redis::{Commands, Connection, Value};
use testkit::{error_text, full_reply, full_reply_with_token, Server};

fn rw(con: &mut Connection, owner: &str, side: &str, extra: &[&str]) -> redis::RedisResult<Value> {
    redis::cmd("RRW.ACQUIRE").arg("rw").arg(owner).arg(side).arg(60_000).arg(extra).query(con)
}

fn fenced(con: &mut Connection, owner: &str, extra: &[&str]) -> redis::RedisResult<Value> {
    redis::cmd("RFENCED.ACQUIRE").arg("f").arg(owner).arg(60_000).arg(extra).query(con)
}

fn field(con: &mut Connection, key: &str, field: &str) -> Option<i64> {
    con.hget(key, field).unwrap()
}

#[test]
fn a_resent_read_or_write_acquire_replays_its_grant_and_adds_no_level() {
    let server = Server::shared();
    let mut con = server.connection();
    let (granted, holds, lease_ms, waited_ms) =
        full_reply(rw(&mut con, "a", "WRITE", &["ID", "w1", "REPLY", "FULL"]).unwrap());
    assert_eq!((granted, holds, waited_ms), (1, 1, 0));
    assert!((59_000..=60_000).contains(&lease_ms), "{lease_ms}");
    assert_eq!(rw(&mut con, "a", "WRITE", &["ID", "w1"]).unwrap(), Value::Nil, "the resend");
    assert_eq!(field(&mut con, "rw", "a:write"), Some(1));
    let recorded: String = con.get("rlock_acquire_record:{rw}:w1").unwrap();
    assert_eq!(recorded, "1:7:a:writerw", "the writer is recorded by its write field");

    // The writer reads too; its resend replays the read, and one id serves one side.
    let read = full_reply(rw(&mut con, "a", "READ", &["REPLY", "FULL", "ID", "r1"]).unwrap());
    assert_eq!((read.0, read.1), (1, 1));
    assert_eq!(full_reply(rw(&mut con, "a", "READ", &["ID", "r1", "REPLY", "FULL"]).unwrap()).1, 1);
    assert_eq!(field(&mut con, "rw", "a"), Some(1));
    let other_side = error_text(rw(&mut con, "a", "WRITE", &["ID", "r1"]));
    assert!(other_side.contains("recorded for another owner or lock"), "{other_side}");
    // A reserved owner is refused before any record is read: the writer's
    // record (kept under `a:write`) serves no "reader" of that name.
    let reserved = error_text(rw(&mut con, "a:write", "READ", &["ID", "w1"]));
    assert!(reserved.contains("owner must not be 'mode' nor end with ':write'"), "{reserved}");
    assert_eq!(field(&mut con, "rw", "a:write"), Some(1), "nothing written");

    // A refusal records nothing: its full reply gives the holder's PTTL.
    let (granted, holds, lease_ms, _) = full_reply(rw(&mut con, "b", "READ", &["ID", "r2", "REPLY", "FULL"]).unwrap());
    assert_eq!((granted, holds), (0, 0));
    assert!(lease_ms > 59_000, "{lease_ms}");
    assert!(!con.exists::<_, bool>("rlock_acquire_record:{rw}:r2").unwrap());

    // A replayed grant whose holds are gone since has no lease left.
    let _: () = redis::cmd("RRW.FORCERELEASE").arg("rw").query(&mut con).unwrap();
    let (granted, holds, lease_ms, _) = full_reply(rw(&mut con, "a", "WRITE", &["ID", "w1", "REPLY", "FULL"]).unwrap());
    assert_eq!((granted, holds, lease_ms), (1, 1, 0));
    assert!(!con.exists::<_, bool>("rw").unwrap(), "the replay took nothing");
}

#[test]
fn a_resent_fenced_acquire_replays_its_token() {
    // Exact tokens: no jump at the term's floor.
    let server = Server::builder().module_arg("fencing-token-jump").module_arg("no").shared();
    let mut con = server.connection();
    let ((granted, holds, lease_ms, _), token) =
        full_reply_with_token(fenced(&mut con, "a", &["ID", "x", "REPLY", "FULL"]).unwrap());
    assert_eq!((granted, holds, token), (1, 1, 1));
    assert!((59_000..=60_000).contains(&lease_ms), "{lease_ms}");
    let resent = full_reply_with_token(fenced(&mut con, "a", &["ID", "x", "REPLY", "FULL"]).unwrap());
    assert_eq!(((resent.0).1, resent.1), (1, 1), "the same level and token");
    let pair: Vec<i64> = redis::from_redis_value(fenced(&mut con, "a", &["ID", "x"]).unwrap()).unwrap();
    assert_eq!(pair, [-1, 1], "Redisson's reply, replayed");
    assert_eq!(field(&mut con, "f", "a"), Some(1));
    let last: i64 = con.get("redisson_lock_token:{f}").unwrap();
    assert_eq!(last, 1, "no token taken by a resend");

    // A re-entry takes the next token; a refusal's token is -1.
    let (reentry, token) = full_reply_with_token(fenced(&mut con, "a", &["REPLY", "FULL", "ID", "y"]).unwrap());
    assert_eq!((reentry.1, token), (2, 2));
    let (refused, token) = full_reply_with_token(fenced(&mut con, "b", &["ID", "z", "REPLY", "FULL"]).unwrap());
    assert_eq!((refused.0, refused.1, token), (0, 0, -1));
    assert!(refused.2 > 59_000, "the holder's PTTL: {}", refused.2);

    // A record without a token (a plain acquire's) serves no fenced acquire.
    let plain: Value = redis::cmd("RLOCK.ACQUIRE").arg("g").arg("a").arg("ID").arg("w").query(&mut con).unwrap();
    assert_eq!(plain, Value::Nil);
    let err = error_text(redis::cmd("RFENCED.ACQUIRE").arg("g").arg("a").arg("ID").arg("w").query::<Value>(&mut con));
    assert!(err.contains("recorded for another owner or lock"), "{err}");
    assert!(!con.exists::<_, bool>("redisson_lock_token:{g}").unwrap(), "no token taken");
}

#[test]
fn bad_options_are_refused_by_name_and_write_nothing() {
    let server = Server::shared();
    let mut con = server.connection();
    let cases: [(&[&str], &str); 6] = [
        (&["ID"], "request_id"),
        (&["ID", ""], "request_id"),
        (&["ID", "x", "PX", "0"], "window_ms"),
        (&["REPLY", "SHORT"], "('SHORT'); syntax:"),
        (&["WAIT", "100"], "('WAIT'); syntax: RFENCED.ACQUIRE"),
        (&["ID", "x", "ID", "y"], "('ID'); syntax:"),
    ];
    for (extra, says) in cases {
        // The read-write lock takes WAIT (it blocks on the server); the fenced lock does not.
        let rw_reply = (extra[0] != "WAIT").then(|| rw(&mut con, "a", "READ", extra));
        for reply in rw_reply.into_iter().chain([fenced(&mut con, "a", extra)]) {
            let err = error_text(reply);
            assert!(err.contains(says), "{extra:?}: {err}");
        }
    }
    let script = error_text(fenced(&mut con, "a", &["ID", "x", "LIKESCRIPT", "TOKEN"]));
    assert!(script.contains("LIKESCRIPT takes no ID or REPLY"), "{script}");
    let keys: Vec<String> = con.keys("*").unwrap();
    assert!(keys.is_empty(), "{keys:?}");
}
