//! One run: a fresh topology, the clients, one fault, and what the
//! checker counts.

use crate::checker::{overlaps, Overlaps};
use crate::partition::{wait_for, Partition};
use crate::workload::{client, Protocol, Shared, CLIENTS};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};
use testkit::{primary_named_by, SentinelGroup, DOWN_AFTER_MS};

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
}

impl Fault {
    pub const ALL: [Fault; 4] = [Fault::Kill, Fault::Stop, Fault::Partition, Fault::ClientPause];

    pub fn label(self) -> &'static str {
        match self {
            Fault::Kill => "kill -9",
            Fault::Stop => "SIGSTOP",
            Fault::Partition => "partition",
            Fault::ClientPause => "client pause",
        }
    }
}

/// A configuration of the servers and the clients.
#[derive(Debug, Clone)]
pub struct Setup {
    pub label: &'static str,
    pub protocol: Protocol,
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
}

const WARMUP: Duration = Duration::from_secs(2);
/// Longer than a failover takes (Sentinel's down-after plus the election).
const FAULT_LASTS: Duration = Duration::from_millis(4 * DOWN_AFTER_MS);
const RUN: Duration = Duration::from_secs(14);

pub fn run(setup: &Setup, fault: Fault, seed: u64) -> Outcome {
    Partition::clean_leftovers();
    let mut group = SentinelGroup::start(&setup.module_args, &setup.config);
    let original = group.servers[0].port();
    // The module's load began a term: its lock-delay, if any, ends first.
    let mut con = group.servers[0].connection();
    let delay_over = wait_for(Duration::from_secs(30), || info_field(&mut con, "rlock_lock_delay_left_ms") == Some(0));
    assert!(delay_over, "the start's lock-delay did not end");
    let shared = Shared::new(original);
    let fault_at: Arc<Mutex<Option<Instant>>> = Arc::default();
    let failover: Arc<Mutex<Option<Instant>>> = Arc::default();
    let watcher = {
        let (shared, failover, ports) = (shared.clone(), failover.clone(), group.sentinel_ports());
        thread::spawn(move || follow_sentinels(&shared, &ports, original, &failover))
    };
    let clients: Vec<_> = (0..CLIENTS)
        .map(|id| {
            let (shared, protocol) = (shared.clone(), setup.protocol);
            thread::spawn(move || client(id, protocol, &shared, seed))
        })
        .collect();
    let started = Instant::now();
    thread::sleep(WARMUP);
    *fault_at.lock().unwrap() = Some(Instant::now());
    inject(&mut group, &shared, fault);
    thread::sleep((started + RUN).saturating_duration_since(Instant::now()));
    shared.stop.store(true, Ordering::Relaxed);
    clients.into_iter().for_each(|client| client.join().expect("a client panicked"));
    watcher.join().expect("the watcher panicked");
    if std::env::var_os("RLOCK_FAULTS_LOGS").is_some() {
        eprintln!("{}", group.sentinel_logs());
    }
    let fault_at = fault_at.lock().unwrap().expect("the fault was injected");
    let sections = shared.sections.lock().unwrap().clone();
    let writes = shared.resource.writes();
    let failed_over = *failover.lock().unwrap();
    let old_primary_wrote = *shared.original_last_write.lock().unwrap();
    Outcome {
        grants: sections.len(),
        overlaps: overlaps(&sections),
        stale_accepted: writes.stale_accepted,
        rejected: writes.rejected,
        failover: failed_over.map(|at| at.saturating_duration_since(fault_at)),
        old_primary_wrote: old_primary_wrote.filter(|at| *at >= fault_at).map(|at| at - fault_at),
        first_grant: sections.iter().map(|s| s.start).filter(|start| *start >= fault_at).min().map(|at| at - fault_at),
    }
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
