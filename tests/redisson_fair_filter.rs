//! The filter on Redisson's fair-lock scripts: the calls it leaves to Lua
//! (numbers the native commands do not take), tryLock's wait as the script
//! moves the waiters behind by it, the give-up of a queue that names two
//! locks (`n` and `{n}`) told apart by the state, and ACL: the release publishes on the head
//! waiter's channel, unknown before it runs, so where the filter knows its
//! caller (Valkey, Redis 7.2+) it rewrites only for users who may publish on every
//! waiter channel of the lock.

mod redisson_support;

use redis::{Connection, Value};
use redisson_support::{call, family_native_count, texts};
use testkit::{error_text, newer_than_redis_7_0, server_time_ms, unlock_latch_key, Server};

const TRY_LOCK: &str = "d20501c26a30adf6fb0fe9883bbbcc497e6157e2";
const GIVE_UP: &str = "d1ddef65ad80886b5d36e023c99930044ddd653a";
const UNLOCK: &str = "367f80bd2e300e411fb0936d9b601e5bcb3fd4b6";

fn fair_texts() -> [Vec<u8>; 3] {
    texts("4.7.0", &["org/redisson/RedissonFairLock"], [TRY_LOCK, GIVE_UP, UNLOCK])
}

fn start() -> (Server, [Vec<u8>; 3]) {
    let server = Server::builder().module_arg("redisson-scripts").module_arg("native").start();
    let texts = fair_texts();
    let mut admin = server.connection();
    // Lua needs them loaded, as Redisson would after a NOSCRIPT.
    for body in &texts {
        let _: String = redis::cmd("SCRIPT").arg("LOAD").arg(body).query(&mut admin).unwrap();
    }
    (server, texts)
}

/// tryLock() on `name` by `owner`, its taker's wait `wait`.
fn try_lock(con: &mut Connection, text: &[u8], name: &str, owner: &str, wait: &str) -> redis::RedisResult<Value> {
    let now = server_time_ms(con).to_string();
    let keys = [
        name.as_bytes(),
        &rlock_protocol::fair_queue_key(name.as_bytes()),
        &rlock_protocol::fair_timeout_key(name.as_bytes()),
    ];
    call(con, true, text, &keys, &[b"30000", owner.as_bytes(), now.as_bytes(), wait.as_bytes()])
}

/// The unlock of `name` by `owner`.
fn unlock(con: &mut Connection, text: &[u8], name: &str, owner: &str) -> redis::RedisResult<Value> {
    let now = server_time_ms(con).to_string();
    let name = name.as_bytes();
    let keys = [
        name,
        &rlock_protocol::fair_queue_key(name),
        &rlock_protocol::fair_timeout_key(name),
        &rlock_protocol::release_channel(name),
        &unlock_latch_key(name, b"r1"),
    ];
    call(con, true, text, &keys, &[b"0", b"30000", owner.as_bytes(), now.as_bytes(), b"publish", b"20000"])
}

#[test]
fn calls_the_native_fair_lock_could_not_answer_alike_run_as_lua() {
    let (server, [try_lock_text, give_up_text, _]) = start();
    let mut con = server.connection();
    assert_eq!(try_lock(&mut con, &try_lock_text, "a", "o:1", "0").unwrap(), Value::Nil);
    assert_eq!(family_native_count(&mut con, "fair"), 0, "a taker's wait RFAIR.ACQUIRE … SHIFT refuses");
    assert_eq!(try_lock(&mut con, &try_lock_text, "b", "o:1", "300000").unwrap(), Value::Nil);
    assert_eq!(family_native_count(&mut con, "fair"), 1);
    assert_eq!(try_lock(&mut con, &try_lock_text, "c", "o:1", "5000").unwrap(), Value::Nil);
    assert_eq!(family_native_count(&mut con, "fair"), 2, "another taker's wait: SHIFT");
    let give_up = |con: &mut Connection, queue: &str, deadlines: &str| {
        call(con, true, &give_up_text, &[queue.as_bytes(), deadlines.as_bytes()], &[b"o:2", b"-5"]).unwrap()
    };
    assert_eq!(give_up(&mut con, "redisson_lock_queue:{t}n", "redisson_lock_timeout:{t}n"), Value::Nil);
    assert_eq!(family_native_count(&mut con, "fair"), 2, "a wait RFAIR.CANCEL refuses");
}

#[test]
fn acl_decides_where_the_filter_knows_its_caller() {
    let (server, [try_lock_text, _, unlock_text]) = start();
    let mut admin = server.connection();
    let knows_caller = newer_than_redis_7_0(&mut admin);
    let acl_lua = |admin: &mut Connection| testkit::rlock_info(admin, "redisson_acl_lua");
    let mut lua_only = server.login("lua-only", &["~*", "&*", "-rfair.acquire"]);
    let reply = try_lock(&mut lua_only, &try_lock_text, "x", "o:1", "300000");
    if knows_caller {
        // The user may not run RFAIR.ACQUIRE: the script runs as Lua, as it would without the module.
        assert_eq!(reply.unwrap(), Value::Nil);
        assert_eq!(acl_lua(&mut admin), 1);
        assert_eq!(family_native_count(&mut admin, "fair"), 0);
    } else {
        // Redis 7.0 cannot tell the filter who calls (README: why the default is off there).
        assert!(error_text(reply).contains("NOPERM"));
        eprintln!(
            "skipped on {}: the checks that a script ACL refuses natively runs as Lua (Redis 7.0 cannot tell the filter its caller)",
            testkit::server_bin()
        );
    }
    // May publish on one waiter's channel only: the head's is not known before the call.
    let mut one_channel = server.login("one-channel", &["~*", "&redisson_lock__channel:{y}:o:2"]);
    assert_eq!(unlock(&mut one_channel, &unlock_text, "y", "o:1").unwrap(), Value::Int(1), "no lock: Lua's 1");
    if knows_caller {
        assert_eq!(acl_lua(&mut admin), 2);
    }
    // May publish on every waiter channel of the lock: runs natively.
    let mut waiters = server.login("waiters", &["~*", "&redisson_lock__channel:*"]);
    let before = family_native_count(&mut admin, "fair");
    assert_eq!(try_lock(&mut waiters, &try_lock_text, "z", "o:1", "300000").unwrap(), Value::Nil);
    assert_eq!(unlock(&mut waiters, &unlock_text, "z", "o:1").unwrap(), Value::Int(1));
    assert_eq!(family_native_count(&mut admin, "fair"), before + 2);
}

/// tryLock() taking its turn moves the script waiters behind it up by its
/// wait, natively as in Lua: `SHIFT`, by default Redisson's 300000.
#[test]
fn try_lock_moves_the_waiters_behind_by_its_wait() {
    let (server, [try_lock_text, ..]) = start();
    let mut con = server.connection();
    for (name, wait, moved) in [("s", "100000", 100_000), ("d", "300000", 300_000)] {
        let now = server_time_ms(&mut con);
        let (queue, deadlines) =
            (rlock_protocol::fair_queue_key(name.as_bytes()), rlock_protocol::fair_timeout_key(name.as_bytes()));
        let _: () = redis::cmd("RPUSH").arg(&queue).arg("o:1").arg("o:2").query(&mut con).unwrap();
        let behind = now + 900_000;
        let _: () = redis::cmd("ZADD")
            .arg(&deadlines)
            .arg(now + 600_000)
            .arg("o:1")
            .arg(behind)
            .arg("o:2")
            .query(&mut con)
            .unwrap();
        let before = family_native_count(&mut con, "fair");
        assert_eq!(
            try_lock(&mut con, &try_lock_text, name, "o:1", wait).unwrap(),
            Value::Nil,
            "{name}: the head's turn"
        );
        assert_eq!(family_native_count(&mut con, "fair"), before + 1, "{name}: natively");
        let score: i64 = redis::cmd("ZSCORE").arg(&deadlines).arg("o:2").query(&mut con).unwrap();
        assert_eq!(score, behind - moved, "{name}: o:2 moved up by the wait");
    }
    let refused =
        redis::cmd("RFAIR.ACQUIRE").arg(&["x", "o", "30000", "WAIT", "1000", "SHIFT", "5"]).query::<Value>(&mut con);
    assert!(error_text(refused).contains("SHIFT"), "SHIFT is the no-wait form's");
    let refused = redis::cmd("RFAIR.ACQUIRE").arg(&["x", "o", "30000", "SHIFT", "0"]).query::<Value>(&mut con);
    assert!(error_text(refused).contains("wait"));
}

/// `n` and `{n}` share one queue key, the give-up's only key: natively, the
/// lock is the one whose hash exists, else the one whose waiters the server
/// remembers; when the state does not tell, the waiter leaves with no
/// lock's memory (counted).
#[test]
fn a_give_up_of_n_or_braced_n_is_told_apart_by_the_state() {
    let (server, [_, give_up_text, _]) = start();
    let mut con = server.connection();
    let unnamed = |con: &mut Connection| testkit::rlock_info(con, "redisson_fair_unnamed");
    let queued = |con: &mut Connection, name: &str| -> Vec<String> {
        redis::cmd("LRANGE").arg(rlock_protocol::fair_queue_key(name.as_bytes())).arg(0).arg(-1).query(con).unwrap()
    };
    let give_up = |con: &mut Connection, name: &str, owner: &str| {
        let keys = [rlock_protocol::fair_queue_key(name.as_bytes()), rlock_protocol::fair_timeout_key(name.as_bytes())];
        let keys: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        call(con, true, &give_up_text, &keys, &[owner.as_bytes(), b"300000"]).unwrap()
    };
    let queue_behind = |con: &mut Connection, name: &str| {
        let acquire = |owner: &str| {
            redis::cmd("RFAIR.ACQUIRE").arg(name).arg(owner).arg("30000").arg("WAIT").arg("300000").clone()
        };
        assert_eq!(acquire("o:1").query::<Value>(con).unwrap(), Value::Nil);
        assert!(matches!(acquire("o:2").query::<Value>(con).unwrap(), Value::Int(_)));
        assert!(matches!(acquire("o:3").query::<Value>(con).unwrap(), Value::Int(_)));
    };
    // Held as `n`, and as `{m}`: each give-up is of the lock held.
    for name in ["n", "{m}"] {
        queue_behind(&mut con, name);
        let before = family_native_count(&mut con, "fair");
        assert_eq!(give_up(&mut con, name, "o:2"), Value::Nil);
        assert_eq!(family_native_count(&mut con, "fair"), before + 1, "{name}: natively");
        assert_eq!(queued(&mut con, name), ["o:3"], "{name}");
    }
    // `n` free, its waiter remembered by the server: the give-up is `n`'s.
    let released: Value = redis::cmd("RFAIR.RELEASE").arg(&["n", "o:1", "30000"]).query(&mut con).unwrap();
    assert_eq!(released, Value::Int(1));
    assert_eq!(give_up(&mut con, "n", "o:3"), Value::Nil);
    assert!(queued(&mut con, "n").is_empty());
    assert_eq!(unnamed(&mut con), 0, "told apart each time");
    // Free, and nobody the server remembers: either name does the same.
    let queue = rlock_protocol::fair_queue_key(b"f");
    let deadlines = rlock_protocol::fair_timeout_key(b"f");
    let far = testkit::server_time_ms(&mut con) + 600_000;
    let _: () = redis::cmd("RPUSH").arg(&queue).arg("o:2").arg("o:3").query(&mut con).unwrap();
    let _: () =
        redis::cmd("ZADD").arg(&deadlines).arg(far).arg("o:2").arg(far + 300_000).arg("o:3").query(&mut con).unwrap();
    assert_eq!(give_up(&mut con, "f", "o:2"), Value::Nil);
    assert_eq!(queued(&mut con, "f"), ["o:3"]);
    let score: i64 = redis::cmd("ZSCORE").arg(&deadlines).arg("o:3").query(&mut con).unwrap();
    assert_eq!(score, far, "moved up by the wait, as the script");
    assert_eq!(unnamed(&mut con), 1);
}
