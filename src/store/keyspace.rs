//! [`Keyspace`] over the module key API: the one Redis layer the family
//! primitives share. Every write is made through the key API, replicated
//! as the Redis command with the same effect (absolute expiries only) and
//! announced with the keyspace event that command sends.
//!
//! The command's key (argv 1) was checked by Redis. Every other key and
//! channel is derived, so the first touch checks it: in cluster mode its
//! slot must be the name's, and the caller's ACL must allow it.

use super::acl::Caller;
use super::key::SignalOnWriteKey;
use super::{cluster_mode, notify, publish_via, replicate, Via};
use crate::api::api;
use crate::error::LockError;
use crate::keyspace::{KeyType, Keyspace, Moot, Result};
use redis_module::{raw, Context, NotifyEvent, RedisString};
use rlock_protocol::key_slot;
use std::collections::HashMap;
use std::ffi::CStr;
use std::os::raw::{c_int, c_longlong, c_void};
use std::ptr;

/// Up to this many list items are deleted one by one; more, by writing
/// the list again.
const FEW_LIST_DELETES: usize = 4;

/// Open keys are found by a scan up to this many, then through an index.
const INDEXED_FROM: usize = 8;

/// A key opened by this command.
struct OpenKey {
    // Before its name: the key closes before its name is freed.
    key: SignalOnWriteKey,
    /// The derived key's name; `None` for the command's own key.
    derived: Option<(RedisString, Vec<u8>)>,
    /// Its list iterator may be stale (see [`RedisKeyspace::listed`]).
    list_used: bool,
}

pub struct RedisKeyspace<'a> {
    ctx: &'a Context,
    name: &'a RedisString,
    writable: bool,
    caller: Caller,
    /// The argv key's bytes, read once.
    name_bytes: &'a [u8],
    keys: Vec<OpenKey>,
    /// Key name -> index in `keys`, once there are many (a read release
    /// may touch thousands of hold keys; most commands touch a few).
    index: HashMap<Vec<u8>, usize>,
    channels: Vec<RedisString>,
    via: Via,
}

impl<'a> RedisKeyspace<'a> {
    /// For a command that may write, whose key is `name`.
    pub fn open(ctx: &'a Context, name: &'a RedisString) -> Self {
        Self::new(ctx, name, true)
    }

    /// For a read-only command: keys are opened for reading, and derived
    /// keys need only read access.
    pub fn open_readonly(ctx: &'a Context, name: &'a RedisString) -> Self {
        Self::new(ctx, name, false)
    }

    /// For the server's own work in a timer (see [`Caller::server`]).
    pub fn open_as_server(ctx: &'a Context, name: &'a RedisString) -> Self {
        Self { caller: Caller::server(ctx), ..Self::new(ctx, name, true) }
    }

    fn new(ctx: &'a Context, name: &'a RedisString, writable: bool) -> Self {
        let name_bytes = name.as_slice();
        let (keys, index, channels) = (Vec::new(), HashMap::new(), Vec::new());
        Self { ctx, name, name_bytes, writable, caller: Caller::new(ctx), keys, index, channels, via: Via::Default }
    }

    /// Publishes as `via` says (a Redisson script's publish command).
    pub fn via(self, via: Via) -> Self {
        Self { via, ..self }
    }

    /// The open key named `key`, opened (and checked) on first use.
    fn key(&mut self, key: &[u8]) -> Result<usize> {
        let name_bytes = self.name_bytes;
        let found = if self.keys.len() <= INDEXED_FROM {
            self.keys.iter().position(|open| open.derived.as_ref().map_or(name_bytes, |(_, bytes)| bytes) == key)
        } else {
            self.index.get(key).copied()
        };
        if let Some(index) = found {
            return Ok(index);
        }
        let derived = if key == name_bytes {
            None
        } else {
            if cluster_mode() && key_slot(key) != key_slot(name_bytes) {
                return Err(LockError::DerivedKeyCrossSlot(key.to_vec()));
            }
            let derived = RedisString::create_from_slice(self.ctx.get_raw(), key);
            let access = if self.writable {
                raw::REDISMODULE_CMD_KEY_ACCESS | raw::REDISMODULE_CMD_KEY_UPDATE
            } else {
                raw::REDISMODULE_CMD_KEY_ACCESS
            };
            if !self.caller.may_access_key(&derived, access) {
                return Err(LockError::NoKeyPermission(key.to_vec()));
            }
            Some((derived, key.to_vec()))
        };
        let opened = self.open_key(derived.as_ref().map_or(self.name.inner, |(name, _)| name.inner));
        self.keys.push(OpenKey { key: opened, derived, list_used: false });
        if self.keys.len() > INDEXED_FROM {
            if self.index.is_empty() {
                for (at, open) in self.keys.iter().enumerate() {
                    self.index.insert(open.derived.as_ref().map_or(name_bytes, |(_, bytes)| bytes).to_vec(), at);
                }
            } else {
                self.index.insert(key.to_vec(), self.keys.len() - 1);
            }
        }
        Ok(self.keys.len() - 1)
    }

    fn open_key(&self, name: *mut raw::RedisModuleString) -> SignalOnWriteKey {
        let open = if self.writable { SignalOnWriteKey::open } else { SignalOnWriteKey::open_readonly };
        open(self.ctx, name)
    }

    fn inner_name(&self, index: usize) -> *mut raw::RedisModuleString {
        self.keys[index].derived.as_ref().map_or(self.name.inner, |(name, _)| name.inner)
    }

    /// The key for a list read or delete by index. On Redis 7.0 a list's
    /// iterator in a key handle goes stale after a write or a walk through
    /// it (RM_ListGet then fails an assertion and the server aborts): such
    /// a handle is closed and opened again first.
    fn listed(&mut self, key: &[u8]) -> Result<*mut raw::RedisModuleKey> {
        let index = self.key(key)?;
        if self.keys[index].list_used {
            self.keys[index].key = self.open_key(self.inner_name(index));
        }
        self.keys[index].list_used = true;
        Ok(self.keys[index].key.read())
    }

    fn read(&mut self, key: &[u8]) -> Result<*mut raw::RedisModuleKey> {
        let index = self.key(key)?;
        Ok(self.keys[index].key.read())
    }

    /// The key for writing and its name, for replication and events.
    fn write(&mut self, key: &[u8]) -> Result<(*mut raw::RedisModuleKey, *mut raw::RedisModuleString)> {
        let index = self.key(key)?;
        self.keys[index].list_used = true;
        let name = self.inner_name(index);
        Ok((self.keys[index].key.write(), name))
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
            replicate!(self.ctx, c"PEXPIREAT", c"sl", name, at as c_longlong);
        }
        Ok(())
    }

    /// The members of a sorted set scored at most `max`, lowest first, at
    /// most `limit` of them (none unless the key is a sorted set).
    fn zrange_in(&mut self, key: &[u8], max: f64, limit: usize) -> Result<Vec<(Vec<u8>, i64)>> {
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

    fn string(&self, bytes: &[u8]) -> RedisString {
        RedisString::create_from_slice(self.ctx.get_raw(), bytes)
    }

    fn notify(&self, class: NotifyEvent, event: &CStr, key: *mut raw::RedisModuleString) {
        notify(self.ctx, class, event, key);
    }

    /// Redis deletes a container its command left empty, and says `del`.
    fn notify_if_emptied(&self, open: *mut raw::RedisModuleKey, key: *mut raw::RedisModuleString) {
        if unsafe { api!(RedisModule_KeyType)(open) } as isize == raw::REDISMODULE_KEYTYPE_EMPTY {
            self.notify(NotifyEvent::GENERIC, c"del", key);
        }
    }

    /// A key-API string as bytes, freed.
    fn take(&self, value: *mut raw::RedisModuleString) -> Vec<u8> {
        let mut len = 0;
        let bytes = unsafe { std::slice::from_raw_parts(raw::string_ptr_len(value, &mut len).cast::<u8>(), len) };
        let bytes = bytes.to_vec();
        unsafe { api!(RedisModule_FreeString)(self.ctx.get_raw(), value) };
        bytes
    }
}

fn key_type_of(open: *mut raw::RedisModuleKey) -> KeyType {
    match unsafe { api!(RedisModule_KeyType)(open) } as isize {
        raw::REDISMODULE_KEYTYPE_EMPTY => KeyType::Missing,
        raw::REDISMODULE_KEYTYPE_STRING => KeyType::String,
        raw::REDISMODULE_KEYTYPE_LIST => KeyType::List,
        raw::REDISMODULE_KEYTYPE_HASH => KeyType::Hash,
        raw::REDISMODULE_KEYTYPE_ZSET => KeyType::Zset,
        _ => KeyType::Other,
    }
}

impl Keyspace for RedisKeyspace<'_> {
    fn key_type(&mut self, key: &[u8]) -> Result<KeyType> {
        Ok(key_type_of(self.read(key)?))
    }

    fn expire_at(&mut self, key: &[u8]) -> Result<Option<i64>> {
        let open = self.read(key)?;
        if key_type_of(open) == KeyType::Missing {
            return Ok(None);
        }
        Ok(match unsafe { api!(RedisModule_GetAbsExpire)(open) } {
            at if at == i64::from(raw::REDISMODULE_NO_EXPIRE) => None,
            at => Some(at),
        })
    }

    fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let open = self.read(key)?;
        if key_type_of(open) != KeyType::String {
            return Ok(None);
        }
        let mut len = 0;
        let bytes = unsafe { api!(RedisModule_StringDMA)(open, &mut len, raw::REDISMODULE_READ as c_int) };
        Ok(Some(unsafe { std::slice::from_raw_parts(bytes.cast::<u8>(), len) }.to_vec()))
    }

    fn hget(&mut self, key: &[u8], field: &[u8]) -> Result<Option<Vec<u8>>> {
        let open = self.read(key)?;
        if key_type_of(open) != KeyType::Hash {
            return Ok(None);
        }
        let field = self.string(field);
        let mut value: *mut raw::RedisModuleString = ptr::null_mut();
        unsafe {
            api!(RedisModule_HashGet)(
                open,
                raw::REDISMODULE_HASH_NONE as c_int,
                field.inner,
                &mut value as *mut *mut raw::RedisModuleString,
                ptr::null_mut::<c_void>(),
            );
        }
        Ok((!value.is_null()).then(|| self.take(value)))
    }

    fn hgetall(&mut self, key: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let open = self.read(key)?;
        let mut fields: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        if key_type_of(open) != KeyType::Hash {
            return Ok(fields);
        }
        /// Copies one field and value into the Vec behind `fields`.
        unsafe extern "C" fn collect(
            _key: *mut raw::RedisModuleKey,
            field: *mut raw::RedisModuleString,
            value: *mut raw::RedisModuleString,
            fields: *mut c_void,
        ) {
            let bytes = |string: *mut raw::RedisModuleString| {
                let mut len = 0;
                let start = raw::string_ptr_len(string, &mut len);
                unsafe { std::slice::from_raw_parts(start.cast::<u8>(), len) }.to_vec()
            };
            let fields = unsafe { &mut *fields.cast::<Vec<(Vec<u8>, Vec<u8>)>>() };
            fields.push((bytes(field), bytes(value)));
        }
        // Through the handle already open: no second lookup.
        unsafe {
            let cursor = api!(RedisModule_ScanCursorCreate)();
            let privdata = (&mut fields as *mut Vec<(Vec<u8>, Vec<u8>)>).cast::<c_void>();
            while api!(RedisModule_ScanKey)(open, cursor, Some(collect), privdata) != 0 {}
            api!(RedisModule_ScanCursorDestroy)(cursor);
        }
        Ok(fields)
    }

    fn lrange(&mut self, key: &[u8]) -> Result<Vec<Vec<u8>>> {
        let open = self.listed(key)?;
        if key_type_of(open) != KeyType::List {
            return Ok(Vec::new());
        }
        let len = unsafe { api!(RedisModule_ValueLength)(open) } as i64;
        Ok((0..len).map(|index| self.take(unsafe { api!(RedisModule_ListGet)(open, index as c_longlong) })).collect())
    }

    fn zrange(&mut self, key: &[u8]) -> Result<Vec<(Vec<u8>, i64)>> {
        self.zrange_in(key, raw::REDISMODULE_POSITIVE_INFINITE, usize::MAX)
    }

    fn zrange_to(&mut self, key: &[u8], max: i64, limit: usize) -> Result<Vec<(Vec<u8>, i64)>> {
        self.zrange_in(key, max as f64, limit)
    }

    fn zscore(&mut self, key: &[u8], member: &[u8]) -> Result<Option<i64>> {
        let open = self.read(key)?;
        if key_type_of(open) != KeyType::Zset {
            return Ok(None);
        }
        let member = self.string(member);
        let mut score = 0f64;
        let found = unsafe { api!(RedisModule_ZsetScore)(open, member.inner, &mut score) };
        Ok((found == raw::REDISMODULE_OK as c_int).then_some(score as i64))
    }

    fn zcard(&mut self, key: &[u8]) -> Result<usize> {
        let open = self.read(key)?;
        if key_type_of(open) != KeyType::Zset {
            return Ok(0);
        }
        Ok(unsafe { api!(RedisModule_ValueLength)(open) })
    }

    fn touch_channel(&mut self, channel: &[u8]) -> Result<()> {
        if self.channels.iter().any(|known| known.as_slice() == channel) {
            return Ok(());
        }
        let name = self.string(channel);
        if !self.caller.may_publish(&name) {
            return Err(LockError::NoChannelPermission(channel.to_vec()));
        }
        self.channels.push(name);
        Ok(())
    }

    fn set(&mut self, key: &[u8], value: &[u8], expire_at: Option<i64>) -> Result<()> {
        let (open, name) = self.write(key)?;
        let value = self.string(value);
        unsafe { api!(RedisModule_StringSet)(open, value.inner) };
        self.notify(NotifyEvent::STRING, c"set", name);
        match expire_at {
            None => {
                replicate!(self.ctx, c"SET", c"ss", name, value.inner);
            }
            Some(at) => {
                unsafe { api!(RedisModule_SetAbsExpire)(open, at) };
                replicate!(self.ctx, c"SET", c"sscl", name, value.inner, c"PXAT".as_ptr(), at as c_longlong);
                self.notify(NotifyEvent::GENERIC, c"expire", name);
            }
        }
        Ok(())
    }

    fn incr_by(&mut self, key: &[u8], by: i64, new: i64) -> Result<()> {
        let (open, name) = self.write(key)?;
        // Rewritten in place, as INCRBY does: the expiry stays (StringSet
        // would drop it) and the value stays a raw string, which later
        // reads take as it is (StringDMA copies an embedded string first).
        let digits = new.to_string();
        unsafe {
            api!(RedisModule_StringTruncate)(open, digits.len());
            let mut len = 0;
            let value = api!(RedisModule_StringDMA)(open, &mut len, raw::REDISMODULE_WRITE as c_int);
            if !value.is_null() && len == digits.len() {
                ptr::copy_nonoverlapping(digits.as_ptr(), value.cast::<u8>(), len);
            }
        }
        // INCRBY with a negative step is DECRBY's effect, also for
        // i64::MIN, which DECRBY refuses. Redis announces INCR, DECR,
        // INCRBY and DECRBY alike as `incrby`.
        replicate!(self.ctx, c"INCRBY", c"sl", name, by as c_longlong);
        self.notify(NotifyEvent::STRING, c"incrby", name);
        Ok(())
    }

    fn hset(&mut self, key: &[u8], pairs: &[(&[u8], &[u8])]) -> Result<()> {
        let (open, name) = self.write(key)?;
        let pairs: Vec<(RedisString, RedisString)> =
            pairs.iter().map(|(f, v)| (self.string(f), self.string(v))).collect();
        for (field, value) in &pairs {
            unsafe {
                api!(RedisModule_HashSet)(
                    open,
                    raw::REDISMODULE_HASH_NONE as c_int,
                    field.inner,
                    value.inner,
                    ptr::null_mut::<c_void>(),
                );
            }
            self.notify(NotifyEvent::HASH, c"hset", name);
        }
        match &pairs[..] {
            [(f, v)] => replicate!(self.ctx, c"HSET", c"sss", name, f.inner, v.inner),
            [(f1, v1), (f2, v2)] => {
                replicate!(self.ctx, c"HSET", c"sssss", name, f1.inner, v1.inner, f2.inner, v2.inner)
            }
            _ => {
                for (field, value) in &pairs {
                    replicate!(self.ctx, c"HSET", c"sss", name, field.inner, value.inner);
                }
                0
            }
        };
        Ok(())
    }

    fn hincr_by(&mut self, key: &[u8], field: &[u8], by: i64, new: i64) -> Result<()> {
        let (open, name) = self.write(key)?;
        let field = self.string(field);
        unsafe {
            let value = api!(RedisModule_CreateStringFromLongLong)(self.ctx.get_raw(), new);
            api!(RedisModule_HashSet)(
                open,
                raw::REDISMODULE_HASH_NONE as c_int,
                field.inner,
                value,
                ptr::null_mut::<c_void>(),
            );
            api!(RedisModule_FreeString)(self.ctx.get_raw(), value);
        }
        replicate!(self.ctx, c"HINCRBY", c"ssl", name, field.inner, by as c_longlong);
        self.notify(NotifyEvent::HASH, c"hincrby", name);
        Ok(())
    }

    fn hdel(&mut self, key: &[u8], field: &[u8]) -> Result<()> {
        let (open, name) = self.write(key)?;
        let field = self.string(field);
        let deleted = unsafe {
            api!(RedisModule_HashSet)(
                open,
                raw::REDISMODULE_HASH_NONE as c_int,
                field.inner,
                raw::REDISMODULE_HASH_DELETE as *mut raw::RedisModuleString,
                ptr::null_mut::<c_void>(),
            )
        };
        if deleted == 0 {
            return Ok(());
        }
        replicate!(self.ctx, c"HDEL", c"ss", name, field.inner);
        self.notify(NotifyEvent::HASH, c"hdel", name);
        self.notify_if_emptied(open, name);
        Ok(())
    }

    fn lpop(&mut self, key: &[u8]) -> Result<()> {
        let (open, name) = self.write(key)?;
        let popped = unsafe { api!(RedisModule_ListPop)(open, raw::REDISMODULE_LIST_HEAD as c_int) };
        if popped.is_null() {
            return Ok(());
        }
        self.take(popped);
        replicate!(self.ctx, c"LPOP", c"s", name);
        self.notify(NotifyEvent::LIST, c"lpop", name);
        self.notify_if_emptied(open, name);
        Ok(())
    }

    fn rpush(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        let (open, name) = self.write(key)?;
        let value = self.string(value);
        unsafe { api!(RedisModule_ListPush)(open, raw::REDISMODULE_LIST_TAIL as c_int, value.inner) };
        replicate!(self.ctx, c"RPUSH", c"ss", name, value.inner);
        self.notify(NotifyEvent::LIST, c"rpush", name);
        Ok(())
    }

    fn lrem(&mut self, key: &[u8], values: &[&[u8]]) -> Result<()> {
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
            replicate!(self.ctx, c"LREM", c"sls", name, 0 as c_longlong, value.inner);
            self.notify(NotifyEvent::LIST, c"lrem", name);
        }
        self.notify_if_emptied(open, name);
        Ok(())
    }

    fn zadd(&mut self, key: &[u8], member: &[u8], score: i64) -> Result<()> {
        let (open, name) = self.write(key)?;
        let member = self.string(member);
        unsafe { api!(RedisModule_ZsetAdd)(open, score as f64, member.inner, ptr::null_mut()) };
        replicate!(self.ctx, c"ZADD", c"sls", name, score as c_longlong, member.inner);
        self.notify(NotifyEvent::ZSET, c"zadd", name);
        Ok(())
    }

    fn zrem(&mut self, key: &[u8], members: &[&[u8]]) -> Result<()> {
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

    fn set_expire_at(&mut self, key: &[u8], at_ms: i64) -> Result<()> {
        let (open, name) = self.write(key)?;
        unsafe { api!(RedisModule_SetAbsExpire)(open, at_ms) };
        replicate!(self.ctx, c"PEXPIREAT", c"sl", name, at_ms as c_longlong);
        self.notify(NotifyEvent::GENERIC, c"expire", name);
        Ok(())
    }

    fn delete(&mut self, key: &[u8]) -> Result<()> {
        let (open, name) = self.write(key)?;
        unsafe { api!(RedisModule_DeleteKey)(open) };
        replicate!(self.ctx, c"DEL", c"s", name);
        self.notify(NotifyEvent::GENERIC, c"del", name);
        Ok(())
    }

    fn announce(&mut self, key: &[u8], event: Moot) -> Result<()> {
        let index = self.key(key)?;
        let name = self.inner_name(index);
        let (class, event) = match event {
            Moot::HashIncrement => (NotifyEvent::HASH, c"hincrby"),
            Moot::HashDelete => (NotifyEvent::HASH, c"hdel"),
            Moot::Increment => (NotifyEvent::STRING, c"incrby"),
        };
        self.notify(class, event, name);
        Ok(())
    }

    fn publish(&mut self, channel: &[u8], message: &[u8]) -> Result<()> {
        self.touch_channel(channel)?;
        let (channel, message) = (self.string(channel), self.string(message));
        publish_via(self.ctx, &channel, message.inner, self.name_bytes, self.via);
        Ok(())
    }
}
