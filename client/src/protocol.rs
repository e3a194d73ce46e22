//! The commands of each lock kind (RLOCK, RFAIR, RRW) and Redisson's
//! names, as the client sends them.

use crate::error::{Error, Result};
use crate::lock_state::LockId;
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

/// Which primitive a lock handle drives: its commands, its channel and its
/// status reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Redisson's RLock: `RLOCK.*`.
    Plain,
    /// Redisson's fair lock: `RFAIR.*`, waiting in a queue where a waiter
    /// keeps its place for `wait_ms` after its turn comes.
    Fair { wait_ms: i64 },
    /// The read side of a read-write lock: `RRW.* … READ`.
    Read,
    /// The write side of a read-write lock: `RRW.* … WRITE`.
    Write,
}

impl Kind {
    fn command(self, verb: &str) -> redis::Cmd {
        let family = match self {
            Kind::Plain => "RLOCK",
            Kind::Fair { .. } => "RFAIR",
            Kind::Read | Kind::Write => "RRW",
        };
        redis::cmd(&format!("{family}.{verb}"))
    }

    fn side(self) -> Option<&'static str> {
        match self {
            Kind::Read => Some("READ"),
            Kind::Write => Some("WRITE"),
            Kind::Plain | Kind::Fair { .. } => None,
        }
    }

    /// `VERB name owner [side]`: the start of every command but FORCERELEASE.
    fn owned(self, verb: &str, id: &LockId) -> redis::Cmd {
        let mut cmd = self.command(verb);
        cmd.arg(&*id.name).arg(&*id.owner);
        if let Some(side) = self.side() {
            cmd.arg(side);
        }
        cmd
    }
}

/// The acquire; a fair lock's joins the queue.
pub fn acquire(id: &LockId, lease_ms: i64) -> redis::Cmd {
    let mut cmd = id.kind.owned("ACQUIRE", id);
    cmd.arg(lease_ms);
    if let Kind::Fair { wait_ms } = id.kind {
        cmd.arg("WAIT").arg(wait_ms);
    }
    cmd
}

/// A fair lock's give-up: leaves the queue. `None` for the other kinds.
pub fn cancel(id: &LockId) -> Option<redis::Cmd> {
    let Kind::Fair { wait_ms } = id.kind else { return None };
    let mut cmd = id.kind.owned("CANCEL", id);
    cmd.arg("WAIT").arg(wait_ms);
    Some(cmd)
}

pub fn renew(id: &LockId, lease_ms: i64) -> redis::Cmd {
    let mut cmd = id.kind.command("RENEW");
    cmd.arg(&*id.name).arg(&*id.owner).arg(lease_ms);
    cmd
}

/// The release, with Redisson's unlock latch when given a request id and
/// its lifetime: a repeat with the same id within it replies what the
/// first one did.
pub fn release(id: &LockId, lease_ms: i64, latch: Option<(&[u8], Duration)>) -> redis::Cmd {
    let mut cmd = id.kind.owned("RELEASE", id);
    cmd.arg(lease_ms);
    if let Some((request_id, lifetime)) = latch {
        cmd.arg("ID").arg(request_id).arg("PX").arg(clamp_lease_ms(lifetime));
    }
    cmd
}

/// A new unlock request id: 16 random bytes as 32 hex digits, as Redisson's.
pub fn request_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// Deletes the lock whoever holds it (a read-write lock: only when held
/// on this side, as Redisson's).
pub fn force_release(id: &LockId) -> redis::Cmd {
    let mut cmd = id.kind.command("FORCERELEASE");
    cmd.arg(&*id.name);
    if let Some(side) = id.kind.side() {
        cmd.arg(side);
    }
    cmd
}

pub fn status(id: &LockId) -> redis::Cmd {
    let mut cmd = id.kind.command("STATUS");
    cmd.arg(&*id.name).arg(&*id.owner);
    cmd
}

/// Where the lock's releases are announced to this owner's waiters.
pub fn channel(id: &LockId) -> Vec<u8> {
    match id.kind {
        Kind::Plain => release_channel(&id.name),
        Kind::Fair { .. } => rlock_protocol::fair_waiter_channel(&id.name, &id.owner),
        Kind::Read | Kind::Write => rlock_protocol::rwlock_channel(&id.name),
    }
}

/// A status reply, as far as the client needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Status {
    pub locked: bool,
    pub ttl_ms: i64,
    /// The owner's holds of this kind.
    pub hold_count: i64,
}

impl Status {
    /// Reads the field/value pairs of `kind`'s STATUS reply.
    pub fn parse(kind: Kind, reply: redis::Value) -> Result<Self> {
        let unexpected = || Error::UnexpectedReply(format!("{reply:?}"));
        let redis::Value::Array(items) = &reply else { return Err(unexpected()) };
        let count_field = match kind {
            Kind::Plain | Kind::Fair { .. } => "hold_count",
            Kind::Read => "read_count",
            Kind::Write => "write_count",
        };
        let mut status = Status::default();
        for pair in items.chunks(2) {
            let [field, value] = pair else { return Err(unexpected()) };
            let field: String = redis::from_redis_value(field.clone()).map_err(|_| unexpected())?;
            let int = || redis::from_redis_value::<Option<i64>>(value.clone()).ok().flatten().unwrap_or(0);
            match field.as_str() {
                "locked" => status.locked = int() == 1,
                "mode" => status.locked = *value != redis::Value::Nil,
                "ttl_ms" => status.ttl_ms = int(),
                field if field == count_field => status.hold_count = int(),
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
        assert_eq!(Status::parse(Kind::Plain, reply).unwrap(), Status { locked: true, ttl_ms: 900, hold_count: 2 });
        let reply = redis::Value::Array(vec![
            BulkString(b"mode".to_vec()),
            BulkString(b"read".to_vec()),
            BulkString(b"ttl_ms".to_vec()),
            Int(50),
            BulkString(b"read_count".to_vec()),
            Int(3),
            BulkString(b"write_count".to_vec()),
            Int(1),
        ]);
        assert_eq!(
            Status::parse(Kind::Read, reply.clone()).unwrap(),
            Status { locked: true, ttl_ms: 50, hold_count: 3 }
        );
        assert_eq!(Status::parse(Kind::Write, reply).unwrap(), Status { locked: true, ttl_ms: 50, hold_count: 1 });
    }
}
