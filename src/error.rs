//! The one error type of the module. Each variant maps to a stable reply
//! (error code and text) that clients and tests may rely on.

use redis_module::RedisError;
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockError {
    /// The key holds something other than a hash.
    WrongType,
    /// The key is a hash, but a hold count in it is not an integer:
    /// it is somebody else's data, not a lock.
    NotALock,
    /// A reentry would take the hold count past `i64::MAX`.
    HoldCountOverflow,
    /// `lease_ms` is not a positive base-10 integer.
    LeaseNotPositiveInteger,
    /// `lease_ms` is above [`crate::lease::MAX_LEASE_MS`].
    LeaseTooLong,
}

impl LockError {
    /// The reply text, starting with its error code.
    pub const fn message(self) -> &'static str {
        match self {
            Self::WrongType => "WRONGTYPE Operation against a key holding the wrong kind of value",
            Self::NotALock => "ERR key is a hash but not a lock: a hold count is not an integer",
            Self::HoldCountOverflow => "ERR hold count would overflow",
            Self::LeaseNotPositiveInteger => "ERR lease_ms must be a positive integer",
            Self::LeaseTooLong => "ERR lease_ms is above the maximum of 31536000000 (365 days)",
        }
    }
}

impl fmt::Display for LockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl From<LockError> for RedisError {
    fn from(err: LockError) -> Self {
        RedisError::Str(err.message())
    }
}
