//! One run: a fresh topology, the clients, one fault, and what the
//! checker counts.

use crate::blocking_workload;
use crate::client_workload::{self, Nodes};
use crate::cluster;
use crate::java_workload::Jvm;
use crate::outcome::outcome;
pub use crate::outcome::{LibraryOutcome, Outcome};
use crate::partition::{wait_for, Partition};
use crate::redlock;
use crate::watch;
use crate::workload::{client, Protocol, Shared, CLIENTS, NAMES, PAUSE};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};
use testkit::{Cluster, SentinelGroup, Server, ServerBuilder, DOWN_AFTER_MS};

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
    /// The primary's host crashes: kill -9, with the replication stream's
    /// last [`IN_FLIGHT`] lost on the way (on loopback a kill -9 alone
    /// loses nothing: the kernel still delivers what the process wrote).
    HostCrash,
    /// Cluster: the slots of the names moved to another primary, one after
    /// the other, while clients hold and wait: the legacy way (SETSLOT
    /// MIGRATING/IMPORTING, MIGRATE of the keys, SETSLOT NODE).
    SlotMigration,
    /// The same with Valkey 9's atomic slot migration (`CLUSTER
    /// MIGRATESLOTS`); only on servers that have it.
    AtomicSlotMigration,
    /// A holder pauses past its lease (a GC pause, a SIGSTOP of the client)
    /// and writes when it wakes, without looking at the time. No failover.
    ClientPause,
    /// RedLock: kill -9 of a minority of the primaries, started again at
    /// once: without persistence they come back empty, with an AOF they
    /// reload it.
    Restart,
}

impl Fault {
    pub const ALL: [Fault; 8] = [
        Fault::Kill,
        Fault::Stop,
        Fault::Partition,
        Fault::HostCrash,
        Fault::SlotMigration,
        Fault::AtomicSlotMigration,
        Fault::ClientPause,
        Fault::Restart,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Fault::Kill => "kill -9",
            Fault::Stop => "SIGSTOP",
            Fault::Partition => "partition",
            Fault::HostCrash => "host crash (last 1 s of replication lost)",
            Fault::SlotMigration => "slot migration (MIGRATE)",
            Fault::AtomicSlotMigration => "slot migration (atomic, MIGRATESLOTS)",
            Fault::ClientPause => "client pause",
            Fault::Restart => "kill -9 and restart",
        }
    }

    /// Which faults each topology meets: a restart is RedLock's, a slot
    /// migration the cluster's; the cluster is not partitioned or crashed.
    pub fn applies_to(self, topology: Topology) -> bool {
        match topology {
            Topology::Sentinel => !matches!(self, Fault::Restart) && !self.migrates_slots(),
            Topology::Cluster => matches!(self, Fault::Kill | Fault::Stop) || self.migrates_slots(),
            Topology::RedLock => self == Fault::Restart,
        }
    }

    fn migrates_slots(self) -> bool {
        matches!(self, Fault::SlotMigration | Fault::AtomicSlotMigration)
    }

    /// Whether it drops packets with iptables (which needs root).
    pub fn needs_iptables(self) -> bool {
        matches!(self, Fault::Partition | Fault::HostCrash)
    }
}

/// The servers a run starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Topology {
    /// A primary, two replicas and three Sentinels; the clients follow the
    /// primary the Sentinels name.
    Sentinel,
    /// A cluster of [`cluster::PRIMARIES`] primaries with a replica each;
    /// the clients (rlock-client's) route by slot.
    Cluster,
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
    /// Cluster: each client waits on the server (`RLOCK.ACQUIRE … WAIT …
    /// ID`, see [`blocking_workload`]).
    Blocking,
    /// Real Redisson (Java) on the Sentinels, in one JVM: its failover
    /// handling, its watchdog (see [`crate::java_workload`]).
    Redisson,
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

/// RedLock's primaries restarted at once: a minority.
const RESTARTED: usize = redlock::PRIMARIES / 2;
pub const WARMUP: Duration = Duration::from_secs(2);
/// Longer than a failover takes (Sentinel's down-after plus the election).
pub const FAULT_LASTS: Duration = Duration::from_millis(3 * DOWN_AFTER_MS);
/// Long enough for a grant after the failover and the lock-delay (about
/// 12 s in with the recommended settings).
pub const RUN: Duration = Duration::from_secs(16);
/// How much of the replication stream a host crash loses: within what
/// `min-replicas-max-lag 1` lets replicas lag without the primary noticing.
pub const IN_FLIGHT: Duration = Duration::from_secs(1);

pub fn run(setup: &Setup, fault: Fault, seed: u64) -> Outcome {
    assert!(fault.applies_to(setup.topology), "{fault:?} on {:?}", setup.topology);
    match setup.topology {
        Topology::Sentinel => run_sentinel_group(setup, fault, seed),
        Topology::Cluster => run_cluster(setup, fault, seed),
        Topology::RedLock => run_redlock(setup, seed),
    }
}

fn run_sentinel_group(setup: &Setup, fault: Fault, seed: u64) -> Outcome {
    Partition::clean_leftovers();
    let mut group = SentinelGroup::start(&setup.module_args, &setup.config);
    let original = group.servers[0].port();
    wait_for_delay_end(&group.servers[..1]);
    let shared = Shared::new(original);
    let watcher = {
        let (shared, ports) = (shared.clone(), group.sentinel_ports());
        thread::spawn(move || watch::follow_sentinels(&shared, &ports, original))
    };
    let nodes = Nodes::Sentinels(group.sentinel_ports());
    // Started before the run's clock: a JVM takes seconds to be ready.
    let jvm = (setup.workload == Workload::Redisson).then(|| Jvm::start(&group.sentinel_ports(), seed, &shared));
    let inject = || match (&jvm, fault) {
        (Some(jvm), Fault::ClientPause) => {
            jvm.pause(PAUSE);
            None
        }
        _ => inject(&mut group, &shared, fault),
    };
    let fault_at = match (setup.workload, &jvm) {
        (Workload::Commands(protocol), _) => {
            drive(&shared, CLIENTS, |id, shared| client(id, protocol, shared, seed), inject)
        }
        (Workload::RlockClient, _) => {
            drive(&shared, CLIENTS, |id, shared| client_workload::client(id, &nodes, shared, seed), inject)
        }
        // One driver thread: the JVM runs the clients.
        (Workload::Redisson, Some(jvm)) => drive(&shared, 1, |_, shared| jvm.run(shared), inject),
        (Workload::Redisson, None) => unreachable!("started above"),
        (Workload::Blocking, _) => unreachable!("blocking clients run on the cluster"),
    };
    let changes = watcher.join().expect("the watcher panicked");
    let mut outcome = outcome(&shared, (fault_at, &changes), setup.workload, &all_names());
    outcome.old_primary_unknown = jvm.is_some();
    // A run that granted nothing after the fault keeps the Sentinels' story.
    if outcome.first_grant.is_none() || std::env::var_os("RLOCK_FAULTS_LOGS").is_some() {
        eprintln!("{} under {fault:?}, the Sentinels' logs:\n{}", setup.label, group.sentinel_logs());
    }
    outcome
}

/// The cluster, with clients that route by slot (rlock-client's, or the
/// blocking ones); the fault hits the shard of the first name, or moves
/// every name's slot.
fn run_cluster(setup: &Setup, fault: Fault, seed: u64) -> Outcome {
    assert!(
        matches!(setup.workload, Workload::RlockClient | Workload::Blocking),
        "the cluster's clients route by slot"
    );
    let mut cluster = Cluster::start_with(cluster::PRIMARIES, 1, |node| configured(node, setup));
    wait_for_delay_end(&cluster.nodes);
    let ports: Vec<u16> = cluster.nodes.iter().map(Server::port).collect();
    let slot = cluster::first_slot(&cluster);
    let original = cluster.slot_owner(slot).expect("an owner of the first name's slot");
    let hit = if fault.migrates_slots() { all_names() } else { cluster::names_served_by(&cluster, original) };
    let shared = Shared::new(original);
    let watcher = (!fault.migrates_slots()).then(|| {
        let (shared, ports) = (shared.clone(), ports.clone());
        thread::spawn(move || watch::watch_slot_owner(&shared, &ports, slot, original))
    });
    let nodes = Nodes::Cluster(ports.clone());
    let fault_at = drive(
        &shared,
        CLIENTS,
        |id, shared| match setup.workload {
            Workload::Blocking => blocking_workload::client(id, &ports, shared, seed),
            _ => client_workload::client(id, &nodes, shared, seed),
        },
        || match fault {
            Fault::Kill => cluster::owner_of(&mut cluster, slot).kill(),
            Fault::Stop => stop(cluster::owner_of(&mut cluster, slot), cluster::STOP_LASTS),
            Fault::SlotMigration => cluster::migrate_names(&cluster),
            Fault::AtomicSlotMigration => cluster::migrate_names_atomically(&cluster),
            _ => unreachable!("{fault:?} on the cluster"),
        },
    );
    let changes = watcher.map(|watcher| watcher.join().expect("the watcher panicked")).unwrap_or_default();
    outcome(&shared, (fault_at, &changes), setup.workload, &hit)
}

/// A server with the setup's module arguments and configuration.
fn configured(builder: ServerBuilder, setup: &Setup) -> ServerBuilder {
    let builder = setup.module_args.iter().fold(builder, |builder, arg| builder.module_arg(arg));
    setup.config.iter().fold(builder, |builder, (name, value)| builder.config(name, value))
}

/// RedLock over independent primaries; the fault restarts a minority of
/// them (two of five): without their data unless the setup has an AOF.
fn run_redlock(setup: &Setup, seed: u64) -> Outcome {
    let mut servers: Vec<Server> =
        (0..redlock::PRIMARIES).map(|_| configured(Server::builder(), setup).start()).collect();
    wait_for_delay_end(&servers);
    let ports: Vec<u16> = servers.iter().map(Server::port).collect();
    let shared = Shared::new(ports[0]);
    let fault_at = drive(
        &shared,
        CLIENTS,
        |id, shared| redlock::client(id, &ports, shared, seed),
        || servers[..RESTARTED].iter_mut().for_each(Server::restart),
    );
    outcome(&shared, (fault_at, &[]), setup.workload, &all_names())
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

/// Runs `clients` threads of `client` for the run's length with the
/// fault [`WARMUP`] in (what `inject` returns lasts until the run ends);
/// returns when the fault came.
fn drive<Lasting>(
    shared: &Arc<Shared>,
    clients: usize,
    client: impl Fn(usize, &Shared) + Sync,
    inject: impl FnOnce() -> Lasting,
) -> Instant {
    thread::scope(|scope| {
        let started = Instant::now();
        let client = &client;
        let clients: Vec<_> = (0..clients).map(|id| scope.spawn(move || client(id, shared))).collect();
        thread::sleep(WARMUP);
        let fault_at = Instant::now();
        let lasting = inject();
        thread::sleep((started + RUN).saturating_duration_since(Instant::now()));
        shared.stop.store(true, Ordering::Relaxed);
        clients.into_iter().for_each(|client| client.join().expect("a client panicked"));
        drop(lasting);
        fault_at
    })
}

/// Every name: the Sentinel group's and RedLock's faults hit them all.
fn all_names() -> Vec<usize> {
    (0..NAMES).collect()
}

/// Injects `fault`; returns what must last until the run ends.
fn inject(group: &mut SentinelGroup, shared: &Shared, fault: Fault) -> Option<Partition> {
    let primary = &mut group.servers[0];
    match fault {
        Fault::ClientPause => shared.pause_next_holder.store(true, Ordering::Relaxed),
        Fault::Kill => primary.kill(),
        Fault::Stop => stop(primary, FAULT_LASTS),
        Fault::Partition => {
            let cut = Partition::cut(primary.port());
            thread::sleep(FAULT_LASTS);
            drop(cut);
        }
        Fault::HostCrash => {
            let silenced = Partition::silence(primary.port());
            thread::sleep(IN_FLIGHT);
            primary.kill();
            // The kernel would still send the dead process's unsent
            // bytes; they stay lost until the replicas have moved on.
            return Some(silenced);
        }
        Fault::Restart | Fault::SlotMigration | Fault::AtomicSlotMigration => {
            unreachable!("{fault:?} on the Sentinel group")
        }
    }
    None
}

/// SIGSTOP for `lasts` (longer than a failover takes), then SIGCONT.
fn stop(server: &Server, lasts: Duration) {
    server.pause();
    thread::sleep(lasts);
    server.resume();
}

pub(crate) fn info_field(con: &mut redis::Connection, field: &str) -> Option<i64> {
    let info: String = redis::cmd("INFO").arg("rlock").query(con).ok()?;
    info.lines().find_map(|line| line.strip_prefix(&format!("{field}:")))?.trim().parse().ok()
}
