//! Deadlock detection for the callers blocked on the server. A caller
//! about to wait closes a cycle when the lock it waits for is held by an
//! owner that waits, through any chain of holders and waiters, for a lock
//! the caller's owner holds. It is then told so (`DEADLOCK …`) instead of
//! waiting out its time. Only waits the server knows count: callers that
//! wait by pub/sub (Redisson) are not in the graph.

use std::collections::{HashMap, HashSet};

/// One step of a cycle: `owner` waits for `lock`, held by the next step's
/// owner (the last step's lock by the first's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub owner: Vec<u8>,
    pub lock: Vec<u8>,
}

/// The cycle `owner`'s wait for `lock` would close, from that wait on;
/// `None` when it closes none. `waits`: the locks an owner's blocked
/// callers wait for, asked once per owner reached; `holders`: a lock's
/// holders, asked once per lock. Each owner and lock is visited once: the
/// cost is bounded by the part of the graph reachable from the wait.
pub fn cycle(
    owner: &[u8],
    lock: &[u8],
    mut waits: impl FnMut(&[u8]) -> Vec<Vec<u8>>,
    mut holders: impl FnMut(&[u8]) -> Vec<Vec<u8>>,
) -> Option<Vec<Step>> {
    // Owners reached, each with the wait that reached it: its parent.
    let mut reached: HashMap<Vec<u8>, Step> = HashMap::new();
    let mut seen_locks = HashSet::new();
    let mut to_visit = vec![Step { owner: owner.to_vec(), lock: lock.to_vec() }];
    while let Some(wait) = to_visit.pop() {
        if !seen_locks.insert(wait.lock.clone()) {
            continue;
        }
        for holder in holders(&wait.lock) {
            if holder == wait.owner || reached.contains_key(&holder) {
                continue;
            }
            if holder == owner {
                return Some(path_to(wait, owner, &reached));
            }
            for waited in waits(&holder) {
                to_visit.push(Step { owner: holder.clone(), lock: waited });
            }
            reached.insert(holder, wait.clone());
        }
    }
    None
}

/// The steps from `owner`'s wait to `last`, through the waits that
/// reached each owner.
fn path_to(last: Step, owner: &[u8], reached: &HashMap<Vec<u8>, Step>) -> Vec<Step> {
    let mut steps = vec![last];
    while let Some(parent) = steps.last().filter(|step| step.owner != owner).and_then(|step| reached.get(&step.owner)) {
        steps.push(parent.clone());
    }
    steps.reverse();
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each owner's (or lock's) list of locks (or holders).
    type Edges = HashMap<Vec<u8>, Vec<Vec<u8>>>;

    fn waits_in(edges: &Edges) -> impl FnMut(&[u8]) -> Vec<Vec<u8>> + '_ {
        |owner| edges.get(owner).cloned().unwrap_or_default()
    }

    type Pairs<'a> = &'a [(&'a str, &'a str)];

    fn graph(waits: Pairs, holds: Pairs) -> (Edges, Edges) {
        let mut waiting = Edges::new();
        for (owner, lock) in waits {
            waiting.entry(owner.as_bytes().to_vec()).or_default().push(lock.as_bytes().to_vec());
        }
        let mut held = Edges::new();
        for (lock, owner) in holds {
            held.entry(lock.as_bytes().to_vec()).or_default().push(owner.as_bytes().to_vec());
        }
        (waiting, held)
    }

    #[test]
    fn a_wait_closing_a_cycle_is_told_the_cycle() {
        // (blocked owners' waits, lock holders, new owner, its lock, cycle as "owner>lock")
        type Case<'a> = (Pairs<'a>, Pairs<'a>, &'a str, &'a str, Option<&'a [&'a str]>);
        let cases: [Case; 8] = [
            (&[], &[("a", "o2")], "o1", "a", None),
            (&[("o2", "b")], &[("a", "o2"), ("b", "o1")], "o1", "a", Some(&["o1>a", "o2>b"])),
            (
                &[("o2", "b"), ("o3", "c")],
                &[("a", "o2"), ("b", "o3"), ("c", "o1")],
                "o1",
                "a",
                Some(&["o1>a", "o2>b", "o3>c"]),
            ),
            (&[("o2", "b"), ("o3", "c")], &[("a", "o2"), ("b", "o3"), ("c", "o4")], "o1", "a", None),
            // Shared holders (readers): any one of them waiting back is a cycle.
            (&[("r2", "w")], &[("rw", "r1"), ("rw", "r2"), ("w", "o1")], "o1", "rw", Some(&["o1>rw", "r2>w"])),
            // The caller re-entering its own lock is no cycle.
            (&[], &[("a", "o1")], "o1", "a", None),
            // A cycle among others, not through the caller: not its to break.
            (&[("o2", "b"), ("o3", "a")], &[("a", "o2"), ("b", "o3")], "o1", "a", None),
            // An owner waiting on two locks: the second leads back.
            (&[("o2", "x"), ("o2", "b")], &[("a", "o2"), ("b", "o1")], "o1", "a", Some(&["o1>a", "o2>b"])),
        ];
        for (waits, holds, owner, lock, expected) in cases {
            let (waits, held) = graph(waits, holds);
            let mut asked = Vec::new();
            let found = cycle(owner.as_bytes(), lock.as_bytes(), waits_in(&waits), |lock| {
                asked.push(lock.to_vec());
                held.get(lock).cloned().unwrap_or_default()
            });
            let found: Option<Vec<String>> = found.map(|steps| {
                steps
                    .iter()
                    .map(|s| format!("{}>{}", String::from_utf8_lossy(&s.owner), String::from_utf8_lossy(&s.lock)))
                    .collect()
            });
            assert_eq!(found, expected.map(|steps| steps.iter().map(|s| s.to_string()).collect()), "{owner} {lock}");
            let distinct: HashSet<_> = asked.iter().collect();
            assert_eq!(distinct.len(), asked.len(), "each lock's holders asked once");
        }
    }

    #[test]
    fn a_ten_lock_cycle_is_found_and_a_long_chain_without_one_is_not() {
        let owners: Vec<String> = (0..10).map(|i| format!("o{i}")).collect();
        let waits: Edges =
            (1..10).map(|i| (owners[i].as_bytes().to_vec(), vec![format!("l{}", (i + 1) % 10).into_bytes()])).collect();
        let holder = |lock: &[u8]| {
            let i: usize = String::from_utf8_lossy(&lock[1..]).parse().unwrap();
            vec![format!("o{i}").into_bytes()]
        };
        let found = cycle(b"o0", b"l1", waits_in(&waits), holder).expect("a cycle of 10");
        assert_eq!(found.len(), 10);
        let chain: Edges =
            (1..10_000).map(|i| (format!("o{i}").into_bytes(), vec![format!("l{}", i + 1).into_bytes()])).collect();
        assert_eq!(cycle(b"o0", b"l1", waits_in(&chain), holder), None);
    }
}
