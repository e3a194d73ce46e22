//! Redisson's permit-expirable semaphore scripts that run natively
//! (tryAcquire, tryRelease and #2, availablePermits, acquiredPermits,
//! getPermits, getLeaseTime, updateLeaseTime, addPermits, setPermits;
//! trySetPermits, which is RSemaphore's text) run through Lua on one
//! semaphore and through the filter's native rewrite on a twin, on one
//! server, in random sequences of EVAL and EVALSHA calls, between writes
//! of other kinds:
//! replies, keys (the count and the permits' sorted set), TTLs, keyspace
//! notifications and published messages must be the same. The clock is
//! the test's, as Redisson's is the client's: it moves past leases.

mod redisson_support;

use redis::{Cmd, Commands, Connection, Value};
use redisson_support::{family_native_count, load, script_call, texts, VERSION};
use rlock_protocol::{permit_timeout_key, semaphore_channel, PERMIT_NEVER_EXPIRES};
use std::time::{SystemTime, UNIX_EPOCH};
use testkit::{drive, run_out, At, Differential, FilterTwins, Rng, Server};

const CLASS: &str = "org/redisson/RedissonPermitExpirableSemaphore";
const TWINS: FilterTwins = FilterTwins { lua: "lua-psem", native: "nat-psem" };
const IDS: [&str; 6] = ["a1", "b2", "c3", "d4", "e5", "f6"];
/// What a clobber stores at the name: strings Lua's `tonumber` reads or
/// not, INCRBY reads or not, or a hash (empty).
const CLOBBERS: [&str; 11] = ["five", "1.5", "", "2e0", "0x10", " 3", "nan", "1e400", "-0", "9007199254740993", "-7"];

/// One release's texts (3.22.0 .. 4.7.0 share the rewritten ones).
struct Texts {
    try_acquire: Vec<u8>,
    release: Vec<u8>,
    add_permits: Vec<u8>,
    try_set_permits: Vec<u8>,
    available: Vec<u8>,
    acquired: Vec<u8>,
    permits: Vec<u8>,
    update_lease: Vec<u8>,
    /// From 3.19.1.
    set_permits: Option<Vec<u8>>,
    /// From 3.22.0 the publish command is an argument; before, the texts
    /// name `publish`.
    takes_publish: bool,
    /// Before 3.23.4 tryAcquire takes one id (and replies it).
    acquires_one: bool,
    /// From 3.23.4 (all or none from 3.41.0).
    release_all: Option<Vec<u8>>,
    /// From 3.41.0.
    lease: Option<Vec<u8>>,
}

#[derive(Debug, Clone)]
enum Op {
    /// Rewritten: trySetPermits (RSemaphore's family), and the rest.
    TrySetPermits(u64),
    Available,
    Acquired,
    Permits,
    Release(&'static str),
    ReleaseAll(Vec<&'static str>),
    Lease(&'static str),
    /// A new lease (-1: never expires).
    UpdateLease(&'static str, i64),
    AddPermits(i64),
    SetPermits(u64),
    /// Permits taken for a lease (-1: never expires).
    TryAcquire(Vec<&'static str>, i64),
    /// Plain commands on both twins (a delete takes both keys).
    Delete,
    Expire,
    Clobber(&'static str),
    ClobberTimeouts,
    /// The clock moves on this many ms.
    Tick(i64),
}

fn random_op(rng: &mut Rng, texts: &Texts) -> Op {
    let mut id = || IDS[rng.below(IDS.len() as u64) as usize];
    let (first, second) = (id(), id());
    let lease = *rng.pick(&[-1, 100, 500, 3_000]);
    match rng.below(100) {
        0..=6 => Op::TrySetPermits(*rng.pick(&[0, 1, 3, 9_007_199_254_740_993])),
        7..=12 => Op::Available,
        13..=17 => Op::Acquired,
        18..=22 => Op::Permits,
        23..=30 => Op::Release(first),
        31..=36 if texts.release_all.is_some() => Op::ReleaseAll(vec![first, second]),
        37..=42 if texts.lease.is_some() => Op::Lease(first),
        31..=48 => Op::UpdateLease(first, lease),
        49..=64 if !texts.acquires_one && rng.chance(50) => Op::TryAcquire(vec![first, second], lease),
        49..=64 => Op::TryAcquire(vec![first], lease),
        65..=68 => Op::AddPermits(*rng.pick(&[-2, 0, 1, 4, 9_007_199_254_740_993])),
        69..=72 if texts.set_permits.is_some() => Op::SetPermits(*rng.pick(&[0, 2, 5])),
        73..=77 => Op::Delete,
        78..=80 => Op::Expire,
        81..=83 => Op::Clobber(CLOBBERS[rng.below(CLOBBERS.len() as u64) as usize]),
        84 if rng.chance(30) => Op::ClobberTimeouts,
        _ => Op::Tick(*rng.pick(&[50, 200, 700, 2_000])),
    }
}

/// The script call of `op` on `name` at `now`; `None` for plain steps.
fn script(texts: &Texts, by_sha: bool, name: &str, op: &Op, now: i64, publish: &str) -> Option<Cmd> {
    let (timeouts, channel) = (permit_timeout_key(name.as_bytes()), semaphore_channel(name.as_bytes()));
    let (name, publish) = (name.as_bytes(), publish.as_bytes());
    let [at, never] = [now.to_string(), PERMIT_NEVER_EXPIRES.to_string()];
    let (count, until, delta);
    let (text, keys, argv): (&[u8], Vec<&[u8]>, Vec<&[u8]>) = match op {
        Op::TrySetPermits(n) => {
            count = n.to_string();
            (&texts.try_set_permits, vec![name, &channel], vec![count.as_bytes(), publish])
        }
        Op::Available | Op::Acquired | Op::Permits => {
            let text = match op {
                Op::Available => &texts.available,
                Op::Acquired => &texts.acquired,
                _ => &texts.permits,
            };
            (text, vec![name, &timeouts, &channel], vec![at.as_bytes(), publish])
        }
        Op::TryAcquire(ids, lease) => {
            count = ids.len().to_string();
            until = if *lease < 0 { never.clone() } else { (now + lease).to_string() };
            let head = [count.as_bytes(), until.as_bytes(), at.as_bytes(), never.as_bytes(), publish];
            let argv = match ids[..] {
                [id] if texts.acquires_one => {
                    vec![b"1", until.as_bytes(), id.as_bytes(), at.as_bytes(), never.as_bytes(), publish]
                }
                _ => head.into_iter().chain(ids.iter().map(|id| id.as_bytes())).collect(),
            };
            (&texts.try_acquire, vec![name, &timeouts, &channel], argv)
        }
        Op::Release(id) => {
            (&texts.release, vec![name, &channel, &timeouts], vec![id.as_bytes(), b"1", at.as_bytes(), publish])
        }
        Op::ReleaseAll(ids) => {
            count = ids.len().to_string();
            let head = [count.as_bytes(), at.as_bytes(), publish];
            let argv = head.into_iter().chain(ids.iter().map(|id| id.as_bytes())).collect();
            (texts.release_all.as_ref().expect("a text"), vec![name, &channel, &timeouts], argv)
        }
        Op::Lease(id) => {
            let text = texts.lease.as_ref().expect("a text");
            (text, vec![name, &timeouts, &channel], vec![id.as_bytes(), never.as_bytes(), at.as_bytes(), publish])
        }
        Op::UpdateLease(id, lease) => {
            until = if *lease < 0 { never.clone() } else { (now + lease).to_string() };
            let argv = vec![id.as_bytes(), until.as_bytes(), at.as_bytes(), publish];
            (&texts.update_lease, vec![name, &timeouts, &channel], argv)
        }
        Op::AddPermits(d) => {
            delta = d.to_string();
            (&texts.add_permits, vec![name, &channel], vec![delta.as_bytes(), publish])
        }
        Op::SetPermits(n) => {
            count = n.to_string();
            let text = texts.set_permits.as_ref().expect("a text");
            (text, vec![name, &channel, &timeouts], vec![count.as_bytes(), publish])
        }
        _ => return None,
    };
    let mut argv = argv;
    if !texts.takes_publish {
        argv.pop();
    }
    Some(script_call(by_sha, text, &keys, &argv))
}

/// Whether `op` is a script call (which the filter rewrites), not a plain write.
fn rewritten(op: &Op) -> bool {
    !matches!(op, Op::Delete | Op::Expire | Op::Clobber(_) | Op::ClobberTimeouts | Op::Tick(_))
}

/// A plain write on `name`.
fn prepare(con: &mut Connection, name: &str, op: &Op) {
    let timeouts = permit_timeout_key(name.as_bytes());
    match op {
        Op::Delete => {
            let _: () = con.del(&[name.as_bytes(), &timeouts]).unwrap();
        }
        Op::Expire => {
            let _: bool = con.pexpire(name, 300).unwrap();
        }
        Op::Clobber(value) => {
            let _: () = con.del(name).unwrap();
            let _: () = if value.is_empty() { con.hset(name, "field", "1") } else { con.set(name, value) }.unwrap();
        }
        Op::ClobberTimeouts => {
            let _: () = con.set(&timeouts, "x").unwrap();
        }
        _ => {}
    }
}

fn both_keys(name: &str) -> Vec<Vec<u8>> {
    vec![name.as_bytes().to_vec(), permit_timeout_key(name.as_bytes())]
}

struct PermitSemaphore<'a> {
    texts: &'a Texts,
    server: Server,
    con: Connection,
    control: Connection,
    /// The caller's clock.
    now: i64,
    calls: i64,
    sets: i64,
    errors: i64,
}

impl Differential for PermitSemaphore<'_> {
    /// The operation, whether by SHA-1, the publish command.
    type Step = (Op, bool, &'static str);

    fn draw(&mut self, rng: &mut Rng) -> Self::Step {
        let op = random_op(rng, self.texts);
        (op, rng.chance(50), ["publish", "PUBLISH", "spublish"][rng.below(3) as usize])
    }

    fn run(&mut self, (op, by_sha, publish): &Self::Step, at: &At) {
        let (by_sha, publish) = (*by_sha, *publish);
        if let Op::Tick(ms) = *op {
            self.now += ms;
            if ms >= 700 {
                // The keys' own TTLs (an expire's 300 ms) run out too.
                run_out(&mut self.con, &[both_keys(TWINS.lua), both_keys(TWINS.native)].concat(), 350);
            }
            return;
        }
        if !rewritten(op) {
            for name in [TWINS.lua, TWINS.native] {
                prepare(&mut self.con, name, op);
            }
            return;
        }
        let now = self.now;
        let context = format!("{} at {now}", at.context);
        let call = |name: &str| script(self.texts, by_sha, name, op, now, publish).expect("a call");
        let cons = [&mut self.con, &mut self.control];
        self.errors += i64::from(TWINS.check(&self.server, cons, &context, false, call, both_keys));
        if matches!(op, Op::TrySetPermits(_)) {
            self.sets += 1;
        } else {
            self.calls += 1;
        }
    }
}

fn differential(texts: &Texts, seed: &str) {
    let server = Server::builder().config("notify-keyspace-events", "KEA").start();
    let mut con = server.connection();
    let all = [&texts.try_acquire, &texts.release, &texts.add_permits, &texts.try_set_permits, &texts.update_lease];
    let newer = [texts.set_permits.as_ref(), texts.release_all.as_ref(), texts.lease.as_ref()].into_iter().flatten();
    let bodies: Vec<&[u8]> = all
        .into_iter()
        .chain([&texts.available, &texts.acquired, &texts.permits])
        .chain(newer)
        .map(Vec::as_slice)
        .collect();
    load(&mut con, &bodies);
    let control = server.connection();
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64;
    let mut semaphore = PermitSemaphore { texts, server, con, control, now, calls: 0, sets: 0, errors: 0 };
    drive(seed, 1, 400, &mut semaphore);
    let PermitSemaphore { mut con, calls, sets, errors, .. } = semaphore;
    // Every call on the twin ran natively: the comparison was not Lua's with itself.
    assert_eq!(family_native_count(&mut con, "permit_semaphore"), calls);
    assert_eq!(family_native_count(&mut con, "semaphore"), sets);
    assert!(calls > 120 && errors < calls / 2, "{calls} calls, {sets} sets, {errors} errors");
}

/// tryAcquire, tryRelease, addPermits, trySetPermits, availablePermits,
/// acquiredPermits, getPermits and updateLeaseTime of 3.23.4 .. 4.7.0.
const NEWER: [&str; 8] = [
    "992c96b09a3d8ea0b37f5dc12e5347a44d93909d",
    "4ce079451bee2993ce00c8a4e205b536c6ccad67",
    "ec6fb1cd5f66817424e8fe70fee7929391b7c6f0",
    "241ce4e87e652b4f9b39d33cbcd7df9ee8ed906c",
    "26b3972b2c9e617556282f404cb79709d746a713",
    "6f0b0be79a0c146c778cb14f40c10eb5b706e574",
    "e242db5c1c68811b0d26a41937dcf22415b6d872",
    "2298b02cc67a89f2a638e47503db3675c73d77f5",
];

/// The same of 3.19.1 .. 3.21.3, which name `publish`.
const OLDER: [&str; 8] = [
    "9dd7dc38c905805c04c8f14cb8aae2bd5dd529b0",
    "2eac39f9e36394f850326ea7cd240d6ebc715ae2",
    "575a088d37e6b44b707ce3103c04a03c2cd504bd",
    "8d41a082c3a98f3e882844af9c9e9f9fbd7f8573",
    "6aee5085c7e0b3ff5d8612116a9b5f2ceb1fdab2",
    "dd0e62727caf54b589ae8e4bf22c32ec5ec33250",
    "795a15adb7654812d3711bed0f526f84076f8f4e",
    "5100a65fefa9ca6c9ed0977c06c41c68e2e847e8",
];

/// `version`'s texts: `shas` (NEWER or OLDER), and the others it has.
fn texts_of(version: &str, shas: [&str; 8]) -> Texts {
    let [try_acquire, release, add_permits, try_set_permits, available, acquired, permits, update_lease] =
        texts(version, &[CLASS], shas);
    let all = redisson_support::all_texts(version, &[CLASS]);
    let find = |sha: &str| all.iter().find(|text| redisson_support::sha1_hex(text) == sha).cloned();
    Texts {
        try_acquire,
        release,
        add_permits,
        try_set_permits,
        available,
        acquired,
        permits,
        update_lease,
        set_permits: [
            "494d8561fee0cdb033f6c28d74c052c52189a578",
            "055e71dede7c0d07958c639e4661ab8bd36c4ab9",
            "f753b3fd2954a5f1ed4d8f95a9c41819ecc27f41",
        ]
        .into_iter()
        .find_map(find),
        takes_publish: shas != OLDER,
        acquires_one: shas[0] != NEWER[0],
        release_all: find("cf3ab77b1c0ae1226ae0e06e5cb18ee75f56c96b")
            .or_else(|| find("bb41a8ec1cd921c89e9d8f2ddde38ad13a2e8b74")),
        lease: find("8be95cb5221cc7ee883cacb8859a8b32ef501a0e"),
    }
}

#[test]
fn redissons_permit_semaphore_scripts_run_natively_as_they_run_in_lua() {
    differential(&texts_of(VERSION, NEWER), "redisson_permit_semaphore_differential");
}

#[test]
fn older_permit_semaphore_scripts_run_natively_as_they_run_in_lua() {
    // 3.23.5: the texts of 4.7.0 but getLeaseTime, and the release(ids)
    // that returns the ids held; 3.23.0: tryAcquire of one id, setPermits
    // that always writes; 3.20.1: the texts that name `publish`.
    differential(&texts_of("3.23.5", NEWER), "redisson_permit_semaphore_differential_3.23.5");
    let mut of_3_23_0 = NEWER;
    of_3_23_0[0] = "d47a2fd3852467e5e7f2d1618c92a1ca719fcf7a";
    differential(&texts_of("3.23.0", of_3_23_0), "redisson_permit_semaphore_differential_3.23.0");
    differential(&texts_of("3.20.1", OLDER), "redisson_permit_semaphore_differential_3.20.1");
}

#[test]
fn the_permit_semaphore_commands_take_a_scripts_clock_and_publish_command_last() {
    let server = Server::start();
    let mut con = server.connection();
    let mut query = |args: &[&str]| redis::cmd(args[0]).arg(&args[1..]).query::<Value>(&mut con);
    assert_eq!(query(&["RPSEM.SETPERMITS", "s", "2", "VIA", "spublish"]), Ok(Value::Nil));
    assert_eq!(query(&["RPSEM.TRYACQUIRE", "s", "1000", "a", "AT", "500", "VIA", "PUBLISH"]), Ok(ok()));
    assert_eq!(query(&["RPSEM.LEASE", "s", "a", "AT", "600"]), Ok(Value::Int(400)), "the script's clock");
    assert_eq!(query(&["RPSEM.UPDATELEASE", "s", "a", "2000", "at", "600", "via", "publish"]), Ok(Value::Int(1)));
    assert_eq!(query(&["RPSEM.AVAILABLE", "s", "AT", "600"]), Ok(Value::BulkString(b"1".to_vec())), "GET's");
    assert_eq!(query(&["RPSEM.TRYACQUIRE", "s", "1000", "ALL", "AT", "600"]), Ok(ok()), "the id ALL");
    assert_eq!(query(&["RPSEM.RELEASE", "s", "a", "ALL", "AT", "700", "VIA", "PUBLISH"]), Ok(Value::Int(1)));
    assert_eq!(query(&["RPSEM.RELEASE", "s", "ALL", "AT", "700"]), Ok(Value::Int(1)), "the id ALL, released");
    assert_eq!(query(&["RPSEM.ADDPERMITS", "s", "1", "VIA", "PUBLISH"]), Ok(Value::Nil));
    assert_eq!(query(&["RPSEM.PERMITS", "s", "AT", "700"]), Ok(Value::Int(3)));
    assert_eq!(query(&["RPSEM.ACQUIRED", "s", "AT", "700"]), Ok(Value::Int(0)));
    for (args, error) in [
        (
            &["RPSEM.AVAILABLE", "s", "VIA", "PUBLISH"][..],
            "unexpected argument 2 ('VIA'); syntax: RPSEM.AVAILABLE key [AT now_ms [VIA",
        ),
        (&["RPSEM.AVAILABLE", "s", "AT", "-1"], "now_ms must be a non-negative integer"),
        (&["RPSEM.AVAILABLE", "s", "AT", "x"], "now_ms must be an integer"),
        (
            &["RPSEM.AVAILABLE", "s", "x"],
            "unexpected argument 2 ('x'); syntax: RPSEM.AVAILABLE key [AT now_ms [VIA PUBLISH|SPUBLISH]]",
        ),
        (&["RPSEM.ACQUIRED", "s", "AT", "5", "VIA", "DEL"], "unexpected argument 5 ('DEL')"),
        (&["RPSEM.LEASE", "s", "a", "b"], "unexpected argument 3 ('b')"),
        (&["RPSEM.UPDATELEASE", "s", "a", "-1", "AT", "5"], "lease end must be a non-negative integer"),
        (&["RPSEM.TRYACQUIRE", "s", "1.5", "a", "AT", "5"], "lease end must be an integer"),
    ] {
        let refused = query(args).expect_err("refused").to_string();
        assert!(refused.contains(error), "{args:?}: {refused}");
    }
}

fn ok() -> Value {
    Value::BulkString(b"OK".to_vec())
}
