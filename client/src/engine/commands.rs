//! What differs between the lock kinds the client speaks for: each kind's
//! commands (RLOCK.*, RFAIR.*, RRW.* READ|WRITE, RFENCED.ACQUIRE), the channel its waiters
//! listen on and which messages wake them, and how its STATUS reply reads.
//! Everything else (attempts, settling, releases, the watchdog) is shared.

use crate::engine::kind::Kind;
use crate::engine::lock_state::LockId;
use crate::engine::protocol::clamp_lease_ms;
use crate::error::{Error, Result};
use redis::{Cmd, Value};
use std::time::Duration;

impl Kind {
    fn prefix(self, verb: &str) -> &'static [u8] {
        match self {
            Kind::Fenced if verb == "ACQUIRE" => b"RFENCED",
            Kind::Plain | Kind::Fenced => b"RLOCK",
            Kind::Fair => b"RFAIR",
            Kind::Read | Kind::Write => b"RRW",
        }
    }

    /// The read-write lock's side argument.
    fn side(self) -> Option<&'static str> {
        match self {
            Kind::Read => Some("READ"),
            Kind::Write => Some("WRITE"),
            Kind::Plain | Kind::Fair | Kind::Fenced => None,
        }
    }

    fn cmd(self, verb: &str, name: &[u8]) -> Cmd {
        // Sized for the longest (a latched release): no regrowth per argument.
        let mut cmd = Cmd::with_capacity(9, 128 + 2 * name.len());
        // Joined on the stack: every request names its command.
        let (prefix, verb) = (self.prefix(verb), verb.as_bytes());
        let mut command = [0; 32];
        let length = prefix.len() + 1 + verb.len();
        command[..prefix.len()].copy_from_slice(prefix);
        command[prefix.len()] = b'.';
        command[prefix.len() + 1..length].copy_from_slice(verb);
        cmd.arg(&command[..length]).arg(name);
        cmd
    }
}

/// How a release names its unlock latch: by the request id (the module
/// derives the key) or by the key itself, declared to Redis.
#[derive(Clone, Copy)]
pub enum Latch<'a> {
    Request(&'a [u8]),
    Key(&'a [u8]),
}

impl LockId {
    /// The channel this lock's waiters listen on.
    pub fn channel(&self) -> Vec<u8> {
        match self.kind {
            Kind::Plain | Kind::Fenced => rlock_protocol::release_channel(&self.name),
            Kind::Fair => rlock_protocol::fair_waiter_channel(&self.name, &self.owner),
            Kind::Read | Kind::Write => rlock_protocol::rwlock_channel(&self.name),
        }
    }

    fn cmd(&self, verb: &str) -> Cmd {
        let mut cmd = self.kind.cmd(verb, &self.name);
        cmd.arg(&*self.owner);
        if let Some(side) = self.kind.side() {
            cmd.arg(side);
        }
        cmd
    }

    /// The acquire. A fair lock given `wait_ms` uses the waiting form (the
    /// owner is queued when refused); other kinds ignore it.
    pub fn acquire(&self, lease_ms: i64, wait_ms: Option<i64>) -> Cmd {
        let mut cmd = self.cmd("ACQUIRE");
        cmd.arg(lease_ms);
        if let (Kind::Fair, Some(wait_ms)) = (self.kind, wait_ms) {
            cmd.arg("WAIT").arg(wait_ms);
        }
        cmd
    }

    /// The release, with Redisson's unlock latch when given one and its
    /// lifetime: a repeat with the same latch within it replies what the
    /// first one did. `missing_not_held`: a fair or read-write release
    /// of a missing lock answers "not held" and records no latch
    /// (`MISSING NOTHELD`), as a plain lock's does; without it the server
    /// answers as Redisson's scripts, "released" (fair) or, to a resend,
    /// the 1 the latch recorded (read-write), to a holder whose hold ended.
    pub fn release(&self, lease_ms: i64, latch: Option<(Latch<'_>, Duration)>, missing_not_held: bool) -> Cmd {
        let mut cmd = self.cmd("RELEASE");
        if self.kind.release_sets_lease() {
            cmd.arg(lease_ms);
        }
        if let Some((latch, lifetime)) = latch {
            match latch {
                Latch::Key(key) => cmd.arg("LATCH").arg(key),
                Latch::Request(request_id) => cmd.arg("ID").arg(request_id),
            };
            cmd.arg("PX").arg(clamp_lease_ms(lifetime));
        }
        if missing_not_held && self.kind.answers_missing_as_released() {
            cmd.arg("MISSING").arg("NOTHELD");
        }
        cmd
    }

    /// Whether the release may name its latch key (`LATCH`, RLock's
    /// release) rather than its request id: Redis then checks the key's ACL.
    pub fn takes_latch_key(&self) -> bool {
        matches!(self.kind, Kind::Plain | Kind::Fenced)
    }

    /// The renewal: 1 renewed, 0 not held. On a read-write lock it renews
    /// every hold of the owner, read and write.
    pub fn renew(&self, lease_ms: i64) -> Cmd {
        let mut cmd = self.kind.cmd("RENEW", &self.name);
        cmd.arg(&*self.owner).arg(lease_ms);
        cmd
    }

    /// The status, with the owner's holds.
    pub fn status(&self) -> Cmd {
        let mut cmd = self.kind.cmd("STATUS", &self.name);
        cmd.arg(&*self.owner);
        cmd
    }

    /// The force release of this kind (a read-write lock: of this side).
    pub fn force_release(&self) -> Cmd {
        let mut cmd = self.kind.cmd("FORCERELEASE", &self.name);
        if let Some(side) = self.kind.side() {
            cmd.arg(side);
        }
        cmd
    }

    /// `RFAIR.CANCEL`: a fair waiter gives up its place in the queue.
    pub fn cancel(&self, wait_ms: i64) -> Cmd {
        let mut cmd = self.kind.cmd("CANCEL", &self.name);
        cmd.arg(&*self.owner).arg("WAIT").arg(wait_ms);
        cmd
    }

    /// `RLOCK.CANCEL`: ends this owner's blocked acquire sent with
    /// `ID request_id` (1), or finds none (0: it ended already).
    pub fn cancel_request(&self, request_id: &[u8]) -> Cmd {
        let mut cmd = self.kind.cmd("CANCEL", &self.name);
        cmd.arg(&*self.owner).arg(request_id);
        cmd
    }
}

/// An acquire's `REPLY FULL`: whether it was granted, the owner's holds
/// after it, the lease left when granted (when not: what the short reply
/// would say, the holder's PTTL or the fair lock's hint), how long the
/// server kept the call, and a fenced lock's token (`None` for other
/// kinds; a fenced grant without one is no reply of ours).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FullReply {
    pub granted: bool,
    pub holds: i64,
    pub lease_ms: i64,
    pub waited_ms: i64,
    pub token: Option<i64>,
}

impl FullReply {
    /// What a plain lock's `HOLDS n` acquire asked for the short reply
    /// says: nil, granted now (the owner then holds `n + 1`, the lease the
    /// one asked for; `lease_ms` is -1, not read); an integer, refused with
    /// the holder's PTTL; the full reply, a grant replayed (its lease is an
    /// earlier one's). One value to parse where the full reply is nine.
    pub fn from_short(reply: &Value, holds: usize) -> Result<Self> {
        let refused = |retry_ms| Self { granted: false, holds: 0, lease_ms: retry_ms, waited_ms: 0, token: None };
        match reply {
            Value::Nil => Ok(Self { granted: true, holds: holds as i64 + 1, lease_ms: -1, waited_ms: 0, token: None }),
            Value::Int(retry_ms) => Ok(refused(*retry_ms)),
            Value::Array(_) | Value::Map(_) => Self::parse(reply, Kind::Plain),
            _ => Err(Error::UnexpectedReply(format!("acquire replied {reply:?}"))),
        }
    }

    pub fn parse(reply: &Value, kind: Kind) -> Result<Self> {
        let unexpected = || Error::UnexpectedReply(format!("acquire replied {reply:?}"));
        // Read in place: every acquire's reply passes here.
        let (map, items): (&[(Value, Value)], &[Value]) = match reply {
            Value::Map(map) => (map, &[]),
            Value::Array(items) if items.len() % 2 == 0 => (&[], items),
            _ => return Err(unexpected()),
        };
        let pairs = map.iter().map(|(field, value)| (field, value));
        let pairs = pairs.chain(items.chunks_exact(2).map(|pair| (&pair[0], &pair[1])));
        let integer = |value: &Value| match value {
            Value::Int(value) => Some(*value),
            value => redis::from_redis_value_ref(value).ok(),
        };
        let named = |field: &Value, name: &str| match field {
            Value::BulkString(bytes) => bytes == name.as_bytes(),
            Value::SimpleString(text) => text == name,
            _ => false,
        };
        if pairs.clone().any(|(_, value)| integer(value).is_none()) {
            return Err(unexpected());
        }
        let field =
            |name: &str| pairs.clone().find(|(field, _)| named(field, name)).and_then(|(_, value)| integer(value));
        let token = field("token");
        let no_token = match kind {
            Kind::Fenced => token.is_none_or(|token| token < 1),
            _ => token.is_some(),
        };
        match (field("granted"), field("holds"), field("lease_ms"), field("waited_ms")) {
            (Some(1), _, _, _) if no_token => Err(unexpected()),
            (Some(granted @ 0..=1), Some(holds), Some(lease_ms), Some(waited_ms)) => {
                Ok(Self { granted: granted == 1, holds, lease_ms, waited_ms, token })
            }
            _ => Err(unexpected()),
        }
    }
}

/// A STATUS reply, as the client reads it for one kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Status {
    /// Held by anyone (on a read-write lock: held the way of this side).
    pub locked: bool,
    pub ttl_ms: i64,
    /// The owner's holds of this kind.
    pub hold_count: i64,
}

impl Status {
    /// Reads the flat field/value array of `kind`'s STATUS.
    pub fn parse(reply: Value, kind: Kind) -> Result<Self> {
        let unexpected = || Error::UnexpectedReply(format!("{reply:?}"));
        let pairs: Vec<(String, Value)> = redis::from_redis_value(reply.clone()).map_err(|_| unexpected())?;
        let field = |name: &str| pairs.iter().find(|(field, _)| field == name).map(|(_, value)| value);
        let int = |name: &str| -> Result<i64> {
            match field(name) {
                None | Some(Value::Nil) => Ok(0),
                Some(value) => redis::from_redis_value(value.clone()).map_err(|_| unexpected()),
            }
        };
        let mode = match field("mode") {
            None | Some(Value::Nil) => None,
            Some(value) => Some(redis::from_redis_value::<String>(value.clone()).map_err(|_| unexpected())?),
        };
        // Redisson's isLocked of each side: the read side is locked while
        // anyone reads (a writer may read too), the write side while written.
        let locked = match kind {
            Kind::Plain | Kind::Fair | Kind::Fenced => int("locked")? == 1,
            Kind::Read => mode.as_deref() == Some("read") || (mode.as_deref() == Some("write") && int("readers")? > 0),
            Kind::Write => mode.as_deref() == Some("write"),
        };
        Ok(Status { locked, ttl_ms: int("ttl_ms")?, hold_count: int(kind.count_field())? })
    }
}

#[cfg(test)]
mod tests;
