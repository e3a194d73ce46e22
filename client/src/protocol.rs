//! Redisson's names and the lease bounds, as the client uses them (each
//! kind's commands: see commands.rs).

use crate::error::{Error, Result};
use std::time::Duration;

pub use rlock_protocol::{release_channel, unlock_latch_key};

/// Longest lease the module accepts (365 days).
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

/// A new unlock request id: 16 random bytes as 32 hex digits, as Redisson's.
pub fn request_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leases_are_checked() {
        assert_eq!(lease_ms(Duration::from_millis(1500)).unwrap(), 1500);
        assert!(matches!(lease_ms(Duration::from_micros(999)), Err(Error::InvalidLease(_))));
        assert!(matches!(lease_ms(MAX_LEASE + Duration::from_millis(1)), Err(Error::InvalidLease(_))));
        assert_eq!(lease_ms(MAX_LEASE).unwrap(), 31_536_000_000);
    }
}
