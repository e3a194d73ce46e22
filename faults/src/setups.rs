//! The configurations the suite compares, side by side.

use crate::run::Setup;
use crate::workload::{Protocol, LEASE};

/// `min-replicas-max-lag`, in seconds.
const MAX_LAG_S: u128 = 1;

/// Lock-delay long enough to outlast a lost grant's holder: the lease, plus
/// how long a primary cut off from its replicas may still take writes:
/// the max lag, a second for the replicas' last acknowledgement, a second
/// for the primary to look (Redis counts the lag in whole seconds, and
/// counts its good replicas once a second). The promotion itself may
/// come early: Sentinel's last ping before the cut may be a second old.
pub fn lock_delay_ms() -> u128 {
    LEASE.as_millis() + (MAX_LAG_S + 2) * 1_000
}

fn args(words: &[&str]) -> Vec<String> {
    words.iter().map(|word| word.to_string()).collect()
}

/// `min-replicas-to-write 1` with a lag bound below Sentinel's failover:
/// a primary cut off from its replicas stops taking writes (and so
/// granting) within a second, before a replica is promoted.
fn min_replicas() -> Vec<(String, String)> {
    vec![("min-replicas-to-write".into(), "1".into()), ("min-replicas-max-lag".into(), MAX_LAG_S.to_string())]
}

/// The configuration the docs recommend: lock-delay and min-replicas.
pub fn recommended() -> Setup {
    Setup {
        label: "lock-delay + min-replicas (recommended)",
        protocol: Protocol { fenced: false, wait_replica: false },
        module_args: args(&["lock-delay-ms", &lock_delay_ms().to_string()]),
        config: min_replicas(),
    }
}

/// Fenced tokens, on the module's defaults (the token jump on).
pub fn fenced() -> Setup {
    Setup {
        label: "fenced (token jump)",
        protocol: Protocol { fenced: true, wait_replica: false },
        module_args: vec![],
        config: vec![],
    }
}

pub fn all() -> Vec<Setup> {
    let plain = Protocol { fenced: false, wait_replica: false };
    let delay = args(&["lock-delay-ms", &lock_delay_ms().to_string()]);
    vec![
        Setup { label: "Redisson-style (no WAIT)", protocol: plain, module_args: vec![], config: vec![] },
        Setup {
            label: "WAIT 1 after each acquire",
            protocol: Protocol { fenced: false, wait_replica: true },
            module_args: vec![],
            config: vec![],
        },
        Setup { label: "lock-delay", protocol: plain, module_args: delay.clone(), config: vec![] },
        Setup { label: "min-replicas", protocol: plain, module_args: vec![], config: min_replicas() },
        recommended(),
        fenced(),
        Setup {
            label: "fenced (no token jump: control)",
            protocol: Protocol { fenced: true, wait_replica: false },
            module_args: args(&["fencing-token-jump", "no"]),
            config: vec![],
        },
    ]
}
