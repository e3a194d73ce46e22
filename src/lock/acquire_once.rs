//! An acquire with a request id (`… ACQUIRE … ID request_id`, of every
//! lock kind): a grant records the owner's hold count (and a fenced
//! lock's token) under a key derived from the lock name and the id, for a
//! window. A resend of the request (its reply was lost) gets that grant
//! again instead of adding a level. A refusal records nothing: a resend
//! simply tries again.
//!
//! The record also names the owner and the lock it was granted for: the
//! key is shared by locks whose names tag alike (`k` and `{k}`), and a
//! careless client may reuse an id for another owner. Such a record is
//! refused, never taken for a grant.

use super::{acquire, parse_hold_count, Acquire, LockStore};
use crate::delay::Delay;
use crate::error::LockError;
use crate::keyspace::latch::RequestKey;
use crate::lease::expiry;

/// The text of an acquire record key; `None` when it is missing. A key
/// of another type is [`LockError::NotAnAcquireRecord`].
fn record_text(record: &mut impl RequestKey) -> Result<Option<Vec<u8>>, LockError> {
    record.text().map_err(|err| match err {
        LockError::WrongType => LockError::NotAnAcquireRecord,
        err => err,
    })
}

/// The request a record belongs to: the lock's name and the owner (a
/// read-write lock's writer as its write field, so that one id cannot
/// serve both sides).
#[derive(Debug, Clone, Copy)]
pub struct Requester<'a> {
    pub name: &'a [u8],
    pub owner: &'a [u8],
}

/// What a grant is recorded as: the owner's levels after it, and the
/// fencing token it took (a fenced lock's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    pub count: i64,
    pub token: Option<i64>,
}

impl Grant {
    pub fn count(count: i64) -> Self {
        Self { count, token: None }
    }
}

impl Requester<'_> {
    /// `count[,token]:owner_length:owner` then the lock's name.
    fn record_text(&self, grant: Grant) -> Vec<u8> {
        use std::io::Write;
        // Written into one buffer: the record is made on every grant with
        // an id, and each allocation costs the module's allocator.
        let mut text = Vec::with_capacity(48 + self.owner.len() + self.name.len());
        let _ = write!(text, "{}", grant.count);
        if let Some(token) = grant.token {
            let _ = write!(text, ",{token}");
        }
        let _ = write!(text, ":{}:", self.owner.len());
        text.extend_from_slice(self.owner);
        text.extend_from_slice(self.name);
        text
    }

    /// The grant a record of this requester holds. A record of another
    /// owner or lock is [`LockError::RequestIdTaken`]; anything else,
    /// [`LockError::NotAnAcquireRecord`].
    fn recorded(&self, text: &[u8]) -> Result<Grant, LockError> {
        let malformed = LockError::NotAnAcquireRecord;
        let mut parts = text.splitn(3, |&byte| byte == b':');
        let (Some(counts), Some(owner_len), Some(rest)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(malformed);
        };
        let positive = |number: &[u8]| parse_hold_count(number).ok().filter(|number| *number > 0);
        let mut counts = counts.splitn(2, |&byte| byte == b',');
        let count = counts.next().and_then(positive).ok_or(malformed.clone())?;
        let token = counts.next().map(|token| positive(token).ok_or(malformed.clone())).transpose()?;
        let owner_len = parse_hold_count(owner_len).ok().and_then(|len| usize::try_from(len).ok());
        let (owner, name) =
            owner_len.filter(|len| *len <= rest.len()).map(|len| rest.split_at(len)).ok_or(malformed)?;
        if (owner, name) != (self.owner, self.name) {
            return Err(LockError::RequestIdTaken);
        }
        Ok(Grant { count, token })
    }
}

/// What an acquire with a request id did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Once<T> {
    /// It ran (first sent, or refused before): the kind's outcome.
    Ran(T),
    /// An earlier send was granted: nothing changed.
    Replayed(Grant),
}

/// Replays the grant recorded for the request, or runs `acquire` and
/// records its grant (`grant_of` its outcome) for `window_ms`.
pub fn once<R: RequestKey, T>(
    (record, requester): (&mut R, Requester),
    (window_ms, now_ms): (i64, i64),
    acquire: impl FnOnce() -> Result<T, LockError>,
    grant_of: impl Fn(&T) -> Option<Grant>,
) -> Result<Once<T>, LockError> {
    let record_expire_at = expiry(now_ms, window_ms)?;
    if let Some(text) = record_text(record)? {
        return Ok(Once::Replayed(requester.recorded(&text)?));
    }
    let outcome = acquire()?;
    record_grant(record, requester, grant_of(&outcome), record_expire_at)?;
    Ok(Once::Ran(outcome))
}

/// Refuses a record of another request under this id before anything
/// else changes (a blocked call of the request is left alone).
pub fn vouch<R: RequestKey>(record: &mut R, requester: Requester) -> Result<(), LockError> {
    match record_text(record)? {
        Some(text) => requester.recorded(&text).map(drop),
        None => Ok(()),
    }
}

/// RLock's acquire, [`once`] per request.
pub fn acquire_once<S: LockStore, R: RequestKey>(
    store: &mut S,
    (record, requester): (&mut R, Requester),
    owner: &S::Owner,
    lease_ms: i64,
    window_ms: i64,
    (now_ms, delay): (i64, Delay),
) -> Result<Once<Acquire>, LockError> {
    let grant_of = |outcome: &Acquire| granted_count(*outcome).map(Grant::count);
    once((record, requester), (window_ms, now_ms), || acquire(store, owner, lease_ms, (now_ms, delay)), grant_of)
}

/// Records a blocked caller's grant, unless the key holds another type
/// (it was checked when the caller called, and changed since): then the
/// grant stands, unrecorded.
pub fn remember<R: RequestKey>(
    record: &mut R,
    requester: Requester,
    grant: Grant,
    expire_at_ms: i64,
) -> Result<(), LockError> {
    match record_text(record) {
        Err(LockError::NotAnAcquireRecord) => Ok(()),
        Err(err) => Err(err),
        Ok(_) => record_grant(record, requester, Some(grant), expire_at_ms),
    }
}

fn record_grant<R: RequestKey>(
    record: &mut R,
    requester: Requester,
    grant: Option<Grant>,
    expire_at_ms: i64,
) -> Result<(), LockError> {
    match grant {
        Some(grant) => record.set_text(&requester.record_text(grant), expire_at_ms),
        None => Ok(()),
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
    use crate::keyspace::memory::MemoryKeyspace;
    use crate::lock::fixtures::{hash, missing, request_key, string_key, with_lock, with_request_key};

    const NOW: i64 = 1_000_000;
    const LEASE: i64 = 30_000;
    const WINDOW: i64 = 20_000;

    struct Case {
        name: &'static str,
        store: MemoryKeyspace,
        record: MemoryKeyspace,
        reply: Result<Once<Acquire>, LockError>,
        store_effects: &'static [&'static str],
        record_effects: &'static [&'static str],
    }

    /// [`acquire_once`] of owner `a` on the lock in `store`, recorded in `record`.
    fn acquire(
        store: &mut MemoryKeyspace,
        record: &mut MemoryKeyspace,
        requester: Requester,
        window_ms: i64,
    ) -> Result<Once<Acquire>, LockError> {
        with_lock(store, |store| {
            with_request_key(record, |record| {
                acquire_once(store, (record, requester), b"a".as_slice(), LEASE, window_ms, (NOW, Delay::OVER))
            })
        })
    }

    #[test]
    fn acquires_with_a_request_id_run_once() {
        let cases = [
            Case {
                name: "a first grant records 1, the owner and the lock",
                store: missing(),
                record: request_key(None),
                reply: Ok(Once::Ran(Acquire::Acquired)),
                store_effects: &["HINCRBY l a 1", "PEXPIREAT l 1030000"],
                record_effects: &["SET r 1:1:ak PXAT 1020000"],
            },
            Case {
                name: "a re-entry records the new count",
                store: hash(&[("a", "2")], Some(NOW + 5)),
                record: request_key(None),
                reply: Ok(Once::Ran(Acquire::Reentered { count: 3 })),
                store_effects: &["HINCRBY l a 1", "PEXPIREAT l 1030000"],
                record_effects: &["SET r 3:1:ak PXAT 1020000"],
            },
            Case {
                name: "a refusal records nothing",
                store: hash(&[("b", "1")], Some(NOW + 5)),
                record: request_key(None),
                reply: Ok(Once::Ran(Acquire::Contended { pttl_ms: 5 })),
                store_effects: &[],
                record_effects: &[],
            },
            Case {
                name: "a resend replays the grant and adds no level",
                store: hash(&[("a", "1")], Some(NOW + 5)),
                record: request_key(Some("1:1:ak")),
                reply: Ok(Once::Replayed(Grant::count(1))),
                store_effects: &[],
                record_effects: &[],
            },
            Case {
                name: "the record is read before the lock key's type",
                store: string_key(),
                record: request_key(Some("4:1:ak")),
                reply: Ok(Once::Replayed(Grant::count(4))),
                store_effects: &[],
                record_effects: &[],
            },
            Case {
                name: "another owner's record with the same id is refused, not replayed",
                store: hash(&[("b", "1")], Some(NOW + 5)),
                record: request_key(Some("1:1:bk")),
                reply: Err(LockError::RequestIdTaken),
                store_effects: &[],
                record_effects: &[],
            },
            Case {
                name: "another lock's record on the shared key ({k} and k) is refused",
                store: missing(),
                record: request_key(Some("1:1:a{k}")),
                reply: Err(LockError::RequestIdTaken),
                store_effects: &[],
                record_effects: &[],
            },
            Case {
                name: "errors of the acquire record nothing",
                store: string_key(),
                record: request_key(None),
                reply: Err(LockError::WrongType),
                store_effects: &[],
                record_effects: &[],
            },
        ];
        for mut case in cases {
            let requester = Requester { name: b"k", owner: b"a" };
            let reply = acquire(&mut case.store, &mut case.record, requester, WINDOW);
            assert_eq!(reply, case.reply, "{}: reply", case.name);
            assert_eq!(case.store.effects, case.store_effects, "{}: lock effects", case.name);
            assert_eq!(case.record.effects, case.record_effects, "{}: record effects", case.name);
        }
    }

    #[test]
    fn a_record_that_is_no_grant_of_this_request_is_refused() {
        for value in ["yes", "1", "0:1:ak", "-5:1:ak", "01:1:ak", "1:2:ak", "1:9:ak", "1:-1:ak", "1:x:ak", "1::ak"] {
            let (mut store, mut record) = (missing(), request_key(Some(value)));
            let requester = Requester { name: b"k", owner: b"a" };
            let reply = acquire(&mut store, &mut record, requester, WINDOW);
            let expected = if value == "1:2:ak" { LockError::RequestIdTaken } else { LockError::NotAnAcquireRecord };
            assert_eq!(reply, Err(expected), "{value}");
            assert!(store.effects.is_empty() && record.effects.is_empty(), "{value}");
        }
    }

    #[test]
    fn only_a_missing_record_or_this_requests_own_is_vouched_for() {
        let requester = Requester { name: b"k", owner: b"a" };
        let cases = [
            (request_key(None), Ok(())),
            (request_key(Some("1:1:ak")), Ok(())),
            (request_key(Some("1:1:a{k}")), Err(LockError::RequestIdTaken)),
            (request_key(Some("yes")), Err(LockError::NotAnAcquireRecord)),
        ];
        for (mut keys, expected) in cases {
            let vouched = with_request_key(&mut keys, |record| vouch(record, requester));
            assert_eq!(vouched, expected, "{keys:?}");
        }
    }

    #[test]
    fn a_grant_with_a_token_is_recorded_and_replayed_with_it() {
        let requester = Requester { name: b"k", owner: b"a" };
        let grant = Grant { count: 2, token: Some(9) };
        let mut keys = request_key(None);
        let ran = with_request_key(&mut keys, |record| {
            once((record, requester), (WINDOW, NOW), || Ok(grant), |grant| Some(*grant))
        });
        assert_eq!(ran, Ok(Once::Ran(grant)));
        assert_eq!(keys.effects, ["SET r 2,9:1:ak PXAT 1020000"]);
        let mut keys = request_key(Some("2,9:1:ak"));
        let replayed = with_request_key(&mut keys, |record| {
            once((record, requester), (WINDOW, NOW), || -> Result<Grant, _> { unreachable!() }, |_| None)
        });
        assert_eq!(replayed, Ok(Once::Replayed(grant)));
        for malformed in ["2,:1:ak", "2,0:1:ak", "2,x:1:ak", "2,-1:1:ak", ",9:1:ak", "2,9,1:1:ak"] {
            let mut keys = request_key(Some(malformed));
            let reply = with_request_key(&mut keys, |record| {
                once((record, requester), (WINDOW, NOW), || Ok(grant), |grant| Some(*grant))
            });
            assert_eq!(reply, Err(LockError::NotAnAcquireRecord), "{malformed}");
        }
    }

    #[test]
    fn a_blocked_callers_grant_is_remembered() {
        let requester = Requester { name: b"k", owner: b"a" };
        let cases: [(Grant, &[&str]); 2] =
            [(Grant::count(1), &["SET r 1:1:ak PXAT 5"]), (Grant::count(2), &["SET r 2:1:ak PXAT 5"])];
        for (grant, effects) in cases {
            let mut keys = request_key(None);
            assert_eq!(with_request_key(&mut keys, |record| remember(record, requester, grant, 5)), Ok(()));
            assert_eq!(keys.effects, effects, "{grant:?}");
        }
    }

    #[test]
    fn an_overflowing_window_changes_nothing() {
        let (mut store, mut record) = (missing(), request_key(None));
        let requester = Requester { name: b"k", owner: b"a" };
        let reply = acquire(&mut store, &mut record, requester, i64::MAX);
        assert_eq!(reply, Err(LockError::ExpiryOverflow));
        assert!(store.keys.is_empty() && store.effects.is_empty() && record.effects.is_empty());
    }
}
