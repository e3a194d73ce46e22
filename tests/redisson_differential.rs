//! Redisson's RLock scripts (texts from the jars of three generations:
#![allow(clippy::explicit_auto_deref)]
//! 4.7.0, 3.23.5 and 3.14.1) run through Lua on one lock name and through
//! the filter's native rewrite on a twin name, on one server, in random
//! sequences of EVAL and EVALSHA calls: replies, keys, TTLs, keyspace
//! notifications and published messages must be the same.

mod redisson_support;

use redis::{Commands, Connection, Value};
use redisson_support::{call, native_count, scripts, set_mode, Scripts, Unlock, VERSION};
use std::time::Duration;
use testkit::{publications, release_channel, unlock_latch_key, Rng, Server};

const LUA: &str = "lua-lock";
const NATIVE: &str = "nat-lock";
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
        80..=84 => Op::ForceRelease { publish },
        85..=89 => Op::Renew { owner: *rng.pick(&OWNERS), lease },
        90..=91 => Op::Clobber,
        _ => Op::Sleep,
    }
}

/// Runs `op` on `name`; `None` for the steps that are no script call.
fn run(con: &mut Connection, scripts: &Scripts, by_sha: bool, name: &str, op: &Op) -> Option<Result<Value, String>> {
    let channel = release_channel(name.as_bytes());
    let reply = match op {
        Op::Acquire { owner, lease } => {
            call(con, by_sha, &scripts.acquire, &[name.as_bytes()], &[lease.to_string().as_bytes(), owner.as_bytes()])
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
            call(con, by_sha, &scripts.release, keys, args)
        }
        Op::ForceRelease { publish } => {
            let args: [&[u8]; 2] = [b"0", publish.as_bytes()];
            let args = if scripts.force_takes_publish() { &args[..] } else { &args[..1] };
            call(con, by_sha, &scripts.force, &[name.as_bytes(), &channel], args)
        }
        Op::Renew { owner, lease } => {
            let renew = scripts.renew.as_ref()?;
            call(con, by_sha, renew, &[name.as_bytes()], &[lease.to_string().as_bytes(), owner.as_bytes()])
        }
        Op::Clobber => {
            let _: () = con.set(name, "not a lock").unwrap();
            return None;
        }
        Op::Sleep => return None,
    };
    Some(reply.map_err(|err| err.to_string()))
}

/// Everything about `name` and its latches: type and value, and PTTL.
fn state(con: &mut Connection, name: &str) -> Vec<(String, i64)> {
    let mut keys = vec![name.as_bytes().to_vec()];
    keys.extend(REQUESTS.iter().map(|request| unlock_latch_key(name.as_bytes(), request.as_bytes())));
    keys.iter()
        .map(|key| {
            let kind: String = redis::cmd("TYPE").arg(key).query(con).unwrap();
            let value = match kind.as_str() {
                "hash" => {
                    let mut fields: Vec<(String, String)> = con.hgetall(key).unwrap();
                    fields.sort();
                    format!("{fields:?}")
                }
                "string" => con.get::<_, String>(key).unwrap(),
                _ => String::new(),
            };
            let pttl: i64 = con.pttl(key).unwrap();
            (format!("{} {kind} {value}", String::from_utf8_lossy(key).replace(NATIVE, LUA)), pttl)
        })
        .collect()
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
    let mut rng = Rng::from_env(&format!("redisson_differential {version}"));
    let (mut calls, mut errors) = (0, 0);
    for step in 0..300 {
        let op = random_op(&mut rng);
        if matches!(op, Op::Sleep) {
            std::thread::sleep(Duration::from_millis(200));
            continue;
        }
        let by_sha = rng.chance(50);
        let mut replies = vec![];
        let messages = publications(&server, |con| {
            set_mode(con, "off");
            replies.push(run(con, &scripts, by_sha, LUA, &op));
            set_mode(con, "native");
            replies.push(run(con, &scripts, by_sha, NATIVE, &op));
        });
        let (lua, native) = (&replies[0], &replies[1]);
        let context = format!("{version} step {step}: {op:?} (EVALSHA: {by_sha})");
        match (lua, native) {
            (Some(Err(_)), Some(Err(_))) => errors += 1,
            // An acquire's PTTL, read a moment apart.
            (Some(Ok(Value::Int(a))), Some(Ok(Value::Int(b)))) if matches!(op, Op::Acquire { .. }) && *a > 0 => {
                assert!((a - b).abs() <= 50, "{context}: PTTL {a} against {b}")
            }
            _ => assert_eq!(lua, native, "{context}: replies"),
        }
        calls += usize::from(lua.is_some());
        // A lease running out is announced when the server expires the key
        // (lazily or by its sampling), not by the step that set it.
        let stepped =
            messages.into_iter().filter(|(channel, message)| message != "expired" && !channel.ends_with(":expired"));
        let (lua_messages, native_messages): (Vec<_>, Vec<_>) =
            stepped.partition(|(channel, message)| !channel.contains(NATIVE) && !message.contains(NATIVE));
        let native_messages: Vec<_> = native_messages
            .into_iter()
            .map(|(channel, message)| (channel.replace(NATIVE, LUA), message.replace(NATIVE, LUA)))
            .collect();
        assert_eq!(lua_messages, native_messages, "{context}: keyspace events and messages");
        let (lua, native) = (state(&mut con, LUA), state(&mut con, NATIVE));
        let same = lua.iter().zip(&native).all(|((a, a_ttl), (b, b_ttl))| {
            // The two calls run a moment apart.
            a == b && (a_ttl == b_ttl || (*a_ttl >= 0 && *b_ttl >= 0 && (a_ttl - b_ttl).abs() <= 50))
        });
        assert!(same, "{context}: keys\n{lua:?}\n{native:?}");
    }
    // Every call on the twin ran natively: the comparison was not Lua's with itself.
    assert_eq!(native_count(&mut con), calls as i64);
    assert!(calls > 200 && errors < calls / 2, "{calls} calls, {errors} errors");
}
