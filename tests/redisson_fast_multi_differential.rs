//! Redisson's fast multi-lock renewal (`FastMultilockTask`, 3.44.0 on, and
//! 3.38.0 .. 3.43.0's own, its owner first) run through Lua on one group
//! and through the filter's native rewrite (`RFASTMULTI.RENEW`) on a twin
//! group, on one server, in random sequences over the states Redisson's
//! own acquire and unlock texts leave (run as Lua on both): replies, keys,
//! TTLs, keyspace events and messages must be the same at every step.
//! Where the script fails (a hold's end missing or no number, a key of
//! another type) the native command fails with nothing written, where the
//! script may have renewed the holds before (docs/redisson.md, Errors):
//! the twins are then made the same again.

mod redisson_support;

use redis::{Cmd, Commands, Connection, Value};
use redisson_support::{family_native_count, load, script_call, texts};
use testkit::{assert_same_reply, drive, run_out, server_time_ms, At, Differential, FilterTwins, Rng, Server};

const CLASSES: [&str; 2] = ["org/redisson/RedissonFasterMultiLock", "org/redisson/renewal/FastMultilockTask"];
const TWINS: FilterTwins = FilterTwins { lua: "lua-group", native: "nat-group" };
const OWNERS: [&str; 2] = ["6f1d:1", "6f1d:2"];
const FIELDS: [&str; 3] = ["a", "b", "c"];

struct Texts {
    acquire: Vec<u8>,
    unlock: Vec<u8>,
    renew: Vec<u8>,
    renew_owner_first: Vec<u8>,
}

#[derive(Debug, Clone)]
enum Op {
    Acquire {
        owner: &'static str,
        fields: Vec<&'static str>,
        lease: u64,
    },
    Unlock {
        owner: &'static str,
        fields: Vec<&'static str>,
    },
    /// `groups`: 2 is Redisson's batch of two groups in one call (left to
    /// Lua, on both twins).
    Renew {
        owner: &'static str,
        fields: Vec<&'static str>,
        lease: u64,
        owner_first: bool,
        groups: usize,
    },
    /// Something Redisson would not leave: a hold's end that is no number,
    /// one missing, one Lua reads oddly, a string at the group, no TTL, a
    /// short TTL.
    Clobber(usize),
    /// Short TTLs run out: until the server shows they did.
    Sleep,
}

fn random_fields(rng: &mut Rng) -> Vec<&'static str> {
    (0..1 + rng.below(3)).map(|_| *rng.pick(&FIELDS)).collect()
}

fn random_op(rng: &mut Rng) -> Op {
    let owner = *rng.pick(&OWNERS);
    let fields = random_fields(rng);
    let lease = *rng.pick(&[150, 1_000, 30_000]);
    match rng.below(100) {
        0..=24 => Op::Acquire { owner, fields, lease },
        25..=37 => Op::Unlock { owner, fields },
        38..=89 => {
            let groups = if rng.chance(10) { 2 } else { 1 };
            Op::Renew { owner, fields, lease, owner_first: rng.chance(30), groups }
        }
        90..=97 => Op::Clobber(rng.below(6) as usize),
        _ => Op::Sleep,
    }
}

fn prepare(con: &mut Connection, name: &str, kind: usize) {
    let end = format!("a:{}:expire_time", OWNERS[0]);
    let cmd = match kind {
        0 => redis::cmd("HSET").arg(name).arg(&end).arg("soon").clone(),
        1 => redis::cmd("HDEL").arg(name).arg(&end).clone(),
        2 => redis::cmd("HSET").arg(name).arg(&end).arg(" 0x10 ").clone(),
        // Deleted a few steps later (see `differential`).
        3 => redis::cmd("SET").arg(name).arg("not a group").clone(),
        4 => redis::cmd("PERSIST").arg(name).clone(),
        _ => redis::cmd("PEXPIRE").arg(name).arg(120).clone(),
    };
    // A hash's write on the string refuses on both twins alike.
    let _: redis::RedisResult<Value> = cmd.query(con);
    if kind < 2 {
        // A group whose renewals fail is gone soon, as if its holder died.
        let _: redis::RedisResult<Value> = redis::cmd("PEXPIRE").arg(name).arg(300).query(con);
    }
}

fn latch(name: &str) -> String {
    format!("{name}:latch:req")
}

/// The script call of `op` on `name`, on the caller's clock `now`.
fn script(texts: &Texts, by_sha: bool, name: &str, op: &Op, now: &str) -> Option<Cmd> {
    let strings = |parts: &[&str]| parts.iter().map(|part| part.as_bytes().to_vec()).collect::<Vec<_>>();
    let (text, keys, argv) = match op {
        Op::Acquire { owner, fields, lease } => {
            (&texts.acquire, vec![name.to_owned()], strings(&[&[&lease.to_string(), now, owner], &fields[..]].concat()))
        }
        Op::Unlock { owner, fields } => {
            let head = [*owner, "0", "30000", "publish", "1000", now];
            let keys = vec![name.to_owned(), format!("redisson_lock__channel__{{{name}}}"), latch(name)];
            (&texts.unlock, keys, strings(&[&head[..], &fields[..]].concat()))
        }
        Op::Renew { owner, fields, lease, owner_first, groups } => {
            let lease = lease.to_string();
            let (text, head) = match owner_first {
                false => (&texts.renew, [&lease[..], now, owner]),
                true => (&texts.renew_owner_first, [*owner, &lease, now]),
            };
            let mut argv = [&head[..], &fields[..]].concat();
            let mut keys = vec![name.to_owned()];
            if *groups == 2 {
                // Redisson's batch: the next group's owner and fields follow.
                argv.extend([OWNERS[1], "b"]);
                keys.push(format!("{name}-2"));
            }
            (text, keys, strings(&argv))
        }
        Op::Clobber(_) | Op::Sleep => return None,
    };
    let keys: Vec<&[u8]> = keys.iter().map(String::as_bytes).collect();
    let argv: Vec<&[u8]> = argv.iter().map(Vec::as_slice).collect();
    Some(script_call(by_sha, text, &keys, &argv))
}

/// The native twin's group: its value and absolute expiry.
fn native_group(con: &mut Connection) -> (String, i64) {
    let group = |name: &str| vec![name.as_bytes().to_vec()];
    let value = TWINS.states(con, group)[1][0].0.clone();
    (value, redis::cmd("PEXPIRETIME").arg(TWINS.native).query(con).unwrap())
}

/// The twins made the same after a renewal that failed: the Lua twin's
/// group (which the script may have partly renewed) copied to the native.
fn resync(con: &mut Connection) {
    let dump: Option<Vec<u8>> = redis::cmd("DUMP").arg(TWINS.lua).query(con).unwrap();
    let pttl: i64 = con.pttl(TWINS.lua).unwrap();
    let _: () = con.del(TWINS.native).unwrap();
    if let Some(dump) = dump {
        let _: () = redis::cmd("RESTORE").arg(TWINS.native).arg(pttl.max(0)).arg(dump).query(con).unwrap();
    }
}

/// The group and its latch.
fn keys(name: &str) -> Vec<Vec<u8>> {
    vec![name.as_bytes().to_vec(), latch(name).into_bytes()]
}

/// One step as drawn: the operation, the caller's clock (off the server's
/// by this many ms) and whether the script is called by its SHA-1.
#[derive(Debug)]
struct Step {
    op: Op,
    clock_offset_ms: i64,
    by_sha: bool,
}

struct FastMulti<'a> {
    texts: &'a Texts,
    server: Server,
    con: Connection,
    control: Connection,
    /// Steps left until a string at the group is deleted.
    string_steps: i64,
    /// The steps drawn: first, for certain, a renewal that renews a hold
    /// and then replies 0.
    drawn: usize,
    native: i64,
    renewed: i64,
    renewed_then_0: i64,
    failed: i64,
}

impl Differential for FastMulti<'_> {
    type Step = Step;

    fn draw(&mut self, rng: &mut Rng) -> Step {
        let [one, two] = OWNERS;
        let prelude = [
            Op::Acquire { owner: one, fields: vec!["a", "b"], lease: 30_000 },
            Op::Acquire { owner: two, fields: vec!["c"], lease: 30_000 },
            Op::Renew { owner: one, fields: vec!["a", "c", "b"], lease: 60_000, owner_first: false, groups: 1 },
        ];
        let op = prelude.into_iter().nth(self.drawn).unwrap_or_else(|| random_op(rng));
        self.drawn += 1;
        Step { op, clock_offset_ms: *rng.pick(&[-3_000, 0, 2_000]), by_sha: rng.chance(50) }
    }

    fn run(&mut self, &Step { ref op, clock_offset_ms, by_sha }: &Step, at: &At) {
        let con = &mut self.con;
        self.string_steps -= 1;
        if self.string_steps == 0 {
            let _: () = con.del(&[TWINS.lua, TWINS.native]).unwrap();
        }
        if let Op::Sleep = op {
            run_out(con, &[keys(TWINS.lua), keys(TWINS.native)].concat(), 160);
            return;
        }
        if let Op::Clobber(kind) = *op {
            if kind == 3 {
                self.string_steps = 4;
            }
            for name in [TWINS.lua, TWINS.native] {
                prepare(con, name, kind);
            }
            return;
        }
        let now = (server_time_ms(con) + clock_offset_ms).to_string();
        let context = format!("{} at {now}", at.context);
        let call = |name: &str| script(self.texts, by_sha, name, op, &now).expect("a call");
        let Op::Renew { groups, .. } = *op else {
            TWINS.check(&self.server, [&mut self.con, &mut self.control], &context, true, call, keys);
            return;
        };
        self.native += i64::from(groups == 1);
        let before = native_group(con);
        let step = TWINS.step(&self.server, &mut self.control, keys, call);
        let con = &mut self.con;
        if let (Err(_), Err(_)) = (&step.lua, &step.native) {
            // A call of several groups stays Lua on both twins, whose
            // refusal may have renewed the holds before the bad one.
            if groups == 1 {
                assert_eq!(native_group(con), before, "{context}: the native refusal wrote");
                assert!(step.native_messages.is_empty(), "{context}: {:?}", step.native_messages);
            }
            resync(con);
            self.failed += 1;
            return;
        }
        assert_same_reply(&context, &step.lua, &step.native, false);
        self.renewed += i64::from(step.lua == Ok(Value::Int(1)));
        // The script's 0 after it renewed the holds before a field not held.
        self.renewed_then_0 += i64::from(step.lua == Ok(Value::Int(0)) && !step.lua_messages.is_empty());
        assert_eq!(step.lua_messages, step.native_messages, "{context}: keyspace events");
        TWINS.assert_same_keys(con, &context, keys);
    }
}

fn differential(texts: &Texts, seed: &str) {
    let server = Server::builder().config("notify-keyspace-events", "KEA").start();
    let mut con = server.connection();
    load(&mut con, &[&texts.acquire, &texts.unlock, &texts.renew, &texts.renew_owner_first]);
    let control = server.connection();
    let mut test = FastMulti {
        texts,
        server,
        con,
        control,
        string_steps: 0,
        drawn: 0,
        native: 0,
        renewed: 0,
        renewed_then_0: 0,
        failed: 0,
    };
    drive(seed, 1, 400, &mut test);
    let FastMulti { mut con, native, renewed, renewed_then_0, failed, .. } = test;
    // Every single-group renewal ran natively: the comparison was not Lua's with itself.
    assert_eq!(family_native_count(&mut con, "fast_multi"), native);
    let counts = format!("{native} native, {renewed} renewed, {renewed_then_0} renewed then 0, {failed} failed");
    assert!(renewed >= 10 && renewed_then_0 > 0 && failed < native / 4, "{counts}");
}

#[test]
fn the_fast_multi_locks_renewal_runs_natively_as_it_runs_in_lua() {
    let [acquire, unlock, renew] = texts(
        "4.7.0",
        &CLASSES,
        [
            "eba4f75b2998ef1ead8e55019d89d93d85dadf60",
            "5088a04fb08aa002f465f0f90b35ed8da9b27a3c",
            "935362a31ac5b3d6f7c5c3f1e26d9a012f87f2bd",
        ],
    );
    let [renew_owner_first] = texts("3.43.0", &CLASSES[..1], ["9cdf4e206c51f838a9e65cf6e84613f0de3559cf"]);
    differential(&Texts { acquire, unlock, renew, renew_owner_first }, "redisson_fast_multi_differential");
}

#[test]
fn rfastmulti_renew_refuses_bad_arguments_by_name() {
    let server = Server::start();
    let mut con = server.connection();
    let mut query = |args: &[&str]| redis::cmd(args[0]).arg(&args[1..]).query::<Value>(&mut con);
    let _: Value = query(&["HSET", "g", "a", "o", "a:o:expire_time", "5"]).unwrap();
    assert_eq!(query(&["RFASTMULTI.RENEW", "g", "o", "1000", "FIELDS", "a"]), Ok(Value::Int(1)));
    assert_eq!(query(&["RFASTMULTI.RENEW", "g", "o", "1000", "AT", "7", "fields", "a", "a"]), Ok(Value::Int(1)));
    assert_eq!(query(&["RFASTMULTI.RENEW", "g", "x", "1000", "FIELDS", "a"]), Ok(Value::Int(0)));
    assert_eq!(query(&["RFASTMULTI.RENEW", "missing", "o", "1000", "FIELDS", "a"]), Ok(Value::Int(0)));
    let _: Value = query(&["HSET", "g", "b", "o"]).unwrap();
    let end_before: String = redis::cmd("HGET").arg(&["g", "a:o:expire_time"]).query(&mut con).unwrap();
    let mut query = |args: &[&str]| redis::cmd(args[0]).arg(&args[1..]).query::<Value>(&mut con);
    for (args, error) in [
        (&["RFASTMULTI.RENEW", "g", "o", "0", "FIELDS", "a"][..], "lease_ms must be a positive integer"),
        (&["RFASTMULTI.RENEW", "g", "o", "1000", "AT", "-1", "FIELDS", "a"], "now_ms must be a non-negative"),
        (&["RFASTMULTI.RENEW", "g", "o", "1000", "AT", "x", "FIELDS", "a"], "now_ms must be an integer"),
        (&["RFASTMULTI.RENEW", "g", "o", "1000", "AT", "5", "a"], "[AT now_ms] FIELDS field"),
        (&["RFASTMULTI.RENEW", "g", "o", "1000", "a", "b"], "[AT now_ms] FIELDS field"),
        (&["RFASTMULTI.RENEW", "g", "o", "1000", "FIELDS"], "wrong number of arguments"),
        (&["RFASTMULTI.RENEW", "g", "o", "99999", "FIELDS", "a", "b"], "'b:o:expire_time' (a hold's end) is missing"),
    ] {
        let refused = query(args).expect_err("refused").to_string();
        assert!(refused.contains(error), "{args:?}: {refused}");
    }
    // The refusals wrote nothing: a's end (renewed by the script before it
    // fails at b) is as it was.
    let end: String = con.hget("g", "a:o:expire_time").unwrap();
    assert_eq!(end, end_before);
    let _: () = con.set("s", "x").unwrap();
    let refused = redis::cmd("RFASTMULTI.RENEW").arg(&["s", "o", "1000", "FIELDS", "a"]).query::<Value>(&mut con);
    assert!(refused.expect_err("refused").to_string().contains("WRONGTYPE"));
}

#[test]
fn a_replica_without_the_module_mirrors_the_renewed_group_and_its_absolute_expiry() {
    let primary = Server::start();
    let replica = Server::builder().without_module().start();
    replica.replicate(&primary);
    let mut con = primary.connection();
    let _: Value = redis::cmd("HSET")
        .arg(&["g", "a", "o", "a:o:expire_time", "5", "b", "o", "b:o:expire_time", "5", "c", "x"])
        .query(&mut con)
        .unwrap();
    let _: bool = con.pexpire("g", 1_000).unwrap();
    let renewals: [(&[&str], i64); 2] = [
        (&["g", "o", "600000", "AT", "1000", "FIELDS", "a", "b"], 1),
        // 0 at c, b renewed all the same.
        (&["g", "o", "600000", "AT", "2000", "FIELDS", "b", "c", "a"], 0),
    ];
    for (args, reply) in renewals {
        assert_eq!(redis::cmd("RFASTMULTI.RENEW").arg(args).query::<i64>(&mut con), Ok(reply), "{args:?}");
    }
    let acked: i64 = redis::cmd("WAIT").arg(1).arg(5000).query(&mut con).unwrap();
    assert_eq!(acked, 1, "the replica acknowledged");
    let state = |con: &mut Connection| -> (Vec<(String, String)>, i64) {
        let mut fields: Vec<(String, String)> = con.hgetall("g").unwrap();
        fields.sort();
        (fields, redis::cmd("PEXPIRETIME").arg("g").query(con).unwrap())
    };
    let on_primary = state(&mut con);
    assert!(on_primary.0.contains(&("a:o:expire_time".into(), "601000".into())), "{on_primary:?}");
    assert!(on_primary.0.contains(&("b:o:expire_time".into(), "602000".into())), "{on_primary:?}");
    assert!(on_primary.1 > 0, "an absolute expiry");
    assert_eq!(state(&mut replica.connection()), on_primary, "the replica differs");
}

#[test]
fn a_renewal_of_up_to_249_values_runs_natively_and_a_larger_one_as_lua() {
    let server = Server::start();
    let mut con = server.connection();
    testkit::set_filter_mode(&mut con, "native");
    let [renew] = texts("4.7.0", &CLASSES[1..], ["935362a31ac5b3d6f7c5c3f1e26d9a012f87f2bd"]);
    load(&mut con, &[&renew]);
    let values: Vec<String> = (0..250).map(|i| format!("v{i}")).collect();
    for value in &values {
        let _: () = con.hset("g", value, "o").unwrap();
        let _: () = con.hset("g", format!("{value}:o:expire_time"), 1).unwrap();
    }
    for (count, native) in [(249, 1), (250, 0)] {
        let before = family_native_count(&mut con, "fast_multi");
        let argv: Vec<&[u8]> =
            [&b"30000"[..], b"1000", b"o"].into_iter().chain(values[..count].iter().map(|v| v.as_bytes())).collect();
        let reply: i64 = script_call(true, &renew, &[b"g"], &argv).query(&mut con).unwrap();
        assert_eq!(reply, 1, "{count} values");
        assert_eq!(family_native_count(&mut con, "fast_multi") - before, native, "{count} values");
    }
}
