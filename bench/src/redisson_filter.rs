//! Section 9: Redisson's scripts run natively (the command filter,
//! `rlock.redisson-scripts native`) against the same calls run as Lua
//! (`off`): server time of Redisson 4.7.0's lock+unlock pair sent as
//! Redisson sends it, what the filter costs every other command, and
//! Redisson itself end to end.

use crate::raw::{encode, RawConnection};
use crate::report::{ratio, Table};
use crate::server_cost::{bench_key, measure_batches, Style, BATCH, CONNECTIONS, LEASE_MS, OWNER};
use crate::server_info;
use crate::synchronizers_cost::now_ms;
use rlock_protocol::{count_down_latch_channel, fair_queue_key, fair_timeout_key, fenced_token_key};
use rlock_protocol::{rwlock_channel, rwlock_key_prefix, rwlock_timeout_prefix, rwlock_write_field};
use rlock_protocol::{semaphore_channel, DEFAULT_FAIR_WAIT_MS};
use std::process::Command;
use testkit::redisson_lock::{scripts, sha1_hex, texts, VERSION};
use testkit::{release_channel, unlock_latch_key, Server};

/// Measured passes over the lock-pair rows, and pipelined batches per
/// connection in each (section 1's connections and batch size).
const PASSES: usize = 3;
const BATCHES: usize = 300;
/// Interleaved redis-benchmark rounds per server, and requests per test.
const ROUNDS: usize = 7;
const REQUESTS: &str = "200000";
/// The Java run: threads, and each phase's length (after a warm-up as long).
const JAVA_THREADS: usize = 64;
const JAVA_PHASE_MS: u64 = 3000;
/// off, native, native, off: a drift (the JIT still warming up, say)
/// weighs on both modes alike.
const JAVA_MODES: [&str; 4] = ["off", "native", "native", "off"];

pub struct Headline {
    /// Lua's server time per pair over the native one.
    pub server_time_ratio: f64,
    /// The same for the server's CPU time per pair (the filter included).
    pub server_cpu_ratio: f64,
    /// The lowest of these two ratios across the family's other pairs.
    pub family_server_time_ratio: Lowest,
    pub family_server_cpu_ratio: Lowest,
    /// GET and SET throughput and server CPU per request, module loaded and
    /// filter on, against no module (percent).
    pub get_set_change: Option<(f64, f64, f64)>,
    /// Redisson's cycles per second, native over Lua.
    pub java_ratio: Option<f64>,
}

/// The server main thread's CPU time so far, in µs (`INFO cpu`): what a
/// command costs the server in all, the filter included, and less shaken
/// than throughput when other work shares the cores.
fn cpu_usec(server: &Server) -> f64 {
    ["used_cpu_user_main_thread", "used_cpu_sys_main_thread"]
        .map(|f| server_info::field(server, "cpu", f))
        .iter()
        .sum::<f64>()
        * 1e6
}

fn set_mode(server: &Server, mode: &str) {
    let _: () =
        redis::cmd("CONFIG").arg(&["SET", "rlock.redisson-scripts", mode]).query(&mut server.connection()).unwrap();
}

/// The section's markdown and its headline figures.
pub fn run(server: &Server) -> (String, Headline) {
    let (lock_table, (server_time_ratio, server_cpu_ratio)) = lock_pair(server);
    let (family_table, (family_server_time_ratio, family_server_cpu_ratio)) = family_pairs(server);
    let (get_set_table, get_set_change) = get_set();
    let (java_table, java_ratio) = java(server);
    let text = format!(
        "### Redisson {VERSION}'s lock+unlock pair\n\n{LOCK_PAIR}\n{lock_table}\n\
         ### Redisson {VERSION}'s other lock-family pairs\n\n{FAMILY_PAIRS}\n{family_table}\n\
         ### The cost to every other command\n\n{GET_SET}\n{get_set_table}\n\
         ### End to end: Redisson on {JAVA_THREADS} threads\n\n{JAVA}\n{java_table}"
    );
    let headline = Headline {
        server_time_ratio,
        server_cpu_ratio,
        family_server_time_ratio,
        family_server_cpu_ratio,
        get_set_change,
        java_ratio,
    };
    (text, headline)
}

const LOCK_PAIR: &str = "\
Redisson's `tryLockInnerAsync` and `unlockInnerAsync` texts, read from its jar, sent as it sends
them: `EVALSHA` of the acquire (lease 30000, owner `uuid:thread`), then of the unlock with the
lock's channel, a fresh unlock latch key per call (32 hex digits, as Redisson's request ids),
`publish` and a 20000 ms latch. Redisson then deletes the latch key (a plain `DEL`, the same in
both modes, not counted here). Measured as in section 1 (fresh keys, 2 connections pipelining
100 pairs a batch; server time from `INFO commandstats`: `evalsha` for Lua, `rlock.acquire` +
`rlock.release` for the calls the filter rewrote), 60,000 pairs a row, each row on an emptied
database (`FLUSHALL`); after an unmeasured pass, the rows take turns three times and each figure
is the median of its three. The filter runs before the command, outside `commandstats`; server CPU (the
main thread's, from `INFO cpu`, over the row) and pairs/s include it, and the last row sends
directly the native commands the filter produces: the gap between the two native rows' CPU is
the filter's own work (matching, and replacing the call's arguments) and the longer request.
";

/// A command encoded for a lock name.
type Setup = fn(&[u8]) -> Vec<u8>;

/// One row of a comparison: a way of sending a pair, the filter mode it
/// runs with, and what the filter must have counted.
struct Row<'a> {
    mode: &'static str,
    style: Style<'a>,
    /// Each `INFO rlock` counter (`rlock_redisson_native_<family>`) the
    /// pair's scripts fall under, with the native commands it stands for,
    /// each called once a pair: with the filter `native` the counter grows
    /// by exactly their calls, one each per pair; otherwise not at all.
    counted: &'static [(&'static str, &'static [&'static str])],
    /// A command sent on every lock name before the row (after its
    /// `FLUSHALL`), outside what is measured.
    setup: Option<Setup>,
}

/// Measures `rows` as section 1 does (`batches` pipelined batches per
/// connection), each row on an emptied database (the latch keys pile up
/// otherwise): an unmeasured pass, then the rows in turn, PASSES times.
/// Checks that every call went the way its row says. Returns each row's
/// medians: server µs, server CPU µs per pair, pairs/s.
fn measure_rows(server: &Server, rows: &[Row], batches: usize) -> Vec<[f64; 3]> {
    let mut admin = server.connection();
    let pairs = (CONNECTIONS * BATCH * batches) as f64;
    let counter = |family: &str| server_info::field(server, "rlock", &format!("rlock_redisson_native_{family}"));
    let mut passes = vec![[vec![], vec![], vec![]]; rows.len()];
    for pass in 0..=PASSES {
        for (row, figures) in rows.iter().zip(&mut passes) {
            let _: () = redis::cmd("FLUSHALL").query(&mut admin).unwrap();
            if let Some(setup) = row.setup {
                set_up(server, setup);
            }
            set_mode(server, row.mode);
            let before: Vec<f64> = row.counted.iter().map(|(family, _)| counter(family)).collect();
            let cpu_before = cpu_usec(server);
            let measured = measure_batches(server, &row.style, batches);
            let cpu = (cpu_usec(server) - cpu_before) / pairs;
            // Every call went the way its row says: all rewritten, or none.
            for ((family, commands), before) in row.counted.iter().zip(before) {
                let rewritten = counter(family) - before;
                let calls: f64 = commands.iter().map(|c| server_info::command_stat(server, c, "calls")).sum();
                let native = row.mode == "native";
                let expected = if native { pairs * commands.len() as f64 } else { 0.0 };
                assert!(
                    rewritten == expected && (!native || calls == expected),
                    "{} (filter {}): {rewritten} calls counted as {family} natively, {calls} of {commands:?}, \
                     expected {expected}",
                    row.style.label,
                    row.mode
                );
            }
            if pass > 0 {
                for (figure, value) in figures.iter_mut().zip([measured.usec_per_pair, cpu, measured.pairs_per_sec]) {
                    figure.push(value);
                }
            }
        }
    }
    set_mode(server, "native");
    passes.into_iter().map(|row| row.map(|mut values| median(&mut values))).collect()
}

/// Sends `setup` of every lock name the measurement uses.
fn set_up(server: &Server, setup: Setup) {
    let mut connection = RawConnection::connect(server.port());
    for c in 0..CONNECTIONS {
        let batch: Vec<u8> = (0..BATCH).flat_map(|i| setup(&bench_key(c, i))).collect();
        connection.round_trip(&batch, BATCH);
    }
}

/// Loads `texts` into the script cache, as Redisson's first call does.
fn load(server: &Server, texts: &[&Vec<u8>]) {
    let mut admin = server.connection();
    for text in texts {
        let _: String = redis::cmd("SCRIPT").arg("LOAD").arg(text.as_slice()).query(&mut admin).unwrap();
    }
}

/// `EVALSHA sha numkeys keys... args...`.
fn evalsha(sha: &str, keys: &[&[u8]], args: &[&[u8]]) -> Vec<u8> {
    let numkeys = keys.len().to_string();
    encode(&[&[&b"EVALSHA"[..], sha.as_bytes(), numkeys.as_bytes()], keys, args].concat())
}

/// A fresh request id per call (32 hex digits, as Redisson's).
fn request_id(unique: u64) -> String {
    format!("{unique:032x}")
}

/// Redisson's pair with the filter on and off, and the native commands sent
/// directly. Returns the table and Lua's server time and CPU over native's.
fn lock_pair(server: &Server) -> (Table, (f64, f64)) {
    let texts = scripts(VERSION);
    let (acquire_sha, release_sha) = (sha1_hex(&texts.acquire), sha1_hex(&texts.release));
    load(server, &[&texts.acquire, &texts.release]);
    let lease = LEASE_MS.to_string();
    let latch_ms = rlock_protocol::DEFAULT_LATCH_MS.to_string();
    let (lease, latch_ms) = (lease.as_bytes(), latch_ms.as_bytes());
    let redisson_pair = |key: &[u8], unique: u64| {
        let (channel, latch) = (release_channel(key), unlock_latch_key(key, request_id(unique).as_bytes()));
        [
            evalsha(&acquire_sha, &[key], &[lease, OWNER]),
            evalsha(&release_sha, &[key, &channel, &latch], &[b"0", lease, OWNER, b"publish", latch_ms]),
        ]
        .concat()
    };
    const COUNTED: &[(&str, &[&str])] = &[("lock", &["rlock.acquire", "rlock.release"])];
    let rows = [
        Row {
            mode: "off",
            style: Style {
                label: "`EVALSHA`, filter `off` (Lua)",
                commands: &["evalsha"],
                replies: 2,
                pair: Box::new(redisson_pair),
            },
            counted: COUNTED,
            setup: None,
        },
        Row {
            mode: "native",
            style: Style {
                label: "`EVALSHA`, filter `native`",
                commands: &["rlock.acquire", "rlock.release"],
                replies: 2,
                pair: Box::new(redisson_pair),
            },
            counted: COUNTED,
            setup: None,
        },
        Row {
            mode: "off",
            style: Style {
                label: "`RLOCK.ACQUIRE` + `RLOCK.RELEASE … ID … PX … VIA publish` sent directly",
                commands: &["rlock.acquire", "rlock.release"],
                replies: 2,
                pair: Box::new(|key, unique| {
                    let request = request_id(unique);
                    [
                        encode(&[b"RLOCK.ACQUIRE", key, OWNER, lease]),
                        encode(&[
                            b"RLOCK.RELEASE",
                            key,
                            OWNER,
                            lease,
                            b"ID",
                            request.as_bytes(),
                            b"PX",
                            latch_ms,
                            b"VIA",
                            b"publish",
                        ]),
                    ]
                    .concat()
                }),
            },
            counted: COUNTED,
            setup: None,
        },
    ];
    let medians = measure_rows(server, &rows, BATCHES);
    let mut table = Table::new(&[
        "Redisson's lock+unlock",
        "server µs per pair",
        "Lua ÷ this",
        "server CPU µs per pair",
        "Lua ÷ this",
        "pairs/s pipelined",
        "this ÷ Lua",
    ]);
    let [lua_usec, lua_cpu, lua_rate] = medians[0];
    for (row, [usec, cpu, rate]) in rows.iter().zip(&medians) {
        table.row(vec![
            row.style.label.into(),
            format!("{usec:.2}"),
            ratio(lua_usec, *usec),
            format!("{cpu:.2}"),
            ratio(lua_cpu, *cpu),
            format!("{rate:.0}"),
            ratio(*rate, lua_rate),
        ]);
    }
    (table, (lua_usec / medians[1][0], lua_cpu / medians[1][1]))
}

const FAMILY_PAIRS: &str = "\
The other primitives' scripts, read from Redisson's jar and found by SHA-1, sent as Redisson sends
them (`EVALSHA`, the keys and channels it derives from the name, the owner above, lease 30000,
`publish`, a fresh unlock latch key per release with a 20000 ms latch), one pair per primitive on
fresh names: the fair lock's `lock()` (`tryLockInnerAsync` with Redisson's default fair wait,
300000 ms, and the caller's clock as `now`) and `unlock()`; the read lock's acquire and release;
the semaphore's `tryAcquire(1)` and `release(1)`, its key set to 1 permit before each row (a
plain `SET`, not counted); the count-down latch's `trySetCount(1)` and `countDown()` (which
deletes the key, so every pair starts from none); the fenced lock's `lockAndGetToken()` and the
unlock it shares with RLock. Measured as the rows above (same connections and batch size, each
row on an emptied database, an unmeasured pass, then three passes with the rows taking turns,
medians), 30,000 pairs a row. With the filter `native`, server time is that of the native
commands the calls became; every row checks that `INFO rlock`'s `rlock_redisson_native_<family>`
counters grew by exactly one per call with the filter `native`, and not at all with it `off`.
";

// Redisson 4.7.0's texts of each pair, by SHA-1.
const FAIR_LOCK_SHA: &str = "8f6ed299ffd259f0539c20f89253998c0777ea75";
const FAIR_UNLOCK_SHA: &str = "367f80bd2e300e411fb0936d9b601e5bcb3fd4b6";
const READ_LOCK_SHA: &str = "95553a6ff11176c18e71344e89d116b06fd6f753";
const READ_UNLOCK_SHA: &str = "6e1b10e11ac0a3ed8e902562ecd32ce01b553039";
const SEMAPHORE_TRY_ACQUIRE_SHA: &str = "c7dc9d189c1715465a31a06ddbc008585e0c20be";
const SEMAPHORE_RELEASE_SHA: &str = "ae27582488dd01f4e238cc0733a12146d410eb44";
const LATCH_TRY_SET_COUNT_SHA: &str = "2a52d54a6f35bc8af5e84a2930b2ca1aa2a15892";
const LATCH_COUNT_DOWN_SHA: &str = "38060fab26b0e7c5982a5cfd7ad542e44d3da19b";
const FENCED_LOCK_SHA: &str = "49babb5a1e6a0c5f188c2ae62b93b51cdfd63e45";

/// Pipelined batches per connection in each family row (half the lock
/// pair's): 10 rows over four passes stay within about half a minute.
const FAMILY_BATCHES: usize = 150;

/// One of the family's operation pairs.
struct OpPair<'a> {
    name: &'static str,
    /// The native commands the filter turns the pair into.
    commands: &'static [&'static str],
    counted: &'static [(&'static str, &'static [&'static str])],
    replies: usize,
    setup: Option<Setup>,
    #[allow(clippy::type_complexity)]
    pair: Box<dyn Fn(&[u8], u64) -> Vec<u8> + Sync + 'a>,
}

/// The lowest Lua ÷ native ratio across the family's pairs, and that pair.
pub type Lowest = (f64, &'static str);

/// The family's pairs, Lua and native. Returns the table and the lowest
/// server-time and server-CPU ratios.
fn family_pairs(server: &Server) -> (Table, (Lowest, Lowest)) {
    let text = |class: &str, shas: [&str; 2]| texts(VERSION, &[&format!("org/redisson/{class}")], shas);
    let fair = text("RedissonFairLock", [FAIR_LOCK_SHA, FAIR_UNLOCK_SHA]);
    let read = text("RedissonReadLock", [READ_LOCK_SHA, READ_UNLOCK_SHA]);
    let semaphore = text("RedissonSemaphore", [SEMAPHORE_TRY_ACQUIRE_SHA, SEMAPHORE_RELEASE_SHA]);
    let latch = text("RedissonCountDownLatch", [LATCH_TRY_SET_COUNT_SHA, LATCH_COUNT_DOWN_SHA]);
    let fenced = texts(VERSION, &["org/redisson/RedissonFencedLock"], [FENCED_LOCK_SHA]);
    let unlock = scripts(VERSION).release;
    let unlock_sha = sha1_hex(&unlock);
    load(server, &[&fair[0], &fair[1], &read[0], &read[1], &semaphore[0], &semaphore[1], &latch[0], &latch[1]]);
    load(server, &[&fenced[0], &unlock]);
    let lease = LEASE_MS.to_string();
    let latch_ms = rlock_protocol::DEFAULT_LATCH_MS.to_string();
    let wait = DEFAULT_FAIR_WAIT_MS.to_string();
    let (lease, latch_ms, wait) = (lease.as_bytes(), latch_ms.as_bytes(), wait.as_bytes());
    let latch_key = |key: &[u8], unique: u64| unlock_latch_key(key, request_id(unique).as_bytes());
    let pairs = [
        OpPair {
            name: "fair lock: `lock()` + `unlock()`",
            commands: &["rfair.acquire", "rfair.release"],
            counted: &[("fair", &["rfair.acquire", "rfair.release"])],
            replies: 2,
            setup: None,
            pair: Box::new(|key, unique| {
                let (queue, deadlines, channel) = (fair_queue_key(key), fair_timeout_key(key), release_channel(key));
                let now = now_ms().to_string();
                let now = now.as_bytes();
                [
                    evalsha(FAIR_LOCK_SHA, &[key, &queue, &deadlines], &[lease, OWNER, wait, now]),
                    evalsha(
                        FAIR_UNLOCK_SHA,
                        &[key, &queue, &deadlines, &channel, &latch_key(key, unique)],
                        &[b"0", lease, OWNER, now, b"publish", latch_ms],
                    ),
                ]
                .concat()
            }),
        },
        OpPair {
            name: "read lock: acquire + release",
            commands: &["rrw.acquire", "rrw.release"],
            counted: &[("rwlock", &["rrw.acquire", "rrw.release"])],
            replies: 2,
            setup: None,
            pair: Box::new(|key, unique| {
                let holds = rwlock_timeout_prefix(key, OWNER);
                [
                    evalsha(READ_LOCK_SHA, &[key, &holds], &[lease, OWNER, &rwlock_write_field(OWNER)]),
                    evalsha(
                        READ_UNLOCK_SHA,
                        &[key, &rwlock_channel(key), &holds, &rwlock_key_prefix(key), &latch_key(key, unique)],
                        &[b"0", OWNER, b"publish", latch_ms],
                    ),
                ]
                .concat()
            }),
        },
        OpPair {
            name: "semaphore: `tryAcquire()` + `release()`",
            commands: &["rsem.tryacquire", "rsem.release"],
            counted: &[("semaphore", &["rsem.tryacquire", "rsem.release"])],
            replies: 2,
            setup: Some(|key| encode(&[b"SET", key, b"1"])),
            pair: Box::new(|key, _| {
                [
                    evalsha(SEMAPHORE_TRY_ACQUIRE_SHA, &[key], &[b"1"]),
                    evalsha(SEMAPHORE_RELEASE_SHA, &[key, &semaphore_channel(key)], &[b"1", b"publish"]),
                ]
                .concat()
            }),
        },
        OpPair {
            name: "count-down latch: `trySetCount(1)` + `countDown()`",
            commands: &["rlatch.trysetcount", "rlatch.countdown"],
            counted: &[("latch", &["rlatch.trysetcount", "rlatch.countdown"])],
            replies: 2,
            setup: None,
            pair: Box::new(|key, _| {
                let channel = count_down_latch_channel(key);
                [
                    evalsha(LATCH_TRY_SET_COUNT_SHA, &[key, &channel], &[b"1", b"1", b"publish"]),
                    evalsha(LATCH_COUNT_DOWN_SHA, &[key, &channel], &[b"0", b"publish"]),
                ]
                .concat()
            }),
        },
        OpPair {
            name: "fenced lock: `lockAndGetToken()` + `unlock()` (RLock's)",
            commands: &["rfenced.acquire", "rlock.release"],
            counted: &[("fenced", &["rfenced.acquire"]), ("lock", &["rlock.release"])],
            // The acquire replies `[-1, token]`: three lines.
            replies: 4,
            setup: None,
            pair: Box::new(|key, unique| {
                let (channel, latch) = (release_channel(key), latch_key(key, unique));
                [
                    evalsha(FENCED_LOCK_SHA, &[key, &fenced_token_key(key)], &[lease, OWNER]),
                    evalsha(&unlock_sha, &[key, &channel, &latch], &[b"0", lease, OWNER, b"publish", latch_ms]),
                ]
                .concat()
            }),
        },
    ];
    let rows: Vec<Row> = pairs
        .iter()
        .flat_map(|op| {
            [("off", &["evalsha"][..]), ("native", op.commands)].map(|(mode, commands)| {
                let pair = &op.pair;
                Row {
                    mode,
                    style: Style {
                        label: op.name,
                        commands,
                        replies: op.replies,
                        pair: Box::new(move |k, u| pair(k, u)),
                    },
                    counted: op.counted,
                    setup: op.setup,
                }
            })
        })
        .collect();
    let medians = measure_rows(server, &rows, FAMILY_BATCHES);
    let mut table = Table::new(&[
        "Redisson's pair",
        "filter",
        "server µs per pair",
        "Lua ÷ this",
        "server CPU µs per pair",
        "Lua ÷ this",
        "pairs/s pipelined",
        "this ÷ Lua",
    ]);
    let (mut lowest_time, mut lowest_cpu): (Lowest, Lowest) = ((f64::INFINITY, ""), (f64::INFINITY, ""));
    for (op, [lua, native]) in pairs.iter().zip(medians.chunks(2).map(|m| [m[0], m[1]])) {
        let [lua_usec, lua_cpu, lua_rate] = lua;
        for (mode, [usec, cpu, rate]) in [("`off` (Lua)", lua), ("`native`", native)] {
            table.row(vec![
                op.name.into(),
                mode.into(),
                format!("{usec:.2}"),
                ratio(lua_usec, usec),
                format!("{cpu:.2}"),
                ratio(lua_cpu, cpu),
                format!("{rate:.0}"),
                ratio(rate, lua_rate),
            ]);
        }
        if lua_usec / native[0] < lowest_time.0 {
            lowest_time = (lua_usec / native[0], op.name);
        }
        if lua_cpu / native[1] < lowest_cpu.0 {
            lowest_cpu = (lua_cpu / native[1], op.name);
        }
    }
    (table, (lowest_time, lowest_cpu))
}

const GET_SET: &str = "\
`redis-benchmark -P 16 -t get,set -n 200000 --csv` (50 connections, 16 commands pipelined on
each) against two servers side by side: the module loaded with `redisson-scripts native` (its
filter sees every command), and the same server without the module. 7 rounds, each running both
servers (alternately first); the figures are each server's median over the rounds. Server CPU
is the main thread's (`INFO cpu`) over the run's 400,000 requests, connection set-up included.
";

/// Median GET and SET requests/s and server CPU per request on each
/// server; the changes with the module in percent.
fn get_set() -> (Table, Option<(f64, f64, f64)>) {
    let mut table = Table::new(&["server", "GET/s", "SET/s", "server CPU ns per request"]);
    if Command::new("redis-benchmark").arg("--version").output().is_err() {
        table.row(vec!["not run: redis-benchmark not installed".into(), "".into(), "".into(), "".into()]);
        return (table, None);
    }
    let with_module = Server::builder().module_arg("redisson-scripts").module_arg("native").start();
    let without = Server::builder().without_module().start();
    let servers = [("module loaded, filter `native`", &with_module), ("no module", &without)];
    let mut figures = [[vec![], vec![], vec![]], [vec![], vec![], vec![]]];
    for round in 0..ROUNDS {
        // A B, B A, A B, ...: neither server always goes first.
        for i in [round % 2, 1 - round % 2] {
            let cpu_before = cpu_usec(servers[i].1);
            let (get, set) = redis_benchmark(servers[i].1.port());
            let requests: f64 = REQUESTS.parse::<f64>().unwrap() * 2.0;
            let cpu_ns = (cpu_usec(servers[i].1) - cpu_before) * 1000.0 / requests;
            for (figure, value) in figures[i].iter_mut().zip([get, set, cpu_ns]) {
                figure.push(value);
            }
        }
    }
    let medians = figures.map(|server| server.map(|mut values| median(&mut values)));
    for ((label, _), [get, set, cpu]) in servers.iter().zip(&medians) {
        table.row(vec![label.to_string(), format!("{get:.0}"), format!("{set:.0}"), format!("{cpu:.0}")]);
    }
    let change: Vec<f64> = (0..3).map(|i| (medians[0][i] / medians[1][i] - 1.0) * 100.0).collect();
    table.row(vec![
        "module ÷ no module".into(),
        format!("{:+.2}%", change[0]),
        format!("{:+.2}%", change[1]),
        format!("{:+.2}%", change[2]),
    ]);
    (table, Some((change[0], change[1], change[2])))
}

/// One `redis-benchmark` run: (GET/s, SET/s).
fn redis_benchmark(port: u16) -> (f64, f64) {
    let output = Command::new("redis-benchmark")
        .args(["-p", &port.to_string(), "-P", "16", "-t", "get,set", "-n", REQUESTS, "--csv"])
        .output()
        .expect("run redis-benchmark");
    let csv = String::from_utf8_lossy(&output.stdout);
    let rate = |test: &str| {
        csv.lines()
            .find_map(|line| line.strip_prefix(&format!("\"{test}\",\"")))
            .and_then(|rest| rest.split('"').next())
            .and_then(|rps| rps.parse().ok())
            .unwrap_or_else(|| panic!("no {test} figure from redis-benchmark:\n{csv}"))
    };
    (rate("GET"), rate("SET"))
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

const JAVA: &str = "\
Redisson 4.7.0 (from Maven Central) in one JVM, `interop/java`'s `LockThroughputBench` run by
Maven against this section's server: 64 threads, each doing `lock()` + `unlock()` on a lock of its
own (uncontended: what is measured is the calls, not pub/sub waiting; each cycle is Redisson's
acquire script, its unlock script and the latch `DEL`, with the watchdog scheduled and cancelled),
default config (watchdog lease 30 s), 64 connections. After a 3 s warm-up, four 3 s phases in the
order `off`, `native`, `native`, `off` (the JVM sets the mode with `CONFIG SET`); each mode's
figure is the mean of its two phases. The JVM shares the machine's two cores with the server.
";

/// Redisson's cycles per second per mode, from the Java run; the native ÷ Lua ratio.
fn java(server: &Server) -> (Table, Option<f64>) {
    let mut table = Table::new(&["Redisson `lock()` + `unlock()`", "cycles/s", "this ÷ Lua"]);
    let project = concat!(env!("CARGO_MANIFEST_DIR"), "/../interop/java");
    let counts = || {
        [
            server_info::field(server, "rlock", "rlock_redisson_native_lock"),
            server_info::command_stat(server, "evalsha", "calls"),
        ]
    };
    let before = counts();
    let output = Command::new("mvn")
        .current_dir(project)
        .args([
            "-B",
            "-ntp",
            "-q",
            "-Dstyle.color=never",
            "test",
            "-Dtest=LockThroughputBench",
            "-Dsurefire.failIfNoSpecifiedTests=false",
        ])
        .arg(format!("-Dredisson.version={VERSION}"))
        .arg(format!("-Drlock.bench.address=redis://127.0.0.1:{}", server.port()))
        .arg(format!("-Drlock.bench.threads={JAVA_THREADS}"))
        .arg(format!("-Drlock.bench.ms={JAVA_PHASE_MS}"))
        .arg(format!("-Drlock.bench.modes={}", JAVA_MODES.join(",")))
        .output();
    let stdout = output.as_ref().map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
    let mean = |mode: &str| {
        let rates: Vec<f64> = stdout
            .lines()
            .filter_map(|line| line.split_once(&format!("rlock-bench redisson-cycles mode={mode} per_sec=")))
            .map(|(_, rate)| rate)
            .filter_map(|rate| rate.trim().parse().ok())
            .collect();
        (rates.len() == JAVA_MODES.iter().filter(|m| **m == mode).count())
            .then(|| rates.iter().sum::<f64>() / rates.len() as f64)
    };
    let (Some(lua), Some(native)) = (mean("off"), mean("native")) else {
        let why = match &output {
            Err(e) => format!("cannot run mvn: {e}"),
            Ok(o) => format!("mvn exited with {}; last output: {}", o.status, tail(&stdout)),
        };
        table.row(vec![format!("not measured: {why}"), "".into(), "".into()]);
        return (table, None);
    };
    set_mode(server, "native");
    // Both modes ran as they say: calls rewritten, and calls run as Lua.
    if counts().iter().zip(before).any(|(after, before)| *after <= before) {
        table.row(vec![
            "not measured: the run did not go through both the filter and Lua".into(),
            "".into(),
            "".into(),
        ]);
        return (table, None);
    }
    table.row(vec!["filter `native`".into(), format!("{native:.0}"), ratio(native, lua)]);
    table.row(vec!["filter `off` (Lua)".into(), format!("{lua:.0}"), "1.00×".into()]);
    (table, Some(native / lua))
}

/// The last lines of a failed run's output, on one line.
fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(5)..].join(" / ").replace('|', "\\|")
}
