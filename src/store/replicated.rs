//! Arguments of `RM_Replicate` as module strings (its `s` format), and
//! integers and messages for calls that copy them (`RM_HashSet`,
//! `RM_PublishMessage`).
//!
//! Its `l` format makes a new string for each integer (an sds and an
//! object, two allocations, each paying the allocator's size lookup for
//! Redis's memory accounting) and `c` one for each C string; both are
//! freed after propagation. `s` only takes a reference. An integer made
//! here is one allocation (an embedded string), and the constant
//! arguments (`PXAT`, the steps -1, 0 and 1) are made once. A constant
//! must never be stored as a key's value (`RM_StringSet` keeps the
//! object): the keyspace may free it from another thread (FLUSHALL ASYNC).

use crate::api::api;
use redis_module::{raw, Context};
use rlock_protocol::{decimal, DecimalBuffer};
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};

/// A module string made on first use and never freed: a constant argument
/// of every call.
pub struct ConstString {
    text: &'static [u8],
    string: AtomicPtr<raw::RedisModuleString>,
}

impl ConstString {
    pub const fn new(text: &'static [u8]) -> Self {
        Self { text, string: AtomicPtr::new(ptr::null_mut()) }
    }

    pub fn get(&self) -> *mut raw::RedisModuleString {
        let mut string = self.string.load(Ordering::Relaxed);
        if string.is_null() {
            // No context: the string is never freed.
            string =
                unsafe { api!(RedisModule_CreateString)(ptr::null_mut(), self.text.as_ptr().cast(), self.text.len()) };
            self.string.store(string, Ordering::Relaxed);
        }
        string
    }
}

/// `PXAT`, of every `SET … PXAT`.
pub static PXAT: ConstString = ConstString::new(b"PXAT");

/// -1, 0 and 1: the steps of hold counts and counters, LREM's count, and
/// the family's messages.
static SMALL: [ConstString; 3] = [ConstString::new(b"-1"), ConstString::new(b"0"), ConstString::new(b"1")];

/// An argument string, freed on drop unless it is one of [`SMALL`].
pub struct Argument {
    ctx: *mut raw::RedisModuleCtx,
    string: *mut raw::RedisModuleString,
    made: bool,
}

impl Argument {
    pub fn integer(ctx: &Context, n: i64) -> Self {
        let small = n.checked_add(1).and_then(|index| usize::try_from(index).ok()).and_then(|index| SMALL.get(index));
        match small {
            Some(constant) => Self::constant(ctx, constant),
            // What CreateStringFromLongLong makes, without its slower
            // formatting (an expiry's 13 digits cost it about 230
            // instructions).
            None => Self::created(ctx, decimal(n, &mut DecimalBuffer::new())),
        }
    }

    /// `bytes` as a string: the constant when it is one of [`SMALL`]'s.
    pub fn bytes(ctx: &Context, bytes: &[u8]) -> Self {
        match SMALL.iter().find(|constant| constant.text == bytes) {
            Some(constant) => Self::constant(ctx, constant),
            None => Self::created(ctx, bytes),
        }
    }

    fn created(ctx: &Context, bytes: &[u8]) -> Self {
        let string = unsafe { api!(RedisModule_CreateString)(ctx.get_raw(), bytes.as_ptr().cast(), bytes.len()) };
        Self { ctx: ctx.get_raw(), string, made: true }
    }

    fn constant(ctx: &Context, constant: &ConstString) -> Self {
        Self { ctx: ctx.get_raw(), string: constant.get(), made: false }
    }

    /// The string, for `s`: valid while `self` lives.
    pub fn inner(&self) -> *mut raw::RedisModuleString {
        self.string
    }
}

impl Drop for Argument {
    fn drop(&mut self) {
        if self.made {
            unsafe { api!(RedisModule_FreeString)(self.ctx, self.string) };
        }
    }
}
