//! Differential test of the permit-expirable semaphore: random sequences
//! from several clients run through our Lua transcription of Redisson's
//! scripts and through the RPSEM commands, on twin names in one MULTI per
//! step. Replies, stored counts, the permits (ids and expiries, within a
//! few ms: the scripts are given the server's clock read just before the
//! step, the commands read it themselves), the keys' expiries and the
//! messages must match at every step. Leases of a few ms run out
//! mid-sequence.
//!
//! Where the commands deliberately differ, their own rule is checked:
//! - every command first reclaims every expired permit: the script twin
//!   runs Redisson's availablePermits (which does just that) before each
//!   step's script, in the same MULTI;
//! - releasing one permit whose lease had run out replies -1 (Redisson: 0);
//! - releasing one permit publishes the new count only when it is positive
//!   (Redisson publishes it whatever it is; its listener throws on a
//!   negative one): the scripts' messages of 0 or less in release steps are
//!   left out of the comparison;
//! - addPermits keeps the count's expiry (Redisson's SET drops it, #3224);
//!   the script twin then takes the commands' expiry, to go on in step.

use redis::{Connection, Value};
use std::collections::{HashMap, HashSet};
use std::time::Duration;
use testkit::{
    drive, expired_within, quiet_now, twin, At, Differential, PermitSemaphoreScripts, Rng, Server, Side, StepMessage,
    StepMessages,
};

const SEQUENCES: usize = 100;
const STEPS: usize = 25;
/// The scripts' `now` is read before the step is sent: the commands' clock
/// is later by the round trip, more on a loaded machine. Both grow by the
/// slowest step of the sequence (a value written then keeps its gap).
const TOLERANCE_MS: i64 = 20;
const GUARD_MS: i64 = 20;
const NAMES: [&[u8]; 2] = [b"psem", b"{t}p"];
const NEVER: i64 = rlock_protocol::PERMIT_NEVER_EXPIRES;

mod checks;

use checks::{check_replies, check_state, Clock, Seen};

#[derive(Debug, Clone, PartialEq)]
enum Op {
    /// Lease (`None`: -1) and the ids.
    TryAcquire(Option<i64>, Vec<Vec<u8>>),
    Release(Vec<u8>),
    ReleaseAll(Vec<Vec<u8>>),
    UpdateLease(Vec<u8>, Option<i64>),
    Lease(Vec<u8>),
    Available,
    Permits,
    Acquired,
    TrySetPermits(i64, Option<i64>),
    SetPermits(i64),
    AddPermits(i64),
}

/// A lease of a few ms (so that it runs out mid-sequence), or -1.
fn random_lease(rng: &mut Rng) -> Option<i64> {
    (!rng.chance(20)).then(|| 20 + rng.below(80) as i64)
}

/// An id acquired before in this sequence (held, released or expired), or
/// one never seen.
fn random_id(rng: &mut Rng, known: &[Vec<u8>]) -> Vec<u8> {
    if known.is_empty() || rng.chance(15) {
        rng.bytes(16)
    } else {
        rng.pick(known).clone()
    }
}

/// `known`: the ids acquired so far in the sequence; `held`: those held.
fn random_op(rng: &mut Rng, known: &[Vec<u8>], held: &[Vec<u8>]) -> Op {
    match rng.below(100) {
        0..=29 => Op::TryAcquire(random_lease(rng), (0..1 + rng.below(3)).map(|_| rng.bytes(16)).collect()),
        30..=44 if !held.is_empty() && rng.chance(60) => Op::Release(rng.pick(held).clone()),
        30..=44 => Op::Release(random_id(rng, known)),
        45..=49 if held.len() >= 2 => {
            let mut ids = held.to_vec();
            ids.truncate(2 + rng.below(held.len() as u64 - 1) as usize);
            Op::ReleaseAll(ids)
        }
        45..=51 => {
            let mut ids: Vec<Vec<u8>> = (0..2 + rng.below(2)).map(|_| random_id(rng, known)).collect();
            ids.sort();
            ids.dedup();
            if ids.len() < 2 {
                ids.push(rng.bytes(16));
            }
            Op::ReleaseAll(ids)
        }
        52..=59 => Op::UpdateLease(random_id(rng, known), random_lease(rng)),
        60..=65 => Op::Lease(random_id(rng, known)),
        66..=69 => Op::Available,
        70..=72 => Op::Permits,
        73..=75 => Op::Acquired,
        76..=85 => Op::TrySetPermits(rng.below(5) as i64, rng.chance(40).then(|| 30 + rng.below(150) as i64)),
        86..=91 => Op::SetPermits(rng.below(6) as i64),
        _ => Op::AddPermits(rng.below(8) as i64 - 4),
    }
}

/// Each twin's count, its expiry, its permits by id and their expiry.
#[derive(Debug, Clone, Default)]
struct Twin {
    count: Option<Vec<u8>>,
    count_at: i64,
    permits: HashMap<Vec<u8>, i64>,
    permits_at: i64,
}

fn timeouts(name: &[u8]) -> Vec<u8> {
    rlock_protocol::permit_timeout_key(name)
}

fn read_twins(pipe: &mut redis::Pipeline, name: &[u8]) {
    for side in [Side::Scripts, Side::Commands] {
        let name = twin(side, name);
        pipe.cmd("GET").arg(&name).cmd("PEXPIRETIME").arg(&name);
        pipe.cmd("ZRANGE").arg(timeouts(&name)).arg(0).arg(-1).arg("WITHSCORES");
        pipe.cmd("PEXPIRETIME").arg(timeouts(&name));
    }
}

fn parse_twins(values: &[Value]) -> [Twin; 2] {
    let parse = |values: &[Value]| {
        let flat: Vec<Vec<u8>> = redis::from_redis_value(values[2].clone()).unwrap();
        let permits = flat
            .chunks(2)
            .map(|pair| (pair[0].clone(), String::from_utf8_lossy(&pair[1]).parse::<f64>().unwrap() as i64))
            .collect();
        Twin {
            count: redis::from_redis_value(values[0].clone()).unwrap(),
            count_at: redis::from_redis_value(values[1].clone()).unwrap(),
            permits,
            permits_at: redis::from_redis_value(values[3].clone()).unwrap(),
        }
    };
    [parse(&values[..4]), parse(&values[4..8])]
}

fn state(con: &mut Connection, name: &[u8]) -> [Twin; 2] {
    let mut pipe = redis::pipe();
    read_twins(&mut pipe, name);
    parse_twins(&pipe.query::<Vec<Value>>(con).unwrap())
}

/// Every absolute time a step could cross: both twins' key expiries and
/// permit expiries.
fn deadlines(twins: &[Twin; 2]) -> Vec<i64> {
    twins
        .iter()
        .flat_map(|twin| {
            let permits = twin.permits.values().copied().filter(|at| *at != NEVER);
            permits.chain([twin.count_at, twin.permits_at]).collect::<Vec<_>>()
        })
        .collect()
}

/// The step in one MULTI: the scripts' reclaim (availablePermits), the
/// script, the command, then each twin's state.
fn run_step(
    con: &mut Connection,
    scripts: &PermitSemaphoreScripts,
    op: &Op,
    name: &[u8],
    now: i64,
    step: usize,
) -> Vec<Value> {
    let [s, c] = [Side::Scripts, Side::Commands].map(|side| twin(side, name));
    let lease_arg = |lease: &Option<i64>| lease.unwrap_or(-1);
    let mut pipe = redis::pipe();
    pipe.atomic();
    pipe.add_command(scripts.available(&s, now));
    match op {
        Op::TryAcquire(lease, ids) => pipe
            .add_command(scripts.try_acquire(&s, &slices(ids), *lease, now))
            .cmd("RPSEM.TRYACQUIRE")
            .arg(&c)
            .arg(lease_arg(lease))
            .arg(ids),
        Op::Release(id) => pipe.add_command(scripts.release(&s, id, now)).cmd("RPSEM.RELEASE").arg(&c).arg(id),
        Op::ReleaseAll(ids) => {
            pipe.add_command(scripts.release_all(&s, &slices(ids), now)).cmd("RPSEM.RELEASE").arg(&c).arg(ids)
        }
        Op::UpdateLease(id, lease) => pipe
            .add_command(scripts.update_lease(&s, id, *lease, now))
            .cmd("RPSEM.UPDATELEASE")
            .arg(&c)
            .arg(id)
            .arg(lease_arg(lease)),
        Op::Lease(id) => pipe.add_command(scripts.lease(&s, id, now)).cmd("RPSEM.LEASE").arg(&c).arg(id),
        Op::Available => pipe.add_command(scripts.available(&s, now)).cmd("RPSEM.AVAILABLE").arg(&c),
        Op::Permits => pipe.add_command(scripts.permits(&s, now)).cmd("RPSEM.PERMITS").arg(&c),
        Op::Acquired => pipe.add_command(scripts.acquired(&s, now)).cmd("RPSEM.ACQUIRED").arg(&c),
        Op::TrySetPermits(n, None) => {
            pipe.add_command(scripts.try_set_permits(&s, *n, None)).cmd("RPSEM.TRYSETPERMITS").arg(&c).arg(n)
        }
        Op::TrySetPermits(n, Some(ttl)) => pipe
            .add_command(scripts.try_set_permits(&s, *n, Some(*ttl)))
            .cmd("RPSEM.TRYSETPERMITS")
            .arg(&c)
            .arg(n)
            .arg("PX")
            .arg(ttl),
        Op::SetPermits(n) => pipe.add_command(scripts.set_permits(&s, *n)).cmd("RPSEM.SETPERMITS").arg(&c).arg(n),
        Op::AddPermits(d) => pipe.add_command(scripts.add_permits(&s, *d)).cmd("RPSEM.ADDPERMITS").arg(&c).arg(d),
    };
    read_twins(&mut pipe, name);
    pipe.cmd("TIME");
    StepMessages::mark(&mut pipe, step);
    pipe.query(con).unwrap_or_else(|e| panic!("{op:?}: {e}"))
}

fn slices(ids: &[Vec<u8>]) -> Vec<&[u8]> {
    ids.iter().map(Vec::as_slice).collect()
}

/// One step as drawn: by which client, on which name, after a pause of
/// how many ms (to let short leases run out). The operation is drawn with
/// `op_seed` once the name's state is known (it picks ids held).
#[derive(Debug)]
struct Drawn {
    client: usize,
    which: usize,
    pause_ms: u64,
    op_seed: u64,
}

struct PermitSemaphore {
    clients: Vec<Connection>,
    scripts: PermitSemaphoreScripts,
    /// The ids acquired so far in the sequence, by name.
    known: [Vec<Vec<u8>>; 2],
    release_steps: HashSet<usize>,
    /// Steps an expiry fell within (`expired_within`): their messages are
    /// left out, their sequences started over.
    raced_steps: HashSet<usize>,
    seen: Seen,
    /// The longest a step of the sequence took from `now` to its end.
    slowest_ms: i64,
}

impl Differential for PermitSemaphore {
    type Step = Drawn;

    fn reset(&mut self) {
        testkit::flush_all(&mut self.clients[0]);
        self.known = Default::default();
        self.slowest_ms = 0;
    }

    fn draw(&mut self, rng: &mut Rng) -> Drawn {
        let client = rng.below(3) as usize;
        let which = rng.below(NAMES.len() as u64) as usize;
        let pause_ms = if rng.chance(30) { rng.below(40) } else { 0 };
        Drawn { client, which, pause_ms, op_seed: rng.next_u64() }
    }

    fn run(&mut self, &Drawn { client, which, pause_ms, op_seed }: &Drawn, at: &At) {
        let (con, name) = (&mut self.clients[client], NAMES[which]);
        // Time passes: short leases may run out between steps.
        std::thread::sleep(Duration::from_millis(pause_ms));
        let now = quiet_now(con, GUARD_MS + self.slowest_ms, |con| deadlines(&state(con, name)));
        let twins = state(con, name);
        let ends = deadlines(&twins);
        let [_, before] = twins;
        let mut held: Vec<Vec<u8>> = before.permits.keys().cloned().collect();
        held.sort();
        let op = random_op(&mut Rng::from_seed(op_seed), &self.known[which], &held);
        if matches!(op, Op::Release(_)) {
            self.release_steps.insert(at.step);
        }
        let replies = run_step(con, &self.scripts, &op, name, now, at.step);
        let (seconds, micros): (i64, i64) = redis::from_redis_value(replies[11].clone()).unwrap();
        let latency = seconds * 1000 + micros / 1000 - now;
        if expired_within(&ends, now, now + latency) {
            self.raced_steps.insert(at.step);
            self.reset();
            return;
        }
        self.slowest_ms = self.slowest_ms.max(latency);
        let clock = Clock { now, tolerance_ms: TOLERANCE_MS + self.slowest_ms };
        let context = format!(
            "{}: {op:?} on {:?} at {now}, {latency} ms before the step's end",
            at.context,
            String::from_utf8_lossy(name)
        );
        let seen = &mut self.seen;
        check_replies(&op, &replies[1], &replies[2], &before, &clock, seen, &context);
        let [s_after, c_after] = parse_twins(&replies[3..11]);
        let count = c_after.count.as_deref().map(|count| String::from_utf8_lossy(count).parse::<i64>().unwrap());
        seen.negative += usize::from(count.is_some_and(|count| count < 0));
        if let (Op::TryAcquire(_, ids), Value::BulkString(ok)) = (&op, &replies[2]) {
            if ok == b"OK" {
                self.known[which].extend(ids.iter().cloned());
            }
        }
        if matches!(op, Op::AddPermits(_)) && before.count_at > 0 && c_after.count.is_some() {
            // The commands' rule: the expiry is kept.
            assert_eq!(c_after.count_at, before.count_at, "{context}: the expiry is kept");
            seen.kept_ttl += 1;
            let _: () =
                redis::cmd("PEXPIREAT").arg(twin(Side::Scripts, name)).arg(c_after.count_at).query(con).unwrap();
            let s_after = Twin { count_at: c_after.count_at, ..s_after };
            check_state(&s_after, &c_after, &clock, &context);
        } else {
            check_state(&s_after, &c_after, &clock, &context);
        }
    }
}

#[test]
fn permit_semaphore_commands_match_the_redisson_scripts_on_random_sequences() {
    let server = Server::shared();
    let clients: Vec<Connection> = (0..3).map(|_| server.connection()).collect();
    let scripts = PermitSemaphoreScripts::default();
    let known = Default::default();
    let mut test = PermitSemaphore {
        clients,
        scripts,
        known,
        release_steps: HashSet::new(),
        raced_steps: HashSet::new(),
        seen: Seen::default(),
        slowest_ms: 0,
    };
    test.scripts.load(&mut test.clients[0]).unwrap();
    let messages = StepMessages::subscribe(&server, &["redisson_sc:*"], &NAMES);
    drive("permit_semaphore_differential", SEQUENCES, STEPS, &mut test);
    let PermitSemaphore { mut clients, release_steps, raced_steps, seen, .. } = test;
    let [from_scripts, from_commands] = messages.finish(&mut clients[0]);
    let compared = |messages: Vec<StepMessage>| messages.into_iter().filter(|(step, ..)| !raced_steps.contains(step));
    let positive = |payload: &str| payload.parse::<i64>().is_ok_and(|n| n > 0);
    let mut unpublished = 0;
    let from_scripts: Vec<_> = compared(from_scripts)
        .filter(|(step, _, payload)| {
            let kept = !release_steps.contains(step) || positive(payload);
            unpublished += usize::from(!kept);
            kept
        })
        .collect();
    assert_eq!(from_scripts, compared(from_commands).collect::<Vec<_>>(), "messages differ");
    eprintln!("permit semaphore differential: {unpublished} release messages of 0 or less left out");
    eprintln!(
        "permit semaphore differential: {} steps an expiry fell within, sequences started over",
        raced_steps.len()
    );
    eprintln!("permit semaphore differential: {} messages, {seen:?}", from_scripts.len());
    // About a third of the fewest seen in 20 runs (seeds and load vary
    // them: a run under load waits out more of the short leases).
    assert!(
        seen.acquired > 60
            && seen.hints > 8
            && seen.released > 8
            && seen.lapsed > 0
            && seen.released_all > 2
            && seen.updated > 2
            && seen.kept_ttl > 0
            && seen.negative > 20,
        "too few cases reached: {seen:?}"
    );
}
