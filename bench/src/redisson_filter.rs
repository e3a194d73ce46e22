//! Section 9: Redisson's scripts run natively (the command filter,
//! `rlock.redisson-scripts native`) against the same calls run as Lua
//! (`off`): server time of Redisson 4.7.0's lock+unlock pair sent as
//! Redisson sends it, what the filter costs every other command, and
//! Redisson itself end to end.

mod elsewhere;
mod family;
mod instructions;

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
const PASSES: usize = 5;
const BATCHES: usize = 300;

/// The figures of a pair's row, each with its ratio to Lua's.
const PAIR_COLUMNS: [&str; 6] =
    ["server µs per pair", "Lua ÷ this", "server CPU µs per pair", "Lua ÷ this", "pairs/s pipelined", "this ÷ Lua"];

/// The lowest Lua ÷ native ratio across the family's pairs, and that pair.
pub type Lowest = (f64, &'static str);

pub struct Headline {
    /// Lua's server time per pair over the native one.
    pub server_time_ratio: f64,
    /// The same for the server's CPU time per pair (the filter included).
    pub server_cpu_ratio: f64,
    /// The lowest of these two ratios across the family's other pairs.
    pub family_server_time_ratio: Lowest,
    pub family_server_cpu_ratio: Lowest,
    /// The lowest Lua ÷ native instructions per pair (callgrind) across
    /// every pair, and that pair: inside `call()`, and the whole server's;
    /// `None` where not counted.
    pub pair_instructions_ratio: Option<instructions::LowestCounts>,
    /// GET and SET throughput and server CPU per request, module loaded and
    /// filter on, against no module (percent).
    pub get_set_change: Option<(f64, f64, f64)>,
    /// Instructions per GET/SET request, the same against no module
    /// (percent), counted by callgrind.
    pub get_set_instructions: Option<f64>,
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

impl Headline {
    /// Only the pairs' instructions counted (`RLOCK_BENCH_COUNTS_ONLY`).
    fn counts_only(pair_instructions_ratio: Option<instructions::LowestCounts>) -> Self {
        Self {
            server_time_ratio: f64::NAN,
            server_cpu_ratio: f64::NAN,
            family_server_time_ratio: (f64::NAN, ""),
            family_server_cpu_ratio: (f64::NAN, ""),
            pair_instructions_ratio,
            get_set_change: None,
            get_set_instructions: None,
            java_ratio: None,
        }
    }
}

/// The section's markdown and its headline figures.
pub fn run(server: &Server) -> (String, Headline) {
    let (lock_table, (server_time_ratio, server_cpu_ratio), lock_counts) = lock_pair(server);
    let (family_table, (family_server_time_ratio, family_server_cpu_ratio), family_counts) =
        family::family_pairs(server);
    let counts = lock_counts.and_then(|lock| Ok([lock, family_counts?].concat()));
    let (pair_instructions_table, pair_instructions_ratio) = instructions::pair_instructions(counts);
    if instructions::counts_only().is_some() {
        return (format!("{pair_instructions_table}"), Headline::counts_only(pair_instructions_ratio));
    }
    let (get_set_table, get_set_change) = elsewhere::get_set();
    let (instructions_table, get_set_instructions) = instructions::get_set_instructions();
    let (java_table, java_ratio) = elsewhere::java(server);
    let text = format!(
        "### Redisson {VERSION}'s lock+unlock pair\n\n{LOCK_PAIR}\n{lock_table}\n\
         ### Redisson {VERSION}'s other lock-family pairs\n\n{}\n{family_table}\n\
         ### The pairs' instructions\n\n{}\n{pair_instructions_table}\n\
         ### The cost to every other command\n\n{}\n{get_set_table}\n{}\n{instructions_table}\n\
         ### End to end: Redisson on {} threads\n\n{}\n{java_table}",
        family::FAMILY_PAIRS,
        instructions::PAIR_INSTRUCTIONS,
        elsewhere::GET_SET,
        instructions::GET_SET_INSTRUCTIONS,
        elsewhere::JAVA_THREADS,
        elsewhere::JAVA,
    );
    let headline = Headline {
        server_time_ratio,
        server_cpu_ratio,
        family_server_time_ratio,
        family_server_cpu_ratio,
        pair_instructions_ratio,
        get_set_change,
        get_set_instructions,
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
database (`FLUSHALL`); after an unmeasured pass, the rows take turns five times and each figure
is the median of its five. The filter runs before the command, outside `commandstats`; server CPU (the
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
    /// `FLUSHALL`, in the row's mode), outside what is measured.
    setup: Option<Setup>,
}

/// Measures `rows` as section 1 does (`batches` pipelined batches per
/// connection), each row on an emptied database (the latch keys pile up
/// otherwise): an unmeasured pass, then the rows in turn, PASSES times.
/// Checks that every call went the way its row says. Returns each row's
/// medians: server µs, server CPU µs per pair, pairs/s.
fn measure_rows(server: &Server, rows: &[Row], batches: usize) -> Vec<[f64; 3]> {
    if instructions::counts_only().is_some() {
        return vec![[f64::NAN; 3]; rows.len()];
    }
    let mut admin = server.connection();
    let pairs = (CONNECTIONS * BATCH * batches) as f64;
    let counter = |family: &str| server_info::field(server, "rlock", &format!("rlock_redisson_native_{family}"));
    let mut passes = vec![[vec![], vec![], vec![]]; rows.len()];
    for pass in 0..=PASSES {
        for (row, figures) in rows.iter().zip(&mut passes) {
            let _: () = redis::cmd("FLUSHALL").query(&mut admin).unwrap();
            set_mode(server, row.mode);
            if let Some(setup) = row.setup {
                set_up(server, setup);
            }
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
fn lock_pair(server: &Server) -> (Table, (f64, f64), Result<instructions::PairCounts, String>) {
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
    let counts = instructions::count_rows(&rows[..2], &[&texts.acquire, &texts.release])
        .map(|counts| vec![("lock+unlock", [counts[0], counts[1]])]);
    let mut table = Table::new(&[&["Redisson's lock+unlock"], &PAIR_COLUMNS[..]].concat());
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
    (table, (lua_usec / medians[1][0], lua_cpu / medians[1][1]), counts)
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}
