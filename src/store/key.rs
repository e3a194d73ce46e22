//! A key opened for reading and reopened for writing on the first write.
//!
//! Redis marks a key opened for writing as modified when it is closed, even
//! if nothing was written: another client's WATCH would abort and client
//! tracking would send an invalidation. Commands that end up writing
//! nothing (a contended acquire, a release by a non-holder) must not do
//! that, so a key is only opened for writing when a write comes.

use crate::api::api;
use redis_module::{raw, Context};

pub struct LazyKey {
    ctx: *mut raw::RedisModuleCtx,
    name: *mut raw::RedisModuleString,
    key: *mut raw::RedisModuleKey,
    writable: bool,
}

impl LazyKey {
    /// Opens `name` for reading. The name must outlive the key.
    pub fn open(ctx: &Context, name: *mut raw::RedisModuleString) -> Self {
        let ctx = ctx.get_raw();
        Self { ctx, name, key: raw::open_key(ctx, name, raw::KeyMode::READ), writable: false }
    }

    /// The key for reading: null when it is missing (the key API accepts
    /// null in KeyType; other reads check the type first).
    pub fn read(&self) -> *mut raw::RedisModuleKey {
        self.key
    }

    /// The key for writing, reopened for writing the first time.
    pub fn write(&mut self) -> *mut raw::RedisModuleKey {
        if !self.writable {
            unsafe { api!(RedisModule_CloseKey)(self.key) };
            self.key = raw::open_key(self.ctx, self.name, raw::KeyMode::READ | raw::KeyMode::WRITE);
            self.writable = true;
        }
        self.key
    }
}

impl Drop for LazyKey {
    fn drop(&mut self) {
        unsafe { api!(RedisModule_CloseKey)(self.key) };
    }
}
