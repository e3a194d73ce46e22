//! Interop: a client speaking Redisson's protocol through Lua scripts (as a
//! Java service on Redisson would) and a client using the RLOCK commands
//! share one lock key from separate connections.

use redis::{Cmd, Commands, Connection, Value};
use std::time::Duration;
use testkit::{release_channel, RedissonScripts, Server};

const KEY: &[u8] = b"shared:resource";
const LEASE_MS: i64 = 10_000;
const ROUNDS: usize = 300;
const LATCH_MS: i64 = 20_000;

/// One side of the fleet: how it builds its acquire and release.
#[derive(Clone, Copy)]
enum Side {
    Scripts,
    Commands,
}

impl Side {
    fn acquire(self, scripts: &RedissonScripts, owner: &[u8]) -> Cmd {
        match self {
            Side::Scripts => scripts.acquire(KEY, owner, LEASE_MS),
            Side::Commands => redis::cmd("RLOCK.ACQUIRE").arg(KEY).arg(owner).arg(LEASE_MS).clone(),
        }
    }

    fn release(self, scripts: &RedissonScripts, owner: &[u8]) -> Cmd {
        match self {
            Side::Scripts => scripts.release(KEY, owner, LEASE_MS),
            Side::Commands => redis::cmd("RLOCK.RELEASE").arg(KEY).arg(owner).arg(LEASE_MS).clone(),
        }
    }

    /// Redisson 3.24+'s unlock with a request id, or RLOCK.RELEASE .. ID.
    fn release_latched(self, scripts: &RedissonScripts, owner: &[u8], request_id: &[u8]) -> Cmd {
        match self {
            Side::Scripts => scripts.release_latched(KEY, owner, LEASE_MS, request_id, LATCH_MS),
            Side::Commands => redis::cmd("RLOCK.RELEASE")
                .arg(KEY)
                .arg(owner)
                .arg(LEASE_MS)
                .arg("ID")
                .arg(request_id)
                .arg("PX")
                .arg(LATCH_MS)
                .clone(),
        }
    }
}

/// Redisson's waiting: subscribe first, then try; on a PTTL reply wait for
/// a release message or the PTTL, whichever comes first, and try again.
fn lock(pubsub: &mut redis::PubSub, side: Side, scripts: &RedissonScripts, con: &mut Connection, owner: &[u8]) {
    loop {
        match side.acquire(scripts, owner).query::<Value>(con).unwrap() {
            Value::Nil => return,
            Value::Int(ttl) => {
                pubsub.set_read_timeout(Some(Duration::from_millis(ttl.max(1) as u64))).unwrap();
                let _ = pubsub.get_message();
            }
            other => panic!("acquire replied {other:?}"),
        }
    }
}

#[test]
fn scripts_and_commands_exclude_each_other_on_one_key() {
    let server = Server::shared();
    let scripts = RedissonScripts::default();
    scripts.load(&mut server.connection()).unwrap();

    std::thread::scope(|scope| {
        for (side, owner) in [(Side::Scripts, b"java-uuid:1".as_slice()), (Side::Commands, b"rust-uuid:1".as_slice())] {
            let (server, scripts) = (&server, &scripts);
            scope.spawn(move || {
                let mut con = server.connection();
                let mut subscriber = server.connection();
                let mut pubsub = subscriber.as_pubsub();
                pubsub.subscribe(release_channel(KEY)).unwrap();
                for _ in 0..ROUNDS {
                    lock(&mut pubsub, side, scripts, &mut con, owner);
                    let inside: i64 = con.incr("inside", 1).unwrap();
                    assert_eq!(inside, 1, "two holders in the critical section");
                    let counter: i64 = con.get("counter").unwrap_or(0);
                    std::thread::yield_now();
                    let _: () = con.set("counter", counter + 1).unwrap();
                    let _: i64 = con.decr("inside", 1).unwrap();
                    assert_eq!(side.release(scripts, owner).query::<Value>(&mut con).unwrap(), Value::Int(1));
                }
            });
        }
    });
    let counter: i64 = server.connection().get("counter").unwrap();
    assert_eq!(counter, 2 * ROUNDS as i64, "no update lost");
}

#[test]
fn a_release_by_either_side_wakes_the_other() {
    let server = Server::shared();
    let scripts = RedissonScripts::default();
    scripts.load(&mut server.connection()).unwrap();

    for (holder, waiter) in [(Side::Scripts, Side::Commands), (Side::Commands, Side::Scripts)] {
        let mut holder_con = server.connection();
        assert_eq!(holder.acquire(&scripts, b"holder").query::<Value>(&mut holder_con).unwrap(), Value::Nil);
        let (contended, waiting) = std::sync::mpsc::channel();
        std::thread::scope(|scope| {
            let waiter_thread = scope.spawn(|| {
                let mut con = server.connection();
                let mut subscriber = server.connection();
                let mut pubsub = subscriber.as_pubsub();
                pubsub.subscribe(release_channel(KEY)).unwrap();
                let reply = waiter.acquire(&scripts, b"waiter").query::<Value>(&mut con).unwrap();
                assert!(matches!(reply, Value::Int(ttl) if ttl > 5000), "held: {reply:?}");
                contended.send(()).unwrap();
                // Far shorter than the 10 s lease: only the message can wake it.
                pubsub.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                let message = pubsub.get_message().expect("woken by the release message");
                assert_eq!(message.get_payload::<String>().unwrap(), "0");
                assert_eq!(waiter.acquire(&scripts, b"waiter").query::<Value>(&mut con).unwrap(), Value::Nil);
            });
            waiting.recv_timeout(Duration::from_secs(10)).expect("the waiter was refused");
            assert_eq!(holder.release(&scripts, b"holder").query::<Value>(&mut holder_con).unwrap(), Value::Int(1));
            waiter_thread.join().unwrap();
        });
        assert_eq!(waiter.release(&scripts, b"waiter").query::<Value>(&mut holder_con).unwrap(), Value::Int(1));
    }
}

/// In a mixed fleet, a release retried with the same request id may run
/// once as Redisson's script and once as RLOCK.RELEASE, in either order:
/// both read and write the same latch key, so the retry replies the first
/// reply and releases nothing more.
#[test]
fn a_release_retried_by_the_other_side_replies_the_same() {
    let server = Server::shared();
    let mut con = server.connection();
    let scripts = RedissonScripts::default();
    scripts.load(&mut con).unwrap();
    let owner = b"java-uuid:7";
    for (first, second) in [(Side::Scripts, Side::Commands), (Side::Commands, Side::Scripts)] {
        for (holds, expected) in [(1, 1), (2, 0)] {
            let request_id = format!("req-{holds}-{}", matches!(first, Side::Scripts));
            for _ in 0..holds {
                let _: Value = first.acquire(&scripts, owner).query(&mut con).unwrap();
            }
            let replies: Vec<Value> = [first, second, first]
                .iter()
                .map(|side| side.release_latched(&scripts, owner, request_id.as_bytes()).query(&mut con).unwrap())
                .collect();
            assert_eq!(replies, vec![Value::Int(expected); 3], "{request_id}");
            let count: Option<i64> = con.hget(KEY, owner).unwrap();
            assert_eq!(count, (holds > 1).then_some(holds - 1), "{request_id}: released once");
            let _: () = con.del(KEY).unwrap();
        }
    }
}
