//! `RLOCK.INSPECT` on a real server: every kind as the native commands
//! leave it, a key that is no lock left alone, and the ACL: a user who may
//! read the name but not a key it derives still gets the name's holders.

use redis::{Connection, Value};
use std::collections::HashMap;
use testkit::Server;

/// A flat `name value …` reply as a map.
fn pairs(reply: Value) -> HashMap<String, Value> {
    let Value::Array(items) = reply else { panic!("not an array: {reply:?}") };
    items.chunks(2).map(|pair| (redis::from_redis_value(pair[0].clone()).unwrap(), pair[1].clone())).collect()
}

fn text(value: &Value) -> String {
    redis::from_redis_value(value.clone()).unwrap()
}

fn int(value: &Value) -> i64 {
    redis::from_redis_value(value.clone()).unwrap()
}

/// `RLOCK.INSPECT key`: its fields, and its holders' fields.
fn inspect(con: &mut Connection, key: &str) -> (HashMap<String, Value>, Vec<HashMap<String, Value>>) {
    let fields = pairs(redis::cmd("RLOCK.INSPECT").arg(key).query(con).unwrap());
    let Value::Array(holders) = fields["holders"].clone() else { panic!("holders: {fields:?}") };
    (fields, holders.into_iter().map(pairs).collect())
}

fn run(con: &mut Connection, args: &[&str]) {
    let _: Value = redis::cmd(args[0]).arg(&args[1..]).query(con).unwrap();
}

#[test]
fn each_kind_is_described_with_its_holders_and_leases() {
    let server = Server::start();
    let mut con = server.connection();
    for call in [
        &["RLOCK.ACQUIRE", "lock", "o1", "60000"][..],
        &["RLOCK.ACQUIRE", "lock", "o1", "60000"],
        &["RFENCED.ACQUIRE", "fenced", "o1", "60000"],
        &["RRW.ACQUIRE", "rw", "o1", "READ", "60000"],
        &["RRW.ACQUIRE", "rw", "o2", "READ", "30000"],
        &["RFAIR.ACQUIRE", "fair", "o1", "60000"],
        &["RFAIR.ACQUIRE", "fair", "o2", "60000", "WAIT", "5000"],
        &["RSEM.TRYSETPERMITS", "sem", "3"],
        &["RPSEM.TRYSETPERMITS", "psem", "3"],
        &["RPSEM.TRYACQUIRE", "psem", "60000", "id1"],
        &["SET", "text", "abc"],
    ] {
        run(&mut con, call);
    }
    let (lock, holders) = inspect(&mut con, "lock");
    assert_eq!(text(&lock["kind"]), "lock");
    assert_eq!((text(&holders[0]["owner"]), int(&holders[0]["holds"])), ("o1".into(), 2));
    assert!((59_000..=60_000).contains(&int(&holders[0]["lease_ms"])));

    let (fenced, _) = inspect(&mut con, "fenced");
    assert_eq!(text(&fenced["kind"]), "fenced");
    assert!(int(&fenced["token"]) > 0);

    let (rw, readers) = inspect(&mut con, "rw");
    assert_eq!((text(&rw["kind"]), text(&rw["mode"])), ("read-write".into(), "read".into()));
    let lease = |owner: &str| readers.iter().find(|r| text(&r["owner"]) == owner).map(|r| int(&r["lease_ms"])).unwrap();
    assert!(lease("o1") > 59_000 && (29_000..=30_000).contains(&lease("o2")), "each reader's own lease");
    assert!(readers.iter().all(|reader| text(&reader["side"]) == "read"));

    let (fair, _) = inspect(&mut con, "fair");
    assert_eq!(text(&fair["kind"]), "fair");
    let Value::Array(queue) = fair["queue"].clone() else { panic!("{fair:?}") };
    let waiter = pairs(queue[0].clone());
    assert_eq!(text(&waiter["owner"]), "o2");
    assert!(int(&waiter["deadline_ms"]) > 0);

    let (sem, _) = inspect(&mut con, "sem");
    assert_eq!((text(&sem["kind"]), int(&sem["count"])), ("counter".into(), 3));
    let (psem, permits) = inspect(&mut con, "psem");
    assert_eq!((text(&psem["kind"]), int(&psem["permits"]), int(&psem["taken"])), ("permit-semaphore".into(), 2, 1));
    assert_eq!(text(&permits[0]["owner"]), "id1");

    for (key, kind, ttl) in [("text", "other", -1), ("missing", "none", -2)] {
        let (found, holders) = inspect(&mut con, key);
        assert_eq!((text(&found["kind"]), int(&found["ttl_ms"]), holders.len()), (kind.into(), ttl, 0), "{key}");
    }
    let value: String = redis::cmd("GET").arg("text").query(&mut con).unwrap();
    assert_eq!(value, "abc", "left alone");
    let error = redis::cmd("RLOCK.INSPECT").query::<Value>(&mut con).unwrap_err();
    assert!(error.to_string().contains("wrong number of arguments"), "{error}");
}

#[test]
fn a_reader_of_the_name_alone_sees_its_holders() {
    let server = Server::start();
    let mut admin = server.connection();
    run(&mut admin, &["RFAIR.ACQUIRE", "locks:a", "o1", "60000"]);
    run(&mut admin, &["RFAIR.ACQUIRE", "locks:a", "o2", "60000", "WAIT", "5000"]);
    run(&mut admin, &["ACL", "SETUSER", "watcher", "on", ">pw", "%R~locks:*", "+@all"]);
    let mut watcher = server.connection();
    run(&mut watcher, &["AUTH", "watcher", "pw"]);
    let (found, holders) = inspect(&mut watcher, "locks:a");
    assert_eq!((text(&found["kind"]), text(&holders[0]["owner"])), ("lock".into(), "o1".into()), "no queue to read");
    let refused = redis::cmd("RLOCK.INSPECT").arg("other").query::<Value>(&mut watcher).unwrap_err();
    assert!(refused.to_string().starts_with("NOPERM") || refused.code() == Some("NOPERM"), "{refused}");
}
