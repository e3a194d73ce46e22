//! A key that is marked modified only when something was written to it.
//!
//! Redis marks a key opened for writing as modified when it is closed, even
//! if nothing was written: another client's WATCH would abort and client
//! tracking would send an invalidation. Commands that end up writing
//! nothing (a contended acquire, a release by a non-holder) must not do
//! that. The module turns that implicit signal off at load
//! ([`set_module_options`]), so a key is opened once, for
//! writing, and signalled on close only after a write.

use crate::api::api;
use crate::keyspace::KeyType;
use redis_module::{raw, Context};
use std::os::raw::c_int;

/// Valkey 9's `VALKEYMODULE_OPTIONS_HANDLE_ATOMIC_SLOT_MIGRATION`: while a
/// loaded module lacks it, Valkey refuses `CLUSTER MIGRATESLOTS`. The
/// module qualifies: keys an import loads before the slot is the target's
/// are not served there, so no command or timer of the module writes them
/// (a timer's write first checks the key is served here), and the source
/// grants no waiter once the slot left (the same check). Redis has no such
/// option (the bit is unassigned in 7.0 and 8.0), so it is set on Valkey only.
const VALKEY_HANDLES_ATOMIC_SLOT_MIGRATION: c_int = 1 << 5;

/// Module options, set once (each call replaces the last): no implicit
/// modified-key signal when a key opened for writing is closed
/// ([`SignalOnWriteKey`] signals its writes itself); on Valkey, atomic slot
/// migration handled.
pub fn set_module_options(ctx: &Context, valkey: bool) {
    let mut options = raw::REDISMODULE_OPTION_NO_IMPLICIT_SIGNAL_MODIFIED as c_int;
    if valkey {
        options |= VALKEY_HANDLES_ATOMIC_SLOT_MIGRATION;
    }
    unsafe { api!(RedisModule_SetModuleOptions)(ctx.get_raw(), options) };
}

pub struct SignalOnWriteKey {
    ctx: *mut raw::RedisModuleCtx,
    name: *mut raw::RedisModuleString,
    key: *mut raw::RedisModuleKey,
    written: bool,
}

impl SignalOnWriteKey {
    /// Opens `name` for reading and writing. The name must outlive the key.
    pub fn open(ctx: &Context, name: *mut raw::RedisModuleString) -> Self {
        Self::open_as(ctx, name, raw::KeyMode::READ | raw::KeyMode::WRITE)
    }

    /// Opens `name` for reading only, for read-only commands (which can
    /// reach [`SignalOnWriteKey::write`] only through `&mut`, never given).
    pub fn open_readonly(ctx: &Context, name: *mut raw::RedisModuleString) -> Self {
        Self::open_as(ctx, name, raw::KeyMode::READ)
    }

    fn open_as(ctx: &Context, name: *mut raw::RedisModuleString, mode: raw::KeyMode) -> Self {
        let ctx = ctx.get_raw();
        Self { ctx, name, key: raw::open_key(ctx, name, mode), written: false }
    }

    /// The key for reading: null for a missing key opened read-only (the
    /// key API accepts null in KeyType; other reads check the type first).
    pub fn read(&self) -> *mut raw::RedisModuleKey {
        self.key
    }

    /// The key for writing: it will be signalled as modified on close.
    pub fn write(&mut self) -> *mut raw::RedisModuleKey {
        self.written = true;
        self.key
    }
}

impl Drop for SignalOnWriteKey {
    fn drop(&mut self) {
        if self.written {
            unsafe { api!(RedisModule_SignalModifiedKey)(self.ctx, self.name) };
        }
        unsafe { api!(RedisModule_CloseKey)(self.key) };
    }
}

/// What an open key holds, as TYPE reports it.
pub(crate) fn key_type_of(open: *mut raw::RedisModuleKey) -> KeyType {
    match unsafe { api!(RedisModule_KeyType)(open) } as isize {
        raw::REDISMODULE_KEYTYPE_EMPTY => KeyType::Missing,
        raw::REDISMODULE_KEYTYPE_STRING => KeyType::String,
        raw::REDISMODULE_KEYTYPE_LIST => KeyType::List,
        raw::REDISMODULE_KEYTYPE_HASH => KeyType::Hash,
        raw::REDISMODULE_KEYTYPE_ZSET => KeyType::Zset,
        _ => KeyType::Other,
    }
}
