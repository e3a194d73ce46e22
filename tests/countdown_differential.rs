//! Differential test of the count-down latch: random sequences from
//! several clients run through our Lua transcription of Redisson's latch
//! scripts and through the RLATCH commands, on twin names in one MULTI per
//! step. Replies, stored counts and messages must match at every step.
//!
//! Where the commands deliberately differ, their own rule is checked:
//! delete publishes `0` (open) where the script publishes `1`; counting
//! down a missing latch writes nothing (checked in semaphore_family_glue.rs;
//! the script's -1 is deleted at once, so the states agree).

use redis::{Connection, Value};
use testkit::{drive, twin, At, Differential, LatchScripts, Rng, Server, Side, StepMessages};

const SEQUENCES: usize = 100;
const STEPS: usize = 20;
const NAMES: [&[u8]; 2] = [b"latch", b"{t}gate"];

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    TrySetCount(i64),
    CountDown,
    Count,
    Delete,
}

fn run_step(con: &mut Connection, scripts: &LatchScripts, op: Op, name: &[u8], step: usize) -> Vec<Value> {
    let [s, c] = [Side::Scripts, Side::Commands].map(|side| twin(side, name));
    let mut pipe = redis::pipe();
    pipe.atomic();
    match op {
        Op::TrySetCount(n) => pipe.add_command(scripts.try_set_count(&s, n)).cmd("RLATCH.TRYSETCOUNT").arg(&c).arg(n),
        Op::CountDown => pipe.add_command(scripts.count_down(&s)).cmd("RLATCH.COUNTDOWN").arg(&c),
        Op::Count => pipe.cmd("GET").arg(&s).cmd("RLATCH.COUNT").arg(&c),
        Op::Delete => pipe.add_command(scripts.delete(&s)).cmd("RLATCH.DELETE").arg(&c),
    };
    for twin in [&s, &c] {
        pipe.cmd("GET").arg(twin).cmd("PTTL").arg(twin);
    }
    StepMessages::mark(&mut pipe, step);
    pipe.query(con).unwrap_or_else(|e| panic!("{op:?}: {e}"))
}

/// One step as drawn: by which client, what, on which name.
#[derive(Debug)]
struct Step {
    client: usize,
    op: Op,
    name: &'static [u8],
}

struct Countdown {
    clients: Vec<Connection>,
    scripts: LatchScripts,
    /// Every step's operation, by step.
    ops: Vec<Op>,
}

impl Differential for Countdown {
    type Step = Step;

    fn reset(&mut self) {
        testkit::flush_all(&mut self.clients[0]);
    }

    fn draw(&mut self, rng: &mut Rng) -> Step {
        let client = rng.below(3) as usize;
        let op = match rng.below(100) {
            0..=24 => Op::TrySetCount(rng.below(4) as i64),
            25..=74 => Op::CountDown,
            75..=89 => Op::Count,
            _ => Op::Delete,
        };
        Step { client, op, name: NAMES[rng.below(NAMES.len() as u64) as usize] }
    }

    fn run(&mut self, &Step { client, op, name }: &Step, at: &At) {
        let replies = run_step(&mut self.clients[client], &self.scripts, op, name, at.step);
        self.ops.push(op);
        let context = at.context;
        match op {
            Op::Count => {
                let stored: Option<i64> = redis::from_redis_value(replies[0].clone()).unwrap();
                assert_eq!(Value::Int(stored.unwrap_or(0)), replies[1], "{context}: count");
            }
            _ => assert_eq!(replies[0], replies[1], "{context}: replies"),
        }
        assert_eq!(replies[2..4], replies[4..6], "{context}: stored count and PTTL");
    }
}

#[test]
fn latch_commands_match_the_redisson_scripts_on_random_sequences() {
    let server = Server::shared();
    let clients: Vec<Connection> = (0..3).map(|_| server.connection()).collect();
    let scripts = LatchScripts::default();
    let mut test = Countdown { clients, scripts, ops: Vec::new() };
    test.scripts.load(&mut test.clients[0]).unwrap();
    let messages = StepMessages::subscribe(&server, &["redisson_countdownlatch__channel__*"], &NAMES);
    drive("countdown_differential", SEQUENCES, STEPS, &mut test);
    let Countdown { mut clients, ops, .. } = test;
    let [from_scripts, from_commands] = messages.finish(&mut clients[0]);
    let opened = from_commands.iter().filter(|(_, _, payload)| payload == "0").count();
    // The commands' rule: delete opens the latch.
    let expected: Vec<_> = from_scripts
        .into_iter()
        .map(|(step, channel, payload)| (step, channel, if ops[step] == Op::Delete { "0".to_owned() } else { payload }))
        .collect();
    assert_eq!(expected, from_commands, "messages differ");
    assert!(from_commands.len() > 300 && opened > 100, "{} messages, {opened} openings", from_commands.len());
    eprintln!("countdown differential: {} messages, {opened} openings", from_commands.len());
}
