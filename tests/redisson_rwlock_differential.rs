//! Redisson's read-write lock scripts (texts from the jars of 4.7.0, and
//! of 3.43.0, 3.23.5, 3.14.1 and 3.10.6, whose releases and force releases
//! differ, and 3.10.6's read acquire) run through Lua on
//! one lock name and through the filter's native rewrite on a twin name,
//! on one server, in random sequences of EVAL and EVALSHA calls: replies,
//! keys (the hash, every read hold's key, the latches), TTLs, keyspace
//! notifications and published messages must be the same (the write
//! acquire's re-entry growing the TTL by the lease, as the script does).

mod redisson_support;

use redis::{Cmd, Connection};
use redisson_support::{family_native_count, script_call, texts};
use rlock_protocol::{
    rwlock_channel, rwlock_key_prefix, rwlock_timeout_key, rwlock_timeout_prefix, rwlock_write_field,
};
use testkit::{assert_same_reply, drive, run_out, server_time_ms, unlock_latch_key, At, Differential, FilterTwins};
use testkit::{Rng, Server};

const TWINS: FilterTwins = FilterTwins { lua: "lua-rw", native: "nat-rw" };
const OWNERS: [&str; 3] = ["6f1c:1", "6f1c:2", "a9e0:7"];
const REQUESTS: [&str; 2] = ["0a1b2c3d4e5f60718293a4b5c6d7e8f9", "r3"];
/// Read holds per owner whose keys are compared (more are rare).
const HOLDS: i64 = 8;
const READ_MESSAGE: &[u8] = b"0";
const WRITE_MESSAGE: &[u8] = b"1";
const CLASSES: [&str; 2] = ["org/redisson/RedissonReadLock", "org/redisson/RedissonWriteLock"];
const BATCH_CLASS: &str = "org/redisson/renewal/ReadLockTask";
/// RedissonReadLock.isLocked, 3.24.0 .. 4.7.0.
const IS_LOCKED: &str = "8ad44f1ba014938c20da38206b6d496c85ec1aed";
/// The read lock's renewals: ReadLockTask's batch (4.4.0 .. 4.7.0) and
/// RedissonReadLock.renewExpirationAsync (3.10.0 .. 3.43.0).
const RENEW_BATCH: &str = "38d2b478dfbe264ab67c221b7e4be62245f00ba0";
const RENEW_ALL: &str = "6563941ff57e01b8cf61e86907b80686438a2f74";

/// One Redisson version's texts, and how its releases are called.
struct Version {
    name: &'static str,
    /// read acquire, write acquire, read release, write release, read
    /// force release, write force release.
    shas: [&'static str; 6],
    /// 3.22+: the publish command is an argument.
    publish_argument: bool,
    /// 3.24+: releases take an unlock latch key and its PX.
    latched: bool,
    /// The read renewal's text; isLocked's, when a script (3.24+).
    renew: &'static str,
    is_locked: bool,
}

/// Indexes of the renewal and isLocked texts after [`Version::shas`].
const RENEW: usize = 6;
const IS_LOCKED_TEXT: usize = 7;

const V4_7: Version = Version {
    name: "4.7.0",
    shas: [
        "95553a6ff11176c18e71344e89d116b06fd6f753",
        "6306ba3bf1f563b284bed52d305fce615c6664d9",
        "6e1b10e11ac0a3ed8e902562ecd32ce01b553039",
        "21f5fb0f8ddfa9be5c3e0c9757c128796add75c6",
        "27dbe744e95c1d854a7f556cc6817030de2d0d01",
        "2e2cb2a3b13e2e80e4236ef6a25beaf365dba608",
    ],
    publish_argument: true,
    latched: true,
    renew: RENEW_BATCH,
    is_locked: true,
};

const V3_43: Version = Version {
    name: "3.43.0",
    shas: [
        "95553a6ff11176c18e71344e89d116b06fd6f753",
        "6306ba3bf1f563b284bed52d305fce615c6664d9",
        "5947c0fee6ca25ae094ec1b3e7a2559a9273d29f",
        "d29c5559782035515d32e926762830b3304b49be",
        "27dbe744e95c1d854a7f556cc6817030de2d0d01",
        "2e2cb2a3b13e2e80e4236ef6a25beaf365dba608",
    ],
    publish_argument: true,
    latched: true,
    renew: RENEW_ALL,
    is_locked: true,
};

const V3_23: Version = Version {
    name: "3.23.5",
    shas: [
        "95553a6ff11176c18e71344e89d116b06fd6f753",
        "6306ba3bf1f563b284bed52d305fce615c6664d9",
        "92a54c31a4dc3b46f81e24a6dd5bb7d677c6f882",
        "319a1cdf1b56c767a0a9adf2224250bf811f110c",
        "27dbe744e95c1d854a7f556cc6817030de2d0d01",
        "2e2cb2a3b13e2e80e4236ef6a25beaf365dba608",
    ],
    publish_argument: true,
    latched: false,
    renew: RENEW_ALL,
    is_locked: false,
};

const V3_14: Version = Version {
    name: "3.14.1",
    shas: [
        "95553a6ff11176c18e71344e89d116b06fd6f753",
        "6306ba3bf1f563b284bed52d305fce615c6664d9",
        "f5469be4bfe5232d519471092634b3ee84e5ee6f",
        "baa634f6184acc1b8f145e810a0e0e00967a3cbe",
        "23f9bc91439172625235ce2ee06d6647f08a7e27",
        "23639b0b2d18d26ce352e148ff4ac5b8e984b696",
    ],
    publish_argument: false,
    latched: false,
    renew: RENEW_ALL,
    is_locked: false,
};

/// 3.10.x: the read acquire sets the hash's TTL to the lease on a re-entry.
const V3_10: Version = Version {
    name: "3.10.6",
    shas: [
        "3e6597e1d1157c59ac0d6efa2ba7e92ef418c41e",
        "6306ba3bf1f563b284bed52d305fce615c6664d9",
        "f5469be4bfe5232d519471092634b3ee84e5ee6f",
        "baa634f6184acc1b8f145e810a0e0e00967a3cbe",
        "23f9bc91439172625235ce2ee06d6647f08a7e27",
        "23639b0b2d18d26ce352e148ff4ac5b8e984b696",
    ],
    publish_argument: false,
    latched: false,
    renew: RENEW_ALL,
    is_locked: false,
};

#[derive(Debug, Clone)]
enum Op {
    Acquire {
        write: bool,
        owner: &'static str,
        lease: u64,
    },
    Release {
        write: bool,
        owner: &'static str,
        lease: u64,
        request: &'static str,
        latch_ms: u64,
    },
    ForceRelease {
        write: bool,
    },
    /// The watchdog's read renewal: 3.x names one owner, 4.7's batch these.
    Renew {
        owners: Vec<&'static str>,
        lease: u64,
    },
    IsLocked,
    /// Somebody else's value at the lock name, for 30 ms (a few steps): both error
    /// (texts differ, see docs/redisson.md).
    Clobber,
    /// The lock loses its expiry (PERSIST): a write re-entry then adds the
    /// lease to a PTTL of -1.
    Persist,
    /// Leases and latches of 150 ms run out: until the server shows they did.
    Sleep,
}

impl Op {
    /// Its text, as an index into [`Version::shas`].
    fn text(&self) -> Option<usize> {
        match self {
            Op::Acquire { write, .. } => Some(usize::from(*write)),
            Op::Release { write, .. } => Some(2 + usize::from(*write)),
            Op::ForceRelease { write } => Some(4 + usize::from(*write)),
            Op::Renew { .. } => Some(RENEW),
            Op::IsLocked => Some(IS_LOCKED_TEXT),
            Op::Clobber | Op::Persist | Op::Sleep => None,
        }
    }
}

fn random_op(rng: &mut Rng, version: &Version) -> Op {
    let (write, owner) = (rng.chance(40), *rng.pick(&OWNERS));
    let lease = *rng.pick(&[150, 30_000, 60_000]);
    match rng.below(100) {
        0..=34 => Op::Acquire { write, owner, lease },
        35..=41 => {
            let owners = OWNERS.iter().copied().filter(|_| rng.chance(60)).collect::<Vec<_>>();
            Op::Renew { owners: if owners.is_empty() { vec![owner] } else { owners }, lease }
        }
        42..=44 if version.is_locked => Op::IsLocked,
        42..=44 => Op::Acquire { write, owner, lease },
        45..=84 => {
            let (request, latch_ms) = (*rng.pick(&REQUESTS), *rng.pick(&[150, 20_000]));
            Op::Release { write, owner, lease, request, latch_ms }
        }
        85..=91 => Op::ForceRelease { write },
        92 => Op::Clobber,
        93 => Op::Persist,
        _ => Op::Sleep,
    }
}

/// The arguments of `op` on `name` as `version` sends them: keys, then ARGV.
fn arguments(version: &Version, publish: &str, name: &str, op: &Op) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let name = name.as_bytes();
    let channel = rwlock_channel(name);
    let message = |write: bool| if write { WRITE_MESSAGE } else { READ_MESSAGE }.to_vec();
    let text = |number: u64| number.to_string().into_bytes();
    let (mut keys, mut args) = match op {
        Op::Acquire { write: false, owner, lease } => {
            let owner = owner.as_bytes();
            let keys = vec![name.to_vec(), rwlock_timeout_prefix(name, owner)];
            return (keys, vec![text(*lease), owner.to_vec(), rwlock_write_field(owner)]);
        }
        Op::Acquire { write: true, owner, lease } => {
            return (vec![name.to_vec()], vec![text(*lease), rwlock_write_field(owner.as_bytes())]);
        }
        Op::Release { write: false, owner, .. } => {
            let owner = owner.as_bytes();
            let keys = vec![name.to_vec(), channel, rwlock_timeout_prefix(name, owner), rwlock_key_prefix(name)];
            (keys, vec![message(false), owner.to_vec()])
        }
        Op::Release { write: true, owner, lease, .. } => {
            (vec![name.to_vec(), channel], vec![message(true), text(*lease), rwlock_write_field(owner.as_bytes())])
        }
        Op::ForceRelease { write } => {
            let keys = vec![name.to_vec(), channel];
            let mut args = vec![message(*write)];
            if version.publish_argument {
                args.push(publish.as_bytes().to_vec());
            }
            return (keys, args);
        }
        Op::Renew { owners, lease } if version.renew == RENEW_ALL => {
            return (vec![name.to_vec(), rwlock_key_prefix(name)], vec![text(*lease), owners[0].as_bytes().to_vec()]);
        }
        Op::Renew { owners, lease } => {
            let mut args = vec![text(*lease), text(owners.len() as u64)];
            args.extend(owners.iter().map(|owner| owner.as_bytes().to_vec()));
            return (vec![name.to_vec(), rwlock_key_prefix(name)], args);
        }
        Op::IsLocked => return (vec![name.to_vec()], vec![]),
        Op::Clobber | Op::Persist | Op::Sleep => unreachable!("no script call"),
    };
    if version.publish_argument {
        args.push(publish.as_bytes().to_vec());
    }
    if let (true, Op::Release { request, latch_ms, .. }) = (version.latched, op) {
        keys.push(unlock_latch_key(name, request.as_bytes()));
        args.push(text(*latch_ms));
    }
    (keys, args)
}

/// The script call of `op` on `name` (Clobber and Sleep are none).
fn script(version: &Version, bodies: &[Vec<u8>], call_as: (bool, &str), name: &str, op: &Op) -> Cmd {
    let (by_sha, publish) = call_as;
    let text = op.text().expect("a script call");
    let (keys, args) = arguments(version, publish, name, op);
    let keys: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    let args: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
    script_call(by_sha, &bodies[text], &keys, &args)
}

/// The lock, every read hold's key and the latches.
fn keys(name: &str) -> Vec<Vec<u8>> {
    let name = name.as_bytes();
    let mut keys = vec![name.to_vec()];
    for owner in OWNERS {
        keys.extend((1..=HOLDS).map(|n| rwlock_timeout_key(name, owner.as_bytes(), n)));
    }
    keys.extend(REQUESTS.iter().map(|request| unlock_latch_key(name, request.as_bytes())));
    keys
}

struct RwLock<'a> {
    version: &'a Version,
    bodies: Vec<Vec<u8>>,
    server: Server,
    con: Connection,
    control: Connection,
    calls: usize,
    errors: usize,
    renewals: usize,
}

impl Differential for RwLock<'_> {
    /// The operation, whether by SHA-1, the publish command.
    type Step = (Op, (bool, &'static str));

    fn draw(&mut self, rng: &mut Rng) -> Self::Step {
        let op = random_op(rng, self.version);
        (op, (rng.chance(50), ["publish", "PUBLISH", "spublish"][rng.below(3) as usize]))
    }

    fn run(&mut self, (op, call_as): &Self::Step, at: &At) {
        let con = &mut self.con;
        match op {
            Op::Sleep => run_out(con, &[keys(TWINS.lua), keys(TWINS.native)].concat(), 200),
            Op::Clobber => {
                // One expiry for both, so that both are gone at once.
                let at = server_time_ms(con) + 30;
                for name in [TWINS.lua, TWINS.native] {
                    let _: () = redis::cmd("SET").arg(name).arg("not a lock").arg("PXAT").arg(at).query(con).unwrap();
                }
            }
            Op::Persist => {
                // Only a lock: somebody else's value must still run out.
                for name in [TWINS.lua, TWINS.native] {
                    let kind: String = redis::cmd("TYPE").arg(name).query(con).unwrap();
                    if kind == "hash" {
                        let _: i64 = redis::cmd("PERSIST").arg(name).query(con).unwrap();
                    }
                }
            }
            _ => {}
        }
        let Some(text) = op.text() else { return };
        let call = |name: &str| script(self.version, &self.bodies, *call_as, name, op);
        let step = TWINS.step(&self.server, &mut self.control, keys, call);
        let context = format!("{} {}", self.version.name, at.context);
        let acquire = matches!(op, Op::Acquire { .. });
        self.renewals += usize::from(text == RENEW);
        self.errors += usize::from(assert_same_reply(&context, &step.lua, &step.native, acquire));
        self.calls += 1;
        assert_eq!(step.lua_messages, step.native_messages, "{context}: keyspace events and messages");
        TWINS.assert_same_keys(&mut self.con, &context, keys);
    }
}

fn differential(version: &Version) {
    let mut bodies = texts(version.name, &CLASSES, version.shas).to_vec();
    let classes: &[&str] = if version.renew == RENEW_BATCH { &[CLASSES[0], BATCH_CLASS] } else { &CLASSES };
    bodies.extend(texts(
        version.name,
        classes,
        [version.renew, if version.is_locked { IS_LOCKED } else { version.renew }],
    ));
    let server = Server::builder().config("notify-keyspace-events", "KEA").start();
    let mut con = server.connection();
    for body in &bodies {
        let _: String = redis::cmd("SCRIPT").arg("LOAD").arg(body).query(&mut con).unwrap();
    }
    let control = server.connection();
    let mut rwlock = RwLock { version, bodies, server, con, control, calls: 0, errors: 0, renewals: 0 };
    drive(&format!("redisson_rwlock_differential {}", version.name), 1, 400, &mut rwlock);
    let RwLock { mut con, calls, errors, renewals, .. } = rwlock;
    // Every call of a rewritten text on the twin ran natively: the
    // comparison was not Lua's with itself.
    assert_eq!(family_native_count(&mut con, "rwlock"), calls as i64);
    assert!(calls > 0 && errors < calls / 2, "{calls} calls, {errors} errors");
    assert!(renewals > 0, "no renewal among {calls} calls");
}

#[test]
fn redissons_newest_rwlock_scripts_run_natively_as_they_run_in_lua() {
    differential(&V4_7);
}

#[test]
fn redisson_3_43s_rwlock_scripts_run_natively_as_they_run_in_lua() {
    differential(&V3_43);
}

#[test]
fn redisson_3_23s_rwlock_scripts_run_natively_as_they_run_in_lua() {
    differential(&V3_23);
}

#[test]
fn redisson_3_14s_rwlock_scripts_run_natively_as_they_run_in_lua() {
    differential(&V3_14);
}

#[test]
fn redisson_3_10s_rwlock_scripts_run_natively_as_they_run_in_lua() {
    differential(&V3_10);
}
