//! One caller blocked for a fair lock (`RFAIR.ACQUIRE … BLOCK`), and the
//! replies that end its wait.

use crate::commands::reply::AcquireReply;
use crate::handoff::glue::{Client, Outcome};
use crate::store::now_ms;
use redis_module::raw;

pub struct Waiter {
    pub client: Client,
    pub owner: Vec<u8>,
    pub lease_ms: i64,
    pub wait_ms: i64,
    pub timer: raw::RedisModuleTimerID,
    /// `REPLY FULL`: the wait ends with an [`AcquireReply`].
    pub full_reply: bool,
    pub blocked_at_ms: i64,
}

impl Waiter {
    /// Granted its turn: nil, or a full reply. A queued owner holds
    /// nothing, so the grant is its first level, with the whole lease.
    pub fn granted(&self) -> Outcome {
        match self.full_reply {
            true => self.full(AcquireReply { granted: true, holds: 1, lease_ms: self.lease_ms, waited_ms: 0 }),
            false => Outcome::Granted,
        }
    }

    /// Still queued when its block ended, or taken out of the queue: 1,
    /// Redisson's "ask again" (in `lease_ms` of a full reply).
    pub fn ask_again(&self) -> Outcome {
        match self.full_reply {
            true => self.full(AcquireReply { granted: false, holds: 0, lease_ms: 1, waited_ms: 0 }),
            false => Outcome::Integer(1),
        }
    }

    fn full(&self, reply: AcquireReply) -> Outcome {
        let waited_ms = now_ms().saturating_sub(self.blocked_at_ms);
        Outcome::Value(AcquireReply { waited_ms, ..reply }.value())
    }
}
