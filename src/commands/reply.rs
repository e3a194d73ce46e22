//! Replies shared by the commands of every primitive.

use crate::lock::Release;
use redis_module::RedisValue;

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

/// A STATUS reply: a flat array of field names and values.
pub fn fields(pairs: Vec<(&str, RedisValue)>) -> RedisValue {
    RedisValue::Array(
        pairs.into_iter().flat_map(|(field, value)| [RedisValue::BulkString(field.to_owned()), value]).collect(),
    )
}

/// An integer, or nil when there is none.
pub fn integer_or_nil(value: Option<i64>) -> RedisValue {
    value.map_or(RedisValue::Null, RedisValue::Integer)
}
