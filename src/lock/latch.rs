//! Redisson's unlock latch (3.24+): a release given a request id records
//! its reply (0 or 1) under a key derived from the lock name and the id,
//! for a while. A retry of the same request (after a timeout whose first
//! attempt did succeed) replies the recorded value instead of "not held".

use super::{release, LockStore, Release};
use crate::error::LockError;
use crate::lease::expiry;

/// The latch key of one release request.
pub trait UnlockLatch {
    /// The reply recorded by an earlier release with this request id:
    /// `Some(true)` for 1, `Some(false)` for 0, `None` when there is none.
    /// Fails with [`LockError::NotALatch`] when the key holds anything else.
    fn recorded(&self) -> Result<Option<bool>, LockError>;
    /// Records the reply of this release, to expire at `at_ms`.
    fn record(&mut self, released: bool, at_ms: i64);
}

/// Redisson's unlock with a latch: replay the recorded reply if there is
/// one and change nothing; else release, and record a 0 or 1 reply (a
/// "not held" reply records nothing).
pub fn release_once<S: LockStore, L: UnlockLatch>(
    store: &mut S,
    latch: &mut L,
    owner: &S::Owner,
    lease_ms: i64,
    latch_ms: i64,
    now_ms: i64,
) -> Result<Release, LockError> {
    let latch_expire_at = expiry(now_ms, latch_ms)?;
    if let Some(released) = latch.recorded()? {
        return Ok(Release::Latched { released });
    }
    let outcome = release(store, owner, lease_ms, now_ms)?;
    match outcome {
        Release::Decremented { .. } => latch.record(false, latch_expire_at),
        Release::Released => latch.record(true, latch_expire_at),
        Release::NotHeld | Release::Latched { .. } => {}
    }
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lock::memory::{MemoryLatch, MemoryStore};

    const NOW: i64 = 1_000_000;
    const LEASE: i64 = 30_000;
    const LATCH: i64 = 20_000;

    struct Case {
        name: &'static str,
        store: MemoryStore,
        latch: MemoryLatch,
        reply: Result<Release, LockError>,
        store_effects: &'static [&'static str],
        latch_effects: &'static [&'static str],
    }

    fn held(count: &str) -> MemoryStore {
        MemoryStore::hash(&[("a", count)], Some(NOW + 500))
    }

    #[test]
    fn latched_releases_follow_redissons_script() {
        let cases = [
            Case {
                name: "the last hold records 1",
                store: held("1"),
                latch: MemoryLatch::default(),
                reply: Ok(Release::Released),
                store_effects: &["DEL after the last hold of a", "PUBLISH"],
                latch_effects: &["SET 1 PXAT 1020000"],
            },
            Case {
                name: "a reentry level records 0",
                store: held("2"),
                latch: MemoryLatch::default(),
                reply: Ok(Release::Decremented { count: 1 }),
                store_effects: &["HINCRBY a -1", "PEXPIREAT 1030000"],
                latch_effects: &["SET 0 PXAT 1020000"],
            },
            Case {
                name: "not held records nothing",
                store: MemoryStore::hash(&[("b", "1")], None),
                latch: MemoryLatch::default(),
                reply: Ok(Release::NotHeld),
                store_effects: &[],
                latch_effects: &[],
            },
            Case {
                name: "a recorded 1 is replayed, even when the lock is held again",
                store: held("1"),
                latch: MemoryLatch::holding("1"),
                reply: Ok(Release::Latched { released: true }),
                store_effects: &[],
                latch_effects: &[],
            },
            Case {
                name: "a recorded 0 is replayed on a missing lock",
                store: MemoryStore::missing(),
                latch: MemoryLatch::holding("0"),
                reply: Ok(Release::Latched { released: false }),
                store_effects: &[],
                latch_effects: &[],
            },
            Case {
                name: "the latch is read before the lock key's type",
                store: MemoryStore::string_key(),
                latch: MemoryLatch::holding("1"),
                reply: Ok(Release::Latched { released: true }),
                store_effects: &[],
                latch_effects: &[],
            },
            Case {
                name: "a latch key holding something else is an error",
                store: held("1"),
                latch: MemoryLatch::holding("yes"),
                reply: Err(LockError::NotALatch),
                store_effects: &[],
                latch_effects: &[],
            },
            Case {
                name: "errors of the release record nothing",
                store: MemoryStore::string_key(),
                latch: MemoryLatch::default(),
                reply: Err(LockError::WrongType),
                store_effects: &[],
                latch_effects: &[],
            },
        ];
        for mut case in cases {
            let reply = release_once(&mut case.store, &mut case.latch, b"a".as_slice(), LEASE, LATCH, NOW);
            assert_eq!(reply, case.reply, "{}: reply", case.name);
            assert_eq!(case.store.effects, case.store_effects, "{}: lock effects", case.name);
            assert_eq!(case.latch.effects, case.latch_effects, "{}: latch effects", case.name);
        }
    }

    #[test]
    fn an_overflowing_expiry_changes_nothing() {
        for (lease, latch) in [(LEASE, i64::MAX), (i64::MAX, LATCH)] {
            let (mut store, mut latch_key) = (held("2"), MemoryLatch::default());
            let reply = release_once(&mut store, &mut latch_key, b"a".as_slice(), lease, latch, NOW);
            assert_eq!(reply, Err(LockError::ExpiryOverflow));
            assert_eq!((store, latch_key), (held("2"), MemoryLatch::default()));
        }
    }
}
