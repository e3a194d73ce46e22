//! What the checker counts in the recorded critical sections.

use crate::workload::{Section, Wait};
use std::time::{Duration, Instant};

/// Pairs of critical sections of two clients on one name that overlap:
/// each pair is a lock granted twice.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Overlaps {
    pub pairs: usize,
    pub longest: Duration,
}

pub fn overlaps(sections: &[Section]) -> Overlaps {
    let mut found = Overlaps::default();
    for (i, a) in sections.iter().enumerate() {
        for b in &sections[i + 1..] {
            if a.name != b.name || a.client == b.client {
                continue;
            }
            let (start, end) = (a.start.max(b.start), a.end.min(b.end));
            if start < end {
                found.pairs += 1;
                found.longest = found.longest.max(end - start);
            }
        }
    }
    found
}

/// Longer than this, a wait through a free lock is a stuck waiter: a
/// release reaches a waiting client within milliseconds.
pub const STUCK_AFTER: Duration = Duration::from_millis(1_000);

/// Waits during which their name stayed free (no client's section on it)
/// for longer than [`STUCK_AFTER`] in one stretch, outside `outage` (from
/// the fault to the first grant after the failover, when nothing may be
/// granted: the failover, a lock-delay).
pub fn stuck_waits(waits: &[Wait], sections: &[Section], outage: (Instant, Instant)) -> usize {
    waits.iter().filter(|wait| longest_free(wait, sections, outage) > STUCK_AFTER).count()
}

fn longest_free(wait: &Wait, sections: &[Section], outage: (Instant, Instant)) -> Duration {
    let mut busy: Vec<(Instant, Instant)> =
        sections.iter().filter(|section| section.name == wait.name).map(|s| (s.start, s.end)).collect();
    busy.push(outage);
    busy.sort();
    let (mut free_from, mut longest) = (wait.start, Duration::ZERO);
    for (start, end) in busy {
        longest = longest.max(start.min(wait.end).saturating_duration_since(free_from));
        free_from = free_from.max(end);
    }
    longest.max(wait.end.saturating_duration_since(free_from))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn only_sections_of_two_clients_on_one_name_that_overlap_count() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let section = |name, client, start, end| Section { name, client, start: at(start), end: at(end) };
        // (sections, pairs, longest ms)
        let cases = [
            (vec![section(0, 0, 0, 10), section(0, 1, 10, 20)], 0, 0), // back to back
            (vec![section(0, 0, 0, 10), section(0, 1, 5, 20)], 1, 5),
            (vec![section(0, 0, 0, 10), section(1, 1, 5, 20)], 0, 0), // two names
            (vec![section(0, 0, 0, 10), section(0, 0, 5, 20)], 0, 0), // one client
            (vec![section(0, 0, 0, 100), section(0, 1, 10, 20), section(0, 2, 15, 60)], 3, 45),
        ];
        for (sections, pairs, longest) in cases {
            let found = overlaps(&sections);
            assert_eq!((found.pairs, found.longest), (pairs, Duration::from_millis(longest)), "{sections:?}");
        }
    }

    #[test]
    fn a_wait_is_stuck_when_its_name_stays_free_past_the_bound_outside_the_outage() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let section = |name, start, end| Section { name, client: 9, start: at(start), end: at(end) };
        let wait = |start, end| Wait { name: 0, start: at(start), end: at(end) };
        let outage = (at(10_000), at(12_000));
        // (wait, sections, stuck)
        let cases = [
            (wait(0, 3_000), vec![section(0, 0, 2_500)], false), // held, then granted soon
            (wait(0, 3_000), vec![section(0, 0, 500)], true),    // free 2.5 s
            (wait(0, 3_000), vec![section(1, 0, 3_000)], true),  // another name held
            (wait(0, 3_000), vec![section(0, 0, 1_000), section(0, 1_500, 3_000)], false), // free 0.5 s
            (wait(9_500, 12_500), vec![], false),                // free only around the outage
            (wait(9_500, 14_000), vec![], true),                 // and 2 s after it
            (wait(0, 900), vec![], false),                       // shorter than the bound
        ];
        for (wait, sections, stuck) in cases {
            assert_eq!(stuck_waits(&[wait], &sections, outage), usize::from(stuck), "{wait:?} {sections:?}");
        }
    }
}
