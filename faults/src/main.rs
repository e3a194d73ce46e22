//! `rlock-faults [--runs N] [--only TEXT] [--fault kill|stop|partition|hostcrash|
//! slotmigration|atomicslotmigration|clientpause|restart] [--out FAULTS.md]`:
//! every configuration (or those whose label contains TEXT) under every
//! fault (or one), `N` runs each (default 3), as markdown on stdout and,
//! with `--out`, in that file. The partition and the host crash need root
//! (iptables), the atomic slot migration a server with `CLUSTER
//! MIGRATESLOTS` (Valkey 9); without them their columns are left out, and
//! the report says so. Ctrl-C stops the servers it started and heals the partition.

use rlock_faults::partition::Partition;
use rlock_faults::report::{markdown, Cell};
use rlock_faults::run::{run, Fault};
use rlock_faults::setups;
use rlock_faults::workload::{CLIENTS, LEASE, NAMES};
use testkit::{has_atomic_slot_migration, server_bin, Server, DOWN_AFTER_MS};

fn main() {
    let _run_dir = rlock_faults::interrupt::clean_up_on_interrupt();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| args.iter().position(|arg| arg == flag).and_then(|at| args.get(at + 1)).cloned();
    let runs: u64 = value("--runs").map_or(3, |runs| runs.parse().expect("--runs takes a number"));
    let partition = Partition::available();
    if let Err(why) = &partition {
        eprintln!("rlock-faults: no partition or host crash runs: iptables needs root ({why})");
    }
    let atomic = has_atomic_slot_migration(&mut Server::start().connection());
    if !atomic {
        eprintln!("rlock-faults: no atomic slot migration runs: {} has no CLUSTER MIGRATESLOTS", server_bin());
    }
    let only_fault = value("--fault");
    let faults: Vec<Fault> = Fault::ALL
        .into_iter()
        .filter(|fault| !fault.needs_iptables() || partition.is_ok())
        .filter(|fault| *fault != Fault::AtomicSlotMigration || atomic)
        .filter(|fault| only_fault.as_ref().is_none_or(|only| format!("{fault:?}").eq_ignore_ascii_case(only)))
        .collect();
    let only = value("--only");
    let setups: Vec<_> =
        setups::all().into_iter().filter(|setup| only.as_ref().is_none_or(|only| setup.label.contains(only))).collect();
    let mut cells = Vec::new();
    for setup in &setups {
        for fault in faults.iter().filter(|fault| fault.applies_to(setup.topology)) {
            let outcomes = (0..runs)
                .map(|seed| {
                    let outcome = run(setup, *fault, seed + 1);
                    eprintln!("{} / {} / run {}: {outcome:?}", setup.label, fault.label(), seed + 1);
                    outcome
                })
                .collect();
            cells.push(Cell { setup, fault: *fault, runs: outcomes });
        }
    }
    let mut report = preamble(runs, partition.err(), atomic);
    report.push_str(&markdown(&cells));
    print!("{report}");
    if let Some(path) = value("--out") {
        std::fs::write(&path, report).unwrap_or_else(|e| panic!("write {path}: {e}"));
    }
}

fn preamble(runs: u64, no_partition: Option<String>, atomic: bool) -> String {
    let server = std::process::Command::new(server_bin())
        .arg("--version")
        .output()
        .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_owned())
        .unwrap_or_default();
    let mut text = format!(
        "# Faults\n\nWritten by `make faults` (`faults/`). One machine, loopback: a primary with two \
         replicas and three Sentinels (down-after {DOWN_AFTER_MS} ms; the servers' settings are docs/safety.md's \
         \"Failover settings\": min-replicas-max-lag {lag} s, hz {hz}, and with lock-delay stall-ms {stall}), \
         {CLIENTS} clients on {NAMES} names, \
         {lease} s leases, holders of up to 5 s that renew every third of the lease and follow the \
         primary the Sentinels name. RedLock: {primaries} independent primaries, the same clients \
         holding a majority (within the lease less the time spent and 1% drift), renewing on all; \
         its fault kills two of them and starts them again at once: empty, unless the row has an AOF, which they reload (a kill -9 loses what Redis had not yet written to it: with `everysec`, a write it postpones while an fsync runs, up to 2 s). Each fault comes {warmup} s into a {run} s run \
         and lasts {lasts} s (SIGSTOP, partition). The host crash drops what the primary sends its replicas and \
         Sentinels for {in_flight} s, then kills it (its times count from the start of that second). \
         Cluster: {cluster_primaries} primaries with a replica each (node timeout 2000 ms), the clients \
         rlock-client's (they wait by pub/sub), or in the \"blocking waits\" row clients that wait on the server \
         (`RLOCK.ACQUIRE … WAIT … ID` through a redis-rs cluster connection); kill -9 and SIGSTOP ({stop_s} s) hit the primary of the first name's slot, and \
         the slot migration moves each name's slot to another primary, by MIGRATE as `redis-cli --cluster \
         reshard` does (each half moved for 0.5 s before and after its keys move) or, on a server that has it, \
         atomically (`CLUSTER MIGRATESLOTS`, Valkey 9); its times to the first grant count the names the fault hit. \
         Redisson (Java): real Redisson {redisson} in Sentinel mode, one JVM whose {CLIENTS} threads \
         take a name with `lockInterruptibly()` (its watchdog, `lockWatchdogTimeout` {lease} s, renews \
         every third), hold it up to 5 s and unlock; a section runs from `lock()`'s return to before \
         `unlock()` is sent; the client pause stops the whole JVM (SIGSTOP) past its lease; \
         which server took a write is not known (old: –). {runs} run(s) per cell; – where a fault does not \
         apply. Server: {server}.\n\n",
        lease = LEASE.as_secs(),
        lag = testkit::failover::MIN_REPLICAS_MAX_LAG_S,
        hz = testkit::failover::HZ,
        stall = testkit::failover::STALL_MS,
        warmup = rlock_faults::run::WARMUP.as_secs(),
        run = rlock_faults::run::RUN.as_secs(),
        lasts = rlock_faults::run::FAULT_LASTS.as_secs(),
        primaries = rlock_faults::redlock::PRIMARIES,
        in_flight = rlock_faults::run::IN_FLIGHT.as_secs(),
        cluster_primaries = rlock_faults::cluster::PRIMARIES,
        stop_s = rlock_faults::cluster::STOP_LASTS.as_secs(),
        redisson = rlock_faults::java_workload::REDISSON_VERSION,
    );
    if let Some(why) = no_partition {
        text.push_str(&format!("No partition or host crash runs: iptables needs root ({why}).\n\n"));
    }
    if !atomic {
        text.push_str("No atomic slot migration runs: the server has no `CLUSTER MIGRATESLOTS`.\n\n");
    }
    text
}
