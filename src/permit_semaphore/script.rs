//! The permit-expirable semaphore as Redisson's scripts (3.22.0 .. 4.7.0)
//! run it, for the commands' `AT now_ms` form, which a rewritten script
//! call uses: the clock is the script's argument (the client's), the
//! reclaim takes every permit scored 0 .. now in the script's order (ZREM,
//! then INCRBY, which fails after the ZREM on a count that is no integer,
//! as in Lua), and the replies are the script's.

use super::PermitSemaphore;
use crate::error::LockError;
use crate::keyspace::{read_counter, KeyType, Keyspace, Result};
use crate::redisson::lua_number::lua_tonumber;

/// 2^63: a C cast to a 64-bit integer takes the doubles below it (and
/// from its negative on).
const TWO_TO_63: f64 = 9_223_372_036_854_775_808.0;

/// availablePermits' reply: the count INCRBY left after a reclaim, or else
/// the stored string as GET reads it (0 when missing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScriptCount {
    Integer(i64),
    Stored(Vec<u8>),
}

impl PermitSemaphore {
    /// availablePermitsAsync (26b3972b).
    pub fn available_like_script<K: Keyspace>(&self, keys: &mut K, now_ms: i64) -> Result<ScriptCount> {
        if let Some(count) = self.reclaim_like_script(keys, now_ms)? {
            return Ok(ScriptCount::Integer(count));
        }
        Ok(match self.get_like_script(keys)? {
            None => ScriptCount::Integer(0),
            Some(stored) => ScriptCount::Stored(stored),
        })
    }

    /// acquiredPermitsAsync (6f0b0be7): ZCOUNT 0 +inf.
    pub fn acquired_like_script<K: Keyspace>(&self, keys: &mut K, now_ms: i64) -> Result<i64> {
        self.reclaim_like_script(keys, now_ms)?;
        self.count_taken(keys)
    }

    /// getPermitsAsync (e242db5c): 0 when the count is missing, else
    /// `tonumber(available) + acquired` in Lua's doubles, replied as Redis
    /// turns a Lua number into an integer (a C cast: x86-64's gives
    /// i64::MIN for what does not fit).
    pub fn permits_like_script<K: Keyspace>(&self, keys: &mut K, now_ms: i64) -> Result<i64> {
        self.reclaim_like_script(keys, now_ms)?;
        let Some(available) = self.get_like_script(keys)? else { return Ok(0) };
        let acquired = self.count_taken(keys)?;
        let available = lua_tonumber(&available).ok_or_else(|| LockError::StoredNotInteger(self.name.clone()))?;
        let sum = available + acquired as f64;
        let fits = (-TWO_TO_63..TWO_TO_63).contains(&sum);
        Ok(if fits { sum as i64 } else { i64::MIN })
    }

    /// The scripts' reclaim; the new count when any permit was reclaimed.
    /// ZRANGEBYSCORE refuses a key of another type before anything.
    fn reclaim_like_script<K: Keyspace>(&self, keys: &mut K, now_ms: i64) -> Result<Option<i64>> {
        match keys.key_type(&self.timeouts)? {
            KeyType::Missing | KeyType::Zset => {}
            _ => return Err(LockError::DerivedWrongType(self.timeouts.clone())),
        }
        keys.touch_channel(&self.channel)?;
        let expired: Vec<Vec<u8>> = keys
            .zrange_to(&self.timeouts, now_ms, usize::MAX)?
            .into_iter()
            .filter(|(_, score)| *score >= 0)
            .map(|(id, _)| id)
            .collect();
        if expired.is_empty() {
            return Ok(None);
        }
        let available = read_counter(keys, &self.name);
        let ids: Vec<&[u8]> = expired.iter().map(Vec::as_slice).collect();
        keys.zrem(&self.timeouts, &ids)?;
        let by = ids.len() as i64;
        let new = self.add(available?.unwrap_or(0), by)?;
        keys.incr_by(&self.name, by, new)?;
        if new > 0 {
            keys.publish(&self.channel, new.to_string().as_bytes())?;
        }
        Ok(Some(new))
    }

    /// GET: the stored string, `None` when missing, WRONGTYPE otherwise.
    fn get_like_script<K: Keyspace>(&self, keys: &mut K) -> Result<Option<Vec<u8>>> {
        match keys.key_type(&self.name)? {
            KeyType::Missing => Ok(None),
            KeyType::String => Ok(Some(keys.get(&self.name)?.unwrap_or_default())),
            _ => Err(LockError::WrongType),
        }
    }

    /// ZCOUNT 0 +inf: the permits scored 0 or more (Redisson writes no
    /// others; the scores are read as integers, so one in (-1, 0) counts).
    fn count_taken<K: Keyspace>(&self, keys: &mut K) -> Result<i64> {
        let below_zero = keys.zrange_to(&self.timeouts, -1, usize::MAX)?.len();
        Ok((keys.zcard(&self.timeouts)? - below_zero) as i64)
    }
}
