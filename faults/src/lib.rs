//! The fault-injection suite: locks under failover. A run starts a
//! primary with two replicas and three Sentinels (or a cluster of three
//! primaries with a replica each, or, for RedLock, five independent
//! primaries), lets clients (raw module commands, rlock-client, or real
//! Redisson in a JVM) take locks
//! on a few names while they write to an external resource, injects one
//! fault, and counts the locks granted twice, the stale fenced writes
//! accepted, and how long the locks were unavailable. `make faults` runs
//! the whole matrix and writes FAULTS.md; `tests/short.rs` is the short
//! run in `make test`.

pub mod blocking_workload;
pub mod checker;
pub mod client_workload;
pub mod cluster;
pub mod interrupt;
pub mod java_workload;
pub mod outcome;
pub mod partition;
pub mod redlock;
pub mod report;
pub mod resource;
pub mod run;
pub mod setups;
pub mod watch;
pub mod workload;
