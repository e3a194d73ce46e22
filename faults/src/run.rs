//! One run: a fresh topology, the clients, one fault, and what the
//! checker counts.

use crate::checker::{overlaps, stuck_waits, Overlaps};
use crate::client_workload;
use crate::partition::{wait_for, Partition};
use crate::redlock;
use crate::workload::{client, Protocol, Section, Shared, CLIENTS};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};
use testkit::{primary_named_by, SentinelGroup, Server, DOWN_AFTER_MS};

/// The fault a run injects, two seconds into the workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// kill -9 of the primary.
    Kill,
    /// SIGSTOP of the primary for longer than the failover takes, then SIGCONT.
    Stop,
    /// The primary cut off from its replicas and Sentinels, not from its
    /// clients, for as long; then healed.
    Partition,
    /// A holder pauses past its lease (a GC pause, a SIGSTOP of the client)
    /// and writes when it wakes, without looking at the time. No failover.
    ClientPause,
    /// RedLock: kill -9 of a minority of the primaries, started again at
    /// once: without persistence they come back empty, with an AOF they
    /// reload it.
    Restart,
}

impl Fault {
    pub const ALL: [Fault; 5] = [Fault::Kill, Fault::Stop, Fault::Partition, Fault::ClientPause, Fault::Restart];

    pub fn label(self) -> &'static str {
        match self {
            Fault::Kill => "kill -9",
            Fault::Stop => "SIGSTOP",
            Fault::Partition => "partition",
            Fault::ClientPause => "client pause",
            Fault::Restart => "kill -9 and restart",
        }
    }

    /// A restart is RedLock's fault; the others are
    /// the Sentinel group's.
    pub fn applies_to(self, topology: Topology) -> bool {
        (self == Fault::Restart) == (topology == Topology::RedLock)
    }
}

/// The servers a run starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Topology {
    /// A primary, two replicas and three Sentinels; the clients follow the
    /// primary the Sentinels name.
    Sentinel,
    /// Independent primaries, as many as [`redlock::PRIMARIES`]; the
    /// clients hold a majority.
    RedLock,
}

/// The clients a run drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// Each client sends the module's commands itself (see [`Protocol`]).
    Commands(Protocol),
    /// Each client is an rlock-client `Client` on the Sentinels: its own
    /// failover handling, watchdog, waits and `lost()`.
    RlockClient,
}

/// A configuration of the servers and the clients.
#[derive(Debug, Clone)]
pub struct Setup {
    pub label: &'static str,
    pub topology: Topology,
    pub workload: Workload,
    pub module_args: Vec<String>,
    pub config: Vec<(String, String)>,
}

/// What the checker found in one run.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    pub grants: usize,
    pub overlaps: Overlaps,
    /// Fenced: writes accepted with a token another holder had used.
    pub stale_accepted: u64,
    pub rejected: u64,
    /// From the fault to the Sentinels naming another primary.
    pub failover: Option<Duration>,
    /// From the fault to the first grant after it.
    pub first_grant: Option<Duration>,
    /// From the fault to the last grant or renewal the first primary took
    /// after it (a cut-off or resumed primary's window).
    pub old_primary_wrote: Option<Duration>,
    /// What only the rlock-client workload tells: its clients wait, and
    /// signal lost holds.
    pub client_library: Option<LibraryOutcome>,
}

/// The rlock-client workload's waits and lost holds in one run.
#[derive(Debug, Clone, Default)]
pub struct LibraryOutcome {
    pub waits: usize,
    /// Waits through a free lock (see [`crate::checker::stuck_waits`]).
    pub stuck_waits: usize,
    /// From the fault to each `lost()` that fired after it.
    pub lost_after_fault: Vec<Duration>,
}

/// RedLock's primaries restarted at once: a minority.
const RESTARTED: usize = redlock::PRIMARIES / 2;
const WARMUP: Duration = Duration::from_secs(2);
/// Longer than a failover takes (Sentinel's down-after plus the election).
const FAULT_LASTS: Duration = Duration::from_millis(4 * DOWN_AFTER_MS);
const RUN: Duration = Duration::from_secs(14);

pub fn run(setup: &Setup, fault: Fault, seed: u64) -> Outcome {
    assert!(fault.applies_to(setup.topology), "{fault:?} on {:?}", setup.topology);
    match setup.topology {
        Topology::Sentinel => run_sentinel_group(setup, fault, seed),
        Topology::RedLock => run_redlock(setup, seed),
    }
}

fn run_sentinel_group(setup: &Setup, fault: Fault, seed: u64) -> Outcome {
    Partition::clean_leftovers();
    let mut group = SentinelGroup::start(&setup.module_args, &setup.config);
    let original = group.servers[0].port();
    wait_for_delay_end(&group.servers[..1]);
    let shared = Shared::new(original);
    let failover: Arc<Mutex<Option<Instant>>> = Arc::default();
    let watcher = {
        let (shared, failover, ports) = (shared.clone(), failover.clone(), group.sentinel_ports());
        thread::spawn(move || follow_sentinels(&shared, &ports, original, &failover))
    };
    let sentinel_ports = group.sentinel_ports();
    let inject = || inject(&mut group, &shared, fault);
    let fault_at = match setup.workload {
        Workload::Commands(protocol) => drive(&shared, |id, shared| client(id, protocol, shared, seed), inject),
        Workload::RlockClient => {
            drive(&shared, |id, shared| client_workload::client(id, &sentinel_ports, shared, seed), inject)
        }
    };
    watcher.join().expect("the watcher panicked");
    if std::env::var_os("RLOCK_FAULTS_LOGS").is_some() {
        eprintln!("{}", group.sentinel_logs());
    }
    let failed_over = *failover.lock().unwrap();
    let library = setup.workload == Workload::RlockClient;
    Outcome {
        failover: failed_over.map(|at| at.saturating_duration_since(fault_at)),
        ..outcome(&shared, fault_at, failed_over, library)
    }
}

/// RedLock over independent primaries; the fault restarts a minority of
/// them (two of five): without their data unless the setup has an AOF.
fn run_redlock(setup: &Setup, seed: u64) -> Outcome {
    let mut servers: Vec<Server> = (0..redlock::PRIMARIES)
        .map(|_| {
            let builder = setup.module_args.iter().fold(Server::builder(), |builder, arg| builder.module_arg(arg));
            setup.config.iter().fold(builder, |builder, (name, value)| builder.config(name, value)).start()
        })
        .collect();
    wait_for_delay_end(&servers);
    let ports: Vec<u16> = servers.iter().map(Server::port).collect();
    let shared = Shared::new(ports[0]);
    let fault_at = drive(
        &shared,
        |id, shared| redlock::client(id, &ports, shared, seed),
        || servers[..RESTARTED].iter_mut().for_each(Server::restart),
    );
    outcome(&shared, fault_at, None, false)
}

/// The module's load began a term on each server: its lock-delay, if
/// any, ends before the clients start.
fn wait_for_delay_end(servers: &[Server]) {
    for server in servers {
        let mut con = server.connection();
        let over = wait_for(Duration::from_secs(30), || info_field(&mut con, "rlock_lock_delay_left_ms") == Some(0));
        assert!(over, "the start's lock-delay did not end");
    }
}

/// Runs the clients for the run's length with the fault [`WARMUP`] in;
/// returns when the fault came.
fn drive(shared: &Arc<Shared>, client: impl Fn(usize, &Shared) + Sync, inject: impl FnOnce()) -> Instant {
    thread::scope(|scope| {
        let started = Instant::now();
        let client = &client;
        let clients: Vec<_> = (0..CLIENTS).map(|id| scope.spawn(move || client(id, shared))).collect();
        thread::sleep(WARMUP);
        let fault_at = Instant::now();
        inject();
        thread::sleep((started + RUN).saturating_duration_since(Instant::now()));
        shared.stop.store(true, Ordering::Relaxed);
        clients.into_iter().for_each(|client| client.join().expect("a client panicked"));
        fault_at
    })
}

/// What the checker finds in a run's records; `failed_over`: when the
/// Sentinels named a new primary; `library`: the clients were rlock-client's.
fn outcome(shared: &Shared, fault_at: Instant, failed_over: Option<Instant>, library: bool) -> Outcome {
    let sections = shared.sections.lock().unwrap().clone();
    let writes = shared.resource.writes();
    let old_primary_wrote = *shared.original_last_write.lock().unwrap();
    let first_grant_at = first_grant_from(&sections, fault_at);
    let client_library = library.then(|| {
        let waits = shared.waits.lock().unwrap().clone();
        // Until a grant after the failover: a cut-off primary's grants
        // before it do not end the outage, nor does one that came
        // between taking `fault_at` and the signal.
        let restored = first_grant_from(&sections, failed_over.unwrap_or(fault_at));
        let outage = (fault_at, restored.unwrap_or_else(Instant::now));
        let lost = shared.lost.lock().unwrap().clone();
        LibraryOutcome {
            waits: waits.len(),
            stuck_waits: stuck_waits(&waits, &sections, outage),
            lost_after_fault: lost.iter().filter(|at| **at >= fault_at).map(|at| *at - fault_at).collect(),
        }
    });
    Outcome {
        grants: sections.len(),
        overlaps: overlaps(&sections),
        stale_accepted: writes.stale_accepted,
        rejected: writes.rejected,
        failover: None,
        first_grant: first_grant_at.map(|at| at - fault_at),
        old_primary_wrote: old_primary_wrote.filter(|at| *at >= fault_at).map(|at| at - fault_at),
        client_library,
    }
}

/// The start of the first critical section at or after `from`.
fn first_grant_from(sections: &[Section], from: Instant) -> Option<Instant> {
    sections.iter().map(|section| section.start).filter(|start| *start >= from).min()
}

fn inject(group: &mut SentinelGroup, shared: &Shared, fault: Fault) {
    let primary = &mut group.servers[0];
    match fault {
        Fault::ClientPause => shared.pause_next_holder.store(true, Ordering::Relaxed),
        Fault::Kill => primary.kill(),
        Fault::Stop => {
            primary.pause();
            thread::sleep(FAULT_LASTS);
            primary.resume();
        }
        Fault::Partition => {
            let cut = Partition::cut(primary.port());
            thread::sleep(FAULT_LASTS);
            drop(cut);
        }
        Fault::Restart => unreachable!("a RedLock fault"),
    }
}

/// Keeps the clients' primary at the one the Sentinels name, as a client
/// that follows Sentinel does; notes when they first name another.
fn follow_sentinels(shared: &Shared, ports: &[u16], original: u16, failover: &Mutex<Option<Instant>>) {
    while !shared.stop.load(Ordering::Relaxed) {
        if let Some(port) = primary_named_by(ports) {
            shared.primary.store(port, Ordering::Relaxed);
            let mut failover = failover.lock().unwrap();
            if port != original && failover.is_none() {
                *failover = Some(Instant::now());
            }
        }
        thread::sleep(Duration::from_millis(50));
    }
}

fn info_field(con: &mut redis::Connection, field: &str) -> Option<i64> {
    let info: String = redis::cmd("INFO").arg("rlock").query(con).ok()?;
    info.lines().find_map(|line| line.strip_prefix(&format!("{field}:")))?.trim().parse().ok()
}
