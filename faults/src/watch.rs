//! Watchers of who the primary is during a run: the Sentinels' choice
//! (which the raw clients follow) or the owner of a cluster slot. Every
//! change is noted, not only the first: a promoted replica that fails in
//! turn makes a second failover, which explains a long outage.

use crate::workload::Shared;
use std::sync::atomic::Ordering;
use std::thread;
use std::time::{Duration, Instant};
use testkit::{primary_named_by, slot_owner_among};

const POLL: Duration = Duration::from_millis(50);

/// The changes of primary a watcher saw. A change counts once two polls
/// in a row name the same new primary (nodes that answer in turn may
/// briefly disagree), at the first of them.
pub struct PrimaryChanges {
    current: u16,
    candidate: Option<(u16, Instant)>,
    pub at: Vec<Instant>,
}

impl PrimaryChanges {
    pub fn new(original: u16) -> Self {
        Self { current: original, candidate: None, at: Vec::new() }
    }

    pub fn named(&mut self, port: u16, now: Instant) {
        match self.candidate {
            _ if port == self.current => self.candidate = None,
            Some((candidate, since)) if candidate == port => {
                self.current = port;
                self.at.push(since);
                self.candidate = None;
            }
            _ => self.candidate = Some((port, now)),
        }
    }
}

/// Keeps the clients' primary at the one the Sentinels name, as a client
/// that follows Sentinel does, until the run stops; its changes.
pub fn follow_sentinels(shared: &Shared, ports: &[u16], original: u16) -> Vec<Instant> {
    let mut changes = PrimaryChanges::new(original);
    while !shared.stop.load(Ordering::Relaxed) {
        if let Some(port) = primary_named_by(ports) {
            shared.primary.store(port, Ordering::Relaxed);
            changes.named(port, Instant::now());
        }
        thread::sleep(POLL);
    }
    changes.at
}

/// The changes of the owner of `slot` (first `original`), as the first
/// of the nodes at `ports` that answers names it, until the run stops.
pub fn watch_slot_owner(shared: &Shared, ports: &[u16], slot: i64, original: u16) -> Vec<Instant> {
    let mut changes = PrimaryChanges::new(original);
    while !shared.stop.load(Ordering::Relaxed) {
        if let Some(port) = slot_owner_among(ports, slot) {
            changes.named(port, Instant::now());
        }
        thread::sleep(POLL);
    }
    changes.at
}

#[cfg(test)]
mod tests {
    use super::PrimaryChanges;
    use std::time::{Duration, Instant};

    #[test]
    fn a_change_counts_once_two_polls_agree_at_the_first_of_them() {
        let start = Instant::now();
        let at = |ms| start + Duration::from_millis(ms);
        // (polls naming a port, the changes expected at)
        let cases: [(&[u16], &[u64]); 5] = [
            (&[1, 1, 1], &[]),
            (&[1, 2, 2, 2], &[1]),
            (&[2, 1, 2, 1], &[]),
            (&[2, 2, 3, 3], &[0, 2]),
            (&[2, 2, 1, 1], &[0, 2]),
        ];
        for (polls, expected) in cases {
            let mut changes = PrimaryChanges::new(1);
            for (ms, port) in (0..).zip(polls) {
                changes.named(*port, at(ms));
            }
            let expected: Vec<Instant> = expected.iter().map(|ms| at(*ms)).collect();
            assert_eq!(changes.at, expected, "polls {polls:?}");
        }
    }
}
