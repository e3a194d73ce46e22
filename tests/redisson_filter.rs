//! The Redisson script filter: what passes through untouched, the
//! setting and its defaults, idempotence under CLIENT PAUSE, scripts
//! calling scripts, and ACL (Valkey and Redis 7.2+ tell the filter its
//! caller; Redis 7.0 does not).

mod redisson_support;

use redis::{Commands, Connection, Value};
use redisson_support::{call, native_count, scripts, texts, VERSION};
use redisson_support::{ACQUIRE_SHA, RELEASE_SHA};
use std::time::{Duration, Instant};
use testkit::{
    calls, error_text, newer_than_redis_7_0, release_channel, rlock_info, set_filter_mode, unlock_latch_key, Cluster,
    Server,
};

fn mode(con: &mut Connection) -> String {
    let reply: Vec<String> = redis::cmd("CONFIG").arg(&["GET", "rlock.redisson-scripts"]).query(con).unwrap();
    reply[1].clone()
}

#[test]
fn the_default_is_native_only_where_the_filter_knows_its_caller() {
    let server = Server::start();
    let mut con = server.connection();
    let expected = if newer_than_redis_7_0(&mut con) { "native" } else { "off" };
    assert_eq!(mode(&mut con), expected);
    let server = Server::builder().module_arg("redisson-scripts").module_arg("native").start();
    assert_eq!(mode(&mut server.connection()), "native");
    let log = Server::builder().module_arg("redisson-scripts").module_arg("lua").start_expecting_failure();
    // redis-module checks its enum settings before the module's own check.
    assert!(log.contains("Enum 'lua' not exists") || log.contains("must be native or off"), "{log}");
    let mut con = server.connection();
    set_filter_mode(&mut con, "off");
    assert_eq!(mode(&mut con), "off");
    let err = redis::cmd("CONFIG").arg(&["SET", "rlock.redisson-scripts", "lua"]).query::<()>(&mut con);
    assert!(err.is_err());
}

/// The filter is registered only while the setting is `native` (so that
/// `off` costs other commands nothing): every change of the setting
/// takes effect at once, from either default.
#[test]
fn each_change_of_the_setting_takes_effect_at_once() {
    let scripts = scripts(VERSION);
    let server = Server::start();
    let mut con = server.connection();
    let natively = |con: &mut Connection, name: &[u8]| {
        let before = native_count(con);
        assert_eq!(call(con, false, &scripts.acquire, &[name], &[b"30000", b"o:1"]).unwrap(), Value::Nil);
        native_count(con) > before
    };
    for (mode, native) in [("native", true), ("native", true), ("off", false), ("off", false), ("native", true)] {
        set_filter_mode(&mut con, mode);
        assert_eq!(natively(&mut con, mode.as_bytes()), native, "after CONFIG SET {mode}");
        let _: () = redis::cmd("DEL").arg(mode).query(&mut con).unwrap();
    }
}

#[test]
fn everything_else_passes_through_untouched() {
    let scripts = scripts(VERSION);
    let server = Server::builder().module_arg("redisson-scripts").module_arg("native").start();
    let mut con = server.connection();
    // SCRIPT LOAD of a known text loads it.
    let sha: String = redis::cmd("SCRIPT").arg("LOAD").arg(&scripts.acquire).query(&mut con).unwrap();
    assert_eq!(sha, ACQUIRE_SHA);
    let sha: String = redis::cmd("SCRIPT").arg("LOAD").arg(&scripts.release).query(&mut con).unwrap();
    assert_eq!(sha, RELEASE_SHA);
    // A text one byte longer, or one byte different, runs as Lua.
    let mut longer = scripts.acquire.clone();
    longer.push(b' ');
    let mut changed = scripts.acquire.clone();
    changed[0] = b'I';
    let before = native_count(&mut con);
    assert_eq!(call(&mut con, false, &longer, &[b"a"], &[b"30000", b"o:1"]).unwrap(), Value::Nil);
    assert!(error_text(call(&mut con, false, &changed, &[b"b"], &[b"30000", b"o:1"])).contains("script"));
    // Arguments the native command would not take the same way: Lua (a
    // lease of 0 deletes the key it just wrote).
    assert_eq!(call(&mut con, true, &scripts.acquire, &[b"c"], &[b"0", b"o:1"]).unwrap(), Value::Nil);
    assert!(!con.exists::<_, bool>("c").unwrap());
    // A release whose latch is the lock's own key (the script's `get`
    // fails on a hash; the native command refuses it).
    let channel = release_channel(b"d");
    let args: [&[u8]; 5] = [b"0", b"30000", b"o:1", b"publish", b"20000"];
    assert_eq!(call(&mut con, true, &scripts.release, &[b"d", &channel, b"d"], &args).unwrap(), Value::Nil);
    assert_eq!(native_count(&mut con), before, "all of these ran as Lua");
    assert_eq!(calls(&mut con, "rlock.acquire") + calls(&mut con, "rlock.release"), 0);
    // An unknown SHA is NOSCRIPT; WAIT and DEL of a latch are themselves.
    let unknown = call(&mut con, true, b"return 1", &[b"a"], &[]);
    assert!(error_text(unknown).contains("NOSCRIPT"));
    let acked: i64 = redis::cmd("WAIT").arg(0).arg(0).query(&mut con).unwrap();
    assert_eq!(acked, 0);
    assert_eq!(con.del::<_, i64>(unlock_latch_key(b"a", b"r1")).unwrap(), 0);
    // Off: a known script runs as Lua.
    set_filter_mode(&mut con, "off");
    assert_eq!(call(&mut con, true, &scripts.acquire, &[b"f"], &[b"30000", b"o:1"]).unwrap(), Value::Nil);
    assert_eq!(native_count(&mut con), before);
    // On: natively, by SHA (even one never loaded: no NOSCRIPT) and by text.
    set_filter_mode(&mut con, "native");
    let _: () = redis::cmd("SCRIPT").arg("FLUSH").query(&mut con).unwrap();
    assert_eq!(call(&mut con, true, &scripts.acquire, &[b"g"], &[b"30000", b"o:1"]).unwrap(), Value::Nil);
    let contended = call(&mut con, false, &scripts.acquire, &[b"g"], &[b"30000", b"o:2"]).unwrap();
    assert!(matches!(contended, Value::Int(pttl) if (29_000..=30_000).contains(&pttl)), "{contended:?}");
    assert_eq!(native_count(&mut con), before + 2);
    assert_eq!(calls(&mut con, "rlock.acquire"), 2);
}

#[test]
fn a_script_calling_a_known_script_gets_the_error_it_gets_without_the_filter() {
    let server = Server::builder().module_arg("redisson-scripts").module_arg("native").start();
    let mut con = server.connection();
    let inner = format!("return redis.call('evalsha', '{ACQUIRE_SHA}', 1, KEYS[1], '30000', 'o:1')");
    let native = error_text(redis::cmd("EVAL").arg(&inner).arg(1).arg("k").query::<Value>(&mut con));
    set_filter_mode(&mut con, "off");
    let lua = error_text(redis::cmd("EVAL").arg(&inner).arg(1).arg("k").query::<Value>(&mut con));
    assert_eq!(native, lua);
    assert!(native.contains("not allowed from script"), "{native}");
    assert!(!con.exists::<_, bool>("k").unwrap());
}

#[test]
fn a_call_postponed_by_client_pause_runs_once_natively() {
    let scripts = scripts(VERSION);
    let server = Server::builder().module_arg("redisson-scripts").module_arg("native").start();
    let mut admin = server.connection();
    let _: () = redis::cmd("CLIENT").arg(&["PAUSE", "300", "WRITE"]).query(&mut admin).unwrap();
    let started = Instant::now();
    let mut con = server.connection();
    let reply = call(&mut con, true, &scripts.acquire, &[b"p"], &[b"30000", b"o:1"]).unwrap();
    assert!(started.elapsed() >= Duration::from_millis(250), "the pause held the call");
    assert_eq!(reply, Value::Nil);
    assert_eq!(con.hget::<_, _, String>("p", "o:1").unwrap(), "1");
    assert_eq!(native_count(&mut con), 1);
    assert_eq!(calls(&mut con, "rlock.acquire"), 1);
    assert_eq!(calls(&mut con, "evalsha"), 0);
}

#[test]
fn acl_decides_where_the_filter_knows_its_caller() {
    let scripts = scripts(VERSION);
    let server = Server::builder().module_arg("redisson-scripts").module_arg("native").start();
    let mut admin = server.connection();
    let knows_caller = newer_than_redis_7_0(&mut admin);
    // Lua needs them loaded, as Redisson would after a NOSCRIPT.
    for body in [&scripts.acquire, &scripts.release] {
        let _: String = redis::cmd("SCRIPT").arg("LOAD").arg(body).query(&mut admin).unwrap();
    }
    let mut lua_only = server.login("lua-only", &["~*", "&*", "-rlock.acquire", "-rlock.release"]);
    let reply = call(&mut lua_only, true, &scripts.acquire, &[b"x"], &[b"30000", b"o:1"]);
    if knows_caller {
        // The user may not run RLOCK.ACQUIRE: the script runs as Lua, as it would without the module.
        assert_eq!(reply.unwrap(), Value::Nil);
        assert_eq!(rlock_info(&mut admin, "redisson_acl_lua"), 1);
        assert_eq!(native_count(&mut admin), 0);
    } else {
        // Redis 7.0 cannot tell the filter who calls (README: why the default is off there).
        assert!(error_text(reply).contains("NOPERM"));
        eprintln!(
            "skipped on {}: the checks that a script ACL refuses natively runs as Lua (Redis 7.0 cannot tell the filter its caller)",
            testkit::server_bin()
        );
    }
    // A user who may publish on no channel: the release would publish, so Lua decides.
    let mut no_channels = server.login("no-channels", &["~*"]);
    let channel = release_channel(b"y");
    let latch = unlock_latch_key(b"y", b"r1");
    let args: [&[u8]; 5] = [b"0", b"30000", b"o:1", b"publish", b"20000"];
    let reply = call(&mut no_channels, true, &scripts.release, &[b"y", &channel, &latch], &args);
    if knows_caller {
        assert_eq!(reply.unwrap(), Value::Nil, "not held, published nothing: Lua's reply");
        assert_eq!(rlock_info(&mut admin, "redisson_acl_lua"), 2);
    }
    // A user allowed everything runs natively.
    let mut all = server.login("all", &["~*", "&*"]);
    assert_eq!(call(&mut all, true, &scripts.acquire, &[b"z"], &[b"30000", b"o:1"]).unwrap(), Value::Nil);
    assert_eq!(calls(&mut admin, "rlock.acquire"), 1);
}

/// Redisson 4.7.0's watchdog batch renewal (`LockTask`, up to 100 locks a
/// call), spin lock unlocks and non-reentrant acquire, as it sends them.
#[test]
fn the_batch_renewal_spin_and_non_reentrant_texts_run_natively() {
    let server = Server::builder().module_arg("redisson-scripts").module_arg("native").start();
    let mut con = server.connection();
    let classes =
        ["org/redisson/renewal/LockTask", "org/redisson/RedissonSpinLock", "org/redisson/RedissonNonReentrantLock"];
    let [renew_all, spin_release, spin_force, non_reentrant] = texts(
        VERSION,
        &classes,
        [
            "6a3d31570dc6f4b0bd32bcdc8e75667747c6f635",
            "73ac2729af29ea9a975f95e8097f7ee9a74cce3d",
            "51b433c3cc9a6ca991b3aefec63d23490c246318",
            "3daa7be6cf69d9309ad990442e83bf25094f9b22",
        ],
    );
    let names: Vec<String> = (0..100).map(|i| format!("lock{i}")).collect();
    for name in names.iter().step_by(2) {
        let reply = call(&mut con, false, &non_reentrant, &[name.as_bytes()], &[b"1000", b"o:1", REENTRY_ERROR]);
        assert_eq!(reply.unwrap(), Value::Nil);
    }
    let again = call(&mut con, true, &non_reentrant, &[b"lock0"], &[b"1000", b"o:1", REENTRY_ERROR]);
    assert_eq!(error_text(again), "ERR NON_REENTRANT_REACQUIRE");

    let keys: Vec<&[u8]> = names.iter().map(|name| name.as_bytes()).collect();
    let args: Vec<&[u8]> = [&b"60000"[..]].into_iter().chain(keys.iter().map(|_| &b"o:1"[..])).collect();
    let renewed: Vec<i64> = redis::from_redis_value(call(&mut con, true, &renew_all, &keys, &args).unwrap()).unwrap();
    assert_eq!(renewed, (0..100).map(|i| i64::from(i % 2 == 0)).collect::<Vec<_>>());
    assert!(con.pttl::<_, i64>("lock98").unwrap() > 59_000);

    let latch = unlock_latch_key(b"lock0", b"r1");
    let released = call(&mut con, true, &spin_release, &[b"lock0", &latch], &[b"30000", b"o:1", b"20000"]);
    assert_eq!(released.unwrap(), Value::Int(1));
    assert_eq!(call(&mut con, false, &spin_force, &[b"lock2"], &[]).unwrap(), Value::Int(1));
    assert_eq!(native_count(&mut con), 50 + 1 + 1 + 1 + 1);
    for (command, expected) in
        [("rlock.renewall", 1), ("rlock.acquire", 51), ("rlock.release", 1), ("rlock.forcerelease", 1)]
    {
        assert_eq!(calls(&mut con, command), expected, "{command}");
    }
    assert_eq!(calls(&mut con, "evalsha") + calls(&mut con, "eval"), 0);
}

const REENTRY_ERROR: &[u8] = b"NON_REENTRANT_REACQUIRE";

/// In a cluster the batch renewal's keys are all declared: keys of one
/// slot run natively, keys of several are refused by Redis as the
/// script's are.
#[test]
fn in_a_cluster_the_batch_renewal_runs_natively_within_one_slot() {
    let cluster = Cluster::start_with(3, 0, |node| node.module_arg("redisson-scripts").module_arg("native"));
    let [renew_all] = texts(VERSION, &["org/redisson/renewal/LockTask"], ["6a3d31570dc6f4b0bd32bcdc8e75667747c6f635"]);
    let node = cluster.primary_for(b"{t}a");
    let mut con = node.connection();
    for name in ["{t}a", "{t}b"] {
        let _: Value = redis::cmd("RLOCK.ACQUIRE").arg(&[name, "o:1", "1000"]).query(&mut con).unwrap();
    }
    let args: [&[u8]; 3] = [b"60000", b"o:1", b"o:2"];
    let renewed = call(&mut con, true, &renew_all, &[b"{t}a", b"{t}b"], &args).unwrap();
    assert_eq!(renewed, Value::Array(vec![Value::Int(1), Value::Int(0)]));
    assert_eq!(calls(&mut con, "rlock.renewall"), 1);

    let cross_slot = |con: &mut Connection| error_text(call(con, true, &renew_all, &[b"{t}a", b"{u}b"], &args));
    let native = cross_slot(&mut con);
    set_filter_mode(&mut con, "off");
    assert_eq!(native, cross_slot(&mut con));
    assert!(native.starts_with("CROSSSLOT"), "{native}");
    assert_eq!(calls(&mut con, "rlock.renewall"), 1, "refused before it ran");
}

/// RRW.RENEWREADS counts its keys (a KEYNUM key spec), which no legacy key
/// range can say, and Redis 7.0 and Valkey 8.1 route a cluster call by that
/// range unless the command answers for its keys (getkeys-api): a key of
/// another node's slot is redirected (MOVED), as the script call without
/// the filter is, and keys of two slots are CROSSSLOT.
#[test]
fn in_a_cluster_the_read_batch_renewal_of_another_nodes_key_is_redirected() {
    let cluster = Cluster::start_with(3, 0, |node| node.module_arg("redisson-scripts").module_arg("native"));
    let [renew_reads] =
        texts(VERSION, &["org/redisson/renewal/ReadLockTask"], ["38d2b478dfbe264ab67c221b7e4be62245f00ba0"]);
    let owner = cluster.primary_for(b"{b}a");
    let other = cluster.primary_for(b"{a}a");
    assert_ne!(owner.port(), other.port(), "the test needs two nodes");
    let mut con = other.connection();
    let args: [&[u8]; 3] = [b"60000", b"1", b"o:1"];
    let native = error_text(call(&mut con, true, &renew_reads, &[b"{b}a", b"{b}"], &args));
    assert!(native.starts_with("MOVED"), "through the filter: {native}");
    let direct: redis::RedisResult<Value> =
        redis::cmd("RRW.RENEWREADS").arg(&["1", "{b}a", "60000", "1", "o:1"]).query(&mut con);
    assert!(error_text(direct).starts_with("MOVED"), "sent directly");
    let cross: redis::RedisResult<Value> =
        redis::cmd("RRW.RENEWREADS").arg(&["2", "{a}a", "{b}a", "60000", "1", "o", "1", "o"]).query(&mut con);
    assert!(error_text(cross).starts_with("CROSSSLOT"), "two slots sent directly");
}

/// The native commands refuse an empty owner; Redisson's scripts take one:
/// such a call stays with Lua, and does what the script does.
#[test]
fn a_call_with_an_empty_owner_stays_with_lua() {
    let scripts = scripts(VERSION);
    let server = Server::start();
    let mut con = server.connection();
    set_filter_mode(&mut con, "native");
    let before = native_count(&mut con);
    assert_eq!(call(&mut con, false, &scripts.acquire, &[b"e"], &[b"30000", b""]).unwrap(), Value::Nil);
    assert_eq!(native_count(&mut con), before, "run as Lua");
    let count: i64 = con.hget("e", "").unwrap();
    assert_eq!(count, 1, "the script's field for the empty owner");
    assert_eq!(call(&mut con, false, &scripts.acquire, &[b"f"], &[b"30000", b"o:1"]).unwrap(), Value::Nil);
    assert_eq!(native_count(&mut con), before + 1, "any other owner: native");
}
