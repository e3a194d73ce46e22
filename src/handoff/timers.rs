//! What the hand-offs share on Redis's side: a lock's id in the queues,
//! and module timers that carry their own data.

use crate::api::api;
use redis_module::{raw, Context};
use std::os::raw::{c_int, c_void};
use std::ptr;

/// A blocked client's handle, as a number.
pub type Client = usize;

/// A lock's id in the queues: its database and name (the same name in two
/// databases is two locks).
pub fn lock_id(ctx: &Context, name: &[u8]) -> Vec<u8> {
    let db = unsafe { api!(RedisModule_GetSelectedDb)(ctx.get_raw()) };
    [&db.to_be_bytes()[..], name].concat()
}

/// Selects the lock's database on `ctx` (a timer's) and returns its name.
pub fn select_lock<'a>(ctx: &Context, id: &'a [u8]) -> &'a [u8] {
    let (db, name) = id.split_at(4);
    let db = c_int::from_be_bytes([db[0], db[1], db[2], db[3]]);
    unsafe { api!(RedisModule_SelectDb)(ctx.get_raw(), db) };
    name
}

/// A timer whose callback takes back `data` with [`timer_data`].
pub fn start_timer<T>(
    ctx: &Context,
    after_ms: i64,
    callback: raw::RedisModuleTimerProc,
    data: T,
) -> raw::RedisModuleTimerID {
    let data = Box::into_raw(Box::new(data)).cast::<c_void>();
    unsafe { api!(RedisModule_CreateTimer)(ctx.get_raw(), after_ms, callback, data) }
}

/// Stops a timer started with data of type `T`, if it has not fired.
pub fn stop_timer<T>(ctx: &Context, timer: raw::RedisModuleTimerID) {
    let mut data: *mut c_void = ptr::null_mut();
    if unsafe { api!(RedisModule_StopTimer)(ctx.get_raw(), timer, &mut data) } == raw::REDISMODULE_OK as c_int {
        drop(unsafe { timer_data::<T>(data) });
    }
}

/// Takes back what was given to a timer.
pub unsafe fn timer_data<T>(data: *mut c_void) -> T {
    *unsafe { Box::from_raw(data.cast::<T>()) }
}
