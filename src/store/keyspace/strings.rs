//! String values through an open key, in place: read without a copy,
//! written as raw strings.
//!
//! StringDMA hands out a value only as a raw string: it first copies an
//! embedded or integer-encoded one into a new raw string (about 800
//! instructions). So the counters the family reads on every call (a
//! latch's count, permits, a fenced lock's token) are written raw, as
//! INCRBY leaves its value, and read where they are.

use super::{key_type_of, RedisKeyspace};
use crate::api::api;
use crate::keyspace::{KeyType, Result};
use crate::store::replicate;
use crate::store::replicated::{Argument, PXAT};
use redis_module::{raw, NotifyEvent};
use std::os::raw::c_int;
use std::ptr;

impl RedisKeyspace<'_> {
    /// `SET key value [PXAT at]`; a new `counter` (read again by later
    /// calls) is written as a raw string. Others are not: a raw string
    /// costs one allocation more to write.
    pub(super) fn set_string(&mut self, key: &[u8], value: &[u8], expire_at: Option<i64>, counter: bool) -> Result<()> {
        let (open, name) = self.write(key)?;
        let (stored, replicated);
        // StringTruncate makes no key of an empty value.
        let value = if counter && key_type_of(open) == KeyType::Missing && !value.is_empty() {
            write_in_place(open, value);
            // Only replicated: a constant may be.
            replicated = Argument::bytes(self.ctx, value);
            replicated.inner()
        } else {
            // SET replaces a value of any type and drops its expiry.
            stored = self.string(value);
            unsafe { api!(RedisModule_StringSet)(open, stored.inner) };
            stored.inner
        };
        self.notify(NotifyEvent::STRING, c"set", name);
        match expire_at {
            None => {
                replicate!(self.ctx, c"SET", c"ss", name, value);
            }
            Some(at) => {
                unsafe { api!(RedisModule_SetAbsExpire)(open, at) };
                let at = Argument::integer(self.ctx, at);
                replicate!(self.ctx, c"SET", c"ssss", name, value, PXAT.get(), at.inner());
                self.notify(NotifyEvent::GENERIC, c"expire", name);
            }
        }
        Ok(())
    }
}

/// `read` of the value of an open string key, in place; `None` unless it
/// is a string.
pub(super) fn read_string<R>(open: *mut raw::RedisModuleKey, read: impl FnOnce(&[u8]) -> R) -> Option<R> {
    if key_type_of(open) != KeyType::String {
        return None;
    }
    let mut len = 0;
    let bytes = unsafe { api!(RedisModule_StringDMA)(open, &mut len, raw::REDISMODULE_READ as c_int) };
    Some(read(unsafe { std::slice::from_raw_parts(bytes.cast::<u8>(), len) }))
}

/// Makes the value of `open` (missing, or a string) `value`, keeping any
/// expiry, as a raw string.
pub(super) fn write_in_place(open: *mut raw::RedisModuleKey, value: &[u8]) {
    unsafe {
        api!(RedisModule_StringTruncate)(open, value.len());
        let mut len = 0;
        let bytes = api!(RedisModule_StringDMA)(open, &mut len, raw::REDISMODULE_WRITE as c_int);
        if !bytes.is_null() && len == value.len() {
            ptr::copy_nonoverlapping(value.as_ptr(), bytes.cast::<u8>(), len);
        }
    }
}
