//! Section 9: Redisson's scripts run natively (the command filter,
//! `rlock.redisson-scripts native`) against the same calls run as Lua
//! (`off`): server time of Redisson 4.7.0's lock+unlock pair sent as
//! Redisson sends it, what the filter costs every other command, and
//! Redisson itself end to end.

use crate::raw::encode;
use crate::report::{ratio, Table};
use crate::server_cost::{measure_batches, Style, BATCH, CONNECTIONS, LEASE_MS, OWNER};
use crate::server_info;
use std::process::Command;
use testkit::redisson_lock::{scripts, sha1_hex, VERSION};
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
    let (get_set_table, get_set_change) = get_set();
    let (java_table, java_ratio) = java(server);
    let text = format!(
        "### Redisson {VERSION}'s lock+unlock pair\n\n{LOCK_PAIR}\n{lock_table}\n\
         ### The cost to every other command\n\n{GET_SET}\n{get_set_table}\n\
         ### End to end: Redisson on {JAVA_THREADS} threads\n\n{JAVA}\n{java_table}"
    );
    (text, Headline { server_time_ratio, server_cpu_ratio, get_set_change, java_ratio })
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

/// Redisson's pair with the filter on and off, and the native commands sent
/// directly. Returns the table and Lua's server time and CPU over native's.
fn lock_pair(server: &Server) -> (Table, (f64, f64)) {
    let texts = scripts(VERSION);
    let (acquire_sha, release_sha) = (sha1_hex(&texts.acquire), sha1_hex(&texts.release));
    let mut admin = server.connection();
    for text in [&texts.acquire, &texts.release] {
        let _: String = redis::cmd("SCRIPT").arg("LOAD").arg(text.as_slice()).query(&mut admin).unwrap();
    }
    let lease = LEASE_MS.to_string();
    let latch_ms = rlock_protocol::DEFAULT_LATCH_MS.to_string();
    let (lease, latch_ms) = (lease.as_bytes(), latch_ms.as_bytes());
    let redisson_pair = |key: &[u8], unique: u64| {
        let (channel, request) = (release_channel(key), format!("{unique:032x}"));
        let latch = unlock_latch_key(key, request.as_bytes());
        [
            encode(&[b"EVALSHA", acquire_sha.as_bytes(), b"1", key, lease, OWNER]),
            encode(&[
                b"EVALSHA",
                release_sha.as_bytes(),
                b"3",
                key,
                &channel,
                &latch,
                b"0",
                lease,
                OWNER,
                b"publish",
                latch_ms,
            ]),
        ]
        .concat()
    };
    let styles = [
        (
            "off",
            Style {
                label: "`EVALSHA`, filter `off` (Lua)",
                commands: &["evalsha"],
                replies: 2,
                pair: Box::new(redisson_pair),
            },
        ),
        (
            "native",
            Style {
                label: "`EVALSHA`, filter `native`",
                commands: &["rlock.acquire", "rlock.release"],
                replies: 2,
                pair: Box::new(redisson_pair),
            },
        ),
        (
            "off",
            Style {
                label: "`RLOCK.ACQUIRE` + `RLOCK.RELEASE … ID … PX … VIA publish` sent directly",
                commands: &["rlock.acquire", "rlock.release"],
                replies: 2,
                pair: Box::new(|key, unique| {
                    let request = format!("{unique:032x}");
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
        ),
    ];
    // An unmeasured warm-up, then the rows in turn, PASSES times, each on an
    // emptied database (the latch keys pile up otherwise).
    let mut passes = vec![[vec![], vec![], vec![]]; styles.len()];
    for pass in 0..=PASSES {
        for ((mode, style), figures) in styles.iter().zip(&mut passes) {
            let _: () = redis::cmd("FLUSHALL").query(&mut admin).unwrap();
            set_mode(server, mode);
            let native_before = server_info::field(server, "rlock", "rlock_redisson_native_lock");
            let cpu_before = cpu_usec(server);
            let measured = measure_batches(server, style, BATCHES);
            let cpu = (cpu_usec(server) - cpu_before) / (CONNECTIONS * BATCH * BATCHES) as f64;
            // Every call went the way its row says: all rewritten, or none.
            let rewritten = server_info::field(server, "rlock", "rlock_redisson_native_lock") - native_before;
            let native_calls: f64 =
                ["rlock.acquire", "rlock.release"].map(|c| server_info::command_stat(server, c, "calls")).iter().sum();
            assert_eq!(rewritten, if *mode == "native" { native_calls } else { 0.0 }, "{}", style.label);
            if pass > 0 {
                for (figure, value) in figures.iter_mut().zip([measured.usec_per_pair, cpu, measured.pairs_per_sec]) {
                    figure.push(value);
                }
            }
        }
    }
    set_mode(server, "native");
    let mut table = Table::new(&[
        "Redisson's lock+unlock",
        "server µs per pair",
        "Lua ÷ this",
        "server CPU µs per pair",
        "Lua ÷ this",
        "pairs/s pipelined",
        "this ÷ Lua",
    ]);
    let medians: Vec<[f64; 3]> = passes.into_iter().map(|row| row.map(|mut values| median(&mut values))).collect();
    let [lua_usec, lua_cpu, lua_rate] = medians[0];
    for ((_, style), [usec, cpu, rate]) in styles.iter().zip(&medians) {
        table.row(vec![
            style.label.into(),
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
