//! The read-write lock against hashes and owners it must not take for a
//! lock's: a count crafted to make a release visit billions of timeout
//! keys (a module command cannot be killed like a busy script: the server
//! would hang), counts that are not hold counts, and owners that would
//! collide with the lock's own fields (`mode`, a writer's `<owner>:write`).
//! Each is refused with an error naming it, and nothing changes.

use redis::{Connection, Value};
use std::time::Duration;
use testkit::{error_text, Server};

fn run(con: &mut Connection, args: &[&str]) -> redis::RedisResult<Value> {
    redis::cmd(args[0]).arg(&args[1..]).query(con)
}

fn hgetall(con: &mut Connection, key: &str) -> Vec<String> {
    redis::cmd("HGETALL").arg(key).query(con).unwrap()
}

const NOT_A_RW_LOCK: &str =
    "ERR key is a hash but not a read-write lock: no read/write mode, or a hold count that is not an integer";
const TOO_MANY: &str = "ERR too many read holds: a read-write lock takes at most 10000 (each is a key)";

#[test]
fn a_crafted_read_count_is_refused_instead_of_hanging_the_server() {
    let server = Server::shared();
    let mut con = server.connection();
    con.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let _: () = redis::cmd("HSET").arg(&["rw", "mode", "read", "a", "1", "x", "3000000000"]).query(&mut con).unwrap();
    let _: () = redis::cmd("SET").arg(&["{rw}:a:rwlock_timeout:1", "1", "PX", "60000"]).query(&mut con).unwrap();
    let before = hgetall(&mut con, "rw");
    for args in [
        &["RRW.RELEASE", "rw", "a", "READ"][..],
        &["RRW.RENEW", "rw", "x"],
        &["RRW.ACQUIRE", "rw", "b", "READ"],
        &["RRW.ACQUIRE", "rw", "x", "READ"],
    ] {
        assert_eq!(error_text(run(&mut con, args)), TOO_MANY, "{args:?}");
    }
    assert_eq!(hgetall(&mut con, "rw"), before, "nothing changed");
    assert_eq!(run(&mut con, &["RRW.FORCERELEASE", "rw"]).unwrap(), Value::Int(1), "still force-releasable");
}

#[test]
fn read_holds_stop_at_the_limit() {
    let server = Server::shared();
    let mut con = server.connection();
    let _: () = redis::cmd("HSET").arg(&["rw", "mode", "read", "a", "9999"]).query(&mut con).unwrap();
    assert_eq!(run(&mut con, &["RRW.ACQUIRE", "rw", "b", "READ"]).unwrap(), Value::Nil, "the 10000th hold");
    assert_eq!(error_text(run(&mut con, &["RRW.ACQUIRE", "rw", "a", "READ"])), TOO_MANY);
    assert_eq!(hgetall(&mut con, "rw"), ["mode", "read", "a", "9999", "b", "1"]);
    // A release visits every hold's key, and still answers.
    assert_eq!(run(&mut con, &["RRW.RELEASE", "rw", "b", "READ"]).unwrap(), Value::Int(1), "the others' keys are gone");
}

#[test]
fn counts_that_are_not_hold_counts_are_refused() {
    let server = Server::shared();
    let mut con = server.connection();
    for (fields, owner) in [
        (&["mode", "read", "x", "abc"][..], "y"),
        (&["mode", "read", "x", "0"], "y"),
        (&["mode", "read", "x", "-3"], "y"),
        (&["mode", "write", "w:write", "1", "x", "1.5"], "w"),
    ] {
        let _: () = redis::cmd("DEL").arg("rw").query(&mut con).unwrap();
        let _: () = redis::cmd("HSET").arg("rw").arg(fields).query(&mut con).unwrap();
        for side in ["READ", "WRITE"] {
            for args in [
                &["RRW.ACQUIRE", "rw", owner, side][..],
                &["RRW.RELEASE", "rw", owner, side],
                &["RRW.FORCERELEASE", "rw", side],
            ] {
                assert_eq!(error_text(run(&mut con, args)), NOT_A_RW_LOCK, "{fields:?} {args:?}");
            }
        }
        assert_eq!(error_text(run(&mut con, &["RRW.RENEW", "rw", owner])), NOT_A_RW_LOCK, "{fields:?}");
        assert_eq!(hgetall(&mut con, "rw"), *fields, "nothing changed");
    }
}

#[test]
fn owners_that_would_collide_with_the_locks_fields_are_refused() {
    let server = Server::shared();
    let mut con = server.connection();
    let _: Value = run(&mut con, &["RRW.ACQUIRE", "held", "u", "WRITE"]).unwrap();
    let refused = "ERR owner must not be 'mode' nor end with ':write' (the read-write lock's own fields)";
    for owner in ["mode", "u:write", ":write"] {
        for args in [
            &["RRW.ACQUIRE", "free", owner, "READ"][..],
            &["RRW.ACQUIRE", "free", owner, "WRITE"],
            &["RRW.RELEASE", "held", owner, "READ"],
            &["RRW.RELEASE", "held", owner, "WRITE"],
            &["RRW.RENEW", "held", owner],
            &["RRW.STATUS", "held", owner],
        ] {
            assert_eq!(error_text(run(&mut con, args)), refused, "{args:?}");
        }
    }
    assert_eq!(run(&mut con, &["EXISTS", "free"]).unwrap(), Value::Int(0));
    assert_eq!(hgetall(&mut con, "held"), ["mode", "write", "u:write", "1"]);
}
