//! The RLOCK forms that Redisson's scripts become beyond the plain lock's:
//! the watchdog's batch renewal (`RLOCK.RENEWALL`), the spin lock's
//! releases that publish nothing (`VIA NONE`) and the non-reentrant
//! lock's acquire (`NOREENTRY`), against a real server.

use redis::{Commands, Connection, Value};
use testkit::{error_text, keyspace_events, publications, Server};

fn acquire(con: &mut Connection, name: &str, owner: &str, lease: u64) {
    let reply: Value = redis::cmd("RLOCK.ACQUIRE").arg(&[name, owner]).arg(lease).query(con).unwrap();
    assert_eq!(reply, Value::Nil, "{name} taken by {owner}");
}

fn pttl(con: &mut Connection, name: &str) -> i64 {
    con.pttl(name).unwrap()
}

#[test]
fn renewall_renews_each_lock_its_owner_holds_in_order() {
    let server = Server::builder().config("notify-keyspace-events", "KEA").shared();
    let mut con = server.connection();
    acquire(&mut con, "a", "o1", 1000);
    acquire(&mut con, "b", "o2", 1000);
    let mut renewed: Vec<i64> = vec![];
    let events = keyspace_events(&server, |con| {
        let args = ["60000", "a", "o1", "b", "o1", "missing", "o1", "a", "o1", "b", "o2"];
        renewed = redis::cmd("RLOCK.RENEWALL").arg(&args).query(con).unwrap();
    });
    assert_eq!(renewed, [1, 0, 0, 1, 1]);
    let expire = |key: &str| (key.to_owned(), "expire".to_owned());
    assert_eq!(events, [expire("a"), expire("a"), expire("b")], "an expire event per renewal, in order");
    assert!(pttl(&mut con, "a") > 59_000 && pttl(&mut con, "b") > 59_000);
    assert!(!con.exists::<_, bool>("missing").unwrap(), "never creates a key");

    // Redisson's watchdog renews its write locks with the same text: a
    // hash with a `mode` field beside the owner's count.
    let _: () = redis::cmd("HSET").arg(&["w", "mode", "write", "o1:write", "1"]).query(&mut con).unwrap();
    let _: () = con.pexpire("w", 1000).unwrap();
    let renewed: Vec<i64> = redis::cmd("RLOCK.RENEWALL").arg(&["60000", "w", "o1:write"]).query(&mut con).unwrap();
    assert_eq!(renewed, [1]);
    assert!(pttl(&mut con, "w") > 59_000);
}

#[test]
fn renewall_refuses_a_batch_with_a_key_of_another_type_and_renews_nothing() {
    let server = Server::shared();
    let mut con = server.connection();
    acquire(&mut con, "a", "o1", 1000);
    let _: () = con.set("s", "not a lock").unwrap();
    let text = error_text(redis::cmd("RLOCK.RENEWALL").arg(&["60000", "a", "o1", "s", "o1"]).query::<Value>(&mut con));
    assert!(text.starts_with("WRONGTYPE"), "{text}");
    assert!(pttl(&mut con, "a") <= 1000, "the lock before it is not renewed");

    for (args, expected) in [
        (&["60000", "a"][..], "wrong number of arguments"),
        (&["60000", "a", "o1", "b"], "'b' needs owner; syntax: RLOCK.RENEWALL lease_ms key owner [key owner ...]"),
        (&["0", "a", "o1"], "lease_ms must be a positive integer"),
        (&["x", "a", "o1"], "lease_ms must be a positive integer"),
    ] {
        let text = error_text(redis::cmd("RLOCK.RENEWALL").arg(args).query::<Value>(&mut con));
        assert!(text.contains(expected), "{args:?}: {text}");
    }
    assert!(pttl(&mut con, "a") <= 1000);
}

#[test]
fn renewall_declares_every_key_for_acl_and_command_docs() {
    let server = Server::shared();
    let mut admin = server.connection();
    let keys: Vec<String> = redis::cmd("COMMAND")
        .arg(&["GETKEYS", "RLOCK.RENEWALL", "1000", "a", "o1", "b", "o2"])
        .query(&mut admin)
        .unwrap();
    assert_eq!(keys, ["a", "b"]);
    let info: Vec<Vec<Value>> = redis::cmd("COMMAND").arg(&["INFO", "RLOCK.RENEWALL"]).query(&mut admin).unwrap();
    let entry = &info[0];
    assert_eq!(entry[1..2], [Value::Int(-4)], "arity");
    assert_eq!(entry[3..6], [Value::Int(2), Value::Int(-1), Value::Int(2)], "first key, last key, step");
    let docs: Vec<Value> = redis::cmd("COMMAND").arg(&["DOCS", "RLOCK.RENEWALL"]).query(&mut admin).unwrap();
    let docs = format!("{docs:?}");
    for part in ["lease_ms", "lock", "multiple", "key", "owner"] {
        assert!(docs.contains(part), "COMMAND DOCS names {part}: {docs}");
    }

    let acl = ["SETUSER", "svc", "on", ">pw", "~locks:*", "+@all"];
    let _: () = redis::cmd("ACL").arg(&acl).query(&mut admin).unwrap();
    let mut con = server.connection();
    let _: () = redis::cmd("AUTH").arg(&["svc", "pw"]).query(&mut con).unwrap();
    acquire(&mut con, "locks:a", "o1", 1000);
    let renewed: Vec<i64> = redis::cmd("RLOCK.RENEWALL").arg(&["5000", "locks:a", "o1"]).query(&mut con).unwrap();
    assert_eq!(renewed, [1]);
    let refused = redis::cmd("RLOCK.RENEWALL").arg(&["60000", "locks:a", "o1", "other", "o1"]).query::<Value>(&mut con);
    assert!(error_text(refused).starts_with("NOPERM"));
    assert!(pttl(&mut admin, "locks:a") <= 5000, "nothing renewed");
}

#[test]
fn via_none_releases_and_force_releases_without_publishing() {
    let server = Server::builder().config("notify-keyspace-events", "KEA").shared();
    let mut con = server.connection();
    acquire(&mut con, "l", "o1", 30_000);
    acquire(&mut con, "l", "o1", 30_000);
    let mut replies = vec![];
    let messages = publications(&server, |con| {
        let release = ["l", "o1", "30000", "ID", "r1", "PX", "20000", "VIA", "NONE"];
        replies.push(redis::cmd("RLOCK.RELEASE").arg(&release).query::<Value>(con).unwrap());
        replies.push(redis::cmd("RLOCK.RELEASE").arg(&["l", "o1", "30000", "VIA", "none"]).query(con).unwrap());
        let _: () = con.set("l", "anything").unwrap();
        replies.push(redis::cmd("RLOCK.FORCERELEASE").arg(&["l", "VIA", "NONE"]).query(con).unwrap());
        replies.push(redis::cmd("RLOCK.FORCERELEASE").arg(&["l", "VIA", "NONE"]).query(con).unwrap());
    });
    assert_eq!(replies, [Value::Int(0), Value::Int(1), Value::Int(1), Value::Int(0)]);
    let published: Vec<_> = messages.iter().filter(|(channel, _)| !channel.starts_with("__key")).collect();
    assert_eq!(published, Vec::<&(String, String)>::new(), "nothing but keyspace events");
    assert!(messages.contains(&("__keyspace@0__:l".to_owned(), "del".to_owned())), "{messages:?}");
    let latch: String = con.get("redisson_unlock_latch:{l}:r1").unwrap();
    assert_eq!(latch, "0", "the latch recorded as Redisson's spin lock records it");

    // Only a lock's releases take NONE.
    let text = error_text(redis::cmd("RSEM.RELEASE").arg(&["s", "1", "VIA", "NONE"]).query::<Value>(&mut con));
    assert!(text.contains("unexpected argument 4 ('NONE')"), "{text}");
}

#[test]
fn noreentry_refuses_the_holders_reentry_with_redissons_error() {
    let server = Server::shared();
    let mut con = server.connection();
    let take = |con: &mut Connection, owner: &str| {
        redis::cmd("RLOCK.ACQUIRE").arg(&["l", owner, "30000", "NOREENTRY"]).query::<Value>(con)
    };
    assert_eq!(take(&mut con, "o1").unwrap(), Value::Nil);
    assert_eq!(error_text(take(&mut con, "o1")), "ERR NON_REENTRANT_REACQUIRE");
    assert!(matches!(take(&mut con, "o2").unwrap(), Value::Int(ttl) if ttl > 29_000), "another owner gets the TTL");
    let holds: Vec<(String, i64)> = con.hgetall("l").unwrap();
    assert_eq!(holds, [("o1".to_owned(), 1)], "held once");

    let text = error_text(
        redis::cmd("RLOCK.ACQUIRE").arg(&["l", "o1", "30000", "NOREENTRY", "ID", "r1"]).query::<Value>(&mut con),
    );
    assert!(text.contains("NOREENTRY takes no ID"), "{text}");
    // Without a lease, NOREENTRY is no lease.
    assert_eq!(
        error_text(redis::cmd("RLOCK.ACQUIRE").arg(&["l", "o1", "NOREENTRY"]).query::<Value>(&mut con)),
        "ERR NON_REENTRANT_REACQUIRE"
    );
}
