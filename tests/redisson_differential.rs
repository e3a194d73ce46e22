//! Redisson's RLock scripts (texts from the jars of three generations:
#![allow(clippy::explicit_auto_deref)]
//! 4.7.0, 3.23.5 and 3.14.1) run through Lua on one lock name and through
//! the filter's native rewrite on a twin name, on one server, in random
//! sequences of EVAL and EVALSHA calls: replies, keys, TTLs, keyspace
//! notifications and published messages must be the same.

mod redisson_support;

use redis::{Cmd, Commands};
use redisson_support::twins::{assert_same_reply, same_states, Twins};
use redisson_support::{native_count, script_call, scripts, Scripts, Unlock, VERSION};
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
    Renew {
        owner: &'static str,
        lease: u64,
    },
    /// Somebody else's value at the lock name: both error (texts differ,
    /// see docs/commands.md), until a force release deletes it.
    Clobber,
    /// Leases and latches of 150 ms run out.
    Sleep,
}

fn random_op(rng: &mut Rng) -> Op {
    let lease = *rng.pick(&[150, 30_000, 60_000]);
    let publish = *rng.pick(&["publish", "publish", "PUBLISH"]);
    match rng.below(100) {
        0..=36 => Op::Acquire { owner: *rng.pick(&OWNERS), lease },
        37..=74 => Op::Release {
            owner: *rng.pick(&OWNERS),
            lease,
            request: *rng.pick(&REQUESTS),
            latch_ms: *rng.pick(&[150, 20_000]),
            publish,
        },
        75..=79 => Op::Renew { owner: *rng.pick(&OWNERS), lease },
        80..=89 => Op::ForceRelease { publish },
        90..=91 => Op::Clobber,
        _ => Op::Sleep,
    }
}

/// The script call of `op` on `name` as the version's texts take it
/// (Clobber and Sleep are none; nor is a renewal where the version renews
/// in batches).
fn script(scripts: &Scripts, by_sha: bool, name: &str, op: &Op) -> Option<Cmd> {
    let channel = release_channel(name.as_bytes());
    Some(match op {
        Op::Acquire { owner, lease } => {
            let lease = lease.to_string();
            script_call(by_sha, &scripts.acquire, &[name.as_bytes()], &[lease.as_bytes(), owner.as_bytes()])
        }
        Op::Release { owner, lease, request, latch_ms, publish } => {
            let latch = unlock_latch_key(name.as_bytes(), request.as_bytes());
            let (lease, latch_ms) = (lease.to_string(), latch_ms.to_string());
            let args: [&[u8]; 5] = [b"0", lease.as_bytes(), owner.as_bytes(), publish.as_bytes(), latch_ms.as_bytes()];
            let keys: [&[u8]; 3] = [name.as_bytes(), &channel, &latch];
            let (keys, args) = match scripts.unlock {
                Unlock::Plain => (&keys[..2], &args[..3]),
                Unlock::Publish => (&keys[..2], &args[..4]),
                Unlock::Latch => (&keys[..], &args[..]),
            };
            script_call(by_sha, &scripts.release, keys, args)
        }
        Op::ForceRelease { publish } => {
            let args: [&[u8]; 2] = [b"0", publish.as_bytes()];
            let args = if scripts.force_takes_publish() { &args[..] } else { &args[..1] };
            script_call(by_sha, &scripts.force, &[name.as_bytes(), &channel], args)
        }
        Op::Renew { owner, lease } => {
            let lease = lease.to_string();
            script_call(by_sha, scripts.renew.as_ref()?, &[name.as_bytes()], &[lease.as_bytes(), owner.as_bytes()])
        }
        Op::Clobber | Op::Sleep => unreachable!("no script call"),
    })
}

/// The lock and its latches.
fn keys(name: &str) -> Vec<Vec<u8>> {
    let mut keys = vec![name.as_bytes().to_vec()];
    keys.extend(REQUESTS.iter().map(|request| unlock_latch_key(name.as_bytes(), request.as_bytes())));
    keys
}

#[test]
fn redissons_rlock_scripts_run_natively_as_they_run_in_lua() {
    differential(VERSION);
}

/// 3.22 .. 3.23: the publish command as an argument, no unlock latch; the
/// single-lock renewal.
#[test]
fn redisson_3_23_rlock_scripts_run_natively_as_they_run_in_lua() {
    differential("3.23.5");
}

/// 3.12.3 .. 3.18: `publish` in the texts, the older acquire text.
#[test]
fn redisson_3_14_rlock_scripts_run_natively_as_they_run_in_lua() {
    differential("3.14.1");
}

fn differential(version: &str) {
    let scripts = scripts(version);
    let server = Server::builder().config("notify-keyspace-events", "KEA").start();
    let mut con = server.connection();
    for body in [&scripts.acquire, &scripts.release, &scripts.force].into_iter().chain(&scripts.renew) {
        let _: String = redis::cmd("SCRIPT").arg("LOAD").arg(body).query(&mut con).unwrap();
    }
    let mut control = server.connection();
    let mut rng = Rng::from_env(&format!("redisson_differential {version}"));
    let (mut calls, mut errors) = (0, 0);
    for step_no in 0..300 {
        let op = random_op(&mut rng);
        match op {
            Op::Sleep => std::thread::sleep(Duration::from_millis(200)),
            Op::Clobber => {
                for name in [TWINS.lua, TWINS.native] {
                    let _: () = con.set(name, "not a lock").unwrap();
                }
            }
            _ => {}
        }
        if matches!(op, Op::Sleep | Op::Clobber) {
            continue;
        }
        let by_sha = rng.chance(50);
        if script(&scripts, by_sha, TWINS.lua, &op).is_none() {
            continue;
        }
        let step = TWINS.step(&server, &mut control, keys, |name| script(&scripts, by_sha, name, &op).expect("a call"));
        let context = format!("{version} step {step_no}: {op:?} (EVALSHA: {by_sha})");
        let acquire = matches!(op, Op::Acquire { .. });
        errors += usize::from(assert_same_reply(&context, &step.lua, &step.native, acquire));
        calls += 1;
        assert_eq!(step.lua_messages, step.native_messages, "{context}: keyspace events and messages");
        let states = TWINS.states(&mut con, keys);
        assert!(same_states(&states), "{context}: keys\n{:?}\n{:?}", states[0], states[1]);
    }
    // Every call on the twin ran natively: the comparison was not Lua's with itself.
    assert_eq!(native_count(&mut con), calls as i64);
    assert!(calls > 200 && errors < calls / 2, "{calls} calls, {errors} errors");
}
