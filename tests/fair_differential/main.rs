//! Differential test of the fair lock: random multi-owner sequences run
//! through our Lua transcription of Redisson's fair scripts (given the
//! server's TIME as `now`) and through the RFAIR commands, on twin names
//! (`s:<name>` and `c:<name>`) in one MULTI per step. The lock hash, the
//! queue, the deadlines (within a few ms), the PTTL, the latch and the
//! messages must match at every step, with leases and waits short enough
//! that holders and waiters die mid-sequence.
//!
//! Where the commands deliberately differ, their own rule is checked: a
//! queued caller's hint is at least 1 ms (the script may reply 0 or less),
//! a cancel by the head of a free lock tells the next waiter, and
//! deadlines move by the commands' rules (see the step loop); the script
//! twin then takes the commands' deadlines, to go on in step. The queue's
//! order and progress over time are checked by `fair_model`.

use redis::{Connection, Value};
use std::collections::{HashMap, HashSet};
use std::time::Duration;
use testkit::{
    drive, expired_within, quiet_now, server_time_ms, twin, At, Differential, FairScripts, Rng, Server, Side,
};

const SEQUENCES: usize = 150;
const STEPS: usize = 16;
const TOLERANCE_MS: i64 = 5;
/// No step runs this close to a lease's or a deadline's end, more the
/// slowest step yet: the scripts are given the clock read before the step,
/// the commands read it as they run, so an end between the two would be
/// seen on one twin only.
const GUARD_MS: i64 = 4;
const NAMES: [&[u8]; 2] = [b"orders", b"{t}fair"];
const OWNERS: [&[u8]; 3] = [b"u:1", b"u:2", b"w 3"];
const IDS: [&[u8]; 2] = [b"r1", b"r2"];

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Acquire,
    TryAcquire,
    Cancel,
    Release,
    ForceRelease,
}

mod timing;

use timing::{drop_dead_behind_live, events, follow_timer_turns, untold_head};

struct Step<'a> {
    op: Op,
    name: &'a [u8],
    owner: &'a [u8],
    lease: i64,
    wait: i64,
    id: &'a [u8],
}

fn run_step(con: &mut Connection, scripts: &FairScripts, step: &Step, now: i64, index: usize) -> Vec<Value> {
    let Step { op, name, owner, lease, wait, id } = *step;
    let (s, c) = (twin(Side::Scripts, name), twin(Side::Commands, name));
    let mut pipe = redis::pipe();
    pipe.atomic();
    pipe.cmd("PUBLISH").arg("begin").arg(index);
    match op {
        Op::Acquire => pipe
            .add_command(scripts.acquire(&s, owner, lease, Some(wait), now))
            .cmd("RFAIR.ACQUIRE")
            .arg(&c)
            .arg(owner)
            .arg(lease)
            .arg("WAIT")
            .arg(wait),
        Op::TryAcquire => pipe
            .add_command(scripts.acquire(&s, owner, lease, None, now))
            .cmd("RFAIR.ACQUIRE")
            .arg(&c)
            .arg(owner)
            .arg(lease),
        Op::Cancel => pipe
            .add_command(scripts.cancel(&s, owner, wait))
            .cmd("RFAIR.CANCEL")
            .arg(&c)
            .arg(owner)
            .arg("WAIT")
            .arg(wait),
        Op::Release => pipe
            .add_command(scripts.release(&s, owner, lease, id, now))
            .cmd("RFAIR.RELEASE")
            .arg(&c)
            .arg(owner)
            .arg(lease)
            .arg("ID")
            .arg(id),
        Op::ForceRelease => pipe.add_command(scripts.force_release(&s, now)).cmd("RFAIR.FORCERELEASE").arg(&c),
    };
    for twin in [&s, &c] {
        pipe.cmd("HGETALL").arg(twin);
        pipe.cmd("LRANGE").arg(rlock_protocol::fair_queue_key(twin)).arg(0).arg(-1);
        pipe.cmd("ZRANGE").arg(rlock_protocol::fair_timeout_key(twin)).arg(0).arg(-1).arg("WITHSCORES");
        pipe.cmd("PTTL").arg(twin);
        pipe.cmd("GET").arg(rlock_protocol::unlock_latch_key(twin, id));
    }
    pipe.cmd("PUBLISH").arg("step").arg(index);
    pipe.query(con).unwrap_or_else(|e| panic!("{op:?}: {e}"))
}

/// Which twin a channel belongs to (`s` or `c`), and the channel with the
/// twin's prefix taken out of the name.
fn untwin(channel: &[u8]) -> (&'static str, String) {
    let text = String::from_utf8_lossy(channel).into_owned();
    for side in ["s", "c"] {
        for name in NAMES {
            let twin = format!("{side}:{}", String::from_utf8_lossy(name));
            if let Some(at) = text.find(&twin) {
                return (side, format!("{}{}", &text[..at], &text[at + 2..]));
            }
        }
    }
    panic!("a message on {text}")
}

type Scores = Vec<(Vec<u8>, i64)>;

/// The script twin may keep dead waiters the commands purged (Redisson's
/// give-up does not purge): those, and only those, are left out. When a
/// dead waiter gives up, the script moves the waiters after it up by its
/// wait and the commands (having purged it first) do not: `exact_scores`
/// is false then.
fn compare_state(replies: &[Value], now: i64, exact_scores: bool, tolerance_ms: i64, context: &str) {
    let (s, c) = (&replies[3..8], &replies[8..13]);
    let hash = |v: &Value| -> HashMap<Vec<u8>, Vec<u8>> { redis::from_redis_value(v.clone()).unwrap() };
    assert_eq!(hash(&s[0]), hash(&c[0]), "{context}: lock hash");
    let scores = |v: &Value| -> Scores { redis::from_redis_value(v.clone()).unwrap() };
    let (mut s_scores, mut c_scores) = (scores(&s[2]), scores(&c[2]));
    // Ordered by member: the commands' deadline rules may reorder scores.
    s_scores.sort();
    c_scores.sort();
    let mut dead: Vec<Vec<u8>> = vec![];
    for scores in [&s_scores, &c_scores] {
        dead.extend(scores.iter().filter(|(_, score)| *score <= now).map(|(m, _)| m.clone()));
    }
    s_scores.retain(|(member, _)| !dead.contains(member));
    c_scores.retain(|(member, _)| !dead.contains(member));
    let queue = |v: &Value| -> Vec<Vec<u8>> {
        let mut queue: Vec<Vec<u8>> = redis::from_redis_value(v.clone()).unwrap();
        queue.retain(|member| !dead.contains(member));
        queue
    };
    assert_eq!(queue(&s[1]), queue(&c[1]), "{context}: queue");
    let members = |scores: &Scores| scores.iter().map(|(m, _)| m.clone()).collect::<Vec<_>>();
    assert_eq!(members(&s_scores), members(&c_scores), "{context}: deadlines' members");
    for ((_, a), (_, b)) in s_scores.iter().zip(&c_scores).filter(|_| exact_scores) {
        assert!((a - b).abs() <= tolerance_ms, "{context}: deadlines {s_scores:?} vs {c_scores:?}");
    }
    let pttl = |v: &Value| -> i64 { redis::from_redis_value(v.clone()).unwrap() };
    let (a, b) = (pttl(&s[3]), pttl(&c[3]));
    assert!(a == b || (a >= 0 && b >= 0 && (a - b).abs() <= tolerance_ms), "{context}: PTTL {a} vs {b}");
    assert_eq!(s[4], c[4], "{context}: latch");
}

/// One step as drawn, after a pause of how many ms (to let short leases
/// and waits run out). `owner` indexes [`OWNERS`] and the sequence's waits.
#[derive(Debug)]
struct Drawn {
    op: Op,
    name: &'static [u8],
    owner: usize,
    lease: i64,
    id: &'static [u8],
    pause_ms: u64,
}

struct Fair {
    con: Connection,
    scripts: FairScripts,
    /// Each owner's wait in this sequence: short ones die mid-sequence.
    waits: Vec<i64>,
    /// Drawn with the sequence's first step.
    waits_drawn: bool,
    ops_by_step: Vec<Op>,
    turn_steps: HashSet<usize>,
    /// Steps an expiry fell within (`expired_within`): their messages are
    /// left out, their sequences started over.
    raced_steps: HashSet<usize>,
    queued: usize,
    purged: usize,
    timer_turns: usize,
    /// The longest a step of the sequence took from its clock reading to
    /// its end.
    slowest_ms: i64,
}

impl Differential for Fair {
    type Step = Drawn;

    fn reset(&mut self) {
        testkit::flush_all(&mut self.con);
        self.waits_drawn = false;
        self.slowest_ms = 0;
    }

    fn draw(&mut self, rng: &mut Rng) -> Drawn {
        if !self.waits_drawn {
            self.waits =
                OWNERS.iter().map(|_| if rng.chance(50) { 8 + rng.below(25) as i64 } else { 60_000 }).collect();
            self.waits_drawn = true;
        }
        let owner = rng.below(OWNERS.len() as u64) as usize;
        let op = match rng.below(100) {
            0..=44 => Op::Acquire,
            45..=54 => Op::TryAcquire,
            55..=64 => Op::Cancel,
            65..=92 => Op::Release,
            _ => Op::ForceRelease,
        };
        let lease = if rng.chance(50) { 6 + rng.below(20) as i64 } else { 60_000 };
        let name = NAMES[rng.below(NAMES.len() as u64) as usize];
        let id = IDS[rng.below(IDS.len() as u64) as usize];
        Drawn { op, name, owner, lease, id, pause_ms: if rng.chance(30) { rng.below(40) } else { 0 } }
    }

    fn run(&mut self, drawn: &Drawn, at: &At) {
        let &Drawn { op, name, owner, lease, id, pause_ms } = drawn;
        let step = Step { op, name, owner: OWNERS[owner], lease, wait: self.waits[owner], id };
        let con = &mut self.con;
        // Time passes: short leases and waits may run out between steps.
        std::thread::sleep(Duration::from_millis(pause_ms));
        let before: Scores = redis::cmd("ZRANGE")
            .arg(rlock_protocol::fair_timeout_key(&twin(Side::Scripts, step.name)))
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES")
            .query(con)
            .unwrap();
        let now = quiet_now(con, GUARD_MS + self.slowest_ms, |con| events(con, step.name));
        drop_dead_behind_live(con, step.name, now);
        self.timer_turns += usize::from(follow_timer_turns(con, step.name));
        // A free lock whose head nobody told (its lease ran out before
        // the server's timer looked): the step's own look tells it.
        let untold = untold_head(con, step.name);
        if untold {
            self.turn_steps.insert(at.step);
        }
        self.purged += before.iter().filter(|(_, score)| *score <= now).count();
        // Read after the twin is brought in step, whose deadlines it moves.
        let ends = events(con, step.name);
        let replies = run_step(con, &self.scripts, &step, now, at.step);
        self.ops_by_step.push(op);
        let ended = server_time_ms(con);
        if expired_within(&ends, now, ended) {
            self.raced_steps.insert(at.step);
            self.reset();
            return;
        }
        // The commands read the server's clock as they run, the scripts
        // were given `now`: a step the machine slowed down differs more.
        // An expiry written in an earlier step of the sequence keeps that
        // step's gap.
        let took_ms = (ended - now).max(0);
        self.slowest_ms = self.slowest_ms.max(took_ms);
        let tolerance_ms = TOLERANCE_MS + took_ms + self.slowest_ms;
        let context = format!("{} wait {} at {now}, before: {before:?}", at.context, step.wait);
        match (op, &replies[1], &replies[2]) {
            (Op::Acquire, Value::Int(_), Value::Int(hint)) => {
                self.queued += 1;
                assert!(*hint >= 1, "{context}: hint {hint}");
            }
            (_, script, command) => assert_eq!(script, command, "{context}: replies"),
        }
        let queued_before = before.iter().any(|(m, score)| m == step.owner && *score > now);
        let dead_before = before.iter().any(|(m, score)| m == step.owner && *score <= now);
        let freed = matches!(op, Op::Release | Op::ForceRelease) && replies[2] == Value::Int(1);
        // The commands' own deadline rules: a queued waiter that asks
        // again is kept alive; a queued head taking the lock moves the
        // others after its lease; a freed lock, or a head of a free lock
        // giving up, starts the next head's turn (its known wait from
        // now); a dead waiter giving up is purged without moving the
        // others.
        let own_rule = untold
            || (matches!(op, Op::Acquire | Op::TryAcquire) && queued_before)
            || freed
            || (op == Op::Cancel && (dead_before || queued_before));
        compare_state(&replies, now, !own_rule, tolerance_ms, &context);
        if own_rule {
            // Back in step: the script twin takes the commands' deadlines.
            let scores: Scores = redis::from_redis_value(replies[10].clone()).unwrap();
            let s_timeouts = rlock_protocol::fair_timeout_key(&twin(Side::Scripts, step.name));
            for (member, score) in scores {
                let _: () = redis::cmd("ZADD").arg(&s_timeouts).arg("XX").arg(score).arg(member).query(con).unwrap();
            }
        }
    }
}

#[test]
fn fair_commands_match_the_redisson_scripts_on_random_sequences() {
    let server = Server::shared();
    let mut con = server.connection();
    let scripts = FairScripts::default();
    scripts.load(&mut con).unwrap();
    let mut listener = server.connection();
    let mut pubsub = listener.as_pubsub();
    pubsub.psubscribe("redisson_lock__channel:*").unwrap();
    pubsub.subscribe("step").unwrap();
    pubsub.subscribe("begin").unwrap();
    pubsub.subscribe("done").unwrap();

    let mut test = Fair {
        con,
        scripts,
        waits: Vec::new(),
        waits_drawn: false,
        ops_by_step: Vec::new(),
        turn_steps: HashSet::new(),
        raced_steps: HashSet::new(),
        queued: 0,
        purged: 0,
        timer_turns: 0,
        slowest_ms: 0,
    };
    drive("fair_differential", SEQUENCES, STEPS, &mut test);
    let Fair { mut con, ops_by_step, turn_steps, raced_steps, queued, purged, timer_turns, .. } = test;
    let _: () = redis::cmd("PUBLISH").arg("done").arg("").query(&mut con).unwrap();

    // Messages per step: the same from both twins, but for the cancels'
    // wake-ups, which only the commands send. Between steps, only the
    // server's timer tells the commands twin's next head (its head died).
    pubsub.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let (mut from_scripts, mut from_commands) = (vec![], vec![]);
    let mut pending: Vec<(Vec<u8>, Vec<u8>)> = vec![];
    let (mut cancel_wakeups, mut timer_wakeups) = (0, 0);
    loop {
        let message = pubsub.get_message().expect("messages");
        let channel: Vec<u8> = message.get_channel().unwrap();
        if channel == b"done" {
            break;
        }
        if channel == b"begin" {
            for (channel, _) in pending.drain(..) {
                assert_eq!(untwin(&channel).0, "c", "only the commands' timer tells a waiter between steps");
                timer_wakeups += 1;
            }
            continue;
        }
        if channel == b"step" {
            let step: usize = message.get_payload().unwrap();
            if raced_steps.contains(&step) {
                pending.clear();
                continue;
            }
            for (channel, payload) in pending.drain(..) {
                let (side, channel) = untwin(&channel);
                if side == "s" {
                    from_scripts.push((step, channel, payload));
                } else if ops_by_step[step] == Op::Cancel {
                    cancel_wakeups += 1;
                } else if turn_steps.contains(&step) && !matches!(ops_by_step[step], Op::Release | Op::ForceRelease) {
                    timer_wakeups += 1;
                } else {
                    from_commands.push((step, channel, payload));
                }
            }
            continue;
        }
        let payload: Vec<u8> = message.get_payload().unwrap();
        pending.push((channel, payload));
    }
    assert_eq!(from_scripts, from_commands, "messages differ");
    assert!(from_scripts.len() > 50, "releases woke waiters: {}", from_scripts.len());
    assert!(queued > 200 && purged > 10, "queued {queued}, dead waiters purged {purged}");
    eprintln!(
        "fair differential: {} wake-ups, {queued} queued, {purged} purged, {cancel_wakeups} cancel wake-ups, \
         {timer_wakeups} timer wake-ups, {timer_turns} queues the timer moved, {} steps an expiry fell within",
        from_scripts.len(),
        raced_steps.len()
    );
}
