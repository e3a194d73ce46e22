//! A caller blocked for a fair lock that disconnected (or was killed)
//! gives its place in the queue up at once.

use super::handoff::{locks, take_blocked, Change, Session};
use super::moved;
use super::{FairLock, Waits};
use crate::api::api;
use crate::handoff::events::unsubscribe_if_idle;
use crate::handoff::glue::{select_lock, start_timer, stop_timer, timer_data, Client, MayWrite};
use crate::store::{now_ms, RedisKeyspace};
use redis_module::{raw, Context, RedisString};
use std::os::raw::c_void;
use std::ptr;

/// A blocked client that disconnected (or was killed) gives its place up
/// at once: its timer is stopped, and a 0 ms timer runs the give-up (this
/// callback does not write).
pub(super) unsafe extern "C" fn left(ctx: *mut raw::RedisModuleCtx, client: *mut raw::RedisModuleBlockedClient) {
    let ctx = Context::new(ctx);
    let id = locks()
        .iter()
        .find(|(_, lock)| lock.blocked.iter().any(|w| w.client == client as Client))
        .map(|(id, _)| id.clone());
    let Some(id) = id else { return };
    for waiter in take_blocked(&id, |waiter| waiter.client == client as Client) {
        if waiter.timer != 0 {
            stop_timer::<(Vec<u8>, Client)>(&ctx, waiter.timer);
        }
        unsafe { api!(RedisModule_UnblockClient)(client, ptr::null_mut()) };
        // The owner's other call, if any, keeps the place.
        let still_blocked = locks().get(&id).is_some_and(|lock| lock.blocked.iter().any(|w| w.owner == waiter.owner));
        if !still_blocked {
            start_timer(&ctx, 0, Some(give_up), (id.clone(), waiter.owner, waiter.call.wait_ms));
        }
    }
}

unsafe extern "C" fn give_up(ctx: *mut raw::RedisModuleCtx, data: *mut c_void) {
    let (id, owner, wait_ms) = unsafe { timer_data::<(Vec<u8>, Vec<u8>, i64)>(data) };
    let ctx = Context::new(ctx);
    let name = select_lock(&ctx, &id);
    match moved::may_write(&ctx, name) {
        MayWrite::Now => {}
        // The place goes once writes may resume (giving it up may grant).
        MayWrite::Later(ms) => {
            start_timer(&ctx, ms, Some(give_up), (id, owner, wait_ms));
            return;
        }
        MayWrite::Never => return,
        MayWrite::Left => return moved::slot_left(&ctx, &id),
    }
    let name = RedisString::create_from_slice(ctx.get_raw(), name);
    let mut keys = RedisKeyspace::open_as_server(&ctx, &name);
    let mut waits = take_waits(&id);
    // A key that is not a fair lock any more has no place to give up.
    let cancelled = FairLock::new(name.as_slice()).cancel(&mut keys, &mut waits, &owner, wait_ms, now_ms());
    drop(keys);
    Session { id: Some(id), waits }.close(&ctx, &name, cancelled.unwrap_or(Change::Queued));
    unsubscribe_if_idle(&ctx);
}

fn take_waits(id: &[u8]) -> Waits {
    locks().get_mut(id).map(|lock| std::mem::take(&mut lock.waits)).unwrap_or_default()
}
