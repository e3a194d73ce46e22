//! The key API's lists and sorted sets, for the writes that take more than
//! one call (a list's deletes by index, a sorted set's members removed or
//! read by score).

use super::{key_type_of, RedisKeyspace};
use crate::api::api;
use crate::keyspace::{KeyType, Keyspace, Result};
use crate::store::replicate;
use crate::store::replicated::Argument;
use redis_module::{raw, NotifyEvent, RedisString};
use std::os::raw::{c_int, c_longlong};

/// Up to this many list items are deleted one by one; more, by writing
/// the list again.
const FEW_LIST_DELETES: usize = 4;

impl RedisKeyspace<'_> {
    /// LREM of each of `values` (count 0), replicated and announced as
    /// one LREM each.
    pub(super) fn remove_from_list(&mut self, key: &[u8], values: &[&[u8]]) -> Result<()> {
        let items = self.lrange(key)?;
        let removed: Vec<usize> =
            items.iter().enumerate().filter(|(_, item)| values.contains(&item.as_slice())).map(|(i, _)| i).collect();
        if removed.is_empty() {
            return Ok(());
        }
        if removed.len() > FEW_LIST_DELETES {
            return self.rewrite_list(key, &items, &removed, values.len());
        }
        // From the tail, so the indexes still to visit do not move.
        for index in removed.into_iter().rev() {
            self.listed(key)?;
            let (open, _) = self.write(key)?;
            unsafe { api!(RedisModule_ListDelete)(open, index as c_longlong) };
        }
        let (open, name) = self.write(key)?;
        for value in values {
            let value = self.string(value);
            replicate!(self.ctx, c"LREM", c"sss", name, Argument::integer(self.ctx, 0).inner(), value.inner);
            self.notify(NotifyEvent::LIST, c"lrem", name);
        }
        self.notify_if_emptied(open, name);
        Ok(())
    }

    /// Writes the list again without the items at `removed` (`lrems`
    /// values' worth): one pass, where deleting many items one by one costs
    /// a walk each. Replicated as what it is, `DEL` then one `RPUSH` of the
    /// items kept (and their `PEXPIREAT`), so a replica does one pass too.
    fn rewrite_list(&mut self, key: &[u8], items: &[Vec<u8>], removed: &[usize], lrems: usize) -> Result<()> {
        let kept_expiry = self.expire_at(key)?;
        self.listed(key)?;
        let (open, name) = self.write(key)?;
        let kept: Vec<RedisString> = items
            .iter()
            .enumerate()
            .filter(|(at, _)| removed.binary_search(at).is_err())
            .map(|(_, item)| self.string(item))
            .collect();
        unsafe { api!(RedisModule_DeleteKey)(open) };
        replicate!(self.ctx, c"DEL", c"s", name);
        for item in &kept {
            unsafe { api!(RedisModule_ListPush)(open, raw::REDISMODULE_LIST_TAIL as c_int, item.inner) };
        }
        for _ in 0..lrems {
            self.notify(NotifyEvent::LIST, c"lrem", name);
        }
        if kept.is_empty() {
            self.notify(NotifyEvent::GENERIC, c"del", name);
            return Ok(());
        }
        let mut argv: Vec<*mut raw::RedisModuleString> = kept.iter().map(|item| item.inner).collect();
        replicate!(self.ctx, c"RPUSH", c"sv", name, argv.as_mut_ptr(), argv.len());
        if let Some(at) = kept_expiry {
            unsafe { api!(RedisModule_SetAbsExpire)(open, at) };
            replicate!(self.ctx, c"PEXPIREAT", c"ss", name, Argument::integer(self.ctx, at).inner());
        }
        Ok(())
    }

    /// The members of a sorted set scored at most `max`, lowest first, at
    /// most `limit` of them (none unless the key is a sorted set).
    pub(super) fn zrange_in(&mut self, key: &[u8], max: f64, limit: usize) -> Result<Vec<(Vec<u8>, i64)>> {
        let open = self.read(key)?;
        let mut members = Vec::new();
        if key_type_of(open) != KeyType::Zset {
            return Ok(members);
        }
        unsafe { api!(RedisModule_ZsetFirstInScoreRange)(open, raw::REDISMODULE_NEGATIVE_INFINITE, max, 0, 0) };
        while members.len() < limit && unsafe { api!(RedisModule_ZsetRangeEndReached)(open) } == 0 {
            let mut score = 0f64;
            let member = unsafe { api!(RedisModule_ZsetRangeCurrentElement)(open, &mut score) };
            members.push((self.take(member), score as i64));
            unsafe { api!(RedisModule_ZsetRangeNext)(open) };
        }
        unsafe { api!(RedisModule_ZsetRangeStop)(open) };
        Ok(members)
    }

    /// ZREM of `members`, replicated as one ZREM of those it removed.
    pub(super) fn remove_from_zset(&mut self, key: &[u8], members: &[&[u8]]) -> Result<()> {
        let (open, name) = self.write(key)?;
        let mut removed = Vec::with_capacity(members.len());
        for member in members {
            let member = self.string(member);
            let mut deleted: c_int = 0;
            unsafe { api!(RedisModule_ZsetRem)(open, member.inner, &mut deleted) };
            if deleted != 0 {
                removed.push(member);
            }
        }
        if removed.is_empty() {
            return Ok(());
        }
        let mut argv: Vec<*mut raw::RedisModuleString> = removed.iter().map(|member| member.inner).collect();
        replicate!(self.ctx, c"ZREM", c"sv", name, argv.as_mut_ptr(), argv.len());
        self.notify(NotifyEvent::ZSET, c"zrem", name);
        self.notify_if_emptied(open, name);
        Ok(())
    }
}
