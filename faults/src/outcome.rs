//! What the checker finds in one run's records: double grants, stale
//! fenced writes, the time to the first grant after the fault, and the
//! waiting workloads' stuck waits and lost holds.

use crate::checker::{overlaps, stuck_waits, Overlaps};
use crate::run::Workload;
use crate::workload::{Section, Shared};
use std::time::{Duration, Instant};

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
    /// How many times the primary changed (more than once: a failover
    /// after the failover).
    pub primary_changes: usize,
    /// From the fault to the first grant after it.
    pub first_grant: Option<Duration>,
    /// From the fault to the last grant or renewal the first primary took
    /// after it (a cut-off or resumed primary's window).
    pub old_primary_wrote: Option<Duration>,
    /// The clients do not say which server took their writes (Redisson's).
    pub old_primary_unknown: bool,
    /// What only the rlock-client workload tells: its clients wait, and
    /// signal lost holds.
    pub client_library: Option<LibraryOutcome>,
}

/// The waiting workloads' waits, and rlock-client's lost holds, in one run.
#[derive(Debug, Clone, Default)]
pub struct LibraryOutcome {
    pub waits: usize,
    /// Waits through a free lock (see [`crate::checker::stuck_waits`]).
    pub stuck_waits: usize,
    /// From the fault to each `lost()` that fired after it (`None`: the
    /// clients have no such signal).
    pub lost_after_fault: Option<Vec<Duration>>,
}

/// What the checker finds in a run's records; `changes`: when the
/// Sentinels (or the cluster) named another primary; `workload`: the
/// waiting ones record their waits, rlock-client its lost holds; `hit`:
/// the names the fault made unavailable, whose grants end the outage.
pub(crate) fn outcome(
    shared: &Shared,
    (fault_at, changes): (Instant, &[Instant]),
    workload: Workload,
    hit: &[usize],
) -> Outcome {
    let failed_over = changes.first().copied();
    let sections = shared.sections.lock().unwrap().clone();
    let writes = shared.resource.writes();
    let old_primary_wrote = *shared.original_last_write.lock().unwrap();
    let first_grant_at = first_grant_from(&sections, fault_at, hit);
    let waiting = matches!(workload, Workload::RlockClient | Workload::Blocking);
    let client_library = waiting.then(|| {
        let waits = shared.waits.lock().unwrap().clone();
        // Until a grant after the failover: a cut-off primary's grants
        // before it do not end the outage, nor does one that came
        // between taking `fault_at` and the signal.
        let restored = first_grant_from(&sections, failed_over.unwrap_or(fault_at), hit);
        let outage = (fault_at, restored.unwrap_or_else(Instant::now));
        let lost = shared.lost.lock().unwrap().clone();
        LibraryOutcome {
            waits: waits.len(),
            stuck_waits: stuck_waits(&waits, &sections, outage),
            lost_after_fault: (workload == Workload::RlockClient)
                .then(|| lost.iter().filter(|at| **at >= fault_at).map(|at| *at - fault_at).collect()),
        }
    });
    Outcome {
        grants: sections.len(),
        overlaps: overlaps(&sections),
        stale_accepted: writes.stale_accepted,
        rejected: writes.rejected,
        failover: failed_over.map(|at| at.saturating_duration_since(fault_at)),
        primary_changes: changes.len(),
        first_grant: first_grant_at.map(|at| at - fault_at),
        old_primary_wrote: old_primary_wrote.filter(|at| *at >= fault_at).map(|at| at - fault_at),
        old_primary_unknown: false,
        client_library,
    }
}

/// The start of the first critical section on one of the names `on` at
/// or after `from`.
fn first_grant_from(sections: &[Section], from: Instant, on: &[usize]) -> Option<Instant> {
    let on_them = sections.iter().filter(|section| on.contains(&section.name));
    on_them.map(|section| section.start).filter(|start| *start >= from).min()
}
