//! The configurations the suite compares, side by side.

use crate::run::{Setup, Topology, Workload};
use crate::workload::{Protocol, LEASE};

use testkit::failover;

/// The suite's lease in ms (its holds are short, to keep runs short).
fn lease_ms() -> u64 {
    LEASE.as_millis() as u64
}

/// Lock-delay long enough to outlast a lost grant's holder (see
/// [`failover::lock_delay_ms`]). The promotion itself may come early:
/// Sentinel's last ping before the cut may be a second old.
pub fn lock_delay_ms() -> u64 {
    failover::lock_delay_ms(lease_ms())
}

fn args(words: &[&str]) -> Vec<String> {
    words.iter().map(|word| word.to_string()).collect()
}

/// `min-replicas-to-write 1` with a lag bound below Sentinel's failover:
/// a primary cut off from its replicas stops taking writes (and so
/// granting) within a second, before a replica is promoted.
fn min_replicas() -> Vec<(String, String)> {
    failover::min_replicas_config()
}

/// A configuration of the Sentinel group.
fn sentinel_group(
    label: &'static str,
    workload: Workload,
    module_args: Vec<String>,
    config: Vec<(String, String)>,
) -> Setup {
    Setup { label, topology: Topology::Sentinel, workload, module_args, config }
}

/// A configuration of the cluster; its clients route by slot.
fn cluster(label: &'static str, workload: Workload, module_args: Vec<String>) -> Setup {
    Setup { label, topology: Topology::Cluster, workload, module_args, config: vec![] }
}

const PLAIN: Workload = Workload::Commands(Protocol { fenced: false, wait_replica: false });
const FENCED: Workload = Workload::Commands(Protocol { fenced: true, wait_replica: false });

/// The configuration the docs recommend: lock-delay and min-replicas.
pub fn recommended() -> Setup {
    sentinel_group("lock-delay + min-replicas (recommended)", PLAIN, lock_delay(), min_replicas())
}

/// Fenced tokens, on the module's defaults (the token jump on).
pub fn fenced() -> Setup {
    sentinel_group("fenced (token jump)", FENCED, vec![], vec![])
}

/// The cluster with callers blocked on the server (`RLOCK.ACQUIRE … WAIT`).
pub fn cluster_blocking() -> Setup {
    cluster("cluster, blocking waits on the server, lock-delay", Workload::Blocking, lock_delay())
}

/// Persistence on: every server appends its writes to an AOF, synced
/// `fsync` (`always` or `everysec`); a restarted server reloads it.
fn aof(fsync: &str) -> Vec<(String, String)> {
    vec![("appendonly".into(), "yes".into()), ("appendfsync".into(), fsync.into())]
}

/// The lock-delay, and the stall threshold the docs recommend with it.
fn lock_delay() -> Vec<String> {
    failover::lock_delay_args(lease_ms())
}

pub fn all() -> Vec<Setup> {
    let wait = Workload::Commands(Protocol { fenced: false, wait_replica: true });
    let redlock =
        |label, module_args, config| Setup { label, topology: Topology::RedLock, workload: PLAIN, module_args, config };
    vec![
        sentinel_group("Redisson-style (no WAIT)", PLAIN, vec![], vec![]),
        sentinel_group("WAIT 1 after each acquire", wait, vec![], vec![]),
        sentinel_group("lock-delay", PLAIN, lock_delay(), vec![]),
        sentinel_group("min-replicas", PLAIN, vec![], min_replicas()),
        recommended(),
        sentinel_group(
            "lock-delay + min-replicas, AOF everysec",
            PLAIN,
            lock_delay(),
            [min_replicas(), aof("everysec")].concat(),
        ),
        sentinel_group(
            "rlock-client (its defaults), lock-delay + min-replicas",
            Workload::RlockClient,
            lock_delay(),
            min_replicas(),
        ),
        // Real Redisson: its scripts as Lua, no protection (the control),
        // then natively, where the module's lock-delay applies to them.
        sentinel_group(
            "Redisson (Java), scripts as Lua",
            Workload::Redisson,
            args(&["redisson-scripts", "off"]),
            vec![],
        ),
        sentinel_group(
            "Redisson (Java), natively, lock-delay + min-replicas",
            Workload::Redisson,
            [args(&["redisson-scripts", "native"]), lock_delay()].concat(),
            min_replicas(),
        ),
        cluster("cluster, rlock-client, no lock-delay", Workload::RlockClient, vec![]),
        // Not min-replicas: with one replica a shard, a promoted replica
        // has none left and would refuse every write.
        cluster("cluster, rlock-client, lock-delay", Workload::RlockClient, lock_delay()),
        cluster_blocking(),
        fenced(),
        sentinel_group("fenced (no token jump: control)", FENCED, args(&["fencing-token-jump", "no"]), vec![]),
        redlock("RedLock, 5 primaries (restart at once)", vec![], vec![]),
        redlock("RedLock, 5 primaries, lock-delay (delayed restart)", lock_delay(), vec![]),
        redlock("RedLock, 5 primaries, AOF everysec (restart at once)", vec![], aof("everysec")),
    ]
}
