//! A filtered call's arguments, each read from Redis once (its string and
//! its bytes), and the native call's strings, both on the stack: the
//! filter's hot path allocates nothing and asks Redis for no argument twice.

use crate::api::string_bytes;
use redis_module::raw;
use std::mem::MaybeUninit;

/// The most arguments the filter looks at (Redisson's batch renewals name
/// up to 100 locks: more than this stays with Lua).
pub const MAX_ARGS: usize = 256;

/// The most arguments a native call may have: a rewrite adds a few
/// keywords at most, never as many as the call had.
pub const MAX_NATIVE: usize = 2 * MAX_ARGS;

/// Up to `N` values, the first `len` of them set.
pub struct Slots<T: Copy, const N: usize> {
    values: [MaybeUninit<T>; N],
    len: usize,
}

impl<T: Copy, const N: usize> Slots<T, N> {
    pub fn new() -> Self {
        Self { values: [const { MaybeUninit::uninit() }; N], len: 0 }
    }

    /// Appends `value`; false (and nothing kept) when full.
    #[inline]
    pub fn push(&mut self, value: T) -> bool {
        let Some(slot) = self.values.get_mut(self.len) else { return false };
        slot.write(value);
        self.len += 1;
        true
    }

    #[inline]
    pub fn as_slice(&self) -> &[T] {
        // SAFETY: the first `len` values were written by `push`.
        unsafe { std::slice::from_raw_parts(self.values.as_ptr().cast::<T>(), self.len) }
    }

    /// The values as a C array, for Redis calls that take `T *` (which
    /// they only read).
    pub fn as_mut_ptr(&mut self) -> *mut T {
        self.values.as_mut_ptr().cast::<T>()
    }
}

/// The call's arguments as Redis holds them, and their bytes (valid while
/// the filter runs: no argument is replaced before the last read).
pub struct CallArgs<'a> {
    pub strings: Slots<*mut raw::RedisModuleString, MAX_ARGS>,
    pub bytes: Slots<&'a [u8], MAX_ARGS>,
}

impl<'a> CallArgs<'a> {
    pub fn new() -> Self {
        Self { strings: Slots::new(), bytes: Slots::new() }
    }

    /// Adds the call's next argument, `string`; its bytes returned.
    ///
    /// # Safety
    /// `string` is the call's, live while the filter runs.
    #[inline]
    pub unsafe fn push(&mut self, string: *mut raw::RedisModuleString) -> &'a [u8] {
        let arg = string_bytes(string);
        self.strings.push(string);
        self.bytes.push(arg);
        arg
    }

    /// The lowest and highest address at which an argument from `first` on
    /// starts: no such argument starts outside them.
    pub fn starts(&self, first: usize) -> std::ops::RangeInclusive<usize> {
        let starts = self.bytes.as_slice().iter().skip(first).map(|arg| arg.as_ptr() as usize);
        let (low, high) = starts.fold((usize::MAX, 0), |(low, high), start| (low.min(start), high.max(start)));
        low..=high
    }

    /// Reads the rest of the call's `argc` arguments (at most
    /// [`MAX_ARGS`]), in place (they are kilobytes: never moved).
    ///
    /// # Safety
    /// `fctx` is the filter's context, for the duration of the filter.
    #[inline]
    pub unsafe fn read_rest(&mut self, fctx: *mut raw::RedisModuleCommandFilterCtx, argc: usize) {
        for i in self.strings.as_slice().len()..argc.min(MAX_ARGS) {
            self.push(crate::api::api!(RedisModule_CommandFilterArgGet)(fctx, i as std::os::raw::c_int));
        }
    }
}
