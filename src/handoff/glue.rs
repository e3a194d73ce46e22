//! What the hand-offs share on Redis's side: a lock's id in the queues,
//! module timers that carry their own data, and blocked callers with
//! their replies.

use super::Request;
use crate::api::{api, string_bytes};
use crate::lease::expiry;
use crate::lock;
use crate::lock::acquire_once::{remember, Grant, Requester};
use crate::store::{cluster_mode, now_ms, RedisLatch, RedisLock};
use redis_module::{
    raw, CallOptions, CallOptionsBuilder, CallReply, CallResult, Context, RedisError, RedisString, RedisValue,
};
use std::os::raw::{c_int, c_void};
use std::ptr;
use std::sync::OnceLock;

/// A blocked client's handle, as a number.
pub type Client = usize;

/// A lock's id in the queues: its database and name (the same name in two
/// databases is two locks).
pub fn lock_id(ctx: &Context, name: &[u8]) -> Vec<u8> {
    let db = unsafe { api!(RedisModule_GetSelectedDb)(ctx.get_raw()) };
    [&db.to_be_bytes()[..], name].concat()
}

/// A lock id's database and name.
pub fn split_lock_id(id: &[u8]) -> (c_int, &[u8]) {
    let (db, name) = id.split_at(4);
    (c_int::from_be_bytes([db[0], db[1], db[2], db[3]]), name)
}

/// Selects the lock's database on `ctx` (a timer's) and returns its name.
pub fn select_lock<'a>(ctx: &Context, id: &'a [u8]) -> &'a [u8] {
    let (db, name) = split_lock_id(id);
    unsafe { api!(RedisModule_SelectDb)(ctx.get_raw(), db) };
    name
}

/// How soon a write put off by a write pause is tried again.
pub const PAUSED_RETRY_MS: i64 = 10;

/// How soon a write put off because Redis would refuse a client's (the
/// cluster down, too few good replicas, a failed save) is tried again.
pub const REFUSED_RETRY_MS: i64 = 100;

/// Whether the server may write a lock by itself now (a timer's grant, a
/// queue's upkeep): Redis does not route or refuse its own writes as it
/// does a client's command, so the module asks as Redis would.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MayWrite {
    Now,
    /// Writes are paused, or Redis would refuse a client's write now (the
    /// cluster is down, and another node may take the slot over; fewer
    /// good replicas than `min-replicas-to-write`; a failed save with
    /// `stop-writes-on-bgsave-error`): ask again in so many ms.
    Later(i64),
    /// A replica: its primary writes.
    Never,
    /// Cluster mode: the keys' slot moved, or is moving and one of them
    /// has gone (a `MIGRATE` deleted it here, and the target holds it now).
    Left,
}

/// Whether the server may write `keys` (one slot) now.
pub fn may_write(ctx: &Context, keys: &[&[u8]]) -> MayWrite {
    let flags = unsafe { api!(RedisModule_GetContextFlags)(ctx.get_raw()) } as u32;
    if flags & raw::REDISMODULE_CTX_FLAGS_SLAVE != 0 {
        return MayWrite::Never;
    }
    if unsafe { api!(RedisModule_AvoidReplicaTraffic)() } != 0 {
        return MayWrite::Later(PAUSED_RETRY_MS);
    }
    if cluster_mode() {
        // Asked first: with `cluster-allow-reads-when-down`, the check
        // below (a read) would pass while the cluster is down.
        let up = matches!(ctx.call("CLUSTER", &["INFO"]),
            Ok(RedisValue::SimpleString(info)) if info.contains("cluster_state:ok"));
        if !up {
            return MayWrite::Later(REFUSED_RETRY_MS);
        }
        // A module's call gets Redis's routing check: keys not served here
        // make it fail (no reply).
        if !matches!(ctx.call("EXISTS", keys), Ok(RedisValue::Integer(_))) {
            return MayWrite::Left;
        }
    }
    match writes_accepted(ctx, keys[0]) {
        true => MayWrite::Now,
        false => MayWrite::Later(REFUSED_RETRY_MS),
    }
}

/// Whether Redis would take a client's write now: a write that changes
/// nothing (`SETRANGE key 0 ""`), called in script mode, which refuses
/// writes as Redis refuses a client's (too few good replicas, a failed
/// save). The refusal comes back as an error reply (`E`): without `E`,
/// Valkey 9 dereferences the error message it did not make and crashes.
/// Any reply of the write itself (a length, or `WRONGTYPE` on a lock's
/// hash) means it was let through.
fn writes_accepted(ctx: &Context, key: &[u8]) -> bool {
    static SCRIPT_MODE: OnceLock<CallOptions> = OnceLock::new();
    let options = SCRIPT_MODE.get_or_init(|| CallOptionsBuilder::new().script_mode().errors_as_replies().build());
    let args: [&[u8]; 3] = [key, b"0", b""];
    match ctx.call_ext::<_, CallResult>("SETRANGE", options, &args[..]) {
        Ok(CallReply::Unknown) => false,
        Ok(_) => true,
        Err(err) => err.as_bytes().starts_with(b"WRONGTYPE"),
    }
}

/// Records the grant to a blocked caller of `owner` under its request id
/// (its record key was checked when it called).
pub fn remember_grant(ctx: &Context, name: &[u8], owner: &[u8], request: &Request, grant: Grant) {
    let mut record = RedisLatch::open_record_as_server(ctx, name, &request.id);
    // The window fitted when the caller called; it still fits.
    if let Ok(expire_at) = expiry(now_ms(), request.window_ms) {
        if let Err(err) = remember(&mut record, Requester { name, owner }, grant, expire_at) {
            ctx.log_warning(&format!("rlock: a blocked caller's grant was not recorded: {err}"));
        }
    }
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

/// What a blocked call replies once unblocked.
pub enum Outcome {
    Granted,
    /// The error reply an acquire would give (the key is not a lock).
    Failed(String),
    /// A number, known when unblocked (a fair waiter's "ask again").
    Integer(i64),
    /// An RLock wait ran out: the holder's PTTL as the reply goes out, as
    /// without `WAIT`.
    HolderPttl,
    /// A reply made when unblocked (an acquire's full reply).
    Value(RedisValue),
}

/// What runs when a blocked caller disconnects (or is killed).
pub type Disconnected = unsafe extern "C" fn(*mut raw::RedisModuleCtx, *mut raw::RedisModuleBlockedClient);

/// Blocks the calling client, with no Redis timeout and no timeout
/// callback (the caller's own timer ends the wait); `left` runs if it
/// disconnects first.
pub fn block_client(ctx: &Context, left: Disconnected) -> Client {
    unsafe {
        let client = api!(RedisModule_BlockClient)(ctx.get_raw(), Some(reply), None, Some(free_outcome), 0);
        api!(RedisModule_SetDisconnectCallback)(client, Some(left));
        client as Client
    }
}

/// Ends a blocked call with `outcome`.
pub fn unblock_client(client: Client, outcome: Outcome) {
    let outcome = Box::into_raw(Box::new(outcome)).cast::<c_void>();
    unsafe { api!(RedisModule_UnblockClient)(client as *mut raw::RedisModuleBlockedClient, outcome) };
}

pub fn error_text(err: RedisError) -> String {
    match err {
        RedisError::String(text) => text,
        other => other.to_string(),
    }
}

/// The reply of a call unblocked by [`unblock_client`].
unsafe extern "C" fn reply(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    let outcome = unsafe { api!(RedisModule_GetBlockedClientPrivateData)(ctx) }.cast::<Outcome>();
    let reply = match unsafe { outcome.as_ref() } {
        Some(Outcome::Granted) | None => Ok(RedisValue::Null),
        Some(Outcome::Failed(err)) => Err(RedisError::String(err.clone())),
        Some(Outcome::Integer(value)) => Ok(RedisValue::Integer(*value)),
        Some(Outcome::HolderPttl) => Ok(RedisValue::Integer(unsafe { holder_pttl(ctx, argv, argc) })),
        Some(Outcome::Value(value)) => Ok(value.clone()),
    };
    Context::new(ctx).reply(reply) as c_int
}

/// The PTTL of the lock named in the blocked call's argv (0 when none).
unsafe fn holder_pttl(ctx: *mut raw::RedisModuleCtx, argv: *mut *mut raw::RedisModuleString, argc: c_int) -> i64 {
    if argc < 2 || argv.is_null() {
        return 0;
    }
    let name = RedisString::create_from_slice(ctx, unsafe { string_bytes(*argv.add(1)) });
    refused_pttl(&Context::new(ctx), &name)
}

/// What a caller refused lock `name` is told, as a refused acquire: its
/// PTTL, or a lasting lock-delay's rest if longer (-1: no expiry; a
/// missing lock's -2 becomes 0 or the delay's rest).
pub fn refused_pttl(ctx: &Context, name: &RedisString) -> i64 {
    let pttl = lock::pttl(&RedisLock::open_readonly(ctx, name), now_ms());
    crate::term::delay().pttl(pttl)
}

unsafe extern "C" fn free_outcome(_ctx: *mut raw::RedisModuleCtx, outcome: *mut c_void) {
    if !outcome.is_null() {
        drop(unsafe { Box::from_raw(outcome.cast::<Outcome>()) });
    }
}
