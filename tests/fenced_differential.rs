//! Differential test of the fenced lock: random sequences from several
//! owners run through our Lua transcription of Redisson's fenced acquire
//! (plus RLock's release, renew and force release scripts) and through
//! RFENCED.ACQUIRE and the RLOCK commands, on twin names in one MULTI per
//! step. Replies, the lock hash, the PTTL (within a few ms and the time the
//! server spent on the steps), the token counter and the messages must
//! match at every step; short leases make holds expire mid-sequence.
//!
//! Where the commands deliberately differ, their own rule is checked: a
//! lock without a TTL (a PERSIST step) makes the script reply `[-1, -1]`
//! ("acquired", token -1, to Java) and the command `[lease, -1]`.

use redis::{Connection, Value};
use std::collections::HashMap;
use std::time::Duration;
use testkit::{
    drive, expiry_ends, quiet_now, twin, At, Differential, Drift, FencedScripts, RedissonScripts, Rng, Server,
};
use testkit::{Side, StepMessages};

const SEQUENCES: usize = 120;
const STEPS: usize = 20;
const TOLERANCE_MS: i64 = 5;
const GUARD_MS: i64 = 4;
const NAMES: [&[u8]; 2] = [b"fence", b"{t}fenced"];
const OWNERS: [&[u8]; 3] = [b"u:1", b"u:2", b"w 3"];

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Acquire,
    Release,
    Renew,
    ForceRelease,
    Persist,
}

struct Scripts {
    fenced: FencedScripts,
    lock: RedissonScripts,
}

/// One step's arguments.
struct Step<'a> {
    op: Op,
    name: &'a [u8],
    owner: &'a [u8],
    lease: i64,
}

fn run_step(
    con: &mut Connection,
    scripts: &Scripts,
    &Step { op, name, owner, lease }: &Step,
    step: usize,
    drift: &mut Drift,
) -> (Vec<Value>, i64) {
    let [s, c] = [Side::Scripts, Side::Commands].map(|side| twin(side, name));
    let mut pipe = redis::pipe();
    Drift::begin(&mut pipe);
    match op {
        Op::Acquire => pipe
            .add_command(scripts.fenced.acquire(&s, owner, lease))
            .cmd("RFENCED.ACQUIRE")
            .arg(&c)
            .arg(owner)
            .arg(lease),
        Op::Release => {
            pipe.add_command(scripts.lock.release(&s, owner, lease)).cmd("RLOCK.RELEASE").arg(&c).arg(owner).arg(lease)
        }
        Op::Renew => {
            pipe.add_command(scripts.lock.renew(&s, owner, lease)).cmd("RLOCK.RENEW").arg(&c).arg(owner).arg(lease)
        }
        Op::ForceRelease => pipe.add_command(scripts.lock.force_release(&s)).cmd("RLOCK.FORCERELEASE").arg(&c),
        Op::Persist => pipe.cmd("PERSIST").arg(&s).cmd("PERSIST").arg(&c),
    };
    for twin in [&s, &c] {
        pipe.cmd("HGETALL").arg(twin).cmd("PTTL").arg(twin).cmd("GET").arg(rlock_protocol::fenced_token_key(twin));
    }
    StepMessages::mark(&mut pipe, step);
    drift.query(pipe, con).unwrap_or_else(|e| panic!("{op:?}: {e}"))
}

fn expiries(con: &mut Connection, name: &[u8]) -> Vec<i64> {
    expiry_ends(con, &[Side::Scripts, Side::Commands].map(|side| twin(side, name)))
}

/// One step as drawn: by which owner (on its own client), what, on which
/// name, after a pause of how many ms (to let short leases run out).
#[derive(Debug)]
struct Drawn {
    who: usize,
    op: Op,
    lease: i64,
    name: &'static [u8],
    pause_ms: u64,
}

struct Fenced {
    clients: Vec<Connection>,
    scripts: Scripts,
    drift: Drift,
    granted: usize,
    no_ttl: usize,
}

impl Differential for Fenced {
    type Step = Drawn;

    fn reset(&mut self) {
        self.drift.new_sequence(&mut self.clients[0]);
    }

    fn draw(&mut self, rng: &mut Rng) -> Drawn {
        let who = rng.below(OWNERS.len() as u64) as usize;
        let op = match rng.below(100) {
            0..=49 => Op::Acquire,
            50..=74 => Op::Release,
            75..=84 => Op::Renew,
            85..=95 => Op::ForceRelease,
            _ => Op::Persist,
        };
        let lease = if rng.chance(50) { 5 + rng.below(25) as i64 } else { 60_000 };
        let name = NAMES[rng.below(NAMES.len() as u64) as usize];
        Drawn { who, op, lease, name, pause_ms: if rng.chance(30) { rng.below(30) } else { 0 } }
    }

    fn run(&mut self, &Drawn { who, op, lease, name, pause_ms }: &Drawn, at: &At) {
        // Time passes: short leases may run out between steps.
        std::thread::sleep(Duration::from_millis(pause_ms));
        let con = &mut self.clients[who];
        quiet_now(con, self.drift.guard_ms(GUARD_MS), |con| expiries(con, name));
        let step = Step { op, name, owner: OWNERS[who], lease };
        let (replies, tolerance) = run_step(con, &self.scripts, &step, at.step, &mut self.drift);
        let context = at.context;
        let (script, command) = (&replies[0], &replies[1]);
        if op == Op::Acquire && *script == Value::Array(vec![Value::Int(-1), Value::Int(-1)]) {
            // The commands' rule: a lock without a TTL is never "-1".
            assert_eq!(*command, Value::Array(vec![Value::Int(lease), Value::Int(-1)]), "{context}: no-TTL hint");
            self.no_ttl += 1;
        } else if let (Value::Array(a), Value::Array(b)) = (script, command) {
            let pair = |v: &[Value]| -> (i64, i64) { redis::from_redis_value(Value::Array(v.to_vec())).unwrap() };
            let ((a_ttl, a_token), (b_ttl, b_token)) = (pair(a), pair(b));
            // Contended: each reads the PTTL on its own clock read.
            assert!(a_token == b_token && (a_ttl - b_ttl).abs() <= tolerance, "{context}: {a:?} vs {b:?}");
        } else {
            assert_eq!(script, command, "{context}: replies");
        }
        if let Value::Array(reply) = command {
            self.granted += usize::from(reply[0] == Value::Int(-1));
        }
        let hash = |v: &Value| -> HashMap<Vec<u8>, Vec<u8>> { redis::from_redis_value(v.clone()).unwrap() };
        assert_eq!(hash(&replies[2]), hash(&replies[5]), "{context}: lock hash");
        let pttl = |v: &Value| -> i64 { redis::from_redis_value(v.clone()).unwrap() };
        let (a, b) = (pttl(&replies[3]), pttl(&replies[6]));
        assert!(a == b || (a >= 0 && b >= 0 && (a - b).abs() <= tolerance), "{context}: PTTL {a} vs {b}");
        assert_eq!(replies[4], replies[7], "{context}: token counter");
    }
}

#[test]
fn fenced_commands_match_the_redisson_scripts_on_random_sequences() {
    // The jump at the term's floor is a deliberate difference (tests/fenced_tokens.rs).
    let server = Server::builder().module_arg("fencing-token-jump").module_arg("no").shared();
    let clients: Vec<Connection> = (0..OWNERS.len()).map(|_| server.connection()).collect();
    let scripts = Scripts { fenced: FencedScripts::default(), lock: RedissonScripts::default() };
    let mut test = Fenced { clients, scripts, drift: Drift::new(TOLERANCE_MS), granted: 0, no_ttl: 0 };
    test.scripts.fenced.load(&mut test.clients[0]).unwrap();
    test.scripts.lock.load(&mut test.clients[0]).unwrap();
    let messages = StepMessages::subscribe(&server, &["redisson_lock__channel:*"], &NAMES);
    drive("fenced_differential", SEQUENCES, STEPS, &mut test);
    let Fenced { mut clients, granted, no_ttl, .. } = test;
    let [from_scripts, from_commands] = messages.finish(&mut clients[0]);
    assert_eq!(from_scripts, from_commands, "messages differ");
    assert!(
        granted > 500 && no_ttl > 5 && from_scripts.len() > 100,
        "{granted} granted, {no_ttl} without TTL, {} messages",
        from_scripts.len()
    );
    eprintln!(
        "fenced differential: {granted} granted, {no_ttl} contended by a lock without TTL, {} messages",
        from_scripts.len()
    );
}
