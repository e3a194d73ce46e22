//! The permit-expirable semaphore as Redisson's scripts (3.22.0 .. 4.7.0)
//! run it, for the commands' `AT now_ms` form, which a rewritten script
//! call uses: the clock is the script's argument (the client's), the
//! reclaim takes every permit scored 0 .. now in the script's order (ZREM,
//! then INCRBY, which fails after the ZREM on a count that is no integer,
//! as in Lua), and the replies are the script's. A script holds INCRBY's
//! and ZREM's replies as Lua numbers (doubles): it publishes and replies
//! them so (9007199254740993 as 9007199254740992).

use super::{PermitSemaphore, TryAcquire};
use crate::delay::Delay;
use crate::error::LockError;
use crate::keyspace::{KeyType, Keyspace, Result};
use crate::lock::parse_hold_count;
use crate::redisson::lua_number::lua_tonumber;
use crate::semaphore::LuaNumberText;
use rlock_protocol::PERMIT_NEVER_EXPIRES;

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

/// A Lua number replied as an integer, as Redis does it: a C cast (x86-64's
/// gives i64::MIN for what does not fit).
fn lua_integer(x: f64) -> i64 {
    if (-TWO_TO_63..TWO_TO_63).contains(&x) {
        x as i64
    } else {
        i64::MIN
    }
}

impl PermitSemaphore {
    /// The scripts' forms write Lua numbers as `redis.call` does on this
    /// server (see `store::lua_number_text`).
    pub fn like_redissons_scripts(mut self, lua_number: LuaNumberText) -> Self {
        self.lua_number = lua_number;
        self
    }

    /// availablePermitsAsync (26b3972b).
    pub fn available_like_script<K: Keyspace>(&self, keys: &mut K, now_ms: i64) -> Result<ScriptCount> {
        if let Some(count) = self.reclaim_like_script(keys, now_ms, usize::MAX)? {
            return Ok(ScriptCount::Integer(lua_integer(count as f64)));
        }
        Ok(match self.get_like_script(keys)? {
            None => ScriptCount::Integer(0),
            Some(stored) => ScriptCount::Stored(stored),
        })
    }

    /// acquiredPermitsAsync (6f0b0be7): ZCOUNT 0 +inf.
    pub fn acquired_like_script<K: Keyspace>(&self, keys: &mut K, now_ms: i64) -> Result<i64> {
        self.reclaim_like_script(keys, now_ms, usize::MAX)?;
        self.count_taken(keys)
    }

    /// getPermitsAsync (e242db5c): 0 when the count is missing, else
    /// `tonumber(available) + acquired` in Lua's doubles, replied as Redis
    /// turns a Lua number into an integer.
    pub fn permits_like_script<K: Keyspace>(&self, keys: &mut K, now_ms: i64) -> Result<i64> {
        self.reclaim_like_script(keys, now_ms, usize::MAX)?;
        let Some(available) = self.get_like_script(keys)? else { return Ok(0) };
        let acquired = self.count_taken(keys)?;
        let available = lua_tonumber(&available).ok_or_else(|| LockError::StoredNotInteger(self.name.clone()))?;
        Ok(lua_integer(available + acquired as f64))
    }

    /// tryAcquireAsync (992c96b0): the reclaim takes as many permits as
    /// asked for; then, when the count (as Lua's `tonumber`) is at least
    /// that, DECRBY, each id scored `until` (ZADD: an id held already is
    /// scored anew; one given twice is taken twice, recorded once) and the
    /// permits' TTL set to the count's; else the earliest score, unless it
    /// is the one of a permit that never expires.
    pub fn try_acquire_like_script<K: Keyspace>(
        &self,
        keys: &mut K,
        (now_ms, delay): (i64, Delay),
        until: i64,
        ids: &[&[u8]],
    ) -> Result<TryAcquire> {
        let wanted = ids.len() as i64;
        self.reclaim_like_script(keys, now_ms, ids.len())?;
        let enough = match self.get_like_script(keys)? {
            None => false,
            Some(stored) => {
                let count = lua_tonumber(&stored).ok_or_else(|| LockError::StoredNotInteger(self.name.clone()))?;
                count >= wanted as f64
            }
        };
        if enough && delay.refuses() {
            return Ok(TryAcquire::FirstExpiry(now_ms.saturating_add(delay.left_ms())));
        }
        if !enough {
            return self.first_expiry(keys, (now_ms, delay));
        }
        let count = keys.read_counter(&self.name)?.unwrap_or(0);
        let left = count.checked_sub(wanted).ok_or_else(|| LockError::CounterOverflow(self.name.clone()))?;
        let expire_at = keys.expire_at(&self.name)?;
        keys.incr_by(&self.name, -wanted, left)?;
        for id in ids {
            if keys.zscore(&self.timeouts, id)? != Some(until) {
                keys.zadd(&self.timeouts, id, until)?;
            }
        }
        if let Some(at) = expire_at {
            keys.set_expire_at(&self.timeouts, at)?;
        }
        Ok(TryAcquire::Granted)
    }

    /// tryReleaseAsync (4ce07945), which reclaims nothing: ZREM the id (0
    /// when it was not there), INCRBY 1 and publish the count (whatever
    /// it is), then 0 when its lease had run out, else 1.
    pub fn release_like_script<K: Keyspace>(&self, keys: &mut K, now_ms: i64, id: &[u8]) -> Result<i64> {
        self.open_like_script(keys)?;
        let Some(expiry) = keys.zscore(&self.timeouts, id)? else { return Ok(0) };
        let available = keys.read_counter(&self.name);
        keys.zrem(&self.timeouts, &[id])?;
        let new = self.add(available?.unwrap_or(0), 1)?;
        keys.incr_by(&self.name, 1, new)?;
        keys.publish(&self.channel, &(self.lua_number)(new as f64))?;
        Ok(i64::from(expiry > now_ms))
    }

    /// tryReleaseAsync#2 (cf3ab77b): 0 unless every id is held and its
    /// lease runs on; then the reclaim, and the ids (an id given twice
    /// counts once, as ZREM's reply) go back and their number is published.
    pub fn release_all_like_script<K: Keyspace>(&self, keys: &mut K, now_ms: i64, ids: &[&[u8]]) -> Result<i64> {
        self.open_like_script(keys)?;
        for id in ids {
            if keys.zscore(&self.timeouts, id)?.is_none_or(|expiry| expiry <= now_ms) {
                return Ok(0);
            }
        }
        self.reclaim_like_script(keys, now_ms, usize::MAX)?;
        let mut distinct: Vec<&[u8]> = ids.to_vec();
        distinct.sort_unstable();
        distinct.dedup();
        self.give_back_like_script(keys, &distinct)
    }

    /// ZREM of `held` (all held), INCRBY and publish of their number (a
    /// count that is no integer fails after the ZREM, as in Lua).
    fn give_back_like_script<K: Keyspace>(&self, keys: &mut K, held: &[&[u8]]) -> Result<i64> {
        let available = keys.read_counter(&self.name);
        keys.zrem(&self.timeouts, held)?;
        let removed = held.len() as i64;
        let new = self.add(available?.unwrap_or(0), removed)?;
        keys.incr_by(&self.name, removed, new)?;
        keys.publish(&self.channel, &(self.lua_number)(removed as f64))?;
        Ok(removed)
    }

    /// tryReleaseAsync#2 of 3.23.4 .. 3.40.2 (bb41a8ec): the reclaim, then
    /// the ids held go back (ZREM's count, published), 0 when none was.
    pub fn release_any_like_script<K: Keyspace>(&self, keys: &mut K, now_ms: i64, ids: &[&[u8]]) -> Result<i64> {
        self.reclaim_like_script(keys, now_ms, usize::MAX)?;
        let mut held: Vec<&[u8]> = Vec::with_capacity(ids.len());
        for id in ids {
            if !held.contains(id) && keys.zscore(&self.timeouts, id)?.is_some() {
                held.push(id);
            }
        }
        if held.is_empty() {
            return Ok(0);
        }
        self.give_back_like_script(keys, &held)
    }

    /// getLeaseTimeAsync (8be95cb5): -1 for a permit that never expires,
    /// its score less the script's clock, 0 when it is not held.
    pub fn lease_like_script<K: Keyspace>(&self, keys: &mut K, now_ms: i64, id: &[u8]) -> Result<i64> {
        self.reclaim_like_script(keys, now_ms, usize::MAX)?;
        Ok(match keys.zscore(&self.timeouts, id)? {
            None => 0,
            Some(PERMIT_NEVER_EXPIRES) => -1,
            Some(expiry) => expiry - now_ms,
        })
    }

    /// updateLeaseTimeAsync (2298b02c): a held permit is scored `until`
    /// (ZADD: nothing written when it is so already): 1, else 0.
    pub fn update_lease_like_script<K: Keyspace>(
        &self,
        keys: &mut K,
        now_ms: i64,
        id: &[u8],
        until: i64,
    ) -> Result<bool> {
        self.reclaim_like_script(keys, now_ms, usize::MAX)?;
        let Some(expiry) = keys.zscore(&self.timeouts, id)? else { return Ok(false) };
        if expiry != until {
            keys.zadd(&self.timeouts, id, until)?;
        }
        Ok(true)
    }

    /// setPermitsAsync (494d8561), which reclaims nothing: a missing count
    /// is SET to `permits`; else `tonumber(available) + ZCOUNT` in Lua's
    /// doubles, left alone when it is `permits` already, else INCRBY the
    /// difference (as `redis.call` writes a Lua number, which INCRBY may
    /// refuse); `permits` is published after either write. `always`: the
    /// texts of 3.19.1 .. 3.23.3, whose `maximum == ARGV[1]` compares a
    /// number with a string, never equal: they INCRBY even 0.
    pub fn set_permits_like_script<K: Keyspace>(&self, keys: &mut K, permits: i64, always: bool) -> Result<()> {
        let message = permits.to_string();
        let Some(stored) = self.get_like_script(keys)? else {
            keys.set(&self.name, message.as_bytes(), None)?;
            return keys.publish(&self.channel, message.as_bytes());
        };
        self.open_like_script(keys)?;
        let acquired = self.count_taken(keys)?;
        let available = lua_tonumber(&stored).ok_or_else(|| LockError::StoredNotInteger(self.name.clone()))?;
        let maximum = acquired as f64 + available;
        if !always && maximum == permits as f64 {
            return Ok(());
        }
        let by = parse_hold_count(&(self.lua_number)(permits as f64 - maximum))
            .map_err(|_| LockError::PermitsChangeNotInteger)?;
        let count = keys.read_counter(&self.name)?.unwrap_or(0);
        keys.incr_by(&self.name, by, self.add(count, by)?)?;
        keys.publish(&self.channel, message.as_bytes())
    }

    /// The scripts' reclaim of the `limit` earliest permits scored 0 ..
    /// now; the new count when any permit was reclaimed.
    fn reclaim_like_script<K: Keyspace>(&self, keys: &mut K, now_ms: i64, limit: usize) -> Result<Option<i64>> {
        self.open_like_script(keys)?;
        let expired: Vec<Vec<u8>> = keys
            .zrange_to(&self.timeouts, now_ms, limit)?
            .into_iter()
            .filter(|(_, score)| *score >= 0)
            .map(|(id, _)| id)
            .collect();
        if expired.is_empty() {
            return Ok(None);
        }
        let available = keys.read_counter(&self.name);
        let ids: Vec<&[u8]> = expired.iter().map(Vec::as_slice).collect();
        keys.zrem(&self.timeouts, &ids)?;
        let by = ids.len() as i64;
        let new = self.add(available?.unwrap_or(0), by)?;
        keys.incr_by(&self.name, by, new)?;
        if new > 0 {
            keys.publish(&self.channel, &(self.lua_number)(new as f64))?;
        }
        Ok(Some(new))
    }

    /// The permits' ZSCORE or ZRANGEBYSCORE, the scripts' first command,
    /// refuses a key of another type before anything.
    fn open_like_script<K: Keyspace>(&self, keys: &mut K) -> Result<()> {
        match keys.key_type(&self.timeouts)? {
            KeyType::Missing | KeyType::Zset => Ok(()),
            _ => Err(LockError::DerivedWrongType(self.timeouts.clone())),
        }
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
