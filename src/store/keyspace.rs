//! [`Keyspace`] over the module key API: the one Redis layer the family
//! primitives share. Every write is made through the key API, replicated
//! as the Redis command with the same effect (absolute expiries only) and
//! announced with the keyspace event that command sends.
//!
//! The command's key (argv 1) was checked by Redis. Every other key is
//! derived, so `OpenKeys` checks it on its first touch. A channel derived
//! from the name is not checked: the user who may write the name may
//! announce what it wrote (see "Permissions (ACL)" in docs/commands.md).

use super::acl::Caller;
use super::open_keys::OpenKeys;
use super::replicated::Argument;
use super::{publish_via, replicate, Via};
use crate::api::{api, string_bytes};
use crate::error::LockError;
use crate::keyspace::{parse_counter, KeyType, Keyspace, Moot, Result};
use redis_module::{raw, Context, NotifyEvent, RedisString};
use rlock_protocol::{decimal, DecimalBuffer};
use smallvec::SmallVec;
use std::os::raw::{c_int, c_longlong, c_void};
use std::ptr::{self, NonNull};

mod access;
mod collections;
mod strings;

use strings::{read_string, write_in_place};

use super::key::key_type_of;

pub struct RedisKeyspace<'a> {
    ctx: &'a Context,
    keys: OpenKeys<'a>,
    /// Inline: a command publishes on one channel, at most a few.
    channels: SmallVec<[RedisString; 2]>,
    /// The channel the call named (`CHANNEL`), which Redis checked.
    named_channel: Option<&'a RedisString>,
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
        Self::with_caller(ctx, name, true, Caller::server(ctx))
    }

    /// For `RLOCK.INSPECT` and `RLOCK.LIST`: read-only, and a derived key
    /// the caller may not read is not logged as refused (it shows as missing).
    pub fn open_to_inspect(ctx: &'a Context, name: &'a RedisString) -> Self {
        let mut keyspace = Self::new(ctx, name, false);
        keyspace.keys.log_no_refusals();
        keyspace
    }

    fn new(ctx: &'a Context, name: &'a RedisString, writable: bool) -> Self {
        Self::with_caller(ctx, name, writable, Caller::new(ctx))
    }

    fn with_caller(ctx: &'a Context, name: &'a RedisString, writable: bool, caller: Caller) -> Self {
        let keys = OpenKeys::new(ctx, name, writable, caller);
        Self { ctx, keys, channels: SmallVec::new(), named_channel: None, via: Via::Default }
    }

    /// Publishes as `via` says (a Redisson script's publish command).
    pub fn via(mut self, via: Via) -> Self {
        self.via = via;
        self
    }

    /// The channel the call named (`commands::args::take_channel`): Redis
    /// checked before the command ran that the caller may publish there,
    /// and its string is reused.
    pub fn named_channel(mut self, channel: Option<&'a RedisString>) -> Self {
        self.named_channel = channel;
        self
    }

    /// Where `channel` is in `channels`, added on its first touch: a
    /// publish reuses the string made then.
    fn channel_index(&mut self, channel: &[u8]) -> usize {
        if let Some(index) = self.channels.iter().position(|known| known.as_slice() == channel) {
            return index;
        }
        let name = match self.named_channel {
            // The call's own string: no string to make.
            Some(named) if named.as_slice() == channel => {
                RedisString::new(NonNull::new(self.ctx.get_raw()), named.inner)
            }
            _ => self.string(channel),
        };
        self.channels.push(name);
        self.channels.len() - 1
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
        Ok(read_string(open, <[u8]>::to_vec))
    }

    /// Parsed where the key holds it: no copy of the value.
    fn read_counter(&mut self, key: &[u8]) -> Result<Option<i64>> {
        let open = self.read(key)?;
        match key_type_of(open) {
            KeyType::Missing => Ok(None),
            KeyType::String => read_string(open, |value| parse_counter(key, value)).transpose(),
            _ => Err(LockError::WrongType),
        }
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

    fn hash_visit(&mut self, key: &[u8], visit: &mut dyn FnMut(&[u8], &[u8])) -> Result<()> {
        let open = self.read(key)?;
        if key_type_of(open) != KeyType::Hash {
            return Ok(());
        }
        type Visit<'v> = &'v mut dyn FnMut(&[u8], &[u8]);
        /// Shows one field and value to the visitor behind `visit`.
        unsafe extern "C" fn each(
            _key: *mut raw::RedisModuleKey,
            field: *mut raw::RedisModuleString,
            value: *mut raw::RedisModuleString,
            visit: *mut c_void,
        ) {
            let visit = unsafe { &mut *visit.cast::<Visit>() };
            visit(unsafe { string_bytes(field) }, unsafe { string_bytes(value) });
        }
        // Through the handle already open: no second lookup.
        let mut visit: Visit = visit;
        unsafe {
            let cursor = api!(RedisModule_ScanCursorCreate)();
            let privdata = (&mut visit as *mut Visit).cast::<c_void>();
            while api!(RedisModule_ScanKey)(open, cursor, Some(each), privdata) != 0 {}
            api!(RedisModule_ScanCursorDestroy)(cursor);
        }
        Ok(())
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

    fn set(&mut self, key: &[u8], value: &[u8], expire_at: Option<i64>) -> Result<()> {
        self.set_string(key, value, expire_at, false)
    }

    fn set_counter(&mut self, key: &[u8], value: &[u8], expire_at: Option<i64>) -> Result<()> {
        self.set_string(key, value, expire_at, true)
    }

    fn incr_by(&mut self, key: &[u8], by: i64, new: i64) -> Result<()> {
        let (open, name) = self.write(key)?;
        // Rewritten in place, as INCRBY does: the expiry stays (StringSet
        // would drop it).
        write_in_place(open, decimal(new, &mut DecimalBuffer::new()));
        // INCRBY with a negative step is DECRBY's effect, also for
        // i64::MIN, which DECRBY refuses. Redis announces INCR, DECR,
        // INCRBY and DECRBY alike as `incrby`.
        replicate!(self.ctx, c"INCRBY", c"ss", name, Argument::integer(self.ctx, by).inner());
        self.notify(NotifyEvent::STRING, c"incrby", name);
        Ok(())
    }

    fn hset(&mut self, key: &[u8], pairs: &[(&[u8], &[u8])]) -> Result<()> {
        let (open, name) = self.write(key)?;
        // HashSet copies the value: a 1 is the constant.
        let pairs: SmallVec<[(RedisString, Argument); 2]> =
            pairs.iter().map(|(f, v)| (self.string(f), Argument::bytes(self.ctx, v))).collect();
        for (field, value) in &pairs {
            unsafe {
                api!(RedisModule_HashSet)(
                    open,
                    raw::REDISMODULE_HASH_NONE as c_int,
                    field.inner,
                    value.inner(),
                    ptr::null_mut::<c_void>(),
                );
            }
            self.notify(NotifyEvent::HASH, c"hset", name);
        }
        match &pairs[..] {
            [(f, v)] => replicate!(self.ctx, c"HSET", c"sss", name, f.inner, v.inner()),
            [(f1, v1), (f2, v2)] => {
                replicate!(self.ctx, c"HSET", c"sssss", name, f1.inner, v1.inner(), f2.inner, v2.inner())
            }
            _ => {
                for (field, value) in &pairs {
                    replicate!(self.ctx, c"HSET", c"sss", name, field.inner, value.inner());
                }
                0
            }
        };
        Ok(())
    }

    fn hincr_by(&mut self, key: &[u8], field: &[u8], by: i64, new: i64) -> Result<()> {
        let (open, name) = self.write(key)?;
        let field = self.string(field);
        // HashSet copies the value: a 1 or 0 is the constant.
        let value = Argument::integer(self.ctx, new);
        unsafe {
            api!(RedisModule_HashSet)(
                open,
                raw::REDISMODULE_HASH_NONE as c_int,
                field.inner,
                value.inner(),
                ptr::null_mut::<c_void>(),
            );
        }
        replicate!(self.ctx, c"HINCRBY", c"sss", name, field.inner, Argument::integer(self.ctx, by).inner());
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
        self.remove_from_list(key, values)
    }

    fn zadd(&mut self, key: &[u8], member: &[u8], score: i64) -> Result<()> {
        let (open, name) = self.write(key)?;
        let member = self.string(member);
        unsafe { api!(RedisModule_ZsetAdd)(open, score as f64, member.inner, ptr::null_mut()) };
        replicate!(self.ctx, c"ZADD", c"sss", name, Argument::integer(self.ctx, score).inner(), member.inner);
        self.notify(NotifyEvent::ZSET, c"zadd", name);
        Ok(())
    }

    fn zrem(&mut self, key: &[u8], members: &[&[u8]]) -> Result<()> {
        self.remove_from_zset(key, members)
    }

    fn set_expire_at(&mut self, key: &[u8], at_ms: i64) -> Result<()> {
        let (open, name) = self.write(key)?;
        unsafe { api!(RedisModule_SetAbsExpire)(open, at_ms) };
        replicate!(self.ctx, c"PEXPIREAT", c"ss", name, Argument::integer(self.ctx, at_ms).inner());
        self.notify(NotifyEvent::GENERIC, c"expire", name);
        Ok(())
    }

    fn delete(&mut self, key: &[u8]) -> Result<()> {
        let name = self.delete_announced(key)?;
        replicate!(self.ctx, c"DEL", c"s", name);
        Ok(())
    }

    fn delete_both(&mut self, first: &[u8], second: &[u8]) -> Result<()> {
        let (first, second) = (self.delete_announced(first)?, self.delete_announced(second)?);
        replicate!(self.ctx, c"DEL", c"ss", first, second);
        Ok(())
    }

    fn announce(&mut self, key: &[u8], event: Moot) -> Result<()> {
        let name = self.keys.name_of(key)?;
        let (class, event) = match event {
            Moot::HashIncrement => (NotifyEvent::HASH, c"hincrby"),
            Moot::HashDelete => (NotifyEvent::HASH, c"hdel"),
            Moot::Increment => (NotifyEvent::STRING, c"incrby"),
        };
        self.notify(class, event, name);
        Ok(())
    }

    fn publish(&mut self, channel: &[u8], message: &[u8]) -> Result<()> {
        let index = self.channel_index(channel);
        let message = Argument::bytes(self.ctx, message);
        publish_via(self.ctx, &self.channels[index], message.inner(), self.keys.name_bytes(), self.via);
        Ok(())
    }
}
