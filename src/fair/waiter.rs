//! One caller blocked for a fair lock (`RFAIR.ACQUIRE … BLOCK`), and the
//! replies that end its wait.

use crate::commands::reply::AcquireReply;
use crate::handoff::glue::{Client, Outcome};
use crate::handoff::Request;
use crate::store::now_ms;
use redis_module::raw;

/// What a blocked call asked for: its lease, its place's wait, how long it
/// blocks, its request id (`ID`, whose grant is recorded) and `REPLY FULL`
/// (the wait ends with an [`AcquireReply`]).
pub struct BlockedCall {
    pub lease_ms: i64,
    pub wait_ms: i64,
    pub block_ms: i64,
    pub request: Option<Request>,
    pub full_reply: bool,
}

pub struct Waiter {
    pub client: Client,
    /// The caller's connection (`CLIENT ID`).
    pub client_id: u64,
    pub owner: Vec<u8>,
    pub timer: raw::RedisModuleTimerID,
    pub call: BlockedCall,
    pub blocked_at_ms: i64,
}

impl Waiter {
    /// Whether the call was sent with `ID request_id`.
    pub fn has_request(&self, request_id: &[u8]) -> bool {
        self.call.request.as_ref().is_some_and(|request| request.id == request_id)
    }

    /// Granted its turn: nil, or a full reply. A queued owner holds
    /// nothing, so the grant is its first level, with the whole lease.
    pub fn granted(&self) -> Outcome {
        match self.call.full_reply {
            true => self.full(AcquireReply { granted: true, holds: 1, lease_ms: self.call.lease_ms, waited_ms: 0 }),
            false => Outcome::Granted,
        }
    }

    /// Still queued when its block ended, or taken out of the queue: 1,
    /// Redisson's "ask again" (in `lease_ms` of a full reply).
    pub fn ask_again(&self) -> Outcome {
        match self.call.full_reply {
            true => self.full(AcquireReply { granted: false, holds: 0, lease_ms: 1, waited_ms: 0 }),
            false => Outcome::Integer(1),
        }
    }

    fn full(&self, reply: AcquireReply) -> Outcome {
        let waited_ms = now_ms().saturating_sub(self.blocked_at_ms);
        Outcome::Value(AcquireReply { waited_ms, ..reply }.value())
    }
}
