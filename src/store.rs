//! The lock key in Redis: [`LockStore`] over the module key API.
//!
//! Key-API writes are neither replicated nor announced by Redis, so every
//! write here also replicates its effect (with an absolute expiry, never a
//! relative TTL) and sends the keyspace notification that Redis's own
//! command would send.

use crate::error::LockError;
use crate::lock::{parse_hold_count, KeyKind, LockStore};
use redis_module::{raw, Context, NotifyEvent, RedisString, ScanKeyCursor};
use rlock_protocol::{release_channel, UNLOCK_MESSAGE};
use std::os::raw::{c_int, c_void};
use std::ptr;

/// A module API function pointer (read it inside `unsafe`). [`missing_api`] refuses to load the
/// module unless every one used here is present, so the `None` arm cannot
/// be reached.
macro_rules! api {
    ($name:ident) => {
        match raw::$name {
            Some(function) => function,
            None => unreachable!(concat!(stringify!($name), " is checked at load")),
        }
    };
}

/// The first module API function this module needs that the server does
/// not export (all exist since Redis 6.2).
pub fn missing_api() -> Option<&'static str> {
    macro_rules! first_missing {
        ($($name:ident),*) => {{
            $(if unsafe { raw::$name }.is_none() {
                return Some(stringify!($name));
            })*
            None
        }};
    }
    first_missing!(
        RedisModule_Milliseconds,
        RedisModule_OpenKey,
        RedisModule_CloseKey,
        RedisModule_KeyType,
        RedisModule_HashGet,
        RedisModule_HashSet,
        RedisModule_FreeString,
        RedisModule_ValueLength,
        RedisModule_GetAbsExpire,
        RedisModule_SetAbsExpire,
        RedisModule_DeleteKey,
        RedisModule_PublishMessage,
        RedisModule_Replicate,
        RedisModule_NotifyKeyspaceEvent,
        RedisModule_ScanKey,
        RedisModule_ScanCursorCreate,
        RedisModule_ScanCursorDestroy
    )
}

/// The server's clock in Unix milliseconds, as used for key expiry.
pub fn now_ms() -> i64 {
    unsafe { api!(RedisModule_Milliseconds)() }
}

/// An open lock key. Closed on drop.
pub struct RedisLock<'a> {
    ctx: &'a Context,
    name: &'a RedisString,
    key: *mut raw::RedisModuleKey,
}

impl<'a> RedisLock<'a> {
    pub fn open_writable(ctx: &'a Context, name: &'a RedisString) -> Self {
        Self::open(ctx, name, raw::KeyMode::READ | raw::KeyMode::WRITE)
    }

    pub fn open_readonly(ctx: &'a Context, name: &'a RedisString) -> Self {
        Self::open(ctx, name, raw::KeyMode::READ)
    }

    fn open(ctx: &'a Context, name: &'a RedisString, mode: raw::KeyMode) -> Self {
        // A read-only open of a missing key gives a null pointer; every
        // read below checks `kind()` (which accepts null) first.
        let key = raw::open_key(ctx.get_raw(), name.inner, mode);
        Self { ctx, name, key }
    }

    fn replicate(&self, command: &str, args: &[&[u8]]) {
        self.ctx.replicate(command, args);
    }

    fn notify(&self, class: NotifyEvent, event: &str) {
        self.ctx.notify_keyspace_event(class, event, self.name);
    }

    fn create_string(&self, bytes: &[u8]) -> RedisString {
        RedisString::create_from_slice(self.ctx.get_raw(), bytes)
    }
}

impl Drop for RedisLock<'_> {
    fn drop(&mut self) {
        raw::close_key(self.key);
    }
}

impl LockStore for RedisLock<'_> {
    type Owner = RedisString;

    fn kind(&self) -> KeyKind {
        let key_type = unsafe { api!(RedisModule_KeyType)(self.key) } as isize;
        match key_type {
            raw::REDISMODULE_KEYTYPE_EMPTY => KeyKind::Missing,
            raw::REDISMODULE_KEYTYPE_HASH => KeyKind::Hash,
            _ => KeyKind::Other,
        }
    }

    fn hold_count(&self, owner: &RedisString) -> Result<Option<i64>, LockError> {
        let mut value: *mut raw::RedisModuleString = ptr::null_mut();
        unsafe {
            api!(RedisModule_HashGet)(
                self.key,
                raw::REDISMODULE_HASH_NONE as c_int,
                owner.inner,
                &mut value as *mut *mut raw::RedisModuleString,
                ptr::null_mut::<c_void>(),
            );
        }
        if value.is_null() {
            return Ok(None);
        }
        let mut len = 0;
        let count = unsafe {
            let bytes = raw::string_ptr_len(value, &mut len);
            parse_hold_count(std::slice::from_raw_parts(bytes.cast::<u8>(), len))
        };
        unsafe { api!(RedisModule_FreeString)(self.ctx.get_raw(), value) };
        count.map(Some)
    }

    fn holds_only_counts(&self) -> bool {
        let cursor = ScanKeyCursor::new(self.ctx.open_key(self.name));
        let mut all_counts = true;
        while cursor.scan(|_, _, value| {
            all_counts &= parse_hold_count(value.as_slice()).is_ok();
        }) && all_counts
        {}
        all_counts
    }

    fn holder_count(&self) -> i64 {
        if self.key.is_null() {
            return 0;
        }
        unsafe { api!(RedisModule_ValueLength)(self.key) as i64 }
    }

    fn expire_at(&self) -> Option<i64> {
        if self.key.is_null() {
            return None;
        }
        match unsafe { api!(RedisModule_GetAbsExpire)(self.key) } {
            at if at == i64::from(raw::REDISMODULE_NO_EXPIRE) => None,
            at => Some(at),
        }
    }

    fn increment(&mut self, owner: &RedisString, by: i64, new_count: i64) {
        let value = self.create_string(new_count.to_string().as_bytes());
        unsafe {
            api!(RedisModule_HashSet)(
                self.key,
                raw::REDISMODULE_HASH_NONE as c_int,
                owner.inner,
                value.inner,
                ptr::null_mut::<c_void>(),
            );
        }
        let by = by.to_string();
        self.replicate(
            "HINCRBY",
            &[self.name.as_slice(), owner.as_slice(), by.as_bytes()],
        );
        self.notify(NotifyEvent::HASH, "hincrby");
    }

    fn set_expire_at(&mut self, at_ms: i64) {
        unsafe { api!(RedisModule_SetAbsExpire)(self.key, at_ms) };
        let at = at_ms.to_string();
        self.replicate("PEXPIREAT", &[self.name.as_slice(), at.as_bytes()]);
        self.notify(NotifyEvent::GENERIC, "expire");
    }

    fn delete(&mut self) {
        unsafe { api!(RedisModule_DeleteKey)(self.key) };
        self.replicate("DEL", &[self.name.as_slice()]);
        self.notify(NotifyEvent::GENERIC, "del");
    }

    fn publish_release(&mut self) {
        let channel = release_channel(self.name.as_slice());
        let (channel_string, message) = (
            self.create_string(&channel),
            self.create_string(UNLOCK_MESSAGE),
        );
        unsafe {
            api!(RedisModule_PublishMessage)(
                self.ctx.get_raw(),
                channel_string.inner,
                message.inner,
            )
        };
        self.replicate("PUBLISH", &[&channel, UNLOCK_MESSAGE]);
    }
}
