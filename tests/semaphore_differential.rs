//! Differential test of the semaphore: random sequences from several
//! clients run through our Lua transcription of Redisson's semaphore
//! scripts and through the RSEM commands, on twin names in one MULTI per
//! step. Replies, stored counts, expiries (within a few ms) and messages
//! must match at every step; trySetPermits' short TTLs make semaphores
//! expire mid-sequence.
//!
//! Where the commands deliberately differ, their own rule is checked:
//! addPermits and drain keep the key's expiry (the scripts' SET drops it,
//! #3224); the script twin then takes the commands' expiry, to go on in step.

use redis::{Connection, Value};
use std::time::Duration;
use testkit::{
    drive, expiry_ends, quiet_now, twin, At, Differential, Drift, Rng, SemaphoreScripts, Server, Side, StepMessages,
};

const SEQUENCES: usize = 120;
const STEPS: usize = 20;
const TOLERANCE_MS: i64 = 5;
const GUARD_MS: i64 = 4;
const NAMES: [&[u8]; 2] = [b"permits", b"{t}sem"];

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    TryAcquire(i64),
    Release(i64),
    ReleaseIfExists(i64),
    TrySetPermits(i64, Option<i64>),
    AddPermits(i64),
    Drain,
    Available,
}

fn random_op(rng: &mut Rng) -> Op {
    let n = 1 + rng.below(3) as i64;
    match rng.below(100) {
        0..=29 => Op::TryAcquire(n),
        30..=49 => Op::Release(n),
        50..=57 => Op::ReleaseIfExists(n),
        58..=75 => Op::TrySetPermits(rng.below(6) as i64, rng.chance(60).then(|| 5 + rng.below(40) as i64)),
        76..=87 => Op::AddPermits(rng.below(7) as i64 - 3),
        88..=94 => Op::Drain,
        _ => Op::Available,
    }
}

fn expiries(con: &mut Connection, name: &[u8]) -> Vec<i64> {
    expiry_ends(con, &[Side::Scripts, Side::Commands].map(|side| twin(side, name)))
}

/// The step in one MULTI: the script, the command, then each twin's
/// value and absolute expiry.
fn run_step(
    con: &mut Connection,
    scripts: &SemaphoreScripts,
    op: Op,
    name: &[u8],
    step: usize,
    drift: &mut Drift,
) -> (Vec<Value>, i64) {
    let [s, c] = [Side::Scripts, Side::Commands].map(|side| twin(side, name));
    let mut pipe = redis::pipe();
    Drift::begin(&mut pipe);
    match op {
        Op::TryAcquire(n) => pipe.add_command(scripts.try_acquire(&s, n)).cmd("RSEM.TRYACQUIRE").arg(&c).arg(n),
        Op::Release(n) => pipe.add_command(scripts.release(&s, n, false)).cmd("RSEM.RELEASE").arg(&c).arg(n),
        Op::ReleaseIfExists(n) => {
            pipe.add_command(scripts.release(&s, n, true)).cmd("RSEM.RELEASE").arg(&c).arg(n).arg("IFEXISTS")
        }
        Op::TrySetPermits(n, None) => {
            pipe.add_command(scripts.try_set_permits(&s, n, None)).cmd("RSEM.TRYSETPERMITS").arg(&c).arg(n)
        }
        Op::TrySetPermits(n, Some(ttl)) => pipe
            .add_command(scripts.try_set_permits(&s, n, Some(ttl)))
            .cmd("RSEM.TRYSETPERMITS")
            .arg(&c)
            .arg(n)
            .arg("PX")
            .arg(ttl),
        Op::AddPermits(d) => pipe.add_command(scripts.add_permits(&s, d)).cmd("RSEM.ADDPERMITS").arg(&c).arg(d),
        Op::Drain => pipe.add_command(scripts.drain(&s)).cmd("RSEM.DRAIN").arg(&c),
        Op::Available => pipe.cmd("GET").arg(&s).cmd("RSEM.AVAILABLE").arg(&c),
    };
    for twin in [&s, &c] {
        pipe.cmd("GET").arg(twin).cmd("PEXPIRETIME").arg(twin);
    }
    StepMessages::mark(&mut pipe, step);
    drift.query(pipe, con).unwrap_or_else(|e| panic!("{op:?}: {e}"))
}

/// One step as drawn: by which client, what, on which name, after a pause
/// of how many ms (to let short TTLs run out).
#[derive(Debug)]
struct Step {
    client: usize,
    op: Op,
    which: usize,
    pause_ms: u64,
}

struct Semaphore {
    clients: Vec<Connection>,
    scripts: SemaphoreScripts,
    drift: Drift,
    /// Each name's expiry after its last step, to count expiries.
    last_expiry: [i64; NAMES.len()],
    expired: usize,
    kept_ttl: usize,
}

impl Differential for Semaphore {
    type Step = Step;

    fn reset(&mut self) {
        self.drift.new_sequence(&mut self.clients[0]);
        self.last_expiry = [-1; NAMES.len()];
    }

    fn draw(&mut self, rng: &mut Rng) -> Step {
        let client = rng.below(3) as usize;
        let which = rng.below(NAMES.len() as u64) as usize;
        let op = random_op(rng);
        Step { client, op, which, pause_ms: if rng.chance(30) { rng.below(30) } else { 0 } }
    }

    fn run(&mut self, &Step { client, op, which, pause_ms }: &Step, at: &At) {
        let (con, name) = (&mut self.clients[client], NAMES[which]);
        // Time passes: short TTLs may run out between steps.
        std::thread::sleep(Duration::from_millis(pause_ms));
        let now = quiet_now(con, self.drift.guard_ms(GUARD_MS), |con| expiries(con, name));
        let before = expiries(con, name);
        let (replies, tolerance) = run_step(con, &self.scripts, op, name, at.step, &mut self.drift);
        let context = format!("{} on {:?} at {now}", at.context, String::from_utf8_lossy(name));
        let (script, command) = (&replies[0], &replies[1]);
        match op {
            Op::Available => {
                let stored: Option<i64> = redis::from_redis_value(script.clone()).unwrap();
                assert_eq!(Value::Int(stored.unwrap_or(0)), *command, "{context}: available");
            }
            _ => assert_eq!(script, command, "{context}: replies"),
        }
        let [s_value, s_at, c_value, c_at] = &replies[2..6] else { panic!("{context}: {replies:?}") };
        assert_eq!(s_value, c_value, "{context}: stored count");
        let (s_at, c_at): (i64, i64) =
            (redis::from_redis_value(s_at.clone()).unwrap(), redis::from_redis_value(c_at.clone()).unwrap());
        let last_expiry = &mut self.last_expiry[which];
        self.expired += usize::from(*last_expiry > 0 && *last_expiry <= now);
        *last_expiry = c_at;
        if matches!(op, Op::AddPermits(_) | Op::Drain) && before[1] > 0 && *c_value != Value::Nil {
            // The commands' rule: the expiry is kept.
            assert_eq!(c_at, before[1], "{context}: the expiry is kept");
            self.kept_ttl += 1;
            let _: () = redis::cmd("PEXPIREAT").arg(twin(Side::Scripts, name)).arg(c_at).query(con).unwrap();
        } else {
            assert!(
                s_at == c_at || (s_at > 0 && c_at > 0 && (s_at - c_at).abs() <= tolerance),
                "{context}: expiry {s_at} vs {c_at}"
            );
        }
    }
}

#[test]
fn semaphore_commands_match_the_redisson_scripts_on_random_sequences() {
    let server = Server::shared();
    let clients: Vec<Connection> = (0..3).map(|_| server.connection()).collect();
    let (scripts, drift) = (SemaphoreScripts::default(), Drift::new(TOLERANCE_MS));
    let mut test = Semaphore { clients, scripts, drift, last_expiry: [-1; NAMES.len()], expired: 0, kept_ttl: 0 };
    test.scripts.load(&mut test.clients[0]).unwrap();
    let messages = StepMessages::subscribe(&server, &["redisson_sc:*"], &NAMES);
    drive("semaphore_differential", SEQUENCES, STEPS, &mut test);
    let Semaphore { mut clients, expired, kept_ttl, .. } = test;
    let [from_scripts, from_commands] = messages.finish(&mut clients[0]);
    assert_eq!(from_scripts, from_commands, "messages differ");
    assert!(
        from_scripts.len() > 500 && expired > 10 && kept_ttl > 5,
        "{} messages, {expired} expired, {kept_ttl} TTLs kept",
        from_scripts.len()
    );
    eprintln!(
        "semaphore differential: {} messages, {expired} expired mid-sequence, {kept_ttl} TTLs kept",
        from_scripts.len()
    );
}
