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
use testkit::StepMessages;
use testkit::{drive, expiry_ends, quiet_now, twin, At, Differential, Drift, Rng, RwScripts, Server, Side};

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

/// The keys whose PTTLs are compared: the hash, then every timeout key.
fn timed_keys(name: &[u8]) -> Vec<Vec<u8>> {
    let mut keys = vec![name.to_vec()];
    for owner in OWNERS {
        keys.extend((1..=HOLDS).map(|n| rlock_protocol::rwlock_timeout_key(name, owner, n)));
    }
    keys
}

/// Every timed key of both twins, whose ends a step waits out.
fn both_timed_keys() -> Vec<Vec<u8>> {
    [Side::Scripts, Side::Commands].into_iter().flat_map(|side| timed_keys(&twin(side, NAME))).collect()
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
    let [s, c] = [Side::Scripts, Side::Commands].map(|side| twin(side, NAME));
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
    StepMessages::mark(&mut pipe, index);
    drift.query(pipe, con).unwrap_or_else(|e| panic!("{op:?}: {e}"))
}

/// Within the tolerance; a key read within the tolerance of its end on one
/// side may be gone on the other.
fn pttl_matches(a: i64, b: i64, tolerance: i64) -> bool {
    // The twins' expiries are up to the tolerance apart (a slow step's gap).
    let ending = |pttl: i64| (-2..=tolerance.max(1)).contains(&pttl);
    a == b || (a >= 0 && b >= 0 && (a - b).abs() <= tolerance) || (ending(a) && ending(b))
}

/// One step as drawn, after a pause of how many ms (to let short leases
/// run out).
#[derive(Debug)]
struct Drawn {
    op: Op,
    owner: &'static [u8],
    lease: i64,
    id: &'static [u8],
    pause_ms: u64,
}

struct RwLock {
    con: Connection,
    scripts: RwScripts,
    drift: Drift,
    expired: usize,
    reentered_writes: usize,
}

impl Differential for RwLock {
    type Step = Drawn;

    fn reset(&mut self) {
        self.drift.new_sequence(&mut self.con);
    }

    fn draw(&mut self, rng: &mut Rng) -> Drawn {
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
        Drawn { op, owner, lease, id, pause_ms: if rng.chance(25) { rng.below(30) } else { 0 } }
    }

    fn run(&mut self, &Drawn { op, owner, lease, id, pause_ms }: &Drawn, at: &At) {
        // Time passes: short leases may run out between steps.
        std::thread::sleep(Duration::from_millis(pause_ms));
        let con = &mut self.con;
        let timed = both_timed_keys();
        quiet_now(con, self.drift.guard_ms(GUARD_MS), |con| expiry_ends(con, &timed));
        let s_name = twin(Side::Scripts, NAME);
        let before: HashMap<Vec<u8>, Vec<u8>> = redis::cmd("HGETALL").arg(&s_name).query(con).unwrap();
        let (replies, tolerance) =
            run_step(con, &self.scripts, &Step { op, owner, lease, id }, at.step, &mut self.drift);
        let context = format!("{}, before {before:?}", at.context);
        match (&replies[0], &replies[1]) {
            (Value::Int(a), Value::Int(b)) if op == Op::Read || op == Op::Write => {
                assert!(pttl_matches(*a, *b, tolerance), "{context}: PTTL replies {a} vs {b}")
            }
            (script, command) => assert_eq!(script, command, "{context}: replies"),
        }
        let per_twin = 2 + timed_keys(NAME).len();
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
                self.reentered_writes += 1;
                assert!(b >= lease - tolerance && b <= a, "{context}: write re-entry PTTL {b}, script {a}");
                // The script twin takes the commands twin's end: as a PTTL
                // it would end later by the round trip since the step.
                let end: i64 = redis::cmd("PEXPIRETIME").arg(twin(Side::Commands, NAME)).query(con).unwrap();
                let _: () = redis::cmd("PEXPIREAT").arg(&s_name).arg(end).query(con).unwrap();
            } else {
                assert!(pttl_matches(a, b, tolerance), "{context}: PTTL of timed key {i}: {a} vs {b}");
            }
        }
        self.expired += before.len().saturating_sub(hash(&s[0]).len());
    }
}

#[test]
fn rw_commands_match_the_redisson_scripts_on_random_sequences() {
    let server = Server::shared();
    let con = server.connection();
    let (scripts, drift) = (RwScripts::default(), Drift::new(TOLERANCE_MS));
    let mut test = RwLock { con, scripts, drift, expired: 0, reentered_writes: 0 };
    test.scripts.load(&mut test.con).unwrap();
    let messages = StepMessages::subscribe(&server, &["redisson_rwlock:*"], &[NAME]);
    drive("rwlock_differential", SEQUENCES, STEPS, &mut test);
    let RwLock { mut con, expired, reentered_writes, .. } = test;
    let [from_scripts, from_commands] = messages.finish(&mut con);
    assert_eq!(from_scripts, from_commands, "messages differ");
    assert!(
        from_scripts.len() > 100 && reentered_writes > 10,
        "{} messages, {reentered_writes} write re-entries",
        from_scripts.len()
    );
    eprintln!(
        "rw differential: {} steps, {} messages, {reentered_writes} write re-entries, {expired} fields gone",
        SEQUENCES * STEPS,
        from_scripts.len()
    );
}
