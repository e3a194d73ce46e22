//! An acquire that names the levels its caller counts (`RLOCK.ACQUIRE …
//! HOLDS n`): idempotent with no record. The owner's levels now decide:
//! - `n`: nothing of this call ran yet; the acquire runs.
//! - `n + 1`: an earlier send of this very call was granted (only this
//!   caller changes the owner's levels, one call at a time); its grant is
//!   replayed and no level is added. Not during a lock-delay: there the
//!   level may be one whose release the old primary took, and the call is
//!   refused as the acquire is.
//! - anything else: the caller's count is stale (its holds ended: a lease
//!   ran out, a force release, a delete); nothing changes, and the caller
//!   learns the levels the owner holds.
//!
//! It is for an owner only one client uses (rlock-client's own ids): a
//! second client counting levels of the same owner would take the other's
//! level for its own grant. Shared owners use a request id
//! (`acquire_once`).

use super::acquire_once::{Grant, Once};
use super::{acquire, held_count, Acquire, LockStore};
use crate::delay::Delay;
use crate::error::LockError;

/// RLock's acquire for a caller that counts `expected` levels of `owner`.
pub fn acquire_holding<S: LockStore>(
    store: &mut S,
    owner: &S::Owner,
    lease_ms: i64,
    expected: i64,
    clock: (i64, Delay),
) -> Result<Once<Acquire>, LockError> {
    let held = held_count(store, owner)?.unwrap_or(0);
    match held.checked_sub(expected) {
        Some(0) => Ok(Once::Ran(acquire(store, owner, lease_ms, clock)?)),
        // In a lock-delay one more level may be a hold whose release the
        // old primary took, no grant of this call: refused, as the
        // acquire itself is then (nothing changes).
        Some(1) if clock.1.refuses() => Ok(Once::Ran(acquire(store, owner, lease_ms, clock)?)),
        Some(1) => Ok(Once::Replayed(Grant::count(held))),
        _ => Err(LockError::StaleHolds { held, expected }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lock::fixtures::{hash, missing, string_key, with_lock};

    const NOW: i64 = 1_000_000;
    const LEASE: i64 = 30_000;

    #[test]
    fn the_owners_levels_decide_what_an_acquire_with_holds_does() {
        let held_by = |owner: &str, count: &str| hash(&[(owner, count)], Some(NOW + 5));
        let cases = [
            (
                "a first acquire runs",
                missing(),
                0,
                Ok(Once::Ran(Acquire::Acquired)),
                &["HINCRBY l a 1", "PEXPIREAT l 1030000"][..],
            ),
            (
                "a re-entry runs",
                held_by("a", "2"),
                2,
                Ok(Once::Ran(Acquire::Reentered { count: 3 })),
                &["HINCRBY l a 1", "PEXPIREAT l 1030000"],
            ),
            (
                "a refusal runs, and changes nothing",
                held_by("b", "1"),
                0,
                Ok(Once::Ran(Acquire::Contended { pttl_ms: 5 })),
                &[],
            ),
            (
                "a resend of a granted first acquire replays it",
                held_by("a", "1"),
                0,
                Ok(Once::Replayed(Grant::count(1))),
                &[],
            ),
            (
                "a resend of a granted re-entry replays it",
                held_by("a", "3"),
                2,
                Ok(Once::Replayed(Grant::count(3))),
                &[],
            ),
            (
                "holds that ended since are stale",
                missing(),
                2,
                Err(LockError::StaleHolds { held: 0, expected: 2 }),
                &[],
            ),
            (
                "held by another owner, the caller's holds ended",
                held_by("b", "1"),
                1,
                Err(LockError::StaleHolds { held: 0, expected: 1 }),
                &[],
            ),
            (
                "more levels than one grant adds are stale",
                held_by("a", "3"),
                1,
                Err(LockError::StaleHolds { held: 3, expected: 1 }),
                &[],
            ),
            ("a key of another type is refused first", string_key(), 0, Err(LockError::WrongType), &[]),
        ];
        for (name, mut store, expected, reply, effects) in cases {
            let got = with_lock(&mut store, |lock| {
                acquire_holding(lock, b"a".as_slice(), LEASE, expected, (NOW, Delay::OVER))
            });
            assert_eq!(got, reply, "{name}");
            assert_eq!(store.effects, effects, "{name}");
        }
    }

    #[test]
    fn one_more_level_during_a_lock_delay_is_refused_not_replayed() {
        let mut store = hash(&[("a", "1")], Some(NOW + 5));
        let delay = Delay::left(2_000);
        let got = with_lock(&mut store, |lock| acquire_holding(lock, b"a".as_slice(), LEASE, 0, (NOW, delay)));
        assert_eq!(got, Ok(Once::Ran(Acquire::Contended { pttl_ms: 2_000 })));
        assert!(store.effects.is_empty(), "{:?}", store.effects);
    }
}
