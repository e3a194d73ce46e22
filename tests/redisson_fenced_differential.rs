//! Redisson's fenced-lock acquire scripts (texts from the jar of the
//! newest Redisson tested; unchanged since 3.19.0) run through Lua on one
//! lock and through the filter's native rewrite on a twin lock, on one
//! server, in random sequences of EVAL and EVALSHA calls: replies, the
//! lock hash, the token counter, TTLs and keyspace notifications must be
//! the same.

mod redisson_support;

use redis::{Cmd, Commands, Connection, Value};
use redisson_support::{family_native_count, load, script_call, texts, VERSION};
use rlock_protocol::fenced_token_key;
use testkit::{drive, run_out, At, Differential, FilterTwins, Rng, Server};

const CLASS: &str = "org/redisson/RedissonFencedLock";
const TWINS: FilterTwins = FilterTwins { lua: "lua-fenced", native: "nat-fenced" };
const OWNERS: [&str; 3] = ["6f1c:1", "6f1c:2", "a9e0:7"];

#[derive(Debug, Clone)]
enum Op {
    /// lockAndGetToken's script: `[-1, token]` or `[pttl, -1]`.
    AcquireWithToken {
        owner: &'static str,
        lease: u64,
    },
    /// lock()'s script: nil or the PTTL.
    AcquireAsLock {
        owner: &'static str,
        lease: u64,
    },
    /// Plain commands on both twins: the lock or its token counter
    /// deleted, its TTL dropped, or something no lock or token at the
    /// name, a hold count or the token counter.
    Unlock,
    ResetToken,
    Persist,
    Clobber(usize),
    /// Leases of 150 ms run out: until the server shows they did.
    Sleep,
}

fn random_op(rng: &mut Rng) -> Op {
    let (owner, lease) = (*rng.pick(&OWNERS), *rng.pick(&[150, 30_000, 60_000]));
    match rng.below(100) {
        0..=39 => Op::AcquireWithToken { owner, lease },
        40..=69 => Op::AcquireAsLock { owner, lease },
        70..=81 => Op::Unlock,
        82..=87 => Op::ResetToken,
        88..=91 => Op::Persist,
        // Rare: a clobbered name refuses every call until an unlock or a
        // token reset repairs it.
        92..=93 => Op::Clobber(rng.below(3) as usize),
        _ => Op::Sleep,
    }
}

/// The script call of `op` on `name`; `None` for the steps that make none.
fn script(texts: &[Vec<u8>; 2], by_sha: bool, name: &str, op: &Op) -> Option<Cmd> {
    let (text, owner, lease) = match op {
        Op::AcquireWithToken { owner, lease } => (&texts[0], owner, lease),
        Op::AcquireAsLock { owner, lease } => (&texts[1], owner, lease),
        _ => return None,
    };
    let (lease, token_key) = (lease.to_string(), fenced_token_key(name.as_bytes()));
    Some(script_call(by_sha, text, &[name.as_bytes(), &token_key], &[lease.as_bytes(), owner.as_bytes()]))
}

/// Sets up what a step that makes no script call leaves at `name`.
fn prepare(con: &mut Connection, name: &str, op: &Op) {
    let token_key = fenced_token_key(name.as_bytes());
    match op {
        Op::Unlock => con.del(name).unwrap(),
        Op::ResetToken => con.del(&token_key).unwrap(),
        Op::Persist => {
            let _: bool = con.persist(name).unwrap();
        }
        Op::Clobber(kind) => match kind {
            0 => con.set(name, "not a lock").unwrap(),
            1 => con.hset(name, OWNERS[0], "not a count").unwrap_or(()),
            _ => con.set(&token_key, "not a token").unwrap(),
        },
        _ => {}
    }
}

/// The lock and its token counter.
fn keys(name: &str) -> Vec<Vec<u8>> {
    vec![name.as_bytes().to_vec(), fenced_token_key(name.as_bytes())]
}

struct Fenced {
    texts: [Vec<u8>; 2],
    server: Server,
    con: Connection,
    control: Connection,
    calls: i64,
    errors: i64,
}

impl Differential for Fenced {
    /// The operation, whether by SHA-1.
    type Step = (Op, bool);

    fn draw(&mut self, rng: &mut Rng) -> Self::Step {
        (random_op(rng), rng.chance(50))
    }

    fn run(&mut self, &(ref op, by_sha): &Self::Step, at: &At) {
        if matches!(op, Op::Sleep) {
            run_out(&mut self.con, &[keys(TWINS.lua), keys(TWINS.native)].concat(), 200);
            return;
        }
        if script(&self.texts, by_sha, TWINS.lua, op).is_none() {
            for name in [TWINS.lua, TWINS.native] {
                prepare(&mut self.con, name, op);
            }
            return;
        }
        let call = |name: &str| script(&self.texts, by_sha, name, op).expect("a call");
        let cons = [&mut self.con, &mut self.control];
        self.errors += i64::from(TWINS.check(&self.server, cons, at.context, true, call, keys));
        self.calls += 1;
    }
}

#[test]
fn redissons_fenced_lock_scripts_run_natively_as_they_run_in_lua() {
    let texts = texts(
        VERSION,
        &[CLASS],
        ["49babb5a1e6a0c5f188c2ae62b93b51cdfd63e45", "46b5551ba403d6152a7a6eca122e08728d6c8c66"],
    );
    // The jump at the term's floor is a deliberate difference (tests/fenced_tokens.rs).
    let server = Server::builder()
        .config("notify-keyspace-events", "KEA")
        .module_arg("fencing-token-jump")
        .module_arg("no")
        .start();
    let mut con = server.connection();
    load(&mut con, &[&texts[0], &texts[1]]);
    let control = server.connection();
    let mut fenced = Fenced { texts, server, con, control, calls: 0, errors: 0 };
    drive("redisson_fenced_differential", 1, 300, &mut fenced);
    let Fenced { mut con, calls, errors, .. } = fenced;
    // Every call on the twin ran natively: the comparison was not Lua's with itself.
    assert_eq!(family_native_count(&mut con, "fenced"), calls);
    // Error replies are compared too; enough calls must have run a script's
    // success path (over 31 seeds: 137 to 211).
    assert!(calls > 150 && calls - errors >= 100, "{calls} calls, {errors} errors");
}

#[test]
fn rfenced_acquire_takes_likescript_token_or_lock_last() {
    // The jump at the term's floor is a deliberate difference (tests/fenced_tokens.rs).
    let server = Server::builder().module_arg("fencing-token-jump").module_arg("no").start();
    let mut con = server.connection();
    let mut query = |args: &[&str]| redis::cmd(args[0]).arg(&args[1..]).query::<Value>(&mut con);
    let pair = |ttl, token| Ok(Value::Array(vec![Value::Int(ttl), Value::Int(token)]));
    assert_eq!(query(&["RFENCED.ACQUIRE", "f", "a", "30000", "LIKESCRIPT", "token"]), pair(-1, 1));
    assert_eq!(query(&["RFENCED.ACQUIRE", "f", "a", "30000", "LIKESCRIPT", "LOCK"]), Ok(Value::Nil));
    assert_eq!(query(&["PERSIST", "f"]), Ok(Value::Int(1)));
    assert_eq!(query(&["RFENCED.ACQUIRE", "f", "b", "LIKESCRIPT", "TOKEN"]), pair(-1, -1), "PTTL's -1");
    assert_eq!(query(&["RFENCED.ACQUIRE", "f", "b", "30000", "LIKESCRIPT", "LOCK"]), Ok(Value::Int(-1)));
    assert_eq!(query(&["RFENCED.ACQUIRE", "f", "b", "30000"]), pair(30000, -1), "without it, never -1");
    for (args, error) in [
        (&["RFENCED.ACQUIRE", "f", "a", "30000", "LIKESCRIPT", "NIL"][..], "unexpected argument 5 ('NIL')"),
        (&["RFENCED.ACQUIRE", "f", "a", "30000", "LIKESCRIPT"], "syntax error"),
    ] {
        let refused = query(args).expect_err("refused").to_string();
        assert!(refused.contains(error), "{args:?}: {refused}");
    }
}
