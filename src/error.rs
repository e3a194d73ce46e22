//! The one error type of the module. Each variant maps to a stable reply
//! (error code and text) that clients and tests may rely on.

use crate::handoff::deadlock::Step;
use redis_module::RedisError;
use std::borrow::Cow;
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockError {
    /// The key holds something other than a hash.
    WrongType,
    /// The key is a hash, but a hold count in it is not an integer:
    /// it is somebody else's data, not a lock.
    NotALock,
    /// A reentry would take the hold count past `i64::MAX`.
    HoldCountOverflow,
    /// `NOREENTRY`: the owner already holds the lock. Redisson's
    /// non-reentrant lock's own error, which it looks for.
    NonReentrant,
    /// `lease_ms` is not a positive base-10 integer.
    LeaseNotPositiveInteger,
    /// `lease_ms` is above [`crate::lease::MAX_LEASE_MS`].
    LeaseTooLong,
    /// now + a lease or latch time does not fit in Unix milliseconds.
    ExpiryOverflow,
    /// `PX latch_ms` is not a positive base-10 integer.
    LatchNotPositiveInteger,
    /// `PX latch_ms` is above [`crate::lease::MAX_LEASE_MS`].
    LatchTooLong,
    /// `ID` without a request id, or with an empty one.
    RequestIdMissing,
    /// `PX` without `latch_ms`.
    LatchMissing,
    /// `LATCH` without a latch key, or with an empty one.
    LatchKeyMissing,
    /// `LATCH` naming the lock's own key.
    LatchKeyIsLock,
    /// `ID LATCH`: the key specs would take the word after it for a key.
    RequestIdIsLatch,
    /// In cluster mode, a declared latch key in another slot than the lock.
    KeysCrossSlot,
    /// An argument after the lease that is not `ID request_id [PX latch_ms]`.
    ReleaseSyntax,
    /// The unlock latch key exists but holds neither `0` nor `1`.
    NotALatch,
    /// The acquire record key exists but holds no record of a grant.
    NotAnAcquireRecord,
    /// The acquire record key holds another owner's or another lock's
    /// grant: the request id was reused.
    RequestIdTaken,
    /// A blocked acquire whose request was sent again with the same id
    /// (on another connection): the wait goes on there.
    WaitTakenOver,
    /// A blocked acquire ended by `RLOCK.CANCEL`.
    WaitCancelled,
    /// In cluster mode, a blocked caller's lock is not served here any
    /// more: its slot moved, or is moving and its key has gone.
    SlotNotServed,
    /// In cluster mode, a request's keys (the lock and its unlock latch or
    /// acquire record) are split between two nodes while their slot
    /// migrates: Redis's own reply to a multi-key command then.
    KeysSplit,
    /// In cluster mode, the unlock latch key hashes to another slot than
    /// the lock (the lock name has a `{` but no proper hash tag).
    LatchCrossSlot,
    /// `WAIT wait_ms` is not a positive base-10 integer.
    WaitNotPositiveInteger,
    /// `WAIT wait_ms` is above [`crate::lease::MAX_LEASE_MS`].
    WaitTooLong,
    /// RFAIR.CANCEL: `WAIT` without `wait_ms`, or something else after the owner.
    WaitSyntax,
    /// `BLOCK block_ms` is not a positive base-10 integer of at most
    /// [`crate::lease::MAX_LEASE_MS`].
    BlockInvalid,
    /// The read-write lock's mode argument is neither `READ` nor `WRITE`.
    ModeInvalid,
    /// The key is a hash but not a read-write lock: no valid `mode`, or a
    /// hold count that is not an integer.
    NotAReadWriteLock,
    /// A read-write lock would hold more read holds than
    /// [`crate::rwlock::MAX_READ_HOLDS`] (each is a key a release visits).
    TooManyReadHolds,
    /// An owner that would collide with the read-write lock's own fields.
    OwnerReserved,
    /// An integer argument (`permits`, `count`, `delta`) that is not a
    /// base-10 integer; names the argument.
    ArgumentNotInteger(&'static str),
    /// An integer argument that must not be negative; names it.
    ArgumentNegative(&'static str),
    /// `PX ttl_ms` is not a positive base-10 integer.
    TtlNotPositiveInteger,
    /// `PX ttl_ms` is above [`crate::lease::MAX_LEASE_MS`].
    TtlTooLong,
    /// A permit's `lease_ms` is neither a positive integer nor -1.
    PermitLeaseInvalid,
    /// An empty permit id.
    PermitIdEmpty,
    /// The same permit id twice in one call (each id is one permit).
    PermitIdRepeated,
    /// An acquire names a permit id that is held already.
    PermitIdHeld,
    /// A key derived from the name holds another type than the primitive's.
    DerivedWrongType(Vec<u8>),
    /// Arguments out of place; says what may come where.
    Syntax(&'static str),
    /// [`Self::Syntax`] restated with the command's grammar (`grammar::explain`).
    SyntaxOf(String),
    /// `RPSEM.SETPERMITS … VIA`: permits minus the count, in Lua's numbers
    /// (as Redisson's script computes it), is no integer for INCRBY.
    PermitsChangeNotInteger,
    /// An empty `owner`: no holder could be told apart by it.
    OwnerEmpty,
    /// A cancel's `request_id` is empty (no acquire is sent with one).
    RequestIdEmpty,
    /// A string counter (permits, a latch's count, a fencing token) is not
    /// an integer; names the key.
    StoredNotInteger(Vec<u8>),
    /// A fast multi-lock's hold has no end, or one that is not a number;
    /// names its `field:owner:expire_time` field.
    HoldEndNotNumber(Vec<u8>),
    /// The counter at this key would go past the 64-bit range.
    CounterOverflow(Vec<u8>),
    /// The caller's ACL does not let it touch this key the command derived
    /// from the name (a queue, a latch, a per-hold timeout key).
    NoKeyPermission(Vec<u8>),
    /// In cluster mode, a key derived from the name hashes to another slot
    /// than the name (a `{` without a proper hash tag).
    DerivedKeyCrossSlot(Vec<u8>),
    /// Waiting would close this cycle of waits (see `handoff::deadlock`).
    Deadlock(Vec<Step>),
    /// The caller's ACL does not let it read a key given as an argument
    /// of a command that declares no key (`RLOCK.WAITERS`).
    KeyArgumentPermission,
    /// `HOLDS expected`: the owner holds `held` levels, neither the
    /// caller's count nor one more (see `lock::acquire_holding`).
    StaleHolds { held: i64, expected: i64 },
}

impl LockError {
    /// The reply text, starting with its error code.
    pub fn message(&self) -> Cow<'static, str> {
        let fixed = match self {
            Self::WrongType => "WRONGTYPE Operation against a key holding the wrong kind of value",
            Self::NotALock => "ERR key is a hash but not a lock: a hold count is not an integer",
            Self::HoldCountOverflow => "ERR hold count would overflow",
            Self::NonReentrant => "ERR NON_REENTRANT_REACQUIRE",
            Self::LeaseNotPositiveInteger => "ERR lease_ms must be a positive integer",
            Self::LeaseTooLong => "ERR lease_ms is above the maximum of 31536000000 (365 days)",
            Self::ExpiryOverflow => "ERR expiry time would overflow",
            Self::LatchNotPositiveInteger => "ERR latch_ms must be a positive integer",
            Self::LatchTooLong => "ERR latch_ms is above the maximum of 31536000000 (365 days)",
            Self::RequestIdMissing => "ERR ID needs a non-empty request_id",
            Self::LatchMissing => "ERR PX needs latch_ms",
            Self::LatchKeyMissing => "ERR LATCH needs a non-empty latch_key",
            Self::LatchKeyIsLock => "ERR LATCH latch_key must be another key than the lock's",
            Self::RequestIdIsLatch => "ERR request_id may not be the word LATCH",
            Self::KeysCrossSlot => "CROSSSLOT Keys in request don't hash to the same slot",
            Self::ReleaseSyntax => "ERR syntax error: after owner and lease_ms, only ID request_id [PX latch_ms]",
            Self::NotALatch => "ERR the unlock latch key holds something other than 0 or 1",
            Self::NotAnAcquireRecord => "ERR the acquire record key holds something other than a record of a grant",
            Self::RequestIdTaken => {
                "ERR request_id is recorded for another owner or lock: each request needs an id of its own"
            }
            Self::WaitTakenOver => "ERR the wait goes on in a resend of the same request id",
            Self::KeyArgumentPermission => "NOPERM this user has no permissions to access one of the keys used as arguments",
            Self::WaitCancelled => "ERR the wait was cancelled (RLOCK.CANCEL or RRW.CANCEL)",
            Self::SlotNotServed => "TRYAGAIN the lock's slot moved, or is moving, to another node: ask again",
            Self::KeysSplit => "TRYAGAIN Multiple keys request during rehashing of slot",
            Self::LatchCrossSlot => {
                "ERR the unlock latch key hashes to another slot than the lock: give the lock name a hash tag"
            }
            Self::WaitNotPositiveInteger => "ERR wait_ms must be a positive integer",
            Self::WaitTooLong => "ERR wait_ms is above the maximum of 31536000000 (365 days)",
            Self::WaitSyntax => "ERR syntax error: after owner, only WAIT wait_ms, then OR other last",
            Self::BlockInvalid => "ERR block_ms must be a positive integer of at most 31536000000 (365 days)",
            Self::ModeInvalid => "ERR mode must be READ or WRITE",
            Self::NotAReadWriteLock => "ERR key is a hash but not a read-write lock: no read/write mode, or a hold count that is not an integer",
            Self::TooManyReadHolds => "ERR too many read holds: a read-write lock takes at most 10000 (each is a key)",
            Self::OwnerReserved => {
                "ERR owner must not be 'mode' nor end with ':write' (the read-write lock's own fields)"
            }
            Self::TtlNotPositiveInteger => "ERR ttl_ms must be a positive integer",
            Self::TtlTooLong => "ERR ttl_ms is above the maximum of 31536000000 (365 days)",
            Self::PermitLeaseInvalid => "ERR lease_ms must be a positive integer, or -1 for a permit that never expires",
            Self::PermitIdEmpty => "ERR id must not be empty",
            Self::OwnerEmpty => "ERR owner must not be empty",
            Self::RequestIdEmpty => "ERR request_id must not be empty",
            Self::PermitsChangeNotInteger => {
                "ERR permits: permits minus the current count, in Lua's numbers as Redisson's script computes it, is not an integer"
            }
            Self::PermitIdRepeated => "ERR id: the same permit id is given twice (each id is one permit)",
            Self::PermitIdHeld => "ERR id: a permit with this id is held already",
            Self::ArgumentNotInteger(name) => return format!("ERR {name} must be an integer").into(),
            Self::ArgumentNegative(name) => return format!("ERR {name} must be a non-negative integer").into(),
            Self::Syntax(expected) => return format!("ERR syntax error: {expected}").into(),
            Self::StaleHolds { held, expected } => {
                return format!("STALEHOLDS the owner holds {held} levels, not {expected} or one more").into()
            }
            Self::SyntaxOf(explained) => return format!("ERR syntax error: {explained}").into(),
            Self::StoredNotInteger(key) => {
                return format!("ERR the value at '{}' is not an integer", key.escape_ascii()).into()
            }
            Self::HoldEndNotNumber(field) => {
                return format!("ERR the hash field '{}' (a hold's end) is missing or not a number", field.escape_ascii())
                    .into()
            }
            Self::CounterOverflow(key) => {
                return format!("ERR the counter at '{}' would overflow", key.escape_ascii()).into()
            }
            Self::DerivedWrongType(key) => {
                return format!(
                    "WRONGTYPE the derived key '{}' holds the wrong kind of value",
                    key.escape_ascii()
                )
                .into()
            }
            Self::NoKeyPermission(key) => {
                return format!(
                    "NOPERM this user has no permissions to access the derived key '{}'",
                    key.escape_ascii()
                )
                .into()
            }
            Self::DerivedKeyCrossSlot(key) => {
                return format!(
                    "ERR the derived key '{}' hashes to another slot than the name: give the name a hash tag",
                    key.escape_ascii()
                )
                .into()
            }
            Self::Deadlock(steps) => {
                let holder = |i: usize| &steps[(i + 1) % steps.len()].owner;
                let waits: Vec<String> = (0..steps.len())
                    .map(|i| {
                        let (owner, lock) = (steps[i].owner.escape_ascii(), steps[i].lock.escape_ascii());
                        format!("{owner} waits for {lock} held by {}", holder(i).escape_ascii())
                    })
                    .collect();
                return format!("DEADLOCK {}", waits.join(", ")).into();
            }
        };
        fixed.into()
    }
}

impl fmt::Display for LockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message())
    }
}

impl From<LockError> for RedisError {
    fn from(err: LockError) -> Self {
        match err.message() {
            Cow::Borrowed(message) => RedisError::Str(message),
            Cow::Owned(message) => RedisError::String(message),
        }
    }
}
