//! Differential test of the read-write lock: random multi-owner sequences
//! run through our Lua transcription of Redisson's read and write scripts
//! and through the RRW commands, on twin names (`s:<name>`, `c:<name>`) in
//! one MULTI per step. The hash, every read hold's timeout key and its
//! PTTL, the hash's PTTL, the latch and the messages must match, with
//! leases short enough that holds expire mid-sequence.
//!
//! Where the commands deliberately differ, their rule is checked instead:
//! a write re-entry sets the expiry to max(current, lease), where the
//! script adds the lease to the PTTL; the script twin is then given the
//! command twin's PTTL, to go on in step.

use redis::{Connection, Value};
use std::collections::HashMap;
use std::time::Duration;
use testkit::{Drift, Rng, RwScripts, Server};

const SEQUENCES: usize = 150;
const STEPS: usize = 16;
const TOLERANCE_MS: i64 = 5;
const GUARD_MS: i64 = 4;
const NAME: &[u8] = b"cfg";
const OWNERS: [&[u8]; 3] = [b"u:1", b"u:2", b"u:3"];
const IDS: [&[u8]; 2] = [b"r1", b"r2"];
/// Read holds per owner whose timeout keys are compared.
const HOLDS: i64 = 4;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Read,
    Write,
    ReadRelease,
    WriteRelease,
    ForceRead,
    ForceWrite,
}

fn twin(prefix: &[u8]) -> Vec<u8> {
    [prefix, NAME].concat()
}

/// The keys whose PTTLs are compared: the hash, then every timeout key.
fn timed_keys(name: &[u8]) -> Vec<Vec<u8>> {
    let mut keys = vec![name.to_vec()];
    for owner in OWNERS {
        keys.extend((1..=HOLDS).map(|n| rlock_protocol::rwlock_timeout_key(name, owner, n)));
    }
    keys
}

fn pttls(con: &mut Connection, name: &[u8]) -> Vec<i64> {
    let mut pipe = redis::pipe();
    for key in timed_keys(name) {
        pipe.cmd("PTTL").arg(key);
    }
    pipe.query(con).unwrap()
}

/// Waits until no key of either twin expires within the guard.
fn quiet(con: &mut Connection) {
    loop {
        let mut all = pttls(con, &twin(b"s:"));
        all.extend(pttls(con, &twin(b"c:")));
        match all.into_iter().filter(|pttl| (0..=GUARD_MS).contains(pttl)).max() {
            None => return,
            Some(pttl) => std::thread::sleep(Duration::from_millis((pttl + 1) as u64)),
        }
    }
}

/// One step's arguments.
struct Step<'a> {
    op: Op,
    owner: &'a [u8],
    lease: i64,
    id: &'a [u8],
}

fn run_step(
    con: &mut Connection,
    scripts: &RwScripts,
    &Step { op, owner, lease, id }: &Step,
    index: usize,
    drift: &mut Drift,
) -> (Vec<Value>, i64) {
    let (s, c) = (twin(b"s:"), twin(b"c:"));
    let mut pipe = redis::pipe();
    Drift::begin(&mut pipe);
    let native = |pipe: &mut redis::Pipeline, side: &str| {
        pipe.cmd("RRW.RELEASE").arg(&c).arg(owner).arg(side).arg(lease).arg("ID").arg(id);
    };
    match op {
        Op::Read => {
            pipe.add_command(scripts.read_acquire(&s, owner, lease))
                .cmd("RRW.ACQUIRE")
                .arg(&c)
                .arg(owner)
                .arg("READ")
                .arg(lease);
        }
        Op::Write => {
            pipe.add_command(scripts.write_acquire(&s, owner, lease))
                .cmd("RRW.ACQUIRE")
                .arg(&c)
                .arg(owner)
                .arg("WRITE")
                .arg(lease);
        }
        Op::ReadRelease => {
            pipe.add_command(scripts.read_release(&s, owner, id));
            native(&mut pipe, "READ");
        }
        Op::WriteRelease => {
            pipe.add_command(scripts.write_release(&s, owner, lease, id));
            native(&mut pipe, "WRITE");
        }
        Op::ForceRead => {
            pipe.add_command(scripts.force_release(&s, false)).cmd("RRW.FORCERELEASE").arg(&c).arg("READ");
        }
        Op::ForceWrite => {
            pipe.add_command(scripts.force_release(&s, true)).cmd("RRW.FORCERELEASE").arg(&c).arg("WRITE");
        }
    }
    for twin in [&s, &c] {
        pipe.cmd("HGETALL").arg(twin);
        pipe.cmd("GET").arg(rlock_protocol::unlock_latch_key(twin, id));
        for key in timed_keys(twin) {
            pipe.cmd("PTTL").arg(key);
        }
    }
    pipe.cmd("PUBLISH").arg("step").arg(index);
    drift.query(pipe, con).unwrap_or_else(|e| panic!("{op:?}: {e}"))
}

/// Within the tolerance; a key read at its last millisecond on one side
/// may be gone on the other.
fn pttl_matches(a: i64, b: i64, tolerance: i64) -> bool {
    let ending = |pttl: i64| (-2..=1).contains(&pttl);
    a == b || (a >= 0 && b >= 0 && (a - b).abs() <= tolerance) || (ending(a) && ending(b))
}

#[test]
fn rw_commands_match_the_redisson_scripts_on_random_sequences() {
    let server = Server::start();
    let mut con = server.connection();
    let scripts = RwScripts::default();
    scripts.load(&mut con).unwrap();
    let mut listener = server.connection();
    let mut pubsub = listener.as_pubsub();
    pubsub.psubscribe("redisson_rwlock:*").unwrap();
    pubsub.subscribe("step").unwrap();
    pubsub.subscribe("done").unwrap();

    let mut rng = Rng::from_env("rwlock_differential");
    let per_twin = 2 + timed_keys(NAME).len();
    let (mut expired, mut reentered_writes, mut steps) = (0, 0, 0);
    let mut drift = Drift::new(TOLERANCE_MS);
    for sequence in 0..SEQUENCES {
        let _: () = redis::cmd("FLUSHALL").query(&mut con).unwrap();
        drift.reset();
        for index in 0..STEPS {
            let op = match rng.below(100) {
                0..=34 => Op::Read,
                35..=54 => Op::Write,
                55..=74 => Op::ReadRelease,
                75..=94 => Op::WriteRelease,
                95..=97 => Op::ForceRead,
                _ => Op::ForceWrite,
            };
            let owner = *rng.pick(&OWNERS);
            let lease = if rng.chance(40) { 6 + rng.below(20) as i64 } else { 60_000 };
            let id = *rng.pick(&IDS);
            if rng.chance(25) {
                std::thread::sleep(Duration::from_millis(rng.below(30)));
            }
            quiet(&mut con);
            let before: HashMap<Vec<u8>, Vec<u8>> = redis::cmd("HGETALL").arg(twin(b"s:")).query(&mut con).unwrap();
            let (replies, tolerance) = run_step(&mut con, &scripts, &Step { op, owner, lease, id }, steps, &mut drift);
            steps += 1;
            let context = format!(
                "sequence {sequence} step {index}: {op:?} by {:?} lease {lease}, before {before:?}",
                String::from_utf8_lossy(owner)
            );
            match (&replies[0], &replies[1]) {
                (Value::Int(a), Value::Int(b)) if op == Op::Read || op == Op::Write => {
                    assert!(pttl_matches(*a, *b, tolerance), "{context}: PTTL replies {a} vs {b}")
                }
                (script, command) => assert_eq!(script, command, "{context}: replies"),
            }
            let (s, c) = (&replies[2..2 + per_twin], &replies[2 + per_twin..2 + 2 * per_twin]);
            let hash = |v: &Value| -> HashMap<Vec<u8>, Vec<u8>> { redis::from_redis_value(v.clone()).unwrap() };
            assert_eq!(hash(&s[0]), hash(&c[0]), "{context}: hash");
            assert_eq!(s[1], c[1], "{context}: latch");
            let pttl = |v: &Value| -> i64 { redis::from_redis_value(v.clone()).unwrap() };
            let write_field = rlock_protocol::rwlock_write_field(owner);
            let reentered = op == Op::Write && replies[1] == Value::Nil && before.contains_key(&write_field);
            for (i, (a, b)) in s[2..].iter().zip(&c[2..]).enumerate() {
                let (a, b) = (pttl(a), pttl(b));
                if i == 0 && reentered {
                    reentered_writes += 1;
                    assert!(b >= lease - tolerance && b <= a, "{context}: write re-entry PTTL {b}, script {a}");
                    let _: () = redis::cmd("PEXPIRE").arg(twin(b"s:")).arg(b).query(&mut con).unwrap();
                } else {
                    assert!(pttl_matches(a, b, tolerance), "{context}: PTTL of timed key {i}: {a} vs {b}");
                }
            }
            expired += before.len().saturating_sub(hash(&s[0]).len());
        }
    }
    let _: () = redis::cmd("PUBLISH").arg("done").arg("").query(&mut con).unwrap();

    pubsub.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let (mut from_scripts, mut from_commands) = (vec![], vec![]);
    let mut pending: Vec<(Vec<u8>, Vec<u8>)> = vec![];
    loop {
        let message = pubsub.get_message().expect("messages");
        let channel: Vec<u8> = message.get_channel().unwrap();
        match channel.as_slice() {
            b"done" => break,
            b"step" => {
                let step: usize = message.get_payload().unwrap();
                for (channel, payload) in pending.drain(..) {
                    if channel == rlock_protocol::rwlock_channel(&twin(b"s:")) {
                        from_scripts.push((step, payload));
                    } else {
                        from_commands.push((step, payload));
                    }
                }
            }
            _ => pending.push((channel, message.get_payload().unwrap())),
        }
    }
    assert_eq!(from_scripts, from_commands, "messages differ");
    assert!(
        from_scripts.len() > 100 && reentered_writes > 10,
        "{} messages, {reentered_writes} write re-entries",
        from_scripts.len()
    );
    eprintln!(
        "rw differential: {steps} steps, {} messages, {reentered_writes} write re-entries, {expired} fields gone",
        from_scripts.len()
    );
}
