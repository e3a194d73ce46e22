//! Redisson's RLock scripts (texts from the jars of three generations:
#![allow(clippy::explicit_auto_deref)]
//! 4.7.0, 3.23.5 and 3.14.1), with the spin lock's, the non-reentrant
//! lock's and the watchdog's batch renewal where the version has them,
//! run through Lua on one lock name and through the filter's native
//! rewrite on a twin name, on one server, in random sequences of EVAL and
//! EVALSHA calls: replies, keys, TTLs, keyspace notifications and
//! published messages must be the same.

mod redisson_support;

use redis::{Cmd, Commands, Connection};
use redisson_support::{all_texts, native_count, script_call, scripts, sha1_hex, Scripts, Unlock, VERSION};
use testkit::{assert_same_reply, drive, release_channel, run_out, unlock_latch_key, At, Differential, FilterTwins};
use testkit::{Rng, Server};

const TWINS: FilterTwins = FilterTwins { lua: "lua-lock", native: "nat-lock" };
const OWNERS: [&str; 3] = ["6f1c:1", "6f1c:2", "a9e0:7"];
const REQUESTS: [&str; 3] = ["0a1b2c3d4e5f60718293a4b5c6d7e8f9", "ffeeddccbbaa99887766554433221100", "r3"];

#[derive(Debug, Clone)]
enum Op {
    /// RLock's acquire, of the lock or (`second`) another one the batch
    /// renewal renews with it.
    Acquire {
        owner: &'static str,
        lease: u64,
        second: bool,
    },
    Release {
        owner: &'static str,
        lease: u64,
        request: &'static str,
        latch_ms: u64,
        publish: &'static str,
    },
    ForceRelease {
        publish: &'static str,
    },
    Renew {
        owner: &'static str,
        lease: u64,
    },
    /// The watchdog's batch renewal (3.44+) of the lock, and of the second
    /// lock after it when `owners` has two.
    RenewAll {
        owners: Vec<&'static str>,
        lease: u64,
    },
    SpinRelease {
        owner: &'static str,
        lease: u64,
        request: &'static str,
        latch_ms: u64,
    },
    SpinForceRelease,
    NonReentrantAcquire {
        owner: &'static str,
        lease: u64,
    },
    /// Somebody else's value at the lock name: both error (texts differ,
    /// see docs/commands.md), until a force release deletes it.
    Clobber,
    /// Leases and latches of 150 ms run out: until the server shows they did.
    Sleep,
}

fn random_op(rng: &mut Rng) -> Op {
    let lease = *rng.pick(&[150, 30_000, 60_000]);
    let publish = *rng.pick(&["publish", "publish", "PUBLISH"]);
    match rng.below(130) {
        0..=36 => Op::Acquire { owner: *rng.pick(&OWNERS), lease, second: rng.chance(20) },
        37..=74 => Op::Release {
            owner: *rng.pick(&OWNERS),
            lease,
            request: *rng.pick(&REQUESTS),
            latch_ms: *rng.pick(&[150, 20_000]),
            publish,
        },
        75..=79 => Op::Renew { owner: *rng.pick(&OWNERS), lease },
        80..=89 => Op::ForceRelease { publish },
        90..=91 => Op::Clobber,
        92..=97 => Op::Sleep,
        98..=107 => {
            let count = if rng.chance(50) { 1 } else { 2 };
            Op::RenewAll { owners: (0..count).map(|_| *rng.pick(&OWNERS)).collect(), lease }
        }
        108..=117 => Op::SpinRelease {
            owner: *rng.pick(&OWNERS),
            lease,
            request: *rng.pick(&REQUESTS),
            latch_ms: *rng.pick(&[150, 20_000]),
        },
        118..=121 => Op::SpinForceRelease,
        _ => Op::NonReentrantAcquire { owner: *rng.pick(&OWNERS), lease },
    }
}

/// The version's texts of the spin lock, the non-reentrant lock and the
/// batch renewal, where it has them.
struct More {
    /// The spin lock's unlock, and whether it takes the unlock latch.
    spin_release: Option<(Vec<u8>, bool)>,
    spin_force: Option<Vec<u8>>,
    non_reentrant: Option<Vec<u8>>,
    renew_all: Option<Vec<u8>>,
}

impl More {
    fn of(version: &str) -> More {
        let classes =
            ["org/redisson/RedissonSpinLock", "org/redisson/RedissonNonReentrantLock", "org/redisson/renewal/LockTask"];
        let classes: Vec<&str> =
            classes.into_iter().filter(|class| testkit::redisson_class_scripts(version, class).is_some()).collect();
        let texts = all_texts(version, &classes);
        let find = |sha: &str| texts.iter().find(|text| sha1_hex(text) == sha).cloned();
        let spin_release = find("73ac2729af29ea9a975f95e8097f7ee9a74cce3d")
            .map(|text| (text, true))
            .or_else(|| find("5b9e58d1bcb8498e14aa1d5b49a1ca5b90748946").map(|text| (text, false)));
        More {
            spin_release,
            spin_force: find("51b433c3cc9a6ca991b3aefec63d23490c246318"),
            non_reentrant: find("3daa7be6cf69d9309ad990442e83bf25094f9b22"),
            renew_all: find("6a3d31570dc6f4b0bd32bcdc8e75667747c6f635"),
        }
    }

    fn bodies(&self) -> impl Iterator<Item = &Vec<u8>> {
        let spin = self.spin_release.as_ref().map(|(text, _)| text);
        spin.into_iter().chain(&self.spin_force).chain(&self.non_reentrant).chain(&self.renew_all)
    }
}

/// The second lock of a twin, which only the acquire and the batch
/// renewal touch.
fn second(name: &str) -> String {
    format!("{name}-b")
}

/// The script call of `op` on `name` as the version's texts take it
/// (Clobber and Sleep are none; nor is a text the version does not send).
fn script(scripts: &Scripts, more: &More, by_sha: bool, name: &str, op: &Op) -> Option<Cmd> {
    let channel = release_channel(name.as_bytes());
    Some(match op {
        Op::Acquire { owner, lease, second: false } => {
            let lease = lease.to_string();
            script_call(by_sha, &scripts.acquire, &[name.as_bytes()], &[lease.as_bytes(), owner.as_bytes()])
        }
        Op::Acquire { owner, lease, second: true } => {
            let lease = lease.to_string();
            let name = self::second(name);
            script_call(by_sha, &scripts.acquire, &[name.as_bytes()], &[lease.as_bytes(), owner.as_bytes()])
        }
        Op::RenewAll { owners, lease } => {
            let names = [name.to_owned(), second(name)];
            let keys: Vec<&[u8]> = names.iter().take(owners.len()).map(|name| name.as_bytes()).collect();
            let lease = lease.to_string();
            let args: Vec<&[u8]> = [lease.as_bytes()].into_iter().chain(owners.iter().map(|o| o.as_bytes())).collect();
            script_call(by_sha, more.renew_all.as_ref()?, &keys, &args)
        }
        Op::SpinRelease { owner, lease, request, latch_ms } => {
            let (text, latched) = more.spin_release.as_ref()?;
            let latch = unlock_latch_key(name.as_bytes(), request.as_bytes());
            let (lease, latch_ms) = (lease.to_string(), latch_ms.to_string());
            let args: [&[u8]; 3] = [lease.as_bytes(), owner.as_bytes(), latch_ms.as_bytes()];
            match latched {
                true => script_call(by_sha, text, &[name.as_bytes(), &latch], &args),
                false => script_call(by_sha, text, &[name.as_bytes()], &args[..2]),
            }
        }
        Op::SpinForceRelease => script_call(by_sha, more.spin_force.as_ref()?, &[name.as_bytes()], &[]),
        Op::NonReentrantAcquire { owner, lease } => {
            let lease = lease.to_string();
            let args: [&[u8]; 3] = [lease.as_bytes(), owner.as_bytes(), b"NON_REENTRANT_REACQUIRE"];
            script_call(by_sha, more.non_reentrant.as_ref()?, &[name.as_bytes()], &args)
        }
        Op::Release { owner, lease, request, latch_ms, publish } => {
            let latch = unlock_latch_key(name.as_bytes(), request.as_bytes());
            let (lease, latch_ms) = (lease.to_string(), latch_ms.to_string());
            let args: [&[u8]; 5] = [b"0", lease.as_bytes(), owner.as_bytes(), publish.as_bytes(), latch_ms.as_bytes()];
            let keys: [&[u8]; 3] = [name.as_bytes(), &channel, &latch];
            let (keys, args) = match scripts.unlock {
                Unlock::Plain => (&keys[..2], &args[..3]),
                Unlock::Publish => (&keys[..2], &args[..4]),
                Unlock::Latch => (&keys[..], &args[..]),
            };
            script_call(by_sha, &scripts.release, keys, args)
        }
        Op::ForceRelease { publish } => {
            let args: [&[u8]; 2] = [b"0", publish.as_bytes()];
            let args = if scripts.force_takes_publish() { &args[..] } else { &args[..1] };
            script_call(by_sha, &scripts.force, &[name.as_bytes(), &channel], args)
        }
        Op::Renew { owner, lease } => {
            let lease = lease.to_string();
            script_call(by_sha, scripts.renew.as_ref()?, &[name.as_bytes()], &[lease.as_bytes(), owner.as_bytes()])
        }
        Op::Clobber | Op::Sleep => unreachable!("no script call"),
    })
}

/// The lock, the second lock and the lock's latches.
fn keys(name: &str) -> Vec<Vec<u8>> {
    let mut keys = vec![name.as_bytes().to_vec(), second(name).into_bytes()];
    keys.extend(REQUESTS.iter().map(|request| unlock_latch_key(name.as_bytes(), request.as_bytes())));
    keys
}

#[test]
fn redissons_rlock_scripts_run_natively_as_they_run_in_lua() {
    differential(VERSION);
}

/// 3.22 .. 3.23: the publish command as an argument, no unlock latch; the
/// single-lock renewal.
#[test]
fn redisson_3_23_rlock_scripts_run_natively_as_they_run_in_lua() {
    differential("3.23.5");
}

/// 3.12.3 .. 3.18: `publish` in the texts, the older acquire text.
#[test]
fn redisson_3_14_rlock_scripts_run_natively_as_they_run_in_lua() {
    differential("3.14.1");
}

struct RLock<'a> {
    version: &'a str,
    scripts: Scripts,
    more: More,
    server: Server,
    con: Connection,
    control: Connection,
    calls: i64,
    errors: usize,
    reentries: usize,
}

impl Differential for RLock<'_> {
    /// The operation, whether by SHA-1.
    type Step = (Op, bool);

    fn draw(&mut self, rng: &mut Rng) -> Self::Step {
        (random_op(rng), rng.chance(50))
    }

    fn run(&mut self, &(ref op, by_sha): &Self::Step, at: &At) {
        let con = &mut self.con;
        match op {
            Op::Sleep => run_out(con, &[keys(TWINS.lua), keys(TWINS.native)].concat(), 200),
            Op::Clobber => {
                for name in [TWINS.lua, TWINS.native] {
                    let _: () = con.set(name, "not a lock").unwrap();
                }
            }
            _ => {}
        }
        if matches!(op, Op::Sleep | Op::Clobber) || script(&self.scripts, &self.more, by_sha, TWINS.lua, op).is_none() {
            return;
        }
        let call = |name: &str| script(&self.scripts, &self.more, by_sha, name, op).expect("a call");
        let step = TWINS.step(&self.server, &mut self.control, keys, call);
        let context = format!("{} {}", self.version, at.context);
        let acquire = matches!(op, Op::Acquire { .. } | Op::NonReentrantAcquire { .. });
        self.errors += usize::from(assert_same_reply(&context, &step.lua, &step.native, acquire));
        if let (Op::NonReentrantAcquire { .. }, Err(lua)) = (op, &step.lua) {
            // Redisson's own error, which it looks for: the same text.
            if lua.contains("NON_REENTRANT_REACQUIRE") {
                assert_eq!(Err(lua), step.native.as_ref(), "{context}");
                self.reentries += 1;
            }
        }
        self.calls += 1;
        assert_eq!(step.lua_messages, step.native_messages, "{context}: keyspace events and messages");
        TWINS.assert_same_keys(&mut self.con, &context, keys);
    }
}

fn differential(version: &str) {
    let scripts = scripts(version);
    let more = More::of(version);
    let server = Server::builder().config("notify-keyspace-events", "KEA").start();
    let mut con = server.connection();
    let bodies = [&scripts.acquire, &scripts.release, &scripts.force].into_iter().chain(&scripts.renew);
    for body in bodies.chain(more.bodies()) {
        let _: String = redis::cmd("SCRIPT").arg("LOAD").arg(body).query(&mut con).unwrap();
    }
    let control = server.connection();
    let mut rlock = RLock { version, scripts, more, server, con, control, calls: 0, errors: 0, reentries: 0 };
    drive(&format!("redisson_differential {version}"), 1, 400, &mut rlock);
    let RLock { mut con, calls, errors, reentries, more, .. } = rlock;
    // Every call on the twin ran natively: the comparison was not Lua's with itself.
    assert_eq!(native_count(&mut con), calls);
    assert!(calls > 200 && errors < calls as usize / 2, "{calls} calls, {errors} errors");
    if more.non_reentrant.is_some() {
        assert!(reentries > 0, "no re-entry refused");
    }
}
