//! Section 9's costs outside the lock family's calls: GET/SET beside the
//! filter, and Redisson itself on many threads.

use super::*;

/// The Java run: threads, and each phase's length (after a warm-up as long).
pub(super) const JAVA_THREADS: usize = 64;
const JAVA_PHASE_MS: u64 = 3000;
/// off, native, native, off: a drift (the JIT still warming up, say)
/// weighs on both modes alike.
const JAVA_MODES: [&str; 4] = ["off", "native", "native", "off"];

/// Interleaved redis-benchmark rounds per server, and requests per test.
const ROUNDS: usize = 7;
const REQUESTS: &str = "200000";

pub(super) const GET_SET: &str = "\
`redis-benchmark -P 16 -t get,set -n 200000 --csv` (50 connections, 16 commands pipelined on
each) against two servers side by side: the module loaded with `redisson-scripts native` (its
filter sees every command), and the same server without the module. 7 rounds, each running both
servers (alternately first); the figures are each server's median over the rounds. Server CPU
is the main thread's (`INFO cpu`) over the run's 400,000 requests, connection set-up included.
";

/// Median GET and SET requests/s and server CPU per request on each
/// server; the changes with the module in percent.
pub(super) fn get_set() -> (Table, Option<(f64, f64, f64)>) {
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

pub(super) const JAVA: &str = "\
Redisson 4.7.0 (from Maven Central) in one JVM, `interop/java`'s `LockThroughputBench` run by
Maven against this section's server: 64 threads, each doing `lock()` + `unlock()` on a lock of its
own (uncontended: what is measured is the calls, not pub/sub waiting; each cycle is Redisson's
acquire script, its unlock script and the latch `DEL`, with the watchdog scheduled and cancelled),
default config (watchdog lease 30 s), 64 connections. After a 3 s warm-up, four 3 s phases in the
order `off`, `native`, `native`, `off` (the JVM sets the mode with `CONFIG SET`); each mode's
figure is the mean of its two phases. The JVM shares the machine's two cores with the server.
";

/// Redisson's cycles per second per mode, from the Java run; the native ÷ Lua ratio.
pub(super) fn java(server: &Server) -> (Table, Option<f64>) {
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
            // The test JVM at full speed: the suite's runs compile with C1 only.
            "-Drlock.test.jvm=",
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
