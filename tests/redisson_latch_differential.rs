//! Redisson's count-down latch scripts (texts from its jars: the newest
//! tested, and an older one's, which name `publish` in the text) run
//! through Lua on one latch and through the filter's native rewrite on a
//! twin latch, on one server, in random sequences of EVAL and EVALSHA
//! calls: replies, keys, TTLs, keyspace notifications and published
//! messages must be the same.

mod redisson_support;

use redis::{Cmd, Commands, Connection};
use redisson_support::one_key_filter::{one_key_differential, OneKeyFamily};
use redisson_support::{script_call, texts, VERSION};
use rlock_protocol::count_down_latch_channel;
use testkit::{FilterTwins, Rng, Server};

const CLASS: &str = "org/redisson/RedissonCountDownLatch";
const TWINS: FilterTwins = FilterTwins { lua: "lua-latch", native: "nat-latch" };

/// One Redisson release's latch texts.
struct Texts {
    count_down: Vec<u8>,
    try_set_count: Vec<u8>,
    delete: Vec<u8>,
    /// From 3.22.0 the publish command is the last argument; before, the
    /// texts name `publish`.
    takes_publish: bool,
}

impl Texts {
    fn of(version: &str, shas: [&str; 3], takes_publish: bool) -> Self {
        let [count_down, try_set_count, delete] = texts(version, &[CLASS], shas);
        Self { count_down, try_set_count, delete, takes_publish }
    }
}

#[derive(Debug, Clone)]
enum Op {
    TrySetCount(u8),
    CountDown,
    Delete,
    /// Something else at the latch's name: a string that is no count, a
    /// negative count, or a hash.
    Clobber(usize),
    /// A TTL on the latch (DECR keeps it).
    Expire,
    /// TTLs of 100 ms run out: until the server shows they did.
    Sleep,
}

impl OneKeyFamily for Texts {
    type Op = Op;

    fn random_op(&self, rng: &mut Rng) -> Op {
        match rng.below(100) {
            0..=29 => Op::TrySetCount(*rng.pick(&[0, 1, 2, 3])),
            30..=74 => Op::CountDown,
            75..=89 => Op::Delete,
            90..=93 => Op::Clobber(rng.below(3) as usize),
            94..=97 => Op::Expire,
            _ => Op::Sleep,
        }
    }

    fn pauses(op: &Op) -> bool {
        matches!(op, Op::Sleep)
    }

    fn script(&self, by_sha: bool, name: &str, op: &Op, publish: &str) -> Option<Cmd> {
        let keys: [&[u8]; 2] = [name.as_bytes(), &count_down_latch_channel(name.as_bytes())];
        let publish = self.takes_publish.then_some(publish.as_bytes());
        let count;
        let (text, argv): (&[u8], Vec<&[u8]>) = match op {
            Op::TrySetCount(n) => {
                count = n.to_string();
                (&self.try_set_count, [b"1", count.as_bytes()].into_iter().chain(publish).collect())
            }
            Op::CountDown => (&self.count_down, [&b"0"[..]].into_iter().chain(publish).collect()),
            Op::Delete => (&self.delete, [&b"1"[..]].into_iter().chain(publish).collect()),
            Op::Clobber(_) | Op::Expire | Op::Sleep => return None,
        };
        Some(script_call(by_sha, text, &keys, &argv))
    }

    fn prepare(con: &mut Connection, name: &str, op: &Op) {
        match op {
            Op::Clobber(kind) => {
                let _: () = con.del(name).unwrap();
                let _: () = match kind {
                    0 => con.set(name, "not a count").unwrap(),
                    1 => con.set(name, "-2").unwrap(),
                    _ => con.hset(name, "field", "1").unwrap(),
                };
            }
            Op::Expire => {
                let _: () = con.pexpire(name, 100).unwrap();
            }
            _ => {}
        }
    }
}

fn differential(texts: &Texts, seed: &str) {
    let bodies = [&texts.count_down[..], &texts.try_set_count, &texts.delete];
    let (calls, errors) = one_key_differential(texts, &TWINS, seed, &bodies, "latch");
    assert!(calls > 200 && errors < calls / 4, "{calls} calls, {errors} errors");
}

#[test]
fn redissons_latch_scripts_run_natively_as_they_run_in_lua() {
    let shas = [
        "38060fab26b0e7c5982a5cfd7ad542e44d3da19b",
        "2a52d54a6f35bc8af5e84a2930b2ca1aa2a15892",
        "47aed1b8133417c9bc009ffc08602e37ed4a1bb3",
    ];
    differential(&Texts::of(VERSION, shas, true), "redisson_latch_differential");
}

#[test]
fn older_latch_scripts_that_name_publish_run_natively_as_they_run_in_lua() {
    let shas = [
        "c103a1b27e5635c206edc800af5851a8c4cc8305",
        "956d64ccf21d1feed0339006db8295e2aa04a8d8",
        "23bcabf6e8e3267791df8ea2e9ed607944b28658",
    ];
    differential(&Texts::of("3.14.1", shas, false), "redisson_latch_differential_older");
}

#[test]
fn the_latch_commands_take_via_publish_or_spublish_last() {
    let server = Server::start();
    let mut con = server.connection();
    let mut query = |args: &[&str]| redis::cmd(args[0]).arg(&args[1..]).query::<redis::Value>(&mut con);
    assert_eq!(query(&["RLATCH.TRYSETCOUNT", "l", "2", "VIA", "spublish"]), Ok(redis::Value::Int(1)));
    assert_eq!(query(&["RLATCH.COUNTDOWN", "l", "VIA", "PUBLISH"]), Ok(redis::Value::Nil));
    assert_eq!(query(&["RLATCH.DELETE", "l", "VIA", "PUBLISH"]), Ok(redis::Value::Int(1)));
    // A missing latch counted down as the script does: nothing is left.
    assert_eq!(query(&["RLATCH.COUNTDOWN", "l", "VIA", "PUBLISH"]), Ok(redis::Value::Nil));
    assert_eq!(query(&["EXISTS", "l"]), Ok(redis::Value::Int(0)));
    for (args, error) in [
        (&["RLATCH.COUNTDOWN", "l", "VIA", "DEL"][..], "unexpected argument 3 ('DEL')"),
        (&["RLATCH.DELETE", "l", "VIA"], "'VIA' needs PUBLISH|SPUBLISH"),
        (&["RLATCH.TRYSETCOUNT", "l", "2", "VIA", "PUBLISH", "x"], "unexpected argument 5 ('x')"),
        (&["RLATCH.TRYSETCOUNT", "l", "VIA", "PUBLISH"], "count must be an integer"),
    ] {
        let refused = query(args).expect_err("refused").to_string();
        assert!(refused.contains(error), "{args:?}: {refused}");
    }
}
