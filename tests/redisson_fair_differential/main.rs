//! Redisson's fair-lock scripts (texts from Redisson's jars) run through
//! Lua on one lock name and through the filter's native rewrite on a twin
//! name, on one server, in random sequences of EVAL and EVALSHA calls.
//!
//! The rewrite is not exact: the native fair lock differs from the scripts
//! on purpose (docs/commands.md, "What differs from Redisson, and why"):
//! it tells heads their turns and keeps live waiters alive in its memory.
//! What is compared is what Redisson's Java code and its waiters see:
//! - the same replies: nil where the script replies nil; the same integer
//!   for tryLock(), releases and force releases; a queued waiter's hint
//!   the script's (within the twins' clocks), but never below 1 natively
//!   (the script's may be 0);
//! - the same keys with the same layout: the lock hash (fields, and PTTL
//!   within a few ms), the queue (the same owners in the same order), the
//!   deadlines (the same owners and scores, Redisson's arithmetic within
//!   the twins' clocks, every one still ahead), the unlock
//!   latches; and the same keyspace events on the lock hash;
//! - every message the script publishes is published natively too; the
//!   native side's others are `0` on the channel of an owner that waits.
//!
//! Every waiter waits Redisson's default (300 s), so that no deadline runs
//! out in either twin: where deadlines do run out, the two differ by
//! design (Redisson purges live waiters, #3004).

mod keys;
mod messages;
#[path = "../redisson_support/mod.rs"]
mod redisson_support;

use keys::{state, Keys};
use messages::check_messages;
use redis::{Connection, Value};
use redisson_support::{call, family_native_count, texts};
use testkit::{
    drive, expired_within, expiry_ends, publications, quiet_now, run_out, set_filter_mode, unlock_latch_key, At,
    Differential,
};
use testkit::{server_time_ms, Rng, Server};

/// The twins' names. The give-up script names only the queue, whose key
/// tells the lock's name when the name has a `{`; else `n` and `{n}` share
/// it, and the native command tells them apart by the state (see
/// `fair/redisson.rs`).
#[derive(Clone, Copy)]
struct Names {
    lua: &'static str,
    native: &'static str,
}

const TAGGED: Names = Names { lua: "{lua}fair", native: "{nat}fair" };
const UNTAGGED: Names = Names { lua: "luafair", native: "natfair" };
const OWNERS: [&str; 4] = ["6f1c:1", "6f1c:2", "a9e0:7", "a9e0:8"];
const REQUESTS: [&str; 2] = ["0a1b2c3d4e5f60718293a4b5c6d7e8f9", "r3"];
const WAIT: &str = "300000";
/// Less than [`WAIT`]: the script waiters a tryLock() taking its turn
/// moves up by it stay ahead of the clock.
const TRY_LOCK_WAIT: &str = "100000";
/// The short leases and latches, which run out mid-sequence.
const SHORT_MS: u64 = 150;
/// How far apart the twins' calls run, at most, more the slowest step yet.
const TOLERANCE_MS: i64 = 200;
/// No step starts this close to a lease's end, more the slowest step yet.
const GUARD_MS: i64 = 100;

/// How a version's unlock and force-unlock scripts publish.
#[derive(Clone, Copy, PartialEq)]
enum Publish {
    /// `publish` in the text.
    Fixed,
    /// The command is an argument (3.22.0+).
    Argument,
    /// An argument, and the unlock takes a latch key (3.24.0+).
    ArgumentAndLatch,
}

struct Texts {
    try_lock: Vec<u8>,
    lock: Vec<u8>,
    give_up: Vec<u8>,
    unlock: Vec<u8>,
    force: Vec<u8>,
    publish: Publish,
}

impl Texts {
    /// RedissonFairLock's texts of `version`: tryLock, the waiting
    /// acquire, the give-up, the unlock and the force unlock.
    fn of(version: &str, shas: [&str; 5], publish: Publish) -> Self {
        let [try_lock, lock, give_up, unlock, force] = texts(version, &["org/redisson/RedissonFairLock"], shas);
        Self { try_lock, lock, give_up, unlock, force, publish }
    }
}

#[derive(Debug, Clone)]
enum Op {
    /// Redisson's no-wait tryLock(), with its lock's wait (a lock made
    /// with another than the default passes its own).
    TryLock {
        owner: &'static str,
        lease: u64,
        wait: &'static str,
    },
    Lock {
        owner: &'static str,
        lease: u64,
    },
    /// `as_lua`: on the native twin too, as Lua (a call the filter left
    /// to Lua: the caller's ACL, or the filter turned off a moment).
    GiveUp {
        owner: &'static str,
        as_lua: bool,
    },
    Unlock {
        owner: &'static str,
        lease: u64,
        request: &'static str,
        latch_ms: u64,
    },
    ForceUnlock,
    /// Leases of [`SHORT_MS`] run out: until the server shows they did.
    Sleep,
}

impl Op {
    /// Whether the step may write a short lease or latch (an unlock of a
    /// lock held again sets its lease again).
    fn writes_short(&self) -> bool {
        match *self {
            Op::TryLock { lease, .. } | Op::Lock { lease, .. } => lease == SHORT_MS,
            Op::Unlock { lease, latch_ms, .. } => lease == SHORT_MS || latch_ms == SHORT_MS,
            _ => false,
        }
    }
}

fn random_op(rng: &mut Rng) -> Op {
    let owner = *rng.pick(&OWNERS);
    let lease = *rng.pick(&[SHORT_MS, 30_000]);
    match rng.below(100) {
        0..=14 => {
            let wait = [WAIT, TRY_LOCK_WAIT][rng.below(2) as usize];
            Op::TryLock { owner, lease, wait }
        }
        15..=49 => Op::Lock { owner, lease },
        50..=59 => Op::GiveUp { owner, as_lua: rng.chance(30) },
        60..=89 => Op::Unlock {
            owner,
            lease,
            request: REQUESTS[rng.below(REQUESTS.len() as u64) as usize],
            latch_ms: *rng.pick(&[SHORT_MS, 20_000]),
        },
        90..=94 => Op::ForceUnlock,
        _ => Op::Sleep,
    }
}

/// Runs `op` on `name` as Redisson sends it, with `now` as its clock.
fn run(con: &mut Connection, texts: &Texts, by_sha: bool, name: &str, op: &Op, now: i64) -> Result<Value, String> {
    let keys = Keys::of(name);
    let now = now.to_string();
    let (name, queue, deadlines, channel) = (&keys.name[..], &keys.queue[..], &keys.deadlines[..], &keys.channel[..]);
    let reply = match *op {
        Op::TryLock { owner, lease, wait } => {
            let lease = lease.to_string();
            let args: [&[u8]; 4] = [lease.as_bytes(), owner.as_bytes(), now.as_bytes(), wait.as_bytes()];
            call(con, by_sha, &texts.try_lock, &[name, queue, deadlines], &args)
        }
        Op::Lock { owner, lease } => {
            let lease = lease.to_string();
            let args: [&[u8]; 4] = [lease.as_bytes(), owner.as_bytes(), WAIT.as_bytes(), now.as_bytes()];
            call(con, by_sha, &texts.lock, &[name, queue, deadlines], &args)
        }
        Op::GiveUp { owner, .. } => {
            call(con, by_sha, &texts.give_up, &[queue, deadlines], &[owner.as_bytes(), WAIT.as_bytes()])
        }
        Op::Unlock { owner, lease, request, latch_ms } => {
            let (lease, latch_ms) = (lease.to_string(), latch_ms.to_string());
            let mut args: Vec<&[u8]> = vec![b"0", lease.as_bytes(), owner.as_bytes(), now.as_bytes()];
            let latch = unlock_latch_key(name, request.as_bytes());
            let mut keys: Vec<&[u8]> = vec![name, queue, deadlines, channel];
            match texts.publish {
                Publish::Fixed => {}
                Publish::Argument => args.push(b"publish"),
                Publish::ArgumentAndLatch => {
                    args.extend([&b"PUBLISH"[..], latch_ms.as_bytes()]);
                    keys.push(&latch);
                }
            }
            call(con, by_sha, &texts.unlock, &keys, &args)
        }
        Op::ForceUnlock => {
            let mut args: Vec<&[u8]> = vec![b"0", now.as_bytes()];
            if texts.publish != Publish::Fixed {
                args.push(b"publish");
            }
            call(con, by_sha, &texts.force, &[name, queue, deadlines, channel], &args)
        }
        Op::Sleep => unreachable!("no script call"),
    };
    reply.map_err(|err| err.to_string())
}

/// The replies Redisson's Java code reads alike.
fn same_kind(op: &Op, lua: &Result<Value, String>, native: &Result<Value, String>, tolerance_ms: i64) -> bool {
    match (op, lua, native) {
        (_, Err(_), Err(_)) => true,
        // A queued waiter's hint is Redisson's (the twins' clocks a little
        // apart); where Redisson's is 0 or less, ours is at least 1.
        (Op::Lock { .. }, Ok(Value::Int(redissons)), Ok(Value::Int(hint))) if *redissons >= 1 => {
            (redissons - hint).abs() <= tolerance_ms
        }
        (Op::Lock { .. }, Ok(Value::Int(_)), Ok(Value::Int(hint))) => *hint >= 1,
        _ => lua == native,
    }
}

struct Fair<'a> {
    texts: &'a Texts,
    names: Names,
    server: Server,
    con: Connection,
    calls: usize,
    natives: i64,
    acquired: usize,
    queued: usize,
    /// Steps an expiry fell within (`expired_within`), not compared.
    raced: usize,
    /// The longest a step took, from its clock reading to its second call.
    slowest_ms: i64,
}

impl Fair<'_> {
    /// The twins' locks and latches, whose ends a step waits out.
    fn timed_keys(&self) -> Vec<Vec<u8>> {
        let names = [self.names.lua, self.names.native];
        let latches = names.into_iter().flat_map(|name| {
            REQUESTS.into_iter().map(move |request| unlock_latch_key(name.as_bytes(), request.as_bytes()))
        });
        names.map(|name| name.as_bytes().to_vec()).into_iter().chain(latches).collect()
    }
}

impl Differential for Fair<'_> {
    /// The operation, whether by SHA-1.
    type Step = (Op, bool);

    fn draw(&mut self, rng: &mut Rng) -> Self::Step {
        (random_op(rng), rng.chance(50))
    }

    fn run(&mut self, &(ref op, by_sha): &Self::Step, at: &At) {
        let (names, texts) = (self.names, self.texts);
        let timed_keys = self.timed_keys();
        if matches!(op, Op::Sleep) {
            run_out(&mut self.con, &timed_keys, 200);
            return;
        }
        // No lease or latch ends between the twins' calls.
        let now = quiet_now(&mut self.con, GUARD_MS + self.slowest_ms, |con| expiry_ends(con, &timed_keys));
        let mut ends = expiry_ends(&mut self.con, &timed_keys);
        let mut replies = vec![];
        let messages = publications(&self.server, |con| {
            set_filter_mode(con, "off");
            replies.push(run(con, texts, by_sha, names.lua, op, now));
            set_filter_mode(con, if matches!(op, Op::GiveUp { as_lua: true, .. }) { "off" } else { "native" });
            replies.push(run(con, texts, by_sha, names.native, op, now));
        });
        self.natives += i64::from(!matches!(op, Op::GiveUp { as_lua: true, .. }));
        // A step the machine slowed down leaves its twins further apart.
        self.slowest_ms = self.slowest_ms.max(server_time_ms(&mut self.con) - now);
        let ((lua_keys, lua_ahead), (native_keys, native_ahead)) =
            (state(&mut self.con, names.lua, now, names), state(&mut self.con, names.native, now, names));
        // The twins ran or were read on either side of an expiry: one ahead
        // of the step, or that of a short lease or latch the step wrote.
        ends.extend(op.writes_short().then_some(now + SHORT_MS as i64));
        if expired_within(&ends, now, server_time_ms(&mut self.con)) {
            testkit::flush_all(&mut self.con);
            self.raced += 1;
            return;
        }
        let (lua, native) = (&replies[0], &replies[1]);
        let context = format!("{}: {lua:?} / {native:?}", at.context);
        let tolerance_ms = TOLERANCE_MS + self.slowest_ms;
        assert!(same_kind(op, lua, native, tolerance_ms), "{context}: replies");
        self.acquired += usize::from(matches!(op, Op::Lock { .. } | Op::TryLock { .. }) && *lua == Ok(Value::Nil));
        self.queued += usize::from(matches!((op, lua), (Op::Lock { .. }, Ok(Value::Int(_)))));
        self.calls += 1;
        check_messages(&context, messages, names);
        let (lua, native) = (lua_keys, native_keys);
        let same = lua.len() == native.len()
            && lua.iter().zip(&native).all(|((a, a_ttl), (b, b_ttl))| {
                a == b && (a_ttl == b_ttl || (*a_ttl >= 0 && *b_ttl >= 0 && (a_ttl - b_ttl).abs() <= tolerance_ms))
            });
        assert!(same && lua_ahead && native_ahead, "{context}: keys\n{lua:?}\n{native:?}");
    }
}

fn differential(texts: &Texts, seed: &str, names: Names) {
    let server = Server::builder().config("notify-keyspace-events", "KEA").start();
    let mut con = server.connection();
    for body in [&texts.try_lock, &texts.lock, &texts.give_up, &texts.unlock, &texts.force] {
        let _: String = redis::cmd("SCRIPT").arg("LOAD").arg(body).query(&mut con).unwrap();
    }
    let mut fair =
        Fair { texts, names, server, con, calls: 0, natives: 0, acquired: 0, queued: 0, raced: 0, slowest_ms: 0 };
    drive(seed, 1, 300, &mut fair);
    let Fair { mut con, calls, natives, acquired, queued, raced, .. } = fair;
    eprintln!("{seed}: {raced} steps an expiry fell within, started over");
    // Every call on the twin ran natively but those left to Lua: the
    // comparison was not Lua's with itself.
    assert_eq!(family_native_count(&mut con, "fair"), natives);
    assert!(calls > 200 && acquired > 20 && queued > 20, "{calls} calls, {acquired} acquired, {queued} queued");
}

// RedissonFairLock's texts: tryLock (no wait), the waiting acquire, the
// give-up, the unlock, the force unlock.
const TRY_LOCK_3_31: &str = "d20501c26a30adf6fb0fe9883bbbcc497e6157e2";
const TRY_LOCK_3_11: &str = "aa0a28d2eb7cbeb50151315a58eb75302d8dfa40";
const LOCK_3_45: &str = "8f6ed299ffd259f0539c20f89253998c0777ea75";
const LOCK_3_32: &str = "929defe0321e0a4c943b4244951d3a730b6eaabc";
const LOCK_3_31: &str = "f453a73adbe05f097ff2810e5e0c0489a9350076";
const LOCK_3_11: &str = "762bfafa6be221431a0b668685dd15c926483619";
const GIVE_UP: &str = "d1ddef65ad80886b5d36e023c99930044ddd653a";
const UNLOCK_3_31: &str = "367f80bd2e300e411fb0936d9b601e5bcb3fd4b6";
const UNLOCK_3_24: &str = "ca303f8587d0942f8a0021f62338626ca4dd0118";
const UNLOCK_3_22: &str = "14f85250fb2a386500bf8e4b25a8e95db140ff0c";
const UNLOCK_3_10: &str = "35d32367b21753c39b55dc64d1906fee627cc9a8";
const FORCE_3_31: &str = "71ed11d4e4818119ac560b3d670a7f08256afc46";
const FORCE_3_22: &str = "047c11d7fec40d0102fe9903ff1e19e9a1dec610";
const FORCE_3_10: &str = "95cdf4b03f82c82edf987c7d216b4b67d861b14f";

/// Runs the differential on the texts of `version` (named by SHA-1).
fn differential_of(version: &str, shas: [&str; 5], publish: Publish) {
    differential(&Texts::of(version, shas, publish), &format!("redisson_fair_differential {version}"), TAGGED);
}

/// Names without braces: the give-up's queue key names `n` and `{n}`, and
/// the native command tells which by the lock's hash or its waiters.
#[test]
fn redisson_4_7_fair_give_ups_of_names_without_braces_run_natively_too() {
    let texts =
        Texts::of("4.7.0", [TRY_LOCK_3_31, LOCK_3_45, GIVE_UP, UNLOCK_3_31, FORCE_3_31], Publish::ArgumentAndLatch);
    differential(&texts, "redisson_fair_differential 4.7.0 untagged", UNTAGGED);
}

#[test]
fn redisson_4_7_fair_scripts_run_natively_with_the_same_layout_replies_and_messages() {
    differential_of("4.7.0", [TRY_LOCK_3_31, LOCK_3_45, GIVE_UP, UNLOCK_3_31, FORCE_3_31], Publish::ArgumentAndLatch);
}

#[test]
fn redisson_3_43_fair_scripts_run_natively_with_the_same_layout_replies_and_messages() {
    differential_of("3.43.0", [TRY_LOCK_3_31, LOCK_3_32, GIVE_UP, UNLOCK_3_31, FORCE_3_31], Publish::ArgumentAndLatch);
}

#[test]
fn redisson_3_31_fair_scripts_run_natively_with_the_same_layout_replies_and_messages() {
    differential_of("3.31.0", [TRY_LOCK_3_31, LOCK_3_31, GIVE_UP, UNLOCK_3_31, FORCE_3_31], Publish::ArgumentAndLatch);
}

#[test]
fn redisson_3_30_fair_scripts_run_natively_with_the_same_layout_replies_and_messages() {
    differential_of("3.30.0", [TRY_LOCK_3_11, LOCK_3_11, GIVE_UP, UNLOCK_3_24, FORCE_3_22], Publish::ArgumentAndLatch);
}

#[test]
fn redisson_3_23_fair_scripts_run_natively_with_the_same_layout_replies_and_messages() {
    differential_of("3.23.5", [TRY_LOCK_3_11, LOCK_3_11, GIVE_UP, UNLOCK_3_22, FORCE_3_22], Publish::Argument);
}

#[test]
fn redisson_3_14_fair_scripts_run_natively_with_the_same_layout_replies_and_messages() {
    differential_of("3.14.1", [TRY_LOCK_3_11, LOCK_3_11, GIVE_UP, UNLOCK_3_10, FORCE_3_10], Publish::Fixed);
}
