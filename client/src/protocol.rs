//! The RLOCK commands and Redisson's names, as the client sends them.

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

pub fn acquire(name: &[u8], owner: &[u8], lease_ms: i64) -> redis::Cmd {
    let mut cmd = redis::cmd("RLOCK.ACQUIRE");
    cmd.arg(name).arg(owner).arg(lease_ms);
    cmd
}

pub fn renew(name: &[u8], owner: &[u8], lease_ms: i64) -> redis::Cmd {
    let mut cmd = redis::cmd("RLOCK.RENEW");
    cmd.arg(name).arg(owner).arg(lease_ms);
    cmd
}

/// RLOCK.RELEASE, with Redisson's unlock latch when given a request id
/// and its lifetime: a repeat with the same id within it replies what the
/// first one did.
pub fn release(name: &[u8], owner: &[u8], lease_ms: i64, latch: Option<(&[u8], Duration)>) -> redis::Cmd {
    let mut cmd = redis::cmd("RLOCK.RELEASE");
    cmd.arg(name).arg(owner).arg(lease_ms);
    if let Some((request_id, lifetime)) = latch {
        cmd.arg("ID").arg(request_id).arg("PX").arg(clamp_lease_ms(lifetime));
    }
    cmd
}

/// A new unlock request id: 16 random bytes as 32 hex digits, as Redisson's.
pub fn request_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

pub fn force_release(name: &[u8]) -> redis::Cmd {
    let mut cmd = redis::cmd("RLOCK.FORCERELEASE");
    cmd.arg(name);
    cmd
}

pub fn status(name: &[u8], owner: &[u8]) -> redis::Cmd {
    let mut cmd = redis::cmd("RLOCK.STATUS");
    cmd.arg(name).arg(owner);
    cmd
}

/// The fields of an `RLOCK.STATUS` reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Status {
    pub locked: bool,
    pub ttl_ms: i64,
    pub hold_count: i64,
}

impl Status {
    pub fn parse(reply: redis::Value) -> Result<Self> {
        let pairs: Vec<(String, Option<i64>)> =
            redis::from_redis_value(reply.clone()).map_err(|_| Error::UnexpectedReply(format!("{reply:?}")))?;
        let mut status = Status::default();
        for (field, value) in pairs {
            let value = value.unwrap_or(0);
            match field.as_str() {
                "locked" => status.locked = value == 1,
                "ttl_ms" => status.ttl_ms = value,
                "hold_count" => status.hold_count = value,
                _ => {}
            }
        }
        Ok(status)
    }
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

    #[test]
    fn status_reads_the_pairs() {
        use redis::Value::{BulkString, Int, Nil};
        let reply = redis::Value::Array(vec![
            BulkString(b"locked".to_vec()),
            Int(1),
            BulkString(b"ttl_ms".to_vec()),
            Int(900),
            BulkString(b"holders".to_vec()),
            Int(1),
            BulkString(b"held".to_vec()),
            Nil,
            BulkString(b"hold_count".to_vec()),
            Int(2),
        ]);
        assert_eq!(Status::parse(reply).unwrap(), Status { locked: true, ttl_ms: 900, hold_count: 2 });
    }
}
