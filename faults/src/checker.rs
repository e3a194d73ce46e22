//! What the checker counts in the recorded critical sections.

use crate::workload::Section;
use std::time::Duration;

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
}
