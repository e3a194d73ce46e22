//! Redisson's unlock latch (3.24+) on RLock's release: a release given a
//! request id records its reply (0 or 1) under a key derived from the
//! lock name and the id, for a while. A retry of the same request (after a
//! timeout whose first attempt did succeed) replies the recorded value
//! instead of "not held". The latch's key and rules: [`crate::keyspace::latch`].

use super::{release, LockStore, Release};
use crate::error::LockError;
use crate::keyspace::latch::{record, recorded, RequestKey};
use crate::lease::expiry;

/// Redisson's unlock with a latch: replay the recorded reply if there is
/// one and change nothing; else release, and record a 0 or 1 reply (a
/// "not held" reply records nothing).
pub fn release_once<S: LockStore, L: RequestKey>(
    store: &mut S,
    latch: &mut L,
    owner: &S::Owner,
    lease_ms: i64,
    latch_ms: i64,
    now_ms: i64,
) -> Result<Release, LockError> {
    let latch_expire_at = expiry(now_ms, latch_ms)?;
    if let Some(released) = recorded(latch)? {
        return Ok(Release::Latched { released });
    }
    let outcome = release(store, owner, lease_ms, now_ms)?;
    match outcome {
        Release::Decremented { .. } => record(latch, false, latch_expire_at)?,
        Release::Released => record(latch, true, latch_expire_at)?,
        Release::NotHeld | Release::Latched { .. } => {}
    }
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keyspace::memory::MemoryKeyspace;
    use crate::lock::fixtures::{hash, missing, request_key, string_key, with_lock, with_request_key};

    const NOW: i64 = 1_000_000;
    const LEASE: i64 = 30_000;
    const LATCH: i64 = 20_000;

    struct Case {
        name: &'static str,
        store: MemoryKeyspace,
        latch: MemoryKeyspace,
        reply: Result<Release, LockError>,
        store_effects: &'static [&'static str],
        latch_effects: &'static [&'static str],
    }

    fn held(count: &str) -> MemoryKeyspace {
        hash(&[("a", count)], Some(NOW + 500))
    }

    /// [`release_once`] of owner `a` on the lock in `store`, latched in `latch`.
    fn release(
        store: &mut MemoryKeyspace,
        latch: &mut MemoryKeyspace,
        (lease_ms, latch_ms): (i64, i64),
    ) -> Result<Release, LockError> {
        with_lock(store, |store| {
            with_request_key(latch, |latch| release_once(store, latch, b"a".as_slice(), lease_ms, latch_ms, NOW))
        })
    }

    #[test]
    fn latched_releases_follow_redissons_script() {
        let cases = [
            Case {
                name: "the last hold records 1",
                store: held("1"),
                latch: request_key(None),
                reply: Ok(Release::Released),
                store_effects: &["DEL l", "PUBLISH redisson_lock__channel:{l} 0"],
                latch_effects: &["SET r 1 PXAT 1020000"],
            },
            Case {
                name: "a reentry level records 0",
                store: held("2"),
                latch: request_key(None),
                reply: Ok(Release::Decremented { count: 1 }),
                store_effects: &["HINCRBY l a -1", "PEXPIREAT l 1030000"],
                latch_effects: &["SET r 0 PXAT 1020000"],
            },
            Case {
                name: "not held records nothing",
                store: hash(&[("b", "1")], None),
                latch: request_key(None),
                reply: Ok(Release::NotHeld),
                store_effects: &[],
                latch_effects: &[],
            },
            Case {
                name: "a recorded 1 is replayed, even when the lock is held again",
                store: held("1"),
                latch: request_key(Some("1")),
                reply: Ok(Release::Latched { released: true }),
                store_effects: &[],
                latch_effects: &[],
            },
            Case {
                name: "a recorded 0 is replayed on a missing lock",
                store: missing(),
                latch: request_key(Some("0")),
                reply: Ok(Release::Latched { released: false }),
                store_effects: &[],
                latch_effects: &[],
            },
            Case {
                name: "the latch is read before the lock key's type",
                store: string_key(),
                latch: request_key(Some("1")),
                reply: Ok(Release::Latched { released: true }),
                store_effects: &[],
                latch_effects: &[],
            },
            Case {
                name: "a latch key holding something else is an error",
                store: held("1"),
                latch: request_key(Some("yes")),
                reply: Err(LockError::NotALatch),
                store_effects: &[],
                latch_effects: &[],
            },
            Case {
                name: "errors of the release record nothing",
                store: string_key(),
                latch: request_key(None),
                reply: Err(LockError::WrongType),
                store_effects: &[],
                latch_effects: &[],
            },
        ];
        for mut case in cases {
            let reply = release(&mut case.store, &mut case.latch, (LEASE, LATCH));
            assert_eq!(reply, case.reply, "{}: reply", case.name);
            assert_eq!(case.store.effects, case.store_effects, "{}: lock effects", case.name);
            assert_eq!(case.latch.effects, case.latch_effects, "{}: latch effects", case.name);
        }
    }

    #[test]
    fn an_overflowing_expiry_changes_nothing() {
        for (lease, latch) in [(LEASE, i64::MAX), (i64::MAX, LATCH)] {
            let (mut store, mut latch_key) = (held("2"), request_key(None));
            let reply = release(&mut store, &mut latch_key, (lease, latch));
            assert_eq!(reply, Err(LockError::ExpiryOverflow));
            assert_eq!((store.keys, store.effects), (held("2").keys, vec![]));
            assert!(latch_key.keys.is_empty() && latch_key.effects.is_empty());
        }
    }
}
