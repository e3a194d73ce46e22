//! `make bench`: rlock against Redisson's scripts and SET-NX locks, side
//! by side in one run, on servers this program starts itself. Prints a
//! markdown report; `make bench` saves it as BENCHMARKS.md.

mod callgrind;
mod client_e2e;
mod fair_handoff;
mod family_cost;
mod handoff;
mod introspection;
mod memory;
mod raw;
mod redisson_filter;
mod report;
mod server_cost;
mod server_info;
mod synchronizers_cost;
mod watchdog_scale;

use testkit::Server;

fn server(aof: bool) -> Server {
    Server::builder().config("appendonly", if aof { "yes" } else { "no" }).config("appendfsync", "everysec").start()
}

fn appendonly(aof: bool) -> &'static str {
    if aof {
        "appendonly yes, appendfsync everysec"
    } else {
        "appendonly no"
    }
}

#[tokio::main]
async fn main() {
    println!("# rlock benchmarks\n");
    println!("Made by `make bench`: release builds, one redis-server per configuration, started by the");
    println!("bench program on loopback. Every ratio compares figures measured side by side in this run.\n");
    println!("## Machine\n\n{}", report::machine());

    // `rlock-bench cost family synchronizers handoff fair e2e redisson introspection` runs only those
    // sections (for development; `make bench` runs them all). `RLOCK_BENCH_COUNTS_ONLY=DIR` makes
    // `redisson` count only its pairs' instructions, keeping callgrind's dumps in DIR, and `e2e`
    // only its cycles' instructions.
    let only: Vec<String> = std::env::args().skip(1).collect();
    if only.iter().any(|s| s == "introspection") {
        introspection_section();
    }
    if !only.is_empty() {
        for aof in [false, true] {
            let server = server(aof);
            if only.iter().any(|s| s == "cost") {
                println!("{}", tokio::task::block_in_place(|| server_cost::run(&server)).0);
            }
            if only.iter().any(|s| s == "synchronizers") {
                for family in tokio::task::block_in_place(|| synchronizers_cost::run(&server)) {
                    println!("{}\n{}", family.name, family.table);
                }
            }
            if only.iter().any(|s| s == "e2e") {
                if std::env::var_os("RLOCK_BENCH_COUNTS_ONLY").is_none() {
                    let (table, latency, ratios) = client_e2e::run(&server).await;
                    println!("{table}\n{latency}\n- {}", ratios.summary());
                }
                if !aof {
                    print_counted_cycles();
                }
            }
            if !aof && only.iter().any(|s| s == "handoff") {
                println!("{}", handoff::run(&server).await.0);
            }
            if !aof && only.iter().any(|s| s == "redisson") {
                println!("{}", tokio::task::block_in_place(|| redisson_filter::run(&server)).0);
            }
            if !aof && only.iter().any(|s| s == "fair") {
                println!("{}", fair_handoff::run(&server).await);
            }
            if only.iter().any(|s| s == "family") {
                for family in tokio::task::block_in_place(|| family_cost::run(&server)) {
                    println!("{}\n{}", family.name, family.table);
                }
            }
        }
        return;
    }

    let (mut summary, mut e2e) = (vec![], vec![]);
    for aof in [false, true] {
        let server = server(aof);
        let (table, headline) = tokio::task::block_in_place(|| server_cost::run(&server));
        println!("## 1. Server cost per acquire+release pair ({})\n", appendonly(aof));
        println!("Fresh keys, {} pipelined connections; server time is the top-level commands' `usec` from", 2);
        println!("`INFO commandstats` (a script's inner commands are part of its time).\n");
        println!("{table}");
        summary.push((aof, headline));

        println!("## 2. End to end through rlock-client ({})\n", appendonly(aof));
        println!("{}", client_e2e::ABOUT);
        let (table, latency, ratios) = client_e2e::run(&server).await;
        println!("{table}\n{latency}");
        if !aof {
            print_counted_cycles();
        }
        e2e.push((aof, ratios));
    }

    // A server of its own: on Redis 7.0 its blocked waiters leave the
    // module's keyspace callback registered, which later sections would pay.
    let handoff_server = server(false);
    println!("## 3. Contended hand-off ({})\n", appendonly(false));
    println!("Waiters take turns on one lock, holding it 1 ms. Latency is from the holder starting its");
    println!("release to the next holder's acquire returning; a wait is from a waiter wanting the lock to");
    println!("holding it. \"Redisson-protocol scripts, pub/sub\" is Redisson's own waiting: its scripts, one");
    println!("subscription per client, each message letting one waiter try again. Polling retries");
    println!("RLOCK.ACQUIRE at a fixed interval (100 ms: redis-py's default; 200 ms: the Redlock libraries').\n");
    let (handoff, pubsub) = handoff::run(&handoff_server).await;
    println!("{handoff}");
    drop(handoff_server);
    // Section 8's, of its own for the same reason (started here, before
    // the name is taken by the next sections' server).
    let fair_server = server(false);

    let server = server(false);

    println!("## 4. Watchdog at scale ({})\n", appendonly(false));
    let (watchdog, rounds) = watchdog_scale::run(&server).await;
    println!("{watchdog}");

    println!("## 5. Memory per held lock ({})\n", appendonly(false));
    println!("{}", tokio::task::block_in_place(|| memory::run(&server)));

    println!("## 6. Fair and read-write locks: server cost per acquire+release pair ({})\n", appendonly(false));
    println!("Fresh keys; each release carries a fresh request id (the unlock latch), as clients send it.");
    println!("\"The same effects\" are the writes the commands replicate, as Redis commands in one");
    println!("`MULTI`/`EXEC` per acquire and per release: what an atomic equivalent costs at least.\n");
    let families = tokio::task::block_in_place(|| family_cost::run(&server));
    for family in &families {
        println!("### {}\n\n{}", family.name, family.table);
    }

    println!("## 7. Semaphores, count-down latch, fenced lock: server cost per operation ({})\n", appendonly(false));
    println!("Where one operation is measured, the step that sets its key up (`RPSEM.TRYSETPERMITS`, `RLATCH.TRYSETCOUNT` before a");
    println!("count-down, `RLOCK.RELEASE` after a fenced acquire) runs natively in every style and is not");
    println!("counted. \"The same effects\" are the writes the native command replicates, as Redis commands.\n");
    let synchronizers = tokio::task::block_in_place(|| synchronizers_cost::run(&server));
    for family in &synchronizers {
        println!("### {}\n\n{}", family.name, family.table);
    }

    println!("## 8. Fair lock hand-off ({})\n", appendonly(false));
    println!("{FAIR_HANDOFF}");
    println!("{}", fair_handoff::run(&fair_server).await);
    drop(fair_server);

    println!("## 9. Redisson's scripts, natively ({})\n", appendonly(false));
    // A server of its own: the section empties its database between rows.
    let (redisson, redisson_headline) = tokio::task::block_in_place(|| redisson_filter::run(&self::server(false)));
    println!("{redisson}");

    introspection_section();

    println!("## Targets\n");
    for (aof, (time_ratio, throughput_ratio)) in summary {
        println!(
            "- {}: server time per pair {time_ratio:.2}× lower than the scripts' (target 3.5×); pipelined throughput {throughput_ratio:.2}× (target 2.5×)",
            appendonly(aof)
        );
    }
    for (aof, ratios) in e2e {
        println!("- {}: {}", appendonly(aof), ratios.summary());
    }
    let worst_p50 = pubsub.p50s.iter().max().copied().unwrap_or_default();
    println!(
        "- p50 hand-off with pub/sub: at most {:.3} ms across waiter counts (target < 1 ms)",
        worst_p50.as_secs_f64() * 1000.0
    );
    let (waiters, calls) = pubsub.calls_per_handoff_at_most_waiters;
    println!(
        "- {waiters} waiters in one client: {calls:.1} acquire calls per hand-off (one wake-up per release: the taker, plus the releaser re-queuing)"
    );
    println!("- 10,000 watchdog locks: {rounds:.1} round trips per period (target ≤ 10)");
    for family in &families {
        println!(
            "- {}: server time {:.2}× lower than the scripts' (target 3×), {:.2}× the same effects in MULTI/EXEC (target ≤ 1.5×)",
            family.name, family.scripts_over_native, family.native_over_own
        );
    }
    for family in &synchronizers {
        println!(
            "- {}: server time {:.2}× lower than the scripts' (target 2.5×), {:.2}× the same effects as own commands (target ≤ 1.5×)",
            family.name, family.scripts_over_native, family.native_over_own
        );
    }
    println!(
        "- Redisson {}'s lock+unlock pair (`EVALSHA`): server time {:.2}× lower with the filter `native` than as Lua (target 2.3×); server CPU {:.2}× lower",
        testkit::redisson_lock::VERSION,
        redisson_headline.server_time_ratio,
        redisson_headline.server_cpu_ratio
    );
    let ((family_time, time_pair), (family_cpu, cpu_pair)) =
        (redisson_headline.family_server_time_ratio, redisson_headline.family_server_cpu_ratio);
    println!(
        "- Redisson {}'s fair, read, semaphore, latch and fenced pairs (`EVALSHA`): server time at least {family_time:.2}× lower with the filter `native` than as Lua (lowest: {time_pair}; target 2.3×); server CPU at least {family_cpu:.2}× lower (lowest: {cpu_pair})",
        testkit::redisson_lock::VERSION
    );
    if let Some(((call, call_pair), (whole, whole_pair))) = redisson_headline.pair_instructions_ratio {
        println!("- Redisson {}'s pairs, counted (callgrind): at least {call:.2}× fewer instructions per pair inside `call()` natively than as Lua (lowest: {call_pair}; target 2.3×); the whole server's, the filter included, at least {whole:.2}× fewer (lowest: {whole_pair}; target 2.0×)", testkit::redisson_lock::VERSION);
    }
    if let Some((get, set, cpu)) = redisson_headline.get_set_change {
        println!("- GET/SET with the module loaded and the filter on, against no module: throughput {get:+.2}% and {set:+.2}% (target within 1%), server CPU per request {cpu:+.2}%");
    }
    if let Some(change) = redisson_headline.get_set_instructions {
        println!("- GET/SET with the module loaded and the filter on, against no module: server instructions per request {change:+.2}% (callgrind)");
    }
    if let Some(java) = redisson_headline.java_ratio {
        println!(
            "- Redisson on 64 threads, lock/unlock cycles per second: {java:.2}× with the filter `native` against Lua"
        );
    }
    println!("{NOTES}");
}

/// Section 10: its servers are its own (10,000 connections; a million keys).
fn introspection_section() {
    println!("## 10. Introspection: the deadlock check and RLOCK.LIST ({})\n", appendonly(false));
    println!("{DEADLOCK_COST}");
    println!("{}", introspection::deadlock_cost());
    println!("{LIST_COST}");
    println!("{}", introspection::list_cost());
}

const DEADLOCK_COST: &str = "\
The deadlock check runs when a caller is about to block on the server. A probe acquire, refused,
blocks 1 ms and times out, 100 times a round over 3 rounds, with `rlock.deadlock-detection` on
and off in turn; server time is `INFO commandstats`' `usec` for `RLOCK.ACQUIRE` (the call and its
timeout's reply). The blocked callers wait on connections of their own: \"1 lock\" has each wait
for a lock whose holder waits for nothing, so the probe's check reads one lock's holders;
\"a chain\" has owner i hold lock i and wait for lock i+1, and the probe waits for lock 0, so its
check reads every lock of the chain.
";

const LIST_COST: &str = "\
`RLOCK.LIST` walks a keyspace of 1,000,000 keys, 990,000 strings (`DEBUG POPULATE`) and 10,000
held locks, from cursor 0 back to 0, beside the `SCAN` it runs inside. Server µs per call is
`INFO commandstats`' `usec` (a `RLOCK.LIST` call's includes its inner `SCAN`).
";

const FAIR_HANDOFF: &str = "\
Waiters take turns on one fair lock, each holding it 1 ms (Tokio rounds it to about 2 ms) and
queuing again at once; each row runs until 1,000 hand-offs or 4 s. Latency is from the holder
starting its release to the next holder's acquire returning. \"Longest free while queued\" is the
longest time from a release's reply to the next grant's reply while someone waited, a lock still
free at the end of the row included: a queue that stalls shows here, and in a row that ends at
4 s with few hand-offs. rlock-client's default waiting gets a blocking connection per waiter;
Redisson's loop is its `lock()`: the waiting acquire with its `fairLockWaitTimeout` (5 min) as
the wait, then, while refused, a sleep for the hint or until a message on the waiter's own
channel (one subscriber connection for all waiters, subscribed once up front). Everything runs
on the bench machine's clock, which is also the server's.
";

/// What the figures mean, from profiling (callgrind and perf on the server).
const NOTES: &str = "
## Notes

- **Server time.** An RLOCK command costs about as much as a plain command plus the effects it
  must replicate. Profiling the server under `RLOCK.ACQUIRE`/`RLOCK.RELEASE` shows about a third
  of each command inside `RM_Replicate` (HINCRBY and PEXPIREAT for an acquire, DEL and PUBLISH for
  a full release). Most of that is Redis's own work: it looks the command name up with
  `lookupCommandByCString` (an sds copy, a split on `|`, a case-insensitive hash) and allocates
  the argv, and every allocation pays jemalloc's `malloc_usable_size` for memory accounting.
  The module's own code is under 2% of server samples. Replicating absolute expiries and every
  effect is a correctness requirement, so on Redis 7.0 the pair stays near 3× cheaper than the
  scripts, about as cheap as `SET NX PX` with a compare-and-delete script, which replicates
  less (no hash, no publish) and has no reentrancy. Counted with callgrind over 5,000 read-lock
  pairs (appendonly no, no replica): the two commands run about 61,000 instructions a pair, 30%
  of them in `RM_Replicate` (7 calls, about 2,700 instructions each, half of that the command
  name lookup). With no replica and no AOF, Redis then drops what was replicated; its own
  commands skip that work (they carry their command entry, and `call()` asks first whether
  anything will be propagated), which is most of the gap to the \"same effects\" rows (for the
  semaphore pair, 45% of its instructions). The module cannot skip it when nobody listens:
  `RM_Replicate` is also what counts its writes as changes for RDB save points. Routing
  the module's own heap to the system allocator instead of Redis's saved 3.5%; not done, as
  Redis would then not count that memory.
- **Redisson's scripts, natively.** The rewrite adds nothing to a command's own time: the
  rewritten pair costs in `commandstats` what the native commands sent directly cost (section
  9's last row, and 7.49 against 7.45 µs a pair in a separate check), so its ratio to Lua is the
  native commands' for Redisson's effects, which include the unlock latch (a key written,
  expired, replicated and announced at every release; section 1's pair has none). Counted with
  callgrind over 10,000 of Redisson 4.7.0's lock+unlock pairs: 43,400 instructions a pair
  natively (47,800 before the acquire stopped reading what a short reply does not need and
  the replicated integers, derived keys and counts stopped being made anew), 99,800 as Lua
  (2.3×); five `RM_Replicate` calls take about 12,000 of the native pair's, half of that the
  command-name lookup the scripts' `redis.call` does not pay (no plain Redis command does two
  of them at once with an absolute expiry). Inside `call()`, which `commandstats` times, the
  pair went from 37,900 to 33,600 instructions against Lua's 86,200: section 9's ratio went
  from 2.14× to 2.41×. The filter's work on a known call (matching it, making the native arguments,
  Redis's `ArgReplace`) is about 5,400 instructions, outside `commandstats` and inside the CPU
  column. On every other command the filter costs Redis's dispatch to module filters
  (`moduleCallCommandFilters`: a context built and the filter list walked, about 50
  instructions more than with no filter registered) and the callback (about 30: the argument
  count and the command name's length), against about 4,000 instructions a pipelined GET or SET
  costs in all: Redis's own share alone is over 1% (the callgrind table), so no command filter
  can stay within 1% of a CPU-bound server on Redis 7.0. With the filter `off`, no filter is
  registered, and the dispatch costs what it costs without the module (19 instructions); that
  row still counted 2.5% more instructions in all than no module in the last run, for reasons
  not found. The callgrind count moves by about ±1% from run to run (Redis's cron work follows
  the wall clock: the filter-`off` row was above the `native` one in an earlier run); timed
  throughput on two shared cores moves by more than that.
- **The family's pairs through the filter.** Counted by hand with callgrind (not part of
  `make bench`) over 5,000 pairs each (section 9's calls, filter `native`; instructions inside
  `call()`, which `commandstats` times,
  per pair, before and after the allocations below were cut; Lua's in brackets): semaphore 21,500
  to 18,400–18,700 (40,500), count-down latch 27,700 to 24,700–25,200 (48,200), read lock 69,000
  to 67,700–68,000 (135,300), fenced lock 44,500 to 44,200–44,400 (97,500); the fair lock (45,300;
  129,200) and RLock (33,000; 85,700) are unchanged. Every Rust heap allocation in the module costs
  about 190 instructions (RM_Alloc and RM_Free each pay jemalloc's `malloc_usable_size`): a counter
  is now parsed where the key holds it, the open keys, channels and HSET pairs are kept inline, a
  publish reuses the channel string its ACL check made, and the semaphore, latch and read-write
  lock borrow their name. What is left is mostly Redis's: in the semaphore pair, three
  `RM_Replicate` calls take about 7,000 (4,600 of it the command-name lookup), the caller's user
  for a channel's ACL check about 760 a command, and the first read of a value `SET` stored as a
  shared integer about 1,100 (`RM_StringDMA` copies it). The latch, read and fenced pairs stay
  below 2.3× (2.04×, 2.03× and 2.20× in the last run) for the same kinds of work: the latch
  checks its channel's ACL in both commands; the
  read lock opens and checks derived keys, reads its hash with `RM_ScanKey` twice and replicates
  seven effects. The handlers' argument `Vec` (about 1,000 instructions a pair: each argument
  retained and freed) is left as it is: removing it changes every command's signature. The
  filter's own work (11,600 instructions a semaphore pair, 14,800 a lock pair, outside
  `commandstats`) is unchanged.
- **Noise.** On a quiet VM, throughput figures vary by about ±5% from run to run (server time
  less), far more when other work shares the two cores; compare ratios within one report
  rather than across reports.
- **End to end.** The bare script loop is two round trips per cycle and nothing else.
  rlock-client does more per cycle, for safety: each release carries Redisson's unlock latch
  (the module also writes a latch key, and the client deletes it after the reply) so that a
  release whose reply was lost can be retried without dropping a second level; each plain
  acquire names the owner's count (`HOLDS n`), so that one whose reply was lost can be sent
  again and get its first outcome with nothing written; each acquire and release runs to its
  end even when its caller is cancelled; and every hold is tracked for the watchdog and the
  lost signal. The last two columns are the ceilings: \"bare native\" sends `RLOCK.ACQUIRE`
  and `RLOCK.RELEASE` with nothing else, \"client's commands\" sends exactly what rlock-client
  sends (`HOLDS 0` acquires with the short reply, latched releases, a `DEL` of the latch keys
  every 16 cycles) with no client logic at all. rlock-client stays close to the second; the gap
  between the two ceilings is the price of the latch (a key written, replicated, announced and
  deleted per cycle). At 1 task no client can be much faster than the script loop: the cycle
  is two loopback round trips and the client's own work, which the script loop pays too, and
  the scripts' whole server time is under a fifth of it. On this 2-core machine the client
  process shares the cores with the server; figures are medians of 3 interleaved rounds, and
  still vary by ±20%.
- **Hand-off.** Pub/sub waiting hands the lock over in a fraction of a millisecond; polling
  costs about the polling interval. As in Redisson, a release message wakes one waiter per
  client, so acquire calls per hand-off stay flat as waiters grow within one client: the
  taker's call, plus the releaser's two refused calls as it queues again (before and after
  subscribing). Waiters in different clients each wake at every release (\"a client per
  waiter\"): at 64 waiters every hand-off costs 65 acquire calls, and arrival order is lost.
  The blocking FIFO grants the lock on the server to the longest waiter: one call per hand-off
  for a bare blocking waiter, two for rlock-client's blocking mode (its first try does not
  block). Hand-offs per second are bounded by the 1 ms critical section (Tokio's timer rounds
  it to about 2 ms, so at most about 500/s), so every waiting mode that hands over in well
  under a millisecond shows about the same rate, and no mode can reach 3× pub/sub's rate here;
  fairness is the longest wait over the mean.
- **Watchdog.** All of a client's watchdog locks are renewed in one pipelined round trip per
  period (a third of the watchdog timeout).
- **Introspection.** The deadlock check follows the owners' waits from the new wait through an
  index, so callers blocked elsewhere cost it nothing but their share of a busier server (the
  \"1 lock\" rows: a few µs, within the noise of a server holding 10,000 blocked connections).
  It reads the holders of every lock it reaches, about 4 µs a lock (a key string, the ACL check
  of `RLOCK.INSPECT` on it, the hash's fields): a chain of 10,000 waits costs 40 ms, once, for
  the caller that would extend it. Chains that long are pathological; a check that stopped
  early would miss cycles. `RLOCK.LIST` runs `SCAN` through `RM_Call`, whose reply is copied,
  and looks each key up once (its type; a string's value, and a permit set's existence);
  lock-family keys alone are inspected. Over keys that are mostly not locks a step costs about
  twice the `SCAN` step (COUNT 1000), 2.5× at COUNT 10 where `RM_Call`'s fixed cost weighs.
- **Fair and read-write locks.** Their commands touch keys derived from the name (the fair
  lock's queue and deadlines, each read hold's timeout key, the unlock latch): each costs a key
  string, an ACL check and a key lookup, and every write replicates its own Redis command
  (`RM_Replicate` looks the command up by name and copies its arguments each time). The
  `MULTI`/`EXEC` rows only write: they neither read the queue nor check the ACL of derived keys,
  so they are a floor rather than an equivalent. The scripts run the same reads as Lua calls.
";

/// Section 2's cycles counted by callgrind (left out, saying why, where
/// valgrind is missing).
fn print_counted_cycles() {
    println!("{}", client_e2e::COUNTED_ABOUT);
    match tokio::task::block_in_place(client_e2e::count) {
        Ok((loops, parts)) => println!("{loops}\n{parts}"),
        Err(why) => println!("Not counted: {why}\n"),
    }
}
