//! Redisson's names and the lease bounds, as the client uses them (each
//! kind's commands: see commands.rs).

use crate::error::{Error, Result};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::LazyLock;
use std::time::Duration;

pub use rlock_protocol::{release_channel, unlock_latch_key};

/// Longest lease the module accepts (365 days).
///
/// ```
/// assert_eq!(rlock_client::MAX_LEASE.as_secs(), 365 * 24 * 60 * 60);
/// ```
pub const MAX_LEASE: Duration = Duration::from_millis(rlock_protocol::MAX_LEASE_MS as u64);

/// A lease in whole milliseconds, checked against the module's bounds.
pub fn lease_ms(lease: Duration) -> Result<i64> {
    let ms = lease.as_millis();
    if ms == 0 || lease > MAX_LEASE {
        return Err(Error::InvalidLease(lease));
    }
    Ok(ms as i64)
}

/// A lease the client computed (never zero, never above the maximum).
pub fn clamp_lease_ms(lease: Duration) -> i64 {
    lease.clamp(Duration::from_millis(1), MAX_LEASE).as_millis() as i64
}

/// A new unlock request id: 32 hex digits, as Redisson's random ones.
/// Unique without a system call per release: a random 128-bit base per
/// process, its low bits XORed with a counter (two processes' ids meet only
/// if their bases differ in the low 64 bits alone: chance 2^-64).
pub fn request_id() -> RequestId {
    static BASE: LazyLock<u128> = LazyLock::new(|| uuid::Uuid::new_v4().as_u128());
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let id = *BASE ^ u128::from(NEXT.fetch_add(1, Ordering::Relaxed));
    let mut digits = [0; 32];
    uuid::Uuid::from_u128(id).simple().encode_lower(&mut digits);
    RequestId(digits)
}

/// A request id's 32 hex digits, kept inline (every acquire and release
/// makes one).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct RequestId([u8; 32]);

impl RequestId {
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

/// Whether the server refused a request's arguments: what a module older
/// than a keyword the client sends (`HOLDS`, `LATCH`, `MISSING NOTHELD`)
/// replies, before anything runs.
pub(crate) fn is_syntax_error(err: &redis::RedisError) -> bool {
    err.code() == Some("ERR") && err.detail().is_some_and(|detail| detail.starts_with("syntax error"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_are_32_hex_digits_and_never_repeat() {
        let ids: std::collections::HashSet<RequestId> = (0..10_000).map(|_| request_id()).collect();
        assert_eq!(ids.len(), 10_000);
        assert!(ids.iter().all(|id| id.as_bytes().iter().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())));
    }

    #[test]
    fn leases_are_checked() {
        assert_eq!(lease_ms(Duration::from_millis(1500)).unwrap(), 1500);
        assert!(matches!(lease_ms(Duration::from_micros(999)), Err(Error::InvalidLease(_))));
        assert!(matches!(lease_ms(MAX_LEASE + Duration::from_millis(1)), Err(Error::InvalidLease(_))));
        assert_eq!(lease_ms(MAX_LEASE).unwrap(), 31_536_000_000);
    }
}
