//! An acquire with a request id (`RLOCK.ACQUIRE … ID request_id`): a grant
//! records the owner's hold count under a key derived from the lock name
//! and the id, for a window. A resend of the request (its reply was lost)
//! gets that grant again instead of adding a level. A refusal records
//! nothing: a resend simply tries again.

use super::{acquire, Acquire, LockStore};
use crate::error::LockError;
use crate::lease::expiry;

/// The record key of one acquire request.
pub trait AcquireRecord {
    /// The hold count an earlier grant of this request recorded; `None`
    /// when there is none. Fails with [`LockError::NotAnAcquireRecord`]
    /// when the key holds anything else.
    fn granted_count(&self) -> Result<Option<i64>, LockError>;
    /// Records a grant that left the owner `count` levels, to expire at `at_ms`.
    fn record_grant(&mut self, count: i64, at_ms: i64);
}

/// What an acquire with a request id did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Once {
    /// It ran (first sent, or refused before).
    Ran(Acquire),
    /// An earlier send was granted `count` levels: nothing changed.
    Replayed { count: i64 },
}

/// Replays a recorded grant, or acquires and records a grant for
/// `window_ms`.
pub fn acquire_once<S: LockStore, R: AcquireRecord>(
    store: &mut S,
    record: &mut R,
    owner: &S::Owner,
    lease_ms: i64,
    window_ms: i64,
    now_ms: i64,
) -> Result<Once, LockError> {
    let record_expire_at = expiry(now_ms, window_ms)?;
    if let Some(count) = record.granted_count()? {
        return Ok(Once::Replayed { count });
    }
    let outcome = acquire(store, owner, lease_ms, now_ms)?;
    remember(record, outcome, record_expire_at);
    Ok(Once::Ran(outcome))
}

/// Records `outcome` when it is a grant (a blocked caller's grant too).
pub fn remember<R: AcquireRecord>(record: &mut R, outcome: Acquire, expire_at_ms: i64) {
    if let Some(count) = granted_count(outcome) {
        record.record_grant(count, expire_at_ms);
    }
}

/// The owner's levels after a grant.
pub fn granted_count(outcome: Acquire) -> Option<i64> {
    match outcome {
        Acquire::Acquired => Some(1),
        Acquire::Reentered { count } => Some(count),
        Acquire::Contended { .. } => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lock::memory::{MemoryLatch, MemoryStore};

    const NOW: i64 = 1_000_000;
    const LEASE: i64 = 30_000;
    const WINDOW: i64 = 20_000;

    struct Case {
        name: &'static str,
        store: MemoryStore,
        record: MemoryLatch,
        reply: Result<Once, LockError>,
        store_effects: &'static [&'static str],
        record_effects: &'static [&'static str],
    }

    #[test]
    fn acquires_with_a_request_id_run_once() {
        let cases = [
            Case {
                name: "a first grant records 1",
                store: MemoryStore::missing(),
                record: MemoryLatch::default(),
                reply: Ok(Once::Ran(Acquire::Acquired)),
                store_effects: &["HINCRBY a 1", "PEXPIREAT 1030000"],
                record_effects: &["SET 1 PXAT 1020000"],
            },
            Case {
                name: "a re-entry records the new count",
                store: MemoryStore::hash(&[("a", "2")], Some(NOW + 5)),
                record: MemoryLatch::default(),
                reply: Ok(Once::Ran(Acquire::Reentered { count: 3 })),
                store_effects: &["HINCRBY a 1", "PEXPIREAT 1030000"],
                record_effects: &["SET 3 PXAT 1020000"],
            },
            Case {
                name: "a refusal records nothing",
                store: MemoryStore::hash(&[("b", "1")], Some(NOW + 5)),
                record: MemoryLatch::default(),
                reply: Ok(Once::Ran(Acquire::Contended { pttl_ms: 5 })),
                store_effects: &[],
                record_effects: &[],
            },
            Case {
                name: "a resend replays the grant and adds no level",
                store: MemoryStore::hash(&[("a", "1")], Some(NOW + 5)),
                record: MemoryLatch::holding("1"),
                reply: Ok(Once::Replayed { count: 1 }),
                store_effects: &[],
                record_effects: &[],
            },
            Case {
                name: "the record is read before the lock key's type",
                store: MemoryStore::string_key(),
                record: MemoryLatch::holding("4"),
                reply: Ok(Once::Replayed { count: 4 }),
                store_effects: &[],
                record_effects: &[],
            },
            Case {
                name: "a record key holding something else is an error",
                store: MemoryStore::missing(),
                record: MemoryLatch::holding("yes"),
                reply: Err(LockError::NotAnAcquireRecord),
                store_effects: &[],
                record_effects: &[],
            },
            Case {
                name: "errors of the acquire record nothing",
                store: MemoryStore::string_key(),
                record: MemoryLatch::default(),
                reply: Err(LockError::WrongType),
                store_effects: &[],
                record_effects: &[],
            },
        ];
        for mut case in cases {
            let reply = acquire_once(&mut case.store, &mut case.record, b"a".as_slice(), LEASE, WINDOW, NOW);
            assert_eq!(reply, case.reply, "{}: reply", case.name);
            assert_eq!(case.store.effects, case.store_effects, "{}: lock effects", case.name);
            assert_eq!(case.record.effects, case.record_effects, "{}: record effects", case.name);
        }
    }

    #[test]
    fn an_overflowing_window_changes_nothing() {
        let (mut store, mut record) = (MemoryStore::missing(), MemoryLatch::default());
        let reply = acquire_once(&mut store, &mut record, b"a".as_slice(), LEASE, i64::MAX, NOW);
        assert_eq!(reply, Err(LockError::ExpiryOverflow));
        assert_eq!((store, record), (MemoryStore::missing(), MemoryLatch::default()));
    }
}
