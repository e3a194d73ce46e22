//! Differential property test: thousands of random operation sequences run
//! against Redisson-protocol Lua scripts and against the RLOCK commands, on
//! twin keys (`s:<name>` for the scripts, `c:<name>` for the commands).
//! Releases sometimes carry a request id (Redisson 3.24+'s unlock latch),
//! often one used before. Replies, HGETALL, PTTL (within a few ms), latch
//! values and PTTLs, and the release messages must match at every step,
//! with leases and latches short enough to expire mid-sequence.

use redis::{Connection, Value};
use std::collections::HashMap;
use std::time::Duration;
use testkit::{drive, expiry_ends, keyspace_events, quiet_now, release_channel, unlock_latch_key, At, Differential};
use testkit::{twin, Drift, RedissonScripts, Rng, Server, Side};

const SEQUENCES: usize = 1000;
const STEPS: usize = 12;
/// Allowed PTTL difference between twins: they are written microseconds
/// apart, but PTTL is read at millisecond resolution (`Drift` adds what
/// the server took over the steps).
const PTTL_TOLERANCE_MS: i64 = 5;
/// No operation runs this close to a twin's expiry (more the slowest step
/// of the sequence), where one twin could be expired and the other not.
const EXPIRY_GUARD_MS: i64 = 4;

const NAMES: [&[u8]; 3] = [b"orders", b"{user:7}lock", b"bin\x00\xff\r\n"];
const OWNERS: [&[u8]; 3] = [b"a1b2:1", b"a1b2:2", b"\x00\xfe:3"];
/// Few request ids, so that releases repeat them.
const REQUEST_IDS: [&[u8]; 3] = [b"5f0c9a7e", b"c41d22b8", b"\x00\xff:id"];

#[derive(Debug, Clone, Copy)]
enum Op {
    Acquire,
    Renew,
    Release,
    /// A release with the step's request id and latch time.
    ReleaseOnce,
    ForceRelease,
    Status,
}

fn random_op(rng: &mut Rng) -> Op {
    match rng.below(100) {
        0..=44 => Op::Acquire,
        45..=59 => Op::Renew,
        60..=74 => Op::Release,
        75..=89 => Op::ReleaseOnce,
        90..=94 => Op::ForceRelease,
        _ => Op::Status,
    }
}

fn random_lease(rng: &mut Rng) -> i64 {
    if rng.chance(25) {
        3 + rng.below(12) as i64
    } else {
        60_000
    }
}

/// Integer replies are PTTLs (for acquire) or small codes; either way they
/// must agree within the tolerance, and nil only with nil.
fn assert_replies_match(script: &Value, command: &Value, tolerance: i64, context: &str) {
    match (script, command) {
        (Value::Int(s), Value::Int(c)) if *s >= 0 && *c >= 0 => {
            assert!((s - c).abs() <= tolerance, "{context}: script replied {s}, command {c}")
        }
        _ => assert_eq!(script, command, "{context}: replies differ"),
    }
}

fn assert_pttls_match(script: i64, command: i64, tolerance: i64, context: &str) {
    if script < 0 || command < 0 {
        assert_eq!(script, command, "{context}: PTTL differs");
    } else {
        assert!((script - command).abs() <= tolerance, "{context}: PTTL script {script}, command {command}");
    }
}

/// One step's arguments.
struct Step<'a> {
    op: Op,
    name: &'a [u8],
    owner: &'a [u8],
    lease: i64,
    request_id: &'a [u8],
    latch: i64,
}

/// Runs one operation on both twins in one MULTI, with the state reads:
/// the lock twins' HGETALL and PTTL, then the latch twins' GET and PTTL.
/// Also returns the tolerance for the twins' PTTLs after it.
fn step_twins(con: &mut Connection, drift: &mut Drift, scripts: &RedissonScripts, step: &Step) -> (Vec<Value>, i64) {
    let Step { op, name, owner, lease, request_id, latch } = *step;
    let (s, c) = (twin(Side::Scripts, name), twin(Side::Commands, name));
    let (s_latch, c_latch) = (unlock_latch_key(&s, request_id), unlock_latch_key(&c, request_id));
    let mut pipe = redis::pipe();
    Drift::begin(&mut pipe);
    match op {
        Op::Acquire => {
            pipe.add_command(scripts.acquire(&s, owner, lease)).cmd("RLOCK.ACQUIRE").arg(&c).arg(owner).arg(lease)
        }
        Op::Renew => pipe.add_command(scripts.renew(&s, owner, lease)).cmd("RLOCK.RENEW").arg(&c).arg(owner).arg(lease),
        Op::Release => {
            pipe.add_command(scripts.release(&s, owner, lease)).cmd("RLOCK.RELEASE").arg(&c).arg(owner).arg(lease)
        }
        Op::ReleaseOnce => pipe
            .add_command(scripts.release_latched(&s, owner, lease, request_id, latch))
            .cmd("RLOCK.RELEASE")
            .arg(&c)
            .arg(owner)
            .arg(lease)
            .arg("ID")
            .arg(request_id)
            .arg("PX")
            .arg(latch),
        Op::ForceRelease => pipe.add_command(scripts.force_release(&s)).cmd("RLOCK.FORCERELEASE").arg(&c),
        // Redisson's inspection calls on the script twin, STATUS on the other.
        Op::Status => pipe
            .cmd("EXISTS")
            .arg(&s)
            .cmd("HEXISTS")
            .arg(&s)
            .arg(owner)
            .cmd("HGET")
            .arg(&s)
            .arg(owner)
            .cmd("HLEN")
            .arg(&s)
            .cmd("RLOCK.STATUS")
            .arg(&c)
            .arg(owner),
    };
    pipe.cmd("HGETALL").arg(&s).cmd("HGETALL").arg(&c).cmd("PTTL").arg(&s).cmd("PTTL").arg(&c);
    pipe.cmd("GET").arg(&s_latch).cmd("GET").arg(&c_latch).cmd("PTTL").arg(&s_latch).cmd("PTTL").arg(&c_latch);
    drift.query(pipe, con).unwrap_or_else(|e| panic!("{op:?} on {:?}: {e}", String::from_utf8_lossy(name)))
}

fn check_status(replies: &[Value], context: &str) {
    let int = |v: &Value| match v {
        Value::Int(i) => *i,
        Value::Nil => 0,
        Value::BulkString(b) => String::from_utf8_lossy(b).parse().unwrap_or(-99),
        other => panic!("{context}: unexpected {other:?}"),
    };
    let Value::Array(status) = &replies[4] else { panic!("{context}: STATUS reply {:?}", replies[4]) };
    let status: HashMap<String, i64> =
        status.chunks(2).map(|p| (redis::from_redis_value::<String>(p[0].clone()).unwrap(), int(&p[1]))).collect();
    assert_eq!(status["locked"], int(&replies[0]), "{context}: isLocked");
    assert_eq!(status["held"], int(&replies[1]), "{context}: isHeldByThread");
    assert_eq!(status["hold_count"], int(&replies[2]), "{context}: getHoldCount");
    assert_eq!(status["holders"], int(&replies[3]), "{context}: holders");
}

/// One step as drawn, after a pause of how many ms (to let short leases
/// and latches run out).
#[derive(Debug)]
struct Drawn {
    op: Op,
    name: &'static [u8],
    owner: &'static [u8],
    lease: i64,
    request_id: &'static [u8],
    latch: i64,
    pause_ms: u64,
}

struct Lock {
    con: Connection,
    scripts: RedissonScripts,
    drift: Drift,
    /// When each key's commands twin expires (absolute ms), by lock name
    /// and by latch key, to count the expiries between steps.
    expiries: HashMap<Vec<u8>, i64>,
    expired_mid_sequence: usize,
    latches_recorded: usize,
}

impl Differential for Lock {
    type Step = Drawn;

    fn reset(&mut self) {
        self.expiries.clear();
        self.drift.new_sequence(&mut self.con);
    }

    fn draw(&mut self, rng: &mut Rng) -> Drawn {
        let name = *rng.pick(&NAMES);
        let owner = *rng.pick(&OWNERS);
        let op = random_op(rng);
        let lease = random_lease(rng);
        let request_id = *rng.pick(&REQUEST_IDS);
        let latch = random_lease(rng);
        let pause_ms = if rng.chance(1) {
            10 + rng.below(20)
        } else if rng.chance(10) {
            rng.below(4)
        } else {
            0
        };
        Drawn { op, name, owner, lease, request_id, latch, pause_ms }
    }

    fn run(&mut self, drawn: &Drawn, at: &At) {
        let &Drawn { op, name, owner, lease, request_id, latch, pause_ms } = drawn;
        // Time passes: short leases and latches may run out between steps.
        std::thread::sleep(Duration::from_millis(pause_ms));
        let (s, c) = (twin(Side::Scripts, name), twin(Side::Commands, name));
        let timed = [s.clone(), c.clone(), unlock_latch_key(&s, request_id), unlock_latch_key(&c, request_id)];
        let guard_ms = self.drift.guard_ms(EXPIRY_GUARD_MS);
        let now = quiet_now(&mut self.con, guard_ms, |con| expiry_ends(con, &timed));
        let latch_id = unlock_latch_key(name, request_id);
        for key in [name, &latch_id] {
            if let Some(end) = self.expiries.remove(key) {
                self.expired_mid_sequence += usize::from(end <= now);
            }
        }
        let step = Step { op, name, owner, lease, request_id, latch };
        let (replies, tolerance) = step_twins(&mut self.con, &mut self.drift, &self.scripts, &step);
        let context = at.context;
        let state = &replies[replies.len() - 8..];
        match op {
            Op::Status => check_status(&replies, context),
            _ => assert_replies_match(&replies[0], &replies[1], tolerance, context),
        }
        let s_fields: HashMap<Vec<u8>, Vec<u8>> = redis::from_redis_value(state[0].clone()).unwrap();
        let c_fields: HashMap<Vec<u8>, Vec<u8>> = redis::from_redis_value(state[1].clone()).unwrap();
        assert_eq!(s_fields, c_fields, "{context}: HGETALL differs");
        let pttls = |i: usize| -> (i64, i64) {
            (redis::from_redis_value(state[i].clone()).unwrap(), redis::from_redis_value(state[i + 1].clone()).unwrap())
        };
        let (s_pttl, c_pttl) = pttls(2);
        assert_pttls_match(s_pttl, c_pttl, tolerance, context);
        assert_eq!(state[4], state[5], "{context}: latch values differ");
        let (s_latch_pttl, c_latch_pttl) = pttls(6);
        assert_pttls_match(s_latch_pttl, c_latch_pttl, tolerance, &format!("{context} (latch)"));
        if c_pttl >= 0 {
            self.expiries.insert(name.to_vec(), now + c_pttl);
        }
        if s_latch_pttl >= 0 {
            self.latches_recorded += usize::from(matches!(op, Op::ReleaseOnce));
            self.expiries.insert(latch_id, now + c_latch_pttl);
        }
    }
}

#[test]
fn commands_match_the_redisson_scripts_on_random_sequences() {
    let server = Server::shared();
    let mut con = server.connection();
    let scripts = RedissonScripts::default();
    scripts.load(&mut con).unwrap();
    let mut listener = server.connection();
    let mut pubsub = listener.as_pubsub();
    pubsub.psubscribe("redisson_lock__channel:*").unwrap();
    pubsub.subscribe("differential:done").unwrap();

    let mut test = Lock {
        con,
        scripts,
        drift: Drift::new(PTTL_TOLERANCE_MS),
        expiries: HashMap::new(),
        expired_mid_sequence: 0,
        latches_recorded: 0,
    };
    drive("differential", SEQUENCES, STEPS, &mut test);
    let Lock { mut con, expired_mid_sequence, latches_recorded, .. } = test;
    let _: () = redis::cmd("PUBLISH").arg("differential:done").arg("").query(&mut con).unwrap();
    let (mut from_scripts, mut from_commands) = (vec![], vec![]);
    pubsub.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    loop {
        let message = pubsub.get_message().expect("release messages");
        let channel: Vec<u8> = message.get_channel().unwrap();
        if channel == b"differential:done" {
            break;
        }
        let payload: Vec<u8> = message.get_payload().unwrap();
        for name in NAMES {
            if channel == release_channel(&twin(Side::Scripts, name)) {
                from_scripts.push((name, payload.clone()));
            } else if channel == release_channel(&twin(Side::Commands, name)) {
                from_commands.push((name, payload.clone()));
            }
        }
    }
    assert!(!from_scripts.is_empty(), "the sequences released locks");
    assert_eq!(from_scripts, from_commands, "release messages differ");
    assert!(expired_mid_sequence > 100, "leases should expire mid-sequence, saw {expired_mid_sequence}");
    assert!(latches_recorded > 100, "releases with ids should meet latches, saw {latches_recorded}");
    eprintln!(
        "differential: {} steps, {} release messages each, {expired_mid_sequence} mid-sequence expiries",
        SEQUENCES * STEPS,
        from_scripts.len()
    );
}

/// The keyspace notifications of every command match the script's: the
/// same events, in the same order, for the same outcomes.
#[test]
fn keyspace_notifications_match_the_scripts() {
    let server = Server::builder().config("notify-keyspace-events", "KEA").shared();
    let scripts = RedissonScripts::default();
    let steps: [(Op, &[u8]); 9] = [
        (Op::Acquire, b"me"),
        (Op::Acquire, b"me"),
        (Op::Acquire, b"other"), // contended: no event
        (Op::Renew, b"me"),
        (Op::Release, b"me"),
        (Op::Release, b"me"),
        (Op::Release, b"me"), // not held: no event
        (Op::Acquire, b"other"),
        (Op::ForceRelease, b"other"),
    ];
    let events = keyspace_events(&server, |con| {
        scripts.load(con).unwrap();
        for (op, owner) in steps {
            let _ = step_twins(
                con,
                &mut Drift::new(PTTL_TOLERANCE_MS),
                &scripts,
                &Step { op, name: b"lock", owner, lease: 10_000, request_id: b"r", latch: 1 },
            );
        }
    });
    let of =
        |key: &str| -> Vec<&str> { events.iter().filter(|(k, _)| k == key).map(|(_, event)| event.as_str()).collect() };
    let (from_scripts, from_commands) = (of("s:lock"), of("c:lock"));
    assert_eq!(
        from_scripts,
        [
            "hincrby", "expire", "hincrby", "expire", "expire", "hincrby", "expire", "hincrby", "del", "hincrby",
            "expire", "del"
        ],
        "the scripts' own events, as a sanity check"
    );
    assert_eq!(from_commands, from_scripts);
}
