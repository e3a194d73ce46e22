//! docs/commands.md's `redisson` ACL recipe (run as documented,
//! `testkit::acl_recipe`), with the filter on: Redisson 4.7.0's script
//! texts (read from its jar) of the lock, the watchdog's batch renewal,
//! the fair lock, the read-write lock, the semaphore and the count-down latch, called as Redisson calls them
//! by the recipe's user, all run natively with no refusal in `ACL LOG`
//! (on Valkey the filter checks the caller: none is left to Lua); the
//! user subscribes to its locks' channels; and cannot touch other names,
//! delete locks or run other commands.

mod redisson_support;

use redis::{Connection, Value};
use redisson_support::{all_texts, call, family_native_count, native_count, scripts, sha1_hex, texts, VERSION};
use rlock_protocol::{count_down_latch_channel, release_channel, semaphore_channel, unlock_latch_key};
use rlock_protocol::{
    fair_queue_key, fair_timeout_key, rwlock_channel, rwlock_key_prefix, rwlock_timeout_prefix, rwlock_write_field,
};
use testkit::{acl_log, acl_recipe, error_text, server_time_ms, Server};

const SEMAPHORE: &str = "org/redisson/RedissonSemaphore";
/// 4.7.0's tryAcquire and release.
const SEMAPHORE_SHAS: [&str; 2] =
    ["c7dc9d189c1715465a31a06ddbc008585e0c20be", "ae27582488dd01f4e238cc0733a12146d410eb44"];
const LATCH: &str = "org/redisson/RedissonCountDownLatch";
/// 4.7.0's countDown and trySetCount.
const LATCH_SHAS: [&str; 2] = ["38060fab26b0e7c5982a5cfd7ad542e44d3da19b", "2a52d54a6f35bc8af5e84a2930b2ca1aa2a15892"];
const RW_CLASSES: [&str; 2] = ["org/redisson/RedissonReadLock", "org/redisson/RedissonWriteLock"];
/// 4.7.0's read acquire, write acquire, read release and write release.
const RW_SHAS: [&str; 4] = [
    "95553a6ff11176c18e71344e89d116b06fd6f753",
    "6306ba3bf1f563b284bed52d305fce615c6664d9",
    "6e1b10e11ac0a3ed8e902562ecd32ce01b553039",
    "21f5fb0f8ddfa9be5c3e0c9757c128796add75c6",
];
/// 4.7.0's fair lock: the waiting acquire and the unlock.
const FAIR_SHAS: [&str; 2] = ["8f6ed299ffd259f0539c20f89253998c0777ea75", "367f80bd2e300e411fb0936d9b601e5bcb3fd4b6"];
/// 4.7.0's watchdog batch renewal (`LockTask`).
const RENEW_ALL_SHA: &str = "6a3d31570dc6f4b0bd32bcdc8e75667747c6f635";

fn ok(result: redis::RedisResult<Value>, what: &str) -> Value {
    result.unwrap_or_else(|e| panic!("{what}: {e}"))
}

#[test]
fn redissons_texts_run_natively_as_the_recipe_user() {
    let lock = scripts(VERSION);
    let renew_all = all_texts(VERSION, &["org/redisson/renewal/LockTask"])
        .into_iter()
        .find(|text| sha1_hex(text) == RENEW_ALL_SHA)
        .expect("LockTask's text");
    let [try_acquire, release_permits] = texts(VERSION, &[SEMAPHORE], SEMAPHORE_SHAS);
    let [count_down, try_set_count] = texts(VERSION, &[LATCH], LATCH_SHAS);
    let [read_acquire, write_acquire, read_release, write_release] = texts(VERSION, &RW_CLASSES, RW_SHAS);
    let [fair_lock, fair_unlock] = texts(VERSION, &["org/redisson/RedissonFairLock"], FAIR_SHAS);
    let server = Server::builder().module_arg("redisson-scripts").module_arg("native").start();
    let mut admin = server.connection();
    let recipe = acl_recipe("redisson");
    recipe.apply(&mut admin);
    let () = redis::cmd("ACL").arg(&["LOG", "RESET"]).query(&mut admin).unwrap();
    let mut app = recipe.connection(&server);

    // A waiter's subscription, as Redisson's.
    let mut waiter = recipe.connection(&server);
    let mut waiter = waiter.as_pubsub();
    waiter.subscribe(release_channel(b"app:l")).unwrap();

    // RLock: acquire, the watchdog's renewal, a latched release, a force release.
    let (name, channel, latch) = (&b"app:l"[..], release_channel(b"app:l"), unlock_latch_key(b"app:l", b"r1"));
    let acquire = |con: &mut Connection, by_sha| call(con, by_sha, &lock.acquire, &[name], &[b"30000", b"o:1"]);
    assert_eq!(ok(acquire(&mut app, false), "acquire"), Value::Nil);
    assert_eq!(ok(acquire(&mut app, true), "re-entry"), Value::Nil);
    let renewed = ok(call(&mut app, true, &renew_all, &[name], &[b"30000", b"o:1"]), "renew all");
    assert_eq!(renewed, Value::Array(vec![Value::Int(1)]));
    let release = |con: &mut Connection| {
        let args: [&[u8]; 5] = [b"0", b"30000", b"o:1", b"publish", b"20000"];
        call(con, true, &lock.release, &[name, &channel, &latch], &args)
    };
    assert_eq!(ok(release(&mut app), "release"), Value::Int(0), "one hold left");
    let force = call(&mut app, true, &lock.force, &[name, &channel], &[b"0", b"publish"]);
    assert_eq!(ok(force, "force release"), Value::Int(1));
    assert_eq!(waiter.get_message().unwrap().get_channel_name(), "redisson_lock__channel:{app:l}");
    assert_eq!(native_count(&mut admin), 5);

    // RFairLock: a holder, a queued waiter, the hand-over on the waiter's channel.
    let (name, queue, deadlines) = (&b"app:f"[..], fair_queue_key(b"app:f"), fair_timeout_key(b"app:f"));
    let now = server_time_ms(&mut admin).to_string();
    let lock_as = |con: &mut Connection, owner: &[u8]| {
        let args: [&[u8]; 4] = [b"30000", owner, b"300000", now.as_bytes()];
        call(con, true, &fair_lock, &[name, &queue, &deadlines], &args)
    };
    assert_eq!(ok(lock_as(&mut app, b"o:1"), "fair acquire"), Value::Nil);
    assert!(matches!(ok(lock_as(&mut app, b"o:2"), "fair wait"), Value::Int(ttl) if ttl > 0), "queued");
    let (channel, latch) = (release_channel(name), unlock_latch_key(name, b"r4"));
    let keys: [&[u8]; 5] = [name, &queue, &deadlines, &channel, &latch];
    let args: [&[u8]; 6] = [b"0", b"30000", b"o:1", now.as_bytes(), b"PUBLISH", b"20000"];
    assert_eq!(ok(call(&mut app, true, &fair_unlock, &keys, &args), "fair release"), Value::Int(1));
    assert_eq!(ok(lock_as(&mut app, b"o:2"), "the waiter's turn"), Value::Nil);
    assert_eq!(family_native_count(&mut admin, "fair"), 4);

    // RReadWriteLock: a read hold (its timeout key derived as `{name}:…`), then a write.
    let (name, channel) = (&b"app:rw"[..], rwlock_channel(b"app:rw"));
    let (owner, write_field) = (&b"o:1"[..], rwlock_write_field(b"o:1"));
    let (timeouts, holds) = (rwlock_timeout_prefix(name, owner), rwlock_key_prefix(name));
    let read = call(&mut app, true, &read_acquire, &[name, &timeouts], &[b"30000", owner, &write_field]);
    assert_eq!(ok(read, "read acquire"), Value::Nil);
    let latch = unlock_latch_key(name, b"r2");
    let keys: [&[u8]; 5] = [name, &channel, &timeouts, &holds, &latch];
    let released = call(&mut app, true, &read_release, &keys, &[b"0", owner, b"publish", b"20000"]);
    assert_eq!(ok(released, "read release"), Value::Int(1));
    let write = call(&mut app, true, &write_acquire, &[name], &[b"30000", &write_field]);
    assert_eq!(ok(write, "write acquire"), Value::Nil);
    let latch = unlock_latch_key(name, b"r3");
    let args: [&[u8]; 5] = [b"1", b"30000", &write_field, b"publish", b"20000"];
    assert_eq!(
        ok(call(&mut app, true, &write_release, &[name, &channel, &latch], &args), "write release"),
        Value::Int(1)
    );
    assert_eq!(family_native_count(&mut admin, "rwlock"), 4);

    // RSemaphore.
    let (name, channel) = (&b"app:s"[..], semaphore_channel(b"app:s"));
    let released = call(&mut app, true, &release_permits, &[name, &channel], &[b"2", b"publish"]);
    ok(released, "release permits");
    let taken = ok(call(&mut app, true, &try_acquire, &[name], &[b"1"]), "try acquire");
    assert_eq!(taken, Value::Int(1));
    assert_eq!(family_native_count(&mut admin, "semaphore"), 2);

    // RCountDownLatch: its channel is passed on to the native command, which Redis checks.
    let (name, channel) = (&b"app:c"[..], count_down_latch_channel(b"app:c"));
    let set = call(&mut app, true, &try_set_count, &[name, &channel], &[b"1", b"1", b"publish"]);
    assert_eq!(ok(set, "try set count"), Value::Int(1));
    ok(call(&mut app, true, &count_down, &[name, &channel], &[b"0", b"publish"]), "count down");
    assert_eq!(family_native_count(&mut admin, "latch"), 2);

    assert_eq!(testkit::rlock_info(&mut admin, "redisson_acl_lua"), 0, "none left to Lua");
    drop(waiter);
    assert_eq!(acl_log(&mut admin), Vec::<String>::new(), "no refusal");

    // What the user cannot do: other names, deleting locks, other commands.
    assert_eq!(ok(acquire(&mut app, true), "acquire"), Value::Nil);
    let other = call(&mut app, true, &lock.acquire, &[b"other:l"], &[b"30000", b"o:1"]);
    assert!(error_text(other).starts_with("NOPERM"));
    for args in [&["DEL", "app:l"][..], &["HSET", "app:l", "o:1", "5"], &["KEYS", "*"], &["RLOCK.INSPECT", "app:l"]] {
        let refused: redis::RedisResult<Value> = redis::cmd(args[0]).arg(&args[1..]).query(&mut app);
        assert!(error_text(refused).starts_with("NOPERM"), "{args:?}");
    }
    let subscribed: redis::RedisResult<Value> =
        redis::cmd("SUBSCRIBE").arg(release_channel(b"other:l")).query(&mut recipe.connection(&server));
    assert!(error_text(subscribed).starts_with("NOPERM"), "another name's channel");
    assert_eq!(
        ok(redis::cmd("HGET").arg("app:l").arg("o:1").query(&mut admin), "HGET"),
        Value::BulkString(b"1".to_vec())
    );
}
