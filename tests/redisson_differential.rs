//! Redisson's RLock scripts (texts from the jar of the newest Redisson
#![allow(clippy::explicit_auto_deref)]
//! tested) run through Lua on one lock name and through the filter's
//! native rewrite on a twin name, on one server, in random sequences of
//! EVAL and EVALSHA calls: replies, keys, TTLs, keyspace notifications
//! and published messages must be the same.

mod redisson_support;

use redis::{Commands, Connection, Value};
use redisson_support::differential::{Reply, Twins};
use redisson_support::{call, load, native_count, scripts, Scripts, VERSION};
use std::time::Duration;
use testkit::{release_channel, unlock_latch_key, Rng, Server};

const TWINS: Twins = Twins { lua: "lua-lock", native: "nat-lock" };
const OWNERS: [&str; 3] = ["6f1c:1", "6f1c:2", "a9e0:7"];
const REQUESTS: [&str; 3] = ["0a1b2c3d4e5f60718293a4b5c6d7e8f9", "ffeeddccbbaa99887766554433221100", "r3"];

#[derive(Debug, Clone)]
enum Op {
    Acquire {
        owner: &'static str,
        lease: u64,
    },
    Release {
        owner: &'static str,
        lease: u64,
        request: &'static str,
        latch_ms: u64,
        publish: &'static str,
    },
    ForceRelease {
        publish: &'static str,
    },
    /// Somebody else's value at the lock name: both error (texts differ,
    /// see README), until a force release deletes it.
    Clobber,
    /// Leases and latches of 150 ms run out.
    Sleep,
}

fn random_op(rng: &mut Rng) -> Op {
    let lease = *rng.pick(&[150, 30_000, 60_000]);
    let publish = *rng.pick(&["publish", "publish", "PUBLISH"]);
    match rng.below(100) {
        0..=39 => Op::Acquire { owner: *rng.pick(&OWNERS), lease },
        40..=79 => Op::Release {
            owner: *rng.pick(&OWNERS),
            lease,
            request: *rng.pick(&REQUESTS),
            latch_ms: *rng.pick(&[150, 20_000]),
            publish,
        },
        80..=89 => Op::ForceRelease { publish },
        90..=91 => Op::Clobber,
        _ => Op::Sleep,
    }
}

/// Runs `op` on `name`; `None` for the steps that are no script call.
fn run(con: &mut Connection, scripts: &Scripts, by_sha: bool, name: &str, op: &Op) -> Reply {
    let channel = release_channel(name.as_bytes());
    let reply = match op {
        Op::Acquire { owner, lease } => {
            call(con, by_sha, &scripts.acquire, &[name.as_bytes()], &[lease.to_string().as_bytes(), owner.as_bytes()])
        }
        Op::Release { owner, lease, request, latch_ms, publish } => {
            let latch = unlock_latch_key(name.as_bytes(), request.as_bytes());
            let (lease, latch_ms) = (lease.to_string(), latch_ms.to_string());
            let args: [&[u8]; 5] = [b"0", lease.as_bytes(), owner.as_bytes(), publish.as_bytes(), latch_ms.as_bytes()];
            call(con, by_sha, &scripts.release, &[name.as_bytes(), &channel, &latch], &args)
        }
        Op::ForceRelease { publish } => {
            call(con, by_sha, &scripts.force, &[name.as_bytes(), &channel], &[b"0", publish.as_bytes()])
        }
        Op::Clobber => {
            let _: () = con.set(name, "not a lock").unwrap();
            return None;
        }
        Op::Sleep => return None,
    };
    Some(reply.map_err(|err| err.to_string()))
}

/// `name` and its latches.
fn keys(name: &str) -> Vec<Vec<u8>> {
    let latches = REQUESTS.iter().map(|request| unlock_latch_key(name.as_bytes(), request.as_bytes()));
    std::iter::once(name.as_bytes().to_vec()).chain(latches).collect()
}

#[test]
fn redissons_rlock_scripts_run_natively_as_they_run_in_lua() {
    let scripts = scripts(VERSION);
    let server = Server::builder().config("notify-keyspace-events", "KEA").start();
    let mut con = server.connection();
    load(&mut con, &[&scripts.acquire, &scripts.release, &scripts.force]);
    let mut rng = Rng::from_env("redisson_differential");
    let (mut calls, mut errors) = (0, 0);
    for step in 0..300 {
        let op = random_op(&mut rng);
        if matches!(op, Op::Sleep) {
            std::thread::sleep(Duration::from_millis(200));
            continue;
        }
        let by_sha = rng.chance(50);
        let context = format!("step {step}: {op:?} (EVALSHA: {by_sha})");
        let [lua, native] = TWINS.step(&server, &context, |con, name| run(con, &scripts, by_sha, name, &op));
        match (&lua, &native) {
            (Some(Err(_)), Some(Err(_))) => errors += 1,
            // An acquire's PTTL, read a moment apart.
            (Some(Ok(Value::Int(a))), Some(Ok(Value::Int(b)))) if matches!(op, Op::Acquire { .. }) && *a > 0 => {
                assert!((a - b).abs() <= 50, "{context}: PTTL {a} against {b}")
            }
            _ => assert_eq!(lua, native, "{context}: replies"),
        }
        calls += usize::from(lua.is_some());
        TWINS.assert_same_keys(&mut con, &context, keys);
    }
    // Every call on the twin ran natively: the comparison was not Lua's with itself.
    assert_eq!(native_count(&mut con), calls as i64);
    assert!(calls > 200 && errors < calls / 2, "{calls} calls, {errors} errors");
}
