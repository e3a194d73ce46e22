//! The unlock latch key in Redis: [`UnlockLatch`] over the key API.
//!
//! The key is derived from the lock name and the request id, so Redis
//! neither checked the caller's ACL for it nor routed by its slot: both
//! are checked here, before anything is read or written.

use super::acl::Caller;
use super::key::SignalOnWriteKey;
use super::{cluster_mode, notify, replicate};
use crate::api::api;
use crate::error::LockError;
use crate::lock::latch::UnlockLatch;
use redis_module::{raw, Context, NotifyEvent, RedisError, RedisString};
use rlock_protocol::{key_slot, unlock_latch_key};
use std::os::raw::{c_int, c_longlong};

/// An open unlock latch key. Closed on drop.
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
        let name_bytes = unlock_latch_key(lock_name.as_slice(), request_id.as_slice());
        if cluster_mode() && key_slot(&name_bytes) != key_slot(lock_name.as_slice()) {
            return Err(LockError::LatchCrossSlot.into());
        }
        let name = RedisString::create_from_slice(ctx.get_raw(), &name_bytes);
        check_write_permission(ctx, &name)?;
        Ok(Self { ctx, key: SignalOnWriteKey::open(ctx, name.inner), name })
    }
}

impl UnlockLatch for RedisLatch<'_> {
    fn recorded(&self) -> Result<Option<bool>, LockError> {
        let key = self.key.read();
        match unsafe { api!(RedisModule_KeyType)(key) } as isize {
            raw::REDISMODULE_KEYTYPE_EMPTY => return Ok(None),
            raw::REDISMODULE_KEYTYPE_STRING => {}
            _ => return Err(LockError::NotALatch),
        }
        let mut len = 0;
        let value = unsafe {
            let bytes = api!(RedisModule_StringDMA)(key, &mut len, raw::REDISMODULE_READ as c_int);
            std::slice::from_raw_parts(bytes.cast::<u8>(), len)
        };
        match value {
            b"0" => Ok(Some(false)),
            b"1" => Ok(Some(true)),
            _ => Err(LockError::NotALatch),
        }
    }

    /// `SET L 0|1 PXAT at_ms`: written, replicated and announced (`set`
    /// then `expire`) as Redis's own `SET L v PX n` would be.
    fn record(&mut self, released: bool, at_ms: i64) {
        let (value, text) = if released { (c"1", b"1") } else { (c"0", b"0") };
        let ctx = self.ctx.get_raw();
        let key = self.key.write();
        unsafe {
            let value = api!(RedisModule_CreateString)(ctx, text.as_ptr().cast(), text.len());
            api!(RedisModule_StringSet)(key, value);
            api!(RedisModule_FreeString)(ctx, value);
            api!(RedisModule_SetAbsExpire)(key, at_ms);
        }
        replicate!(self.ctx, c"SET", c"sccl", self.name.inner, value.as_ptr(), c"PXAT".as_ptr(), at_ms as c_longlong);
        notify(self.ctx, NotifyEvent::STRING, c"set", self.name.inner);
        notify(self.ctx, NotifyEvent::GENERIC, c"expire", self.name.inner);
    }
}

/// Refuses with NOPERM, naming the key, unless the calling user may read
/// and create `key`.
fn check_write_permission(ctx: &Context, key: &RedisString) -> Result<(), RedisError> {
    let access = raw::REDISMODULE_CMD_KEY_ACCESS | raw::REDISMODULE_CMD_KEY_INSERT;
    if Caller::new(ctx).may_access_key(key, access) {
        Ok(())
    } else {
        Err(RedisError::String(format!(
            "NOPERM this user has no permissions to access the unlock latch key '{}'",
            key.as_slice().escape_ascii()
        )))
    }
}
