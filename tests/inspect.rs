//! `RLOCK.INSPECT` on a real server: every kind as the native commands
//! leave it, a key that is no lock left alone, and the ACL: a user who may
//! read the name but not a key it derives still gets the name's holders.

use redis::{Connection, Value};
use std::collections::HashMap;
use testkit::{eventually, Server, PATIENCE};

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
    let server = Server::shared();
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
    let server = Server::shared();
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

/// The callers blocked on the server, as `RLOCK.WAITERS` and `RLOCK.INSPECT`
/// list them: each with its key, kind, owner, connection and times; a
/// user sees the waiters on the keys it may read, and is refused a key it
/// may not.
#[test]
fn server_side_waiters_are_listed_per_key_and_by_the_acl() {
    let server = Server::shared();
    let mut admin = server.connection();
    run(&mut admin, &["RLOCK.ACQUIRE", "locks:a", "o1", "60000"]);
    run(&mut admin, &["RFAIR.ACQUIRE", "other", "o1", "60000"]);
    let blocked: Vec<(u64, std::thread::JoinHandle<Value>)> = [
        &["RLOCK.ACQUIRE", "locks:a", "o2", "60000", "WAIT", "30000"][..],
        &["RFAIR.ACQUIRE", "other", "o2", "60000", "WAIT", "5000", "BLOCK", "30000"],
    ]
    .into_iter()
    .map(|call| {
        let mut con = server.connection();
        let id: u64 = redis::cmd("CLIENT").arg("ID").query(&mut con).unwrap();
        let call: Vec<String> = call.iter().map(|word| word.to_string()).collect();
        (id, std::thread::spawn(move || redis::cmd(&call[0]).arg(&call[1..]).query(&mut con).unwrap()))
    })
    .collect();
    let listed = |con: &mut Connection, args: &[&str]| -> Vec<HashMap<String, Value>> {
        let reply: Vec<Value> = redis::cmd("RLOCK.WAITERS").arg(args).query(con).unwrap();
        reply.into_iter().map(pairs).collect()
    };
    eventually("the calls blocked", PATIENCE, || listed(&mut admin, &[]).len() >= 2);
    let all = listed(&mut admin, &[]);
    let waiter = |key: &str| all.iter().find(|w| text(&w["key"]) == key).unwrap().clone();
    let (lock, fair) = (waiter("locks:a"), waiter("other"));
    assert_eq!((text(&lock["kind"]), text(&lock["owner"]), int(&lock["db"])), ("lock".into(), "o2".into(), 0));
    assert_eq!(int(&lock["client_id"]) as u64, blocked[0].0);
    assert_eq!((text(&fair["kind"]), int(&fair["client_id"]) as u64), ("fair".into(), blocked[1].0));
    assert!((1..=30_000).contains(&int(&lock["wait_left_ms"])) && int(&lock["waited_ms"]) >= 0);
    assert_eq!(listed(&mut admin, &["other"]).len(), 1);
    assert!(listed(&mut admin, &["nobody"]).is_empty());
    let (inspected, _) = inspect(&mut admin, "locks:a");
    let Value::Array(on_a) = inspected["waiters"].clone() else { panic!("{inspected:?}") };
    assert_eq!(text(&pairs(on_a[0].clone())["owner"]), "o2");

    run(&mut admin, &["ACL", "SETUSER", "watcher", "on", ">pw", "%R~locks:*", "+@all"]);
    let mut watcher = server.connection();
    run(&mut watcher, &["AUTH", "watcher", "pw"]);
    let seen: Vec<String> = listed(&mut watcher, &[]).iter().map(|w| text(&w["key"])).collect();
    assert_eq!(seen, ["locks:a"], "only the keys it may read");
    let refused = redis::cmd("RLOCK.WAITERS").arg("other").query::<Value>(&mut watcher).unwrap_err();
    assert_eq!(refused.code(), Some("NOPERM"), "{refused}");

    run(&mut admin, &["RLOCK.RELEASE", "locks:a", "o1"]);
    run(&mut admin, &["RFAIR.RELEASE", "other", "o1"]);
    for (_, call) in blocked {
        call.join().unwrap();
    }
    assert!(listed(&mut admin, &[]).is_empty(), "granted: no longer waiting");
}

/// `RLOCK.LIST`, cursor by cursor until 0: every lock-family key once at
/// least (as `SCAN` promises), no other key; `TYPE`, `MATCH`, the ACL.
fn list_all(con: &mut Connection, options: &[&str]) -> HashMap<String, String> {
    let mut cursor = "0".to_owned();
    let mut found = HashMap::new();
    loop {
        let (next, entries): (String, Vec<Value>) =
            redis::cmd("RLOCK.LIST").arg(&cursor).arg(options).query(con).unwrap();
        for entry in entries.into_iter().map(pairs) {
            found.insert(text(&entry["key"]), text(&entry["kind"]));
        }
        if next == "0" {
            return found;
        }
        cursor = next;
    }
}

#[test]
fn list_walks_the_keys_that_hold_lock_family_state() {
    let server = Server::shared();
    let mut con = server.connection();
    for i in 0..150 {
        run(&mut con, &["RLOCK.ACQUIRE", &format!("pub:lock:{i}"), "o1", "60000"]);
        run(&mut con, &["SET", &format!("pub:other:{i}"), "x"]);
    }
    run(&mut con, &["RFAIR.ACQUIRE", "pub:fair", "o1", "60000"]);
    run(&mut con, &["RFAIR.ACQUIRE", "pub:fair", "o2", "60000", "WAIT", "5000"]);
    run(&mut con, &["RSEM.TRYSETPERMITS", "sec:sem", "3"]);
    run(&mut con, &["RLOCK.ACQUIRE", "sec:lock", "o1", "60000"]);
    let all = list_all(&mut con, &["COUNT", "20"]);
    assert_eq!(all.len(), 152, "150 locks, the fair lock and sec:lock; no counter, no other key");
    assert_eq!(all["pub:fair"], "fair");
    assert!(all.iter().all(|(key, kind)| key == "pub:fair" || kind == "lock"), "{all:?}");
    assert_eq!(list_all(&mut con, &["TYPE", "counter"]).get("sec:sem").map(String::as_str), Some("counter"));
    assert_eq!(list_all(&mut con, &["MATCH", "sec:*"]).len(), 1);

    run(&mut con, &["ACL", "SETUSER", "lim", "on", "nopass", "%R~pub:*", "+@all"]);
    let mut lim = server.connection();
    run(&mut lim, &["AUTH", "lim", "x"]);
    let seen = list_all(&mut lim, &[]);
    assert_eq!(seen.len(), 151, "only the keys it may read");
    assert!(seen.keys().all(|key| key.starts_with("pub:")));

    // A selector that lets it GET other keys does not let it inspect them.
    run(&mut con, &["ACL", "SETUSER", "getter", "on", "nopass", "+@all", "resetkeys", "~pub:*", "(~sec:* +get)"]);
    let mut getter = server.connection();
    run(&mut getter, &["AUTH", "getter", "x"]);
    assert!(list_all(&mut getter, &[]).keys().all(|key| key.starts_with("pub:")));
    // A hash too big to be a lock's is not read, even if it looks like one.
    let mut big = redis::cmd("HSET");
    big.arg("pub:big");
    for field in 0..10_003 {
        big.arg(field).arg(1);
    }
    let _: i64 = big.query(&mut con).unwrap();
    assert!(!list_all(&mut con, &["MATCH", "pub:big"]).contains_key("pub:big"));
    assert_eq!(list_all(&mut con, &["TYPE", "FAIR"]).len(), 1, "TYPE is case-insensitive");
    // The other kinds, each listed without TYPE and with its own.
    let others: [(&[&str], &str, &str); 3] = [
        (&["RFENCED.ACQUIRE", "kinds:fenced", "o1", "60000"], "kinds:fenced", "fenced"),
        (&["RRW.ACQUIRE", "kinds:rw", "o1", "READ", "60000"], "kinds:rw", "read-write"),
        (&["RPSEM.TRYACQUIRE", "kinds:psem", "60000", "id1"], "kinds:psem", "permit-semaphore"),
    ];
    run(&mut con, &["RPSEM.TRYSETPERMITS", "kinds:psem", "3"]);
    // A string that is no count, with a permit set beside it: no
    // permit-semaphore to INSPECT, and not listed as one.
    run(&mut con, &["SET", "kinds:odd", "5.0"]);
    run(&mut con, &["ZADD", "{kinds:odd}:timeout", "99999999999999", "0123456789abcdef"]);
    assert_eq!(text(&inspect(&mut con, "kinds:odd").0["kind"]), "other");
    assert!(list_all(&mut con, &["MATCH", "kinds:odd", "TYPE", "permit-semaphore"]).is_empty());
    for (call, key, kind) in others {
        run(&mut con, call);
        assert_eq!(list_all(&mut con, &["MATCH", key]).get(key).map(String::as_str), Some(kind), "{key}");
        assert_eq!(list_all(&mut con, &["MATCH", key, "TYPE", kind]).len(), 1, "{key}");
        assert_eq!(list_all(&mut con, &["MATCH", key, "TYPE", "lock"]).len(), 0, "{key}");
    }

    let bad: [&[&str]; 7] = [
        &["x"],
        &["18446744073709551616"],
        &["0", "TYPE", "nope"],
        &["0", "MATCH"],
        &["0", "FOO", "bar"],
        &["0", "COUNT", "0"],
        &["0", "COUNT", "abc"],
    ];
    for bad in bad {
        let error = redis::cmd("RLOCK.LIST").arg(bad).query::<Value>(&mut con).unwrap_err();
        assert!(error.to_string().contains("syntax error"), "{bad:?}: {error}");
    }
}
