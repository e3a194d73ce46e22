//! Redisson's semaphore scripts that run natively (texts from its jars:
//! the newest tested, and older ones that name `publish` in the text) run
//! through Lua on one semaphore and through the filter's native rewrite on
//! a twin, on one server, in random sequences of EVAL and EVALSHA calls:
//! replies, keys, TTLs, keyspace notifications and published messages
//! must be the same. Counts beyond 2^53 check that a release publishes
//! the count as Lua writes a number; strings that are no count, that
//! tryAcquire reads them as Lua's `tonumber` and a drain replies them.

mod redisson_support;

use redis::{Cmd, Commands, Connection, RedisResult, Value};
use redisson_support::one_key_filter::{one_key, one_key_differential, OneKeyFamily};
use redisson_support::{family_native_count, script_call, texts, VERSION};
use rlock_protocol::semaphore_channel;
use testkit::{FilterTwins, Rng, Server};

const CLASS: &str = "org/redisson/RedissonSemaphore";
const TWINS: FilterTwins = FilterTwins { lua: "lua-sem", native: "nat-sem" };
/// Permits and stored counts: small ones, and ones beyond 2^53 and 10^17,
/// which Lua's doubles write otherwise.
const PERMITS: [u64; 5] = [1, 2, 5, 9_007_199_254_740_993, 123_456_789_012_345_678];

/// What a clobber stores: a hash (empty), or a string.
const CLOBBERS: [&str; 22] = [
    "05",
    "-0",
    "00",
    "+5",
    "-3",
    "9223372036854775807",
    "-9223372036854775808",
    "4",
    "",
    "five",
    "1.5",
    "0.1",
    " 3",
    "2 ",
    "0x10",
    "0x1p1",
    "1e1",
    "nan",
    "-inf",
    "7\0junk",
    "99999999999999999999",
    "1e-7",
];

/// What a release's addPermits text does: publishes the sum (3.16.2 on),
/// or not (3.12.0 .. 3.16.1), or is reducePermits (3.10.0 .. 3.11.6).
#[derive(Clone, Copy, PartialEq)]
enum Adds {
    Publishing,
    Silently,
    Reducing,
}

/// One Redisson release's semaphore texts (`None`: not in that release).
struct Texts {
    try_acquire: Vec<u8>,
    release: Vec<u8>,
    release_if_exists: Option<Vec<u8>>,
    try_set_permits: Vec<u8>,
    try_set_permits_expiring: Option<Vec<u8>>,
    drain: Vec<u8>,
    add_permits: Vec<u8>,
    adds: Adds,
    /// From 3.22.0 the publish command is the last argument; before, the
    /// texts name `publish`.
    takes_publish: bool,
}

#[derive(Debug, Clone)]
enum Op {
    TryAcquire(u64),
    Release(u64),
    ReleaseIfExists(u64),
    TrySetPermits(u64),
    TrySetPermitsExpiring(u64, u64),
    Drain,
    AddPermits(i64),
    /// Plain commands on both twins: a taker, a delete, a TTL.
    Take,
    Delete,
    Expire,
    /// Something else at the name: a hash, or strings that are no integer,
    /// which Lua's `tonumber` reads or not.
    Clobber(&'static str),
    /// TTLs of 100 ms run out: until the server shows they did.
    Sleep,
}

impl OneKeyFamily for Texts {
    type Op = Op;

    fn random_op(&self, rng: &mut Rng) -> Op {
        let permits = *rng.pick(&PERMITS);
        match rng.below(100) {
            0..=19 => Op::TryAcquire(*rng.pick(&[1, 2, 3, 20])),
            20..=39 => Op::Release(permits),
            40..=49 if self.release_if_exists.is_some() => Op::ReleaseIfExists(permits),
            40..=64 => Op::TrySetPermits(permits),
            65..=74 if self.try_set_permits_expiring.is_some() => {
                Op::TrySetPermitsExpiring(permits, *rng.pick(&[100, 60_000]))
            }
            65..=69 => Op::Take,
            70..=75 => Op::Drain,
            76..=81 => Op::AddPermits(*rng.pick(&[-3, -1, 2, 7, 9_007_199_254_740_993])),
            82..=87 => Op::Delete,
            88..=92 => Op::Expire,
            93..=96 => Op::Clobber(CLOBBERS[rng.below(CLOBBERS.len() as _) as usize]),
            _ => Op::Sleep,
        }
    }

    fn pauses(op: &Op) -> bool {
        matches!(op, Op::Sleep)
    }

    fn script(&self, by_sha: bool, name: &str, op: &Op, publish: &str) -> Option<Cmd> {
        let keys: [&[u8]; 2] = [name.as_bytes(), &semaphore_channel(name.as_bytes())];
        let publish = self.takes_publish.then_some(publish.as_bytes());
        let (count, ttl);
        let (text, argv): (&[u8], Vec<&[u8]>) = match op {
            Op::Release(n) | Op::ReleaseIfExists(n) | Op::TrySetPermits(n) => {
                count = n.to_string();
                let text = match op {
                    Op::Release(_) => &self.release,
                    Op::ReleaseIfExists(_) => self.release_if_exists.as_ref().expect("a text"),
                    _ => &self.try_set_permits,
                };
                (text, [count.as_bytes()].into_iter().chain(publish).collect())
            }
            Op::TrySetPermitsExpiring(n, ttl_ms) => {
                (count, ttl) = (n.to_string(), ttl_ms.to_string());
                let text = self.try_set_permits_expiring.as_ref().expect("a text");
                (text, vec![count.as_bytes(), publish.expect("newer"), ttl.as_bytes()])
            }
            Op::TryAcquire(n) => {
                count = n.to_string();
                (&self.try_acquire, vec![count.as_bytes()])
            }
            Op::Drain => (&self.drain, vec![]),
            Op::AddPermits(delta) => {
                count = if self.adds == Adds::Reducing { -delta } else { *delta }.to_string();
                let publish = publish.filter(|_| self.adds == Adds::Publishing);
                (&self.add_permits, [count.as_bytes()].into_iter().chain(publish).collect())
            }
            Op::Take | Op::Delete | Op::Expire | Op::Clobber(_) | Op::Sleep => return None,
        };
        // Only release and trySetPermits name the channel.
        let silent = matches!(op, Op::AddPermits(_)) && self.adds != Adds::Publishing;
        let keys = if silent || matches!(op, Op::TryAcquire(_) | Op::Drain) { &keys[..1] } else { &keys[..] };
        Some(script_call(by_sha, text, keys, &argv))
    }

    fn prepare(con: &mut Connection, name: &str, op: &Op) {
        match op {
            Op::Take => {
                let _: RedisResult<Value> = con.decr(name, 3);
            }
            Op::Delete => {
                let _: () = con.del(name).unwrap();
            }
            Op::Expire => {
                let _: () = con.pexpire(name, 100).unwrap();
            }
            Op::Clobber(value) => {
                let _: () = con.del(name).unwrap();
                let _: () = if value.is_empty() { con.hset(name, "field", "1") } else { con.set(name, value) }.unwrap();
            }
            _ => {}
        }
    }
}

fn differential(texts: &Texts, seed: &str) {
    let always = [&texts.try_acquire, &texts.release, &texts.try_set_permits, &texts.drain, &texts.add_permits];
    let sometimes = [texts.release_if_exists.as_ref(), texts.try_set_permits_expiring.as_ref()];
    let bodies: Vec<&[u8]> = always.into_iter().chain(sometimes.into_iter().flatten()).map(Vec::as_slice).collect();
    let (calls, errors) = one_key_differential(texts, &TWINS, seed, &bodies, "semaphore");
    assert!(calls > 150 && errors < calls / 2, "{calls} calls, {errors} errors");
}

#[test]
fn redissons_semaphore_scripts_run_natively_as_they_run_in_lua() {
    let shas = [
        "c7dc9d189c1715465a31a06ddbc008585e0c20be",
        "ae27582488dd01f4e238cc0733a12146d410eb44",
        "6883802454c09d455e3234c8b01549adf1fb8b4c",
        "241ce4e87e652b4f9b39d33cbcd7df9ee8ed906c",
        "38bf99884eb94708a40a9aabacb15b4c5f16e804",
        "c87766d572855e9461c4ecd453db5d1cbab6119e",
        "98238d408c6755085344670d3a2ddaa55cf177a9",
    ];
    let [try_acquire, release, release_if_exists, try_set_permits, expiring, drain, add_permits] =
        texts(VERSION, &[CLASS], shas);
    let texts = Texts {
        try_acquire,
        release,
        release_if_exists: Some(release_if_exists),
        try_set_permits,
        try_set_permits_expiring: Some(expiring),
        drain,
        add_permits,
        adds: Adds::Publishing,
        takes_publish: true,
    };
    differential(&texts, "redisson_semaphore_differential");
}

#[test]
fn older_semaphore_scripts_that_name_publish_run_natively_as_they_run_in_lua() {
    // 3.20.1's trySetPermits; 3.14.1's and 3.10.6's and their drain, whose
    // `value == 0` are never true; 3.14.1's addPermits publishes nothing,
    // 3.10.6 has reducePermits instead.
    const TRY_SET: [&str; 2] = ["8d41a082c3a98f3e882844af9c9e9f9fbd7f8573", "44d63d4882cfdb9af87c32c96c24a9e1e15cffd5"];
    const DRAIN: [&str; 2] = ["c87766d572855e9461c4ecd453db5d1cbab6119e", "74e35a16120f0f07ddf9bccd2f3593b769a9fd11"];
    let releases = [
        ("3.20.1", TRY_SET[0], DRAIN[0], "af883fdf25153ad9a41ad1c0d5dfde728728961a", Adds::Publishing),
        ("3.14.1", TRY_SET[1], DRAIN[1], "c3c3c87b52a880a2a73e312c1cc9d21f500d80f5", Adds::Silently),
        ("3.10.6", TRY_SET[1], DRAIN[1], "6bb281549022225c6d8228b4af1e06c9d6610b90", Adds::Reducing),
    ];
    for (version, try_set_sha, drain_sha, add_sha, adds) in releases {
        let shas = [
            "c7dc9d189c1715465a31a06ddbc008585e0c20be",
            "6ef996845b2b97db21c5bc1ed04b8eae2babe56f",
            try_set_sha,
            drain_sha,
            add_sha,
        ];
        let [try_acquire, release, try_set_permits, drain, add_permits] = texts(version, &[CLASS], shas);
        let texts = Texts {
            try_acquire,
            release,
            release_if_exists: None,
            try_set_permits,
            try_set_permits_expiring: None,
            drain,
            add_permits,
            adds,
            takes_publish: false,
        };
        differential(&texts, &format!("redisson_semaphore_differential_{version}"));
    }
}

#[test]
fn the_semaphore_commands_take_via_publish_or_spublish_last() {
    let server = Server::start();
    let mut con = server.connection();
    let mut query = |args: &[&str]| redis::cmd(args[0]).arg(&args[1..]).query::<Value>(&mut con);
    assert_eq!(query(&["RSEM.TRYSETPERMITS", "s", "2", "PX", "60000", "VIA", "spublish"]), Ok(Value::Int(1)));
    assert_eq!(query(&["RSEM.RELEASE", "s", "3", "VIA", "PUBLISH"]), Ok(Value::Nil));
    assert_eq!(query(&["RSEM.RELEASE", "s", "1", "IFEXISTS", "VIA", "PUBLISH"]), Ok(Value::Int(1)));
    assert_eq!(query(&["GET", "s"]), Ok(Value::BulkString(b"6".to_vec())));
    assert_eq!(query(&["SET", "s", "five"]), Ok(Value::Okay));
    assert_eq!(query(&["RSEM.TRYSETPERMITS", "s", "2", "VIA", "PUBLISH"]), Ok(Value::Int(0)), "any string, as GET");
    assert_eq!(query(&["RSEM.DRAIN", "s", "likescript"]), Ok(Value::BulkString(b"five".to_vec())));
    assert_eq!(query(&["GET", "s"]), Ok(Value::BulkString(b"0".to_vec())));
    assert_eq!(query(&["SET", "s", "1.5"]), Ok(Value::Okay));
    assert_eq!(query(&["RSEM.ADDPERMITS", "s", "2", "VIA", "PUBLISH"]), Ok(Value::Nil));
    assert_eq!(query(&["GET", "s"]), Ok(Value::BulkString(b"3.5".to_vec())), "Lua's 1.5 + 2");
    assert_eq!(query(&["RSEM.TRYACQUIRE", "s", "4", "LIKESCRIPT"]), Ok(Value::Int(0)), "Lua's 3.5 < 4");
    assert_eq!(query(&["RSEM.ADDPERMITS", "s", "-1", "likescript"]), Ok(Value::Nil));
    assert_eq!(query(&["GET", "s"]), Ok(Value::BulkString(b"2.5".to_vec())));
    for (args, error) in [
        (&["RSEM.RELEASE", "s", "1", "VIA", "DEL"][..], "unexpected argument 4 ('DEL')"),
        (&["RSEM.DRAIN", "s", "VIA"], "unexpected argument 2 ('VIA'); syntax: RSEM.DRAIN key [LIKESCRIPT]"),
        (&["RSEM.TRYACQUIRE", "s", "1", "VIA"], "unexpected argument 3 ('VIA')"),
        (&["RSEM.ADDPERMITS", "s", "1", "VIA", "x"], "unexpected argument 4 ('x')"),
        (&["RSEM.ADDPERMITS", "s", "1", "LIKESCRIPT", "VIA", "PUBLISH"], "unexpected argument 4 ('VIA')"),
        (&["RSEM.DRAIN", "s", "LIKESCRIPT", "x"], "unexpected argument 3 ('x')"),
        (&["RSEM.RELEASE", "s", "1", "VIA"], "'VIA' needs PUBLISH|SPUBLISH"),
        (&["RSEM.TRYSETPERMITS", "s", "2", "PX", "100", "VIA"], "'VIA' needs PUBLISH|SPUBLISH"),
        (&["RSEM.TRYSETPERMITS", "s", "2", "VIA", "PUBLISH", "PX", "100"], "after permits, only PX ttl_ms"),
    ] {
        let refused = query(args).expect_err("refused").to_string();
        assert!(refused.contains(error), "{args:?}: {refused}");
    }
}

#[test]
fn try_acquire_add_and_drain_read_every_kind_of_stored_string_as_lua_does() {
    let shas = [
        "c7dc9d189c1715465a31a06ddbc008585e0c20be",
        "c87766d572855e9461c4ecd453db5d1cbab6119e",
        "98238d408c6755085344670d3a2ddaa55cf177a9",
    ];
    let [try_acquire, drain, add_permits] = texts(VERSION, &[CLASS], shas);
    let [release, try_set_permits] = [Vec::new(), Vec::new()];
    let texts = Texts {
        try_acquire,
        release,
        release_if_exists: None,
        try_set_permits,
        try_set_permits_expiring: None,
        drain,
        add_permits,
        adds: Adds::Publishing,
        takes_publish: true,
    };
    let server = Server::builder().config("notify-keyspace-events", "KEA").start();
    let mut con = server.connection();
    let mut control = server.connection();
    let stored =
        CLOBBERS.iter().chain(&["0x1.8p1", "+4", "-0", "007", "\t5\n", "1e400", "infinity", "nan(1)", "0x", "5e"]);
    let (mut calls, mut answered) = (0, 0);
    for value in stored {
        let ops =
            [1, 2, 3, 10, 20].map(Op::TryAcquire).into_iter().chain([-3, 2, 7].map(Op::AddPermits)).chain([Op::Drain]);
        for op in ops {
            let context = format!("{value:?}: {op:?}");
            for name in [TWINS.lua, TWINS.native] {
                Texts::prepare(&mut con, name, &Op::Clobber(value));
            }
            let call = |name: &str| texts.script(false, name, &op, "publish").expect("a call");
            let failed = TWINS.check(&server, [&mut con, &mut control], &context, false, call, one_key);
            answered += usize::from(!failed);
            calls += 1;
        }
    }
    assert_eq!(family_native_count(&mut con, "semaphore"), calls);
    assert!(answered > 20, "{answered} of {calls} answered");
}
