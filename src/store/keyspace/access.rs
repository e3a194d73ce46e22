//! How [`RedisKeyspace`] reaches keys: opened once per command (derived
//! keys checked on first touch), key-API strings, and keyspace events.

use super::RedisKeyspace;
use crate::api::{api, string_bytes};
use crate::keyspace::Result;
use crate::store::notify;
use redis_module::{raw, NotifyEvent, RedisString};
use std::ffi::CStr;

impl RedisKeyspace<'_> {
    pub(super) fn listed(&mut self, key: &[u8]) -> Result<*mut raw::RedisModuleKey> {
        self.keys.listed(key)
    }

    pub(super) fn read(&mut self, key: &[u8]) -> Result<*mut raw::RedisModuleKey> {
        self.keys.read(key)
    }

    pub(super) fn write(&mut self, key: &[u8]) -> Result<(*mut raw::RedisModuleKey, *mut raw::RedisModuleString)> {
        self.keys.write(key)
    }

    /// Deletes `key` and announces it, as DEL does; the caller replicates.
    /// Returns its name.
    pub(super) fn delete_announced(&mut self, key: &[u8]) -> Result<*mut raw::RedisModuleString> {
        let (open, name) = self.write(key)?;
        unsafe { api!(RedisModule_DeleteKey)(open) };
        self.notify(NotifyEvent::GENERIC, c"del", name);
        Ok(name)
    }

    pub(super) fn string(&self, bytes: &[u8]) -> RedisString {
        RedisString::create_from_slice(self.ctx.get_raw(), bytes)
    }

    pub(super) fn notify(&self, class: NotifyEvent, event: &CStr, key: *mut raw::RedisModuleString) {
        notify(self.ctx, class, event, key);
    }

    /// Redis deletes a container its command left empty, and says `del`.
    pub(super) fn notify_if_emptied(&self, open: *mut raw::RedisModuleKey, key: *mut raw::RedisModuleString) {
        if unsafe { api!(RedisModule_KeyType)(open) } as isize == raw::REDISMODULE_KEYTYPE_EMPTY {
            self.notify(NotifyEvent::GENERIC, c"del", key);
        }
    }

    /// A key-API string as bytes, freed.
    pub(super) fn take(&self, value: *mut raw::RedisModuleString) -> Vec<u8> {
        let bytes = unsafe { string_bytes(value) }.to_vec();
        unsafe { api!(RedisModule_FreeString)(self.ctx.get_raw(), value) };
        bytes
    }
}
