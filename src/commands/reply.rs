//! Replies shared by the commands of every primitive.

use crate::api::api;
use crate::lock::Release;
use redis_module::{Context, RedisValue};

/// Redisson's unlock reply: nil when not held, 0 when one level was
/// released, 1 when released; a latched release replies what it recorded.
pub fn release(outcome: Release) -> RedisValue {
    match outcome {
        Release::NotHeld => RedisValue::Null,
        Release::Decremented { .. } => RedisValue::Integer(0),
        Release::Released => RedisValue::Integer(1),
        Release::Latched { released } => RedisValue::Integer(i64::from(released)),
    }
}

/// `[first, second]`, replied now (no array value built and dropped for
/// it): the handler's last step, whose own reply is then none.
pub fn integer_pair(ctx: &Context, first: i64, second: i64) -> RedisValue {
    let ctx = ctx.get_raw();
    unsafe {
        api!(RedisModule_ReplyWithArray)(ctx, 2);
        api!(RedisModule_ReplyWithLongLong)(ctx, first);
        api!(RedisModule_ReplyWithLongLong)(ctx, second);
    }
    RedisValue::NoReply
}

/// A STATUS reply: a flat array of field names and values.
pub fn fields(pairs: Vec<(&str, RedisValue)>) -> RedisValue {
    RedisValue::Array(
        pairs.into_iter().flat_map(|(field, value)| [RedisValue::BulkString(field.to_owned()), value]).collect(),
    )
}

/// `RLOCK.ACQUIRE … REPLY FULL`: what the acquire did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AcquireReply {
    pub granted: bool,
    /// The owner's hold count after the call (0 when refused).
    pub holds: i64,
    /// The lock's PTTL after the call: the owner's lease left when granted,
    /// the holder's when refused (-1: no expiry).
    pub lease_ms: i64,
    /// How long the call waited on the server (`WAIT`), in ms.
    pub waited_ms: i64,
}

impl AcquireReply {
    /// `granted 0|1 holds n lease_ms n waited_ms n`, as STATUS replies.
    pub fn value(self) -> RedisValue {
        fields(self.pairs().into_iter().map(|(name, value)| (name, RedisValue::Integer(value))).collect())
    }

    /// [`Self::value`], replied now (no array value built and dropped for
    /// it): the handler's last step, whose own reply is then none.
    pub fn reply(self, ctx: &Context) -> RedisValue {
        self.reply_fields(ctx, None)
    }

    /// An acquire's reply as asked: with `REPLY FULL` these fields
    /// ([`Self::reply`]); else nil for a grant, and for a refusal the
    /// integer `lease_ms` (the holder's PTTL, or a fair lock's hint).
    pub fn short_or_full(self, ctx: &Context, full_reply: bool) -> RedisValue {
        match full_reply {
            true => self.reply(ctx),
            false if self.granted => RedisValue::Null,
            false => RedisValue::Integer(self.lease_ms),
        }
    }

    /// A fenced acquire's: the same, then `token n` (the grant's fencing
    /// token, -1 when refused), replied now, as [`Self::reply`].
    pub fn reply_with_token(self, ctx: &Context, token: i64) -> RedisValue {
        self.reply_fields(ctx, Some(token))
    }

    fn reply_fields(self, ctx: &Context, token: Option<i64>) -> RedisValue {
        let ctx = ctx.get_raw();
        let token = token.map(|token| ("token", token));
        let count = self.pairs().len() + usize::from(token.is_some());
        unsafe {
            api!(RedisModule_ReplyWithArray)(ctx, 2 * count as std::os::raw::c_long);
            for (name, value) in self.pairs().into_iter().chain(token) {
                api!(RedisModule_ReplyWithStringBuffer)(ctx, name.as_ptr().cast(), name.len());
                api!(RedisModule_ReplyWithLongLong)(ctx, value);
            }
        }
        RedisValue::NoReply
    }

    /// The reply's fields, in order: both forms are made from these.
    fn pairs(self) -> [(&'static str, i64); 4] {
        [
            ("granted", i64::from(self.granted)),
            ("holds", self.holds),
            ("lease_ms", self.lease_ms),
            ("waited_ms", self.waited_ms),
        ]
    }
}

/// An integer, or nil when there is none.
pub fn integer_or_nil(value: Option<i64>) -> RedisValue {
    value.map_or(RedisValue::Null, RedisValue::Integer)
}
