//! What the filter costs every other command, counted rather than timed:
//! throughput on two shared cores varies by a few percent from run to
//! run, more than the effect asked about (1%). Callgrind counts the
//! server's instructions per request, the same from run to run (but for
//! its cron work, which follows the wall clock), and names where they go.

use super::{load, set_mode, set_up, Lowest, Row};
use crate::callgrind::{figure, Counted};
use crate::report::{ratio, Table};
use crate::server_cost::{send_batches, BATCH, CONNECTIONS};
use std::process::{Command, Stdio};
use testkit::Server;

/// GET and SET requests each, after a warm-up outside the count.
const REQUESTS: u64 = 20_000;
const WARM_UP: &str = "2000";

pub(super) const GET_SET_INSTRUCTIONS: &str = "\
The same GET/SET load, 20,000 requests of each (`-P 16`, 50 connections, after a warm-up), on a
server run under callgrind (`valgrind --tool=callgrind`, counting from the end of the warm-up):
instructions the server ran per request, all threads, connection set-up included. Three servers:
without the module, with it and the filter `off` (its commands registered; no filter is
registered while the setting is `off`), with it and the filter `native`. The last two columns
split out the filter: Redis's own dispatch to module filters (`moduleCallCommandFilters`, the
callback included), and the module's callback alone. A GET or SET never reaches the script lookup: the callback returns once it has
counted the arguments.
";

pub(super) const PAIR_INSTRUCTIONS: &str = "\
The pairs above counted rather than timed (server time on two shared cores moves by several
percent from run to run): each row's calls on a server of its own run under callgrind, 2,000
pairs (2 connections, 10 pipelined batches of 100) after an unmeasured batch, each on an emptied
database with the row's setup. Two counts per pair: the instructions inside `call()` (what
`commandstats` times, so the filter's own work is outside, as in the server µs column), and
the whole server's (every instruction of every thread while the batches ran: reading and
parsing the requests, the filter, the command, the replies, the two connections' set-up and
the server's timers), as the server CPU column but counted. Of the whole server's, natively,
the command filters' (`moduleCallCommandFilters`: Redis's dispatch and rlock's callback, which
matches the script, rewrites the call and frees the script's own arguments, such as its SHA-1
and key count, that Lua frees after the command), and the ratio were they free: the most any
filter could reach.
";

/// Where to keep the pairs' callgrind dumps, when the section is to count
/// only them (for development: `RLOCK_BENCH_COUNTS_ONLY=DIR rlock-bench
/// redisson` skips the timed rows, the GET/SET load and Redisson's run).
pub(super) fn counts_only() -> Option<std::path::PathBuf> {
    std::env::var_os("RLOCK_BENCH_COUNTS_ONLY").map(Into::into)
}

/// Pipelined batches per connection in a counted row, after one unmeasured.
const COUNTED_BATCHES: usize = 10;

/// One row's instructions per pair: inside `call()`, the whole server's,
/// and of these the command filters' (Redis's dispatch to them, rlock's
/// callback included; 0 with the filter `off`).
#[derive(Debug, Clone, Copy)]
pub(super) struct RowCount {
    pub call: f64,
    pub whole: f64,
    pub filter: f64,
}

/// Instructions per pair, as Lua and natively, by pair.
pub(super) type PairCounts = Vec<(&'static str, [RowCount; 2])>;

/// The lowest Lua ÷ native ratios across the pairs: inside `call()`, and
/// the whole server's.
pub(super) type LowestCounts = (Lowest, Lowest);

/// Instructions per pair, by row, on a server of its own under callgrind
/// with `texts` in its script cache.
pub(super) fn count_rows(rows: &[Row], texts: &[&Vec<u8>]) -> Result<Vec<RowCount>, String> {
    let mut counted = Counted::start(Some("native"))?;
    load(&counted.server, texts);
    let pairs = (CONNECTIONS * BATCH * COUNTED_BATCHES) as f64;
    rows.iter()
        .map(|row| {
            // Emptied before each run: the warm-up's request ids come again.
            let prepare = |server: &Server| {
                let _: () = redis::cmd("FLUSHALL").query(&mut server.connection()).unwrap();
                if let Some(setup) = row.setup {
                    set_up(server, setup);
                }
            };
            set_mode(&counted.server, row.mode);
            prepare(&counted.server);
            send_batches(&counted.server, &row.style, 1);
            prepare(&counted.server);
            let (annotated, ()) = counted.count(|server| send_batches(server, &row.style, COUNTED_BATCHES))?;
            if let Some(dir) = counts_only() {
                let name = format!("{}-{}.out", row.style.label.replace(|c: char| !c.is_alphanumeric(), "_"), row.mode);
                std::fs::copy(counted.last_dump()?, dir.join(name)).map_err(|e| e.to_string())?;
            }
            let call = figure(&annotated, "???:call [").ok_or("no call() in the dump")?;
            let whole = figure(&annotated, "PROGRAM TOTALS").ok_or("no totals in the dump")?;
            let filter = figure(&annotated, "moduleCallCommandFilters").unwrap_or(0.0);
            Ok(RowCount { call: call / pairs, whole: whole / pairs, filter: filter / pairs })
        })
        .collect()
}

/// The table of `counts`, and the lowest Lua ÷ native ratios.
pub(super) fn pair_instructions(counts: Result<PairCounts, String>) -> (Table, Option<LowestCounts>) {
    let mut table = Table::new(&[
        "Redisson's pair",
        "inside `call()`, Lua",
        "natively",
        "Lua ÷ native",
        "whole server, Lua",
        "natively",
        "whole server Lua ÷ native",
        "of which the filter, natively",
        "Lua ÷ native without it",
    ]);
    let counts = match counts {
        Ok(counts) => counts,
        Err(why) => {
            table.row([vec![format!("not counted: {why}")], vec!["".into(); 8]].concat());
            return (table, None);
        }
    };
    let lower = |lowest: &mut Option<Lowest>, ratio: f64, name| {
        if lowest.is_none_or(|(low, _)| ratio < low) {
            *lowest = Some((ratio, name));
        }
    };
    let (mut call, mut whole) = (None, None);
    for (name, [lua, native]) in counts {
        table.row(vec![
            name.into(),
            format!("{:.0}", lua.call),
            format!("{:.0}", native.call),
            ratio(lua.call, native.call),
            format!("{:.0}", lua.whole),
            format!("{:.0}", native.whole),
            ratio(lua.whole, native.whole),
            format!("{:.0}", native.filter),
            ratio(lua.whole, native.whole - native.filter),
        ]);
        lower(&mut call, lua.call / native.call, name);
        lower(&mut whole, lua.whole / native.whole, name);
    }
    (table, call.zip(whole))
}

/// Counted figures for one server.
struct Count {
    per_request: f64,
    /// `None` where the symbol is not in the profile (inlined, stripped).
    dispatch: Option<f64>,
    callback: Option<f64>,
}

/// The table, and the module's change in instructions per request with
/// the filter `native` (percent) against no module.
pub(super) fn get_set_instructions() -> (Table, Option<f64>) {
    let mut table = Table::new(&[
        "server",
        "instructions per request",
        "against no module",
        "filter dispatch per request",
        "of which rlock's callback",
    ]);
    let servers: [(&str, Option<&str>); 3] = [
        ("no module", None),
        ("module loaded, filter `off`", Some("off")),
        ("module loaded, filter `native`", Some("native")),
    ];
    let mut counts = Vec::new();
    for (label, mode) in servers {
        match count(mode) {
            Ok(found) => counts.push((label, found)),
            Err(why) => {
                table.row(vec![format!("not counted: {why}"), "".into(), "".into(), "".into(), "".into()]);
                return (table, None);
            }
        }
    }
    let base = counts[0].1.per_request;
    for (label, found) in &counts {
        table.row(vec![
            label.to_string(),
            format!("{:.0}", found.per_request),
            format!("{:+.2}%", (found.per_request / base - 1.0) * 100.0),
            found.dispatch.map_or("n/a".to_owned(), |count| format!("{count:.0}")),
            found.callback.map_or("n/a".to_owned(), |count| format!("{count:.0}")),
        ]);
    }
    (table, Some((counts[2].1.per_request / base - 1.0) * 100.0))
}

fn count(mode: Option<&str>) -> Result<Count, String> {
    let mut counted = Counted::start(mode)?;
    benchmark(counted.server.port(), WARM_UP)?;
    let (annotated, sent) = counted.count(|server| benchmark(server.port(), &REQUESTS.to_string()))?;
    sent?;
    let requests = (2 * REQUESTS) as f64;
    let total = figure(&annotated, "PROGRAM TOTALS").ok_or("no totals in the dump")?;
    Ok(Count {
        per_request: total / requests,
        dispatch: figure(&annotated, "moduleCallCommandFilters").map(|count| count / requests),
        callback: figure(&annotated, "rlock::redisson::filter::filter").map(|count| count / requests),
    })
}

fn benchmark(port: u16, requests: &str) -> Result<(), String> {
    let status = Command::new("redis-benchmark")
        .args(["-p", &port.to_string(), "-P", "16", "-t", "get,set", "-n", requests, "-q"])
        .stdout(Stdio::null())
        .status()
        .map_err(|e| format!("cannot run redis-benchmark: {e}"))?;
    status.success().then_some(()).ok_or_else(|| format!("redis-benchmark exited with {status}"))
}
