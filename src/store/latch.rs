//! The unlock latch key and the acquire record key in Redis: a string
//! with an expiry, derived from the lock name and a request id
//! ([`RequestKey`] over the key API).
//!
//! The key is derived, so Redis neither checked the caller's ACL for it
//! nor routed by its slot: both are checked here, before anything is read
//! or written (except for a grant to a blocked caller, checked when it
//! called).

use super::acl::Caller;
use super::key::{key_type_of, SignalOnWriteKey};
use super::replicated::{Argument, PXAT};
use super::{cluster_mode, joined_string, notify, replicate};
use crate::api::api;
use crate::error::LockError;
use crate::keyspace::latch::RequestKey;
use crate::keyspace::KeyType;
use redis_module::{raw, Context, NotifyEvent, RedisError, RedisString, RedisValue};
use rlock_protocol::{acquire_record_key, key_slot, unlock_latch_key_parts};
use std::os::raw::c_int;

/// An open unlock latch or acquire record key. Closed on drop.
pub struct RedisLatch<'a> {
    ctx: &'a Context,
    // Declared before `name`: the key is closed before its name is freed.
    key: SignalOnWriteKey,
    name: RedisString,
}

impl<'a> RedisLatch<'a> {
    /// Opens the latch key of `request_id` on the lock `lock_name`, when the
    /// caller may read and write it and (in cluster mode) it is in the
    /// lock's slot.
    pub fn open(ctx: &'a Context, lock_name: &RedisString, request_id: &RedisString) -> Result<Self, RedisError> {
        let name = joined_string(ctx, &unlock_latch_key_parts(lock_name.as_slice(), request_id.as_slice()));
        if cluster_mode() && key_slot(name.as_slice()) != key_slot(lock_name.as_slice()) {
            return Err(LockError::LatchCrossSlot.into());
        }
        on_one_node(ctx, lock_name.as_slice(), name.as_slice())?;
        Self::open_checked(ctx, name, "unlock latch key")
    }

    /// Opens the acquire record key of `request_id` on the lock
    /// `lock_name`, checked as [`RedisLatch::open`] checks.
    pub fn open_record(ctx: &'a Context, lock_name: &[u8], request_id: &[u8]) -> Result<Self, RedisError> {
        let name_bytes = acquire_record_key(lock_name, request_id);
        if cluster_mode() && key_slot(&name_bytes) != key_slot(lock_name) {
            return Err(LockError::DerivedKeyCrossSlot(name_bytes).into());
        }
        on_one_node(ctx, lock_name, &name_bytes)?;
        Self::open_checked(ctx, RedisString::create_from_slice(ctx.get_raw(), &name_bytes), "acquire record key")
    }

    /// Opens the acquire record key for a grant to a blocked caller (in a
    /// timer, where no caller runs): it was checked when the caller called.
    pub fn open_record_as_server(ctx: &'a Context, lock_name: &[u8], request_id: &[u8]) -> Self {
        let name = RedisString::create_from_slice(ctx.get_raw(), &acquire_record_key(lock_name, request_id));
        Self::open_unchecked(ctx, name)
    }

    /// Opens an unlock latch key the command declared (`LATCH latch_key`):
    /// Redis checked the caller's ACL for it. Its slot is checked here, as
    /// for a derived key: Redis 7.0 routes a module's command by its first
    /// key alone.
    pub fn open_declared(ctx: &'a Context, lock_name: &RedisString, name: RedisString) -> Result<Self, RedisError> {
        if name.as_slice() == lock_name.as_slice() {
            return Err(LockError::LatchKeyIsLock.into());
        }
        if cluster_mode() && key_slot(name.as_slice()) != key_slot(lock_name.as_slice()) {
            return Err(LockError::KeysCrossSlot.into());
        }
        on_one_node(ctx, lock_name.as_slice(), name.as_slice())?;
        Ok(Self::open_unchecked(ctx, name))
    }

    fn open_unchecked(ctx: &'a Context, name: RedisString) -> Self {
        Self { ctx, key: SignalOnWriteKey::open(ctx, name.inner), name }
    }

    fn open_checked(ctx: &'a Context, name: RedisString, what: &str) -> Result<Self, RedisError> {
        check_write_permission(ctx, &name, what)?;
        Ok(Self::open_unchecked(ctx, name))
    }

    /// The string the key holds; [`LockError::WrongType`] for another type.
    fn value(&self) -> Result<Option<&[u8]>, LockError> {
        let key = self.key.read();
        match key_type_of(key) {
            KeyType::Missing => Ok(None),
            KeyType::String => {
                let mut len = 0;
                Ok(Some(unsafe {
                    let bytes = api!(RedisModule_StringDMA)(key, &mut len, raw::REDISMODULE_READ as c_int);
                    std::slice::from_raw_parts(bytes.cast::<u8>(), len)
                }))
            }
            _ => Err(LockError::WrongType),
        }
    }

    /// `SET L text PXAT at_ms`: written, replicated and announced (`set`
    /// then `expire`) as Redis's own `SET L text PX n` would be.
    fn write(&mut self, text: &[u8], at_ms: i64) {
        let ctx = self.ctx.get_raw();
        let key = self.key.write();
        let value = unsafe { api!(RedisModule_CreateString)(ctx, text.as_ptr().cast(), text.len()) };
        unsafe {
            api!(RedisModule_StringSet)(key, value);
            api!(RedisModule_SetAbsExpire)(key, at_ms);
        }
        let at = Argument::integer(self.ctx, at_ms);
        replicate!(self.ctx, c"SET", c"ssss", self.name.inner, value, PXAT.get(), at.inner());
        unsafe { api!(RedisModule_FreeString)(ctx, value) };
        notify(self.ctx, NotifyEvent::STRING, c"set", self.name.inner);
        notify(self.ctx, NotifyEvent::GENERIC, c"expire", self.name.inner);
    }
}

impl RequestKey for RedisLatch<'_> {
    fn text(&mut self) -> Result<Option<Vec<u8>>, LockError> {
        self.value().map(|value| value.map(<[u8]>::to_vec))
    }

    fn set_text(&mut self, text: &[u8], at_ms: i64) -> Result<(), LockError> {
        self.write(text, at_ms);
        Ok(())
    }
}

/// In cluster mode, refuses with Redis's `TRYAGAIN` unless the lock's key
/// and its request key `key` (unlock latch or acquire record) are both on
/// this node, as Redis routes Redisson's scripts, whose keys include the
/// latch. A resharding tool moves a slot's keys in batches: a release (or
/// an acquire) resent while its latch (or record) and the lock sit on two
/// nodes would find the lock without it and run again. A module's call
/// gets Redis's routing check, with the caller's `ASKING`. A `key` of
/// another slot is left to the caller's refusal, which lasts (`TRYAGAIN`
/// would have a client ask again for ever).
pub fn on_one_node(ctx: &Context, lock_name: &[u8], key: &[u8]) -> Result<(), LockError> {
    if cluster_mode()
        && key_slot(lock_name) == key_slot(key)
        && !matches!(ctx.call("EXISTS", &[lock_name, key]), Ok(RedisValue::Integer(_)))
    {
        return Err(LockError::KeysSplit);
    }
    Ok(())
}

/// Refuses with NOPERM, naming the key (`what` it is), unless the calling
/// user may read and create `key`.
fn check_write_permission(ctx: &Context, key: &RedisString, what: &str) -> Result<(), RedisError> {
    let access = raw::REDISMODULE_CMD_KEY_ACCESS | raw::REDISMODULE_CMD_KEY_INSERT;
    let mut caller = Caller::new(ctx);
    if caller.may_access_key(key, access) {
        Ok(())
    } else {
        caller.log_refused_key(key);
        Err(RedisError::String(format!(
            "NOPERM this user has no permissions to access the {what} '{}'",
            key.as_slice().escape_ascii()
        )))
    }
}
