//! Which locks each owner waits for: the deadlock check follows an
//! owner's waits without copying every waiter on the server.

use std::collections::HashMap;

/// Each owner's waits, with how many of its callers wait on each lock.
#[derive(Debug, Default)]
pub struct OwnerWaits {
    by_owner: HashMap<Vec<u8>, HashMap<Vec<u8>, usize>>,
}

impl OwnerWaits {
    /// A caller of `owner` waits for `lock`.
    pub fn add(&mut self, owner: &[u8], lock: &[u8]) {
        *self.by_owner.entry(owner.to_vec()).or_default().entry(lock.to_vec()).or_default() += 1;
    }

    /// A caller of `owner` no longer waits for `lock`.
    pub fn remove(&mut self, owner: &[u8], lock: &[u8]) {
        let Some(locks) = self.by_owner.get_mut(owner) else { return };
        if let Some(count) = locks.get_mut(lock) {
            *count -= 1;
            if *count == 0 {
                locks.remove(lock);
            }
        }
        if locks.is_empty() {
            self.by_owner.remove(owner);
        }
    }

    /// The locks `owner`'s callers wait for.
    pub fn locks_of(&self, owner: &[u8]) -> Vec<Vec<u8>> {
        self.by_owner.get(owner).map(|locks| locks.keys().cloned().collect()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_owner_waits_until_its_last_caller_on_a_lock_leaves() {
        // (steps as (add?, owner, lock), owner asked, its locks, sorted)
        type Case<'a> = (&'a [(bool, &'a str, &'a str)], &'a str, &'a [&'a str]);
        let cases: [Case; 5] = [
            (&[(true, "o", "a")], "o", &["a"]),
            (&[(true, "o", "a"), (true, "o", "b"), (true, "p", "c")], "o", &["a", "b"]),
            (&[(true, "o", "a"), (true, "o", "a"), (false, "o", "a")], "o", &["a"]),
            (&[(true, "o", "a"), (false, "o", "a")], "o", &[]),
            (&[(false, "o", "a"), (true, "p", "a")], "o", &[]),
        ];
        for (steps, owner, expected) in cases {
            let mut waits = OwnerWaits::default();
            for (add, who, lock) in steps {
                if *add {
                    waits.add(who.as_bytes(), lock.as_bytes());
                } else {
                    waits.remove(who.as_bytes(), lock.as_bytes());
                }
            }
            let mut locks = waits.locks_of(owner.as_bytes());
            locks.sort();
            assert_eq!(locks, expected.iter().map(|lock| lock.as_bytes().to_vec()).collect::<Vec<_>>(), "{steps:?}");
        }
        let mut emptied = OwnerWaits::default();
        emptied.add(b"o", b"a");
        emptied.remove(b"o", b"a");
        assert!(emptied.by_owner.is_empty(), "no owner left behind");
    }
}
