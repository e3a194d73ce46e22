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

    /// The release, with Redisson's unlock latch when given a request id
    /// and its lifetime: a repeat with the same id within it replies what
    /// the first one did.
    pub fn release(&self, lease_ms: i64, latch: Option<(&[u8], Duration)>) -> Cmd {
        let mut cmd = self.cmd("RELEASE");
        if self.kind.release_sets_lease() {
            cmd.arg(lease_ms);
        }
        if let Some((request_id, lifetime)) = latch {
            cmd.arg("ID").arg(request_id).arg("PX").arg(clamp_lease_ms(lifetime));
        }
        cmd
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
mod tests {
    use super::*;
    use redis::Value::{Array, BulkString, Int, Map, Nil, Okay};

    fn id(kind: Kind) -> LockId {
        LockId { name: b"orders".as_slice().into(), owner: b"u:1".as_slice().into(), kind }
    }

    fn args(cmd: &Cmd) -> Vec<String> {
        cmd.args_iter()
            .map(|arg| match arg {
                redis::Arg::Simple(bytes) => String::from_utf8_lossy(bytes).into_owned(),
                _ => "<cursor>".into(),
            })
            .collect()
    }

    #[test]
    fn each_kind_sends_its_commands() {
        let latch = Some((b"r1".as_slice(), Duration::from_millis(5000)));
        let cases: [(Cmd, &str); 18] = [
            (id(Kind::Plain).acquire(100, Some(7)), "RLOCK.ACQUIRE orders u:1 100"),
            (id(Kind::Fair).acquire(100, Some(7)), "RFAIR.ACQUIRE orders u:1 100 WAIT 7"),
            (id(Kind::Fair).acquire(100, None), "RFAIR.ACQUIRE orders u:1 100"),
            (id(Kind::Read).acquire(100, Some(7)), "RRW.ACQUIRE orders u:1 READ 100"),
            (id(Kind::Write).acquire(100, None), "RRW.ACQUIRE orders u:1 WRITE 100"),
            (id(Kind::Plain).release(100, latch), "RLOCK.RELEASE orders u:1 100 ID r1 PX 5000"),
            (id(Kind::Fair).release(100, None), "RFAIR.RELEASE orders u:1 100"),
            (id(Kind::Read).release(100, latch), "RRW.RELEASE orders u:1 READ ID r1 PX 5000"),
            (id(Kind::Write).release(100, latch), "RRW.RELEASE orders u:1 WRITE 100 ID r1 PX 5000"),
            (id(Kind::Read).renew(100), "RRW.RENEW orders u:1 100"),
            (id(Kind::Fair).status(), "RFAIR.STATUS orders u:1"),
            (id(Kind::Write).status(), "RRW.STATUS orders u:1"),
            (id(Kind::Read).force_release(), "RRW.FORCERELEASE orders READ"),
            (id(Kind::Fair).cancel(300), "RFAIR.CANCEL orders u:1 WAIT 300"),
            (id(Kind::Plain).cancel_request(b"r-7"), "RLOCK.CANCEL orders u:1 r-7"),
            (id(Kind::Fenced).acquire(100, Some(7)), "RFENCED.ACQUIRE orders u:1 100"),
            (id(Kind::Fenced).release(100, None), "RLOCK.RELEASE orders u:1 100"),
            (id(Kind::Fenced).renew(100), "RLOCK.RENEW orders u:1 100"),
        ];
        for (cmd, expected) in cases {
            assert_eq!(args(&cmd).join(" "), expected);
        }
    }

    #[test]
    fn each_kind_has_its_channel() {
        assert_eq!(id(Kind::Plain).channel(), b"redisson_lock__channel:{orders}");
        assert_eq!(id(Kind::Fair).channel(), b"redisson_lock__channel:{orders}:u:1");
        assert_eq!(id(Kind::Read).channel(), b"redisson_rwlock:{orders}");
        assert_eq!(id(Kind::Write).channel(), id(Kind::Read).channel());
        assert_eq!(id(Kind::Fenced).channel(), id(Kind::Plain).channel());
    }

    fn pairs(fields: &[(&str, Value)]) -> Value {
        Value::Array(
            fields.iter().flat_map(|(name, value)| [BulkString(name.as_bytes().to_vec()), value.clone()]).collect(),
        )
    }

    #[test]
    fn full_replies() {
        let full = |granted, lease_ms| {
            vec![("granted", Int(granted)), ("holds", Int(1)), ("lease_ms", Int(lease_ms)), ("waited_ms", Int(40))]
        };
        let with_token = |granted, token| pairs(&[full(granted, 900), vec![("token", Int(token))]].concat());
        let reply = |granted, lease_ms, token| FullReply { granted, holds: 1, lease_ms, waited_ms: 40, token };
        let (plain, fenced) = (Kind::Plain, Kind::Fenced);
        let cases = [
            (pairs(&full(1, 900)), plain, Some(reply(true, 900, None))),
            (pairs(&full(0, -1)), plain, Some(reply(false, -1, None))),
            (with_token(1, 7), fenced, Some(reply(true, 900, Some(7)))),
            (with_token(0, -1), fenced, Some(reply(false, 900, Some(-1)))),
            // A fenced grant needs its token; no other kind's has one.
            (pairs(&full(1, 900)), fenced, None),
            (with_token(1, 7), plain, None),
            (with_token(1, -1), fenced, None),
            (with_token(1, 0), fenced, None),
            (pairs(&full(2, 900)), plain, None),
            (pairs(&[("granted", Int(1)), ("holds", Int(1))]), plain, None),
            (pairs(&[full(1, 900), vec![("holds", BulkString(b"many".to_vec()))]].concat()), plain, None),
            (Array(vec![BulkString(b"granted".to_vec())]), plain, None),
            // RESP3's map, and a number sent as a string.
            (
                Map(full(1, 900).into_iter().map(|(name, value)| (BulkString(name.into()), value)).collect()),
                plain,
                Some(reply(true, 900, None)),
            ),
            (
                pairs(&[
                    ("granted", Int(1)),
                    ("holds", BulkString(b"1".to_vec())),
                    ("lease_ms", Int(900)),
                    ("waited_ms", Int(40)),
                ]),
                plain,
                Some(reply(true, 900, None)),
            ),
            (Nil, plain, None),
            (Int(900), plain, None),
        ];
        for (reply, kind, expected) in cases {
            assert_eq!(FullReply::parse(&reply, kind).ok(), expected, "{reply:?} of {kind:?}");
        }
    }

    #[test]
    fn short_replies_of_holds_acquires() {
        let granted = |holds| Some(FullReply { granted: true, holds, lease_ms: -1, waited_ms: 0, token: None });
        let refused =
            |retry_ms| Some(FullReply { granted: false, holds: 0, lease_ms: retry_ms, waited_ms: 0, token: None });
        let cases = [
            (Nil, 0, granted(1)),
            (Nil, 2, granted(3)),
            (Int(900), 0, refused(900)),
            (Int(-1), 1, refused(-1)),
            (Okay, 0, None),
            (pairs(&[("granted", Int(1))]), 0, None),
            // A replay, replied in full.
            (
                pairs(&[("granted", Int(1)), ("holds", Int(1)), ("lease_ms", Int(700)), ("waited_ms", Int(0))]),
                0,
                Some(FullReply { granted: true, holds: 1, lease_ms: 700, waited_ms: 0, token: None }),
            ),
        ];
        for (reply, holds, expected) in cases {
            assert_eq!(FullReply::from_short(&reply, holds).ok(), expected, "{reply:?} after HOLDS {holds}");
        }
    }

    #[test]
    fn status_reads_the_pairs_of_each_kind() {
        let rlock = pairs(&[
            ("locked", Int(1)),
            ("ttl_ms", Int(900)),
            ("holders", Int(1)),
            ("held", Nil),
            ("hold_count", Int(2)),
        ]);
        let expected = Status { locked: true, ttl_ms: 900, hold_count: 2 };
        assert_eq!(Status::parse(rlock.clone(), Kind::Plain).unwrap(), expected);
        assert_eq!(Status::parse(rlock, Kind::Fair).unwrap(), expected);
        let rw = |mode: Value, readers| {
            pairs(&[
                ("mode", mode),
                ("ttl_ms", Int(500)),
                ("readers", Int(readers)),
                ("read_count", Int(3)),
                ("write_count", Int(1)),
            ])
        };
        let cases = [
            (rw(BulkString(b"write".to_vec()), 1), Kind::Read, true, 3),
            (rw(BulkString(b"write".to_vec()), 0), Kind::Read, false, 3),
            (rw(BulkString(b"write".to_vec()), 0), Kind::Write, true, 1),
            (rw(BulkString(b"read".to_vec()), 2), Kind::Read, true, 3),
            (rw(BulkString(b"read".to_vec()), 2), Kind::Write, false, 1),
            (rw(Nil, 0), Kind::Read, false, 3),
        ];
        for (reply, kind, locked, hold_count) in cases {
            assert_eq!(Status::parse(reply, kind).unwrap(), Status { locked, ttl_ms: 500, hold_count });
        }
        assert!(Status::parse(Int(1), Kind::Plain).is_err());
    }
}
