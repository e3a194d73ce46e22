//! The lock key in Redis: [`LockStore`] over the module key API; the
//! unlock latch key in `latch`.
//!
//! Keys are opened for reading and for writing only when a write comes
//! (see `key`). Key-API writes are neither replicated nor announced by Redis, so every
//! write here also replicates its effect (with an absolute expiry, never a
//! relative TTL) and sends the keyspace notification that Redis's own
//! command would send. This is the hot path: arguments go to the module
//! API as they came (no copies), names are static C strings.

mod acl;
mod key;
mod keyspace;
mod latch;
mod open_keys;
mod replicated;

pub use acl::Caller;
pub use keyspace::RedisKeyspace;
pub use latch::{on_one_node, RedisLatch};

use crate::api::{api, string_bytes};
use crate::error::LockError;
use crate::keyspace::KeyType;
use crate::lock::{parse_hold_count, LockStore};
use crate::redisson::lua_number::LuaText;
pub use key::set_module_options;
use key::{key_type_of, SignalOnWriteKey};
use redis_module::{raw, Context, NotifyEvent, RedisString, ScanKeyCursor};
use replicated::{Argument, ConstString};
use rlock_protocol::{key_slot, release_channel_parts, with_joined, UNLOCK_MESSAGE};
use std::ffi::CStr;
use std::os::raw::{c_int, c_void};
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};

/// The server's clock in Unix milliseconds, as used for key expiry.
pub fn now_ms() -> i64 {
    unsafe { api!(RedisModule_Milliseconds)() }
}

/// An open lock key. Closed on drop.
pub struct RedisLock<'a> {
    ctx: &'a Context,
    name: &'a RedisString,
    key: SignalOnWriteKey,
    via: Via,
}

/// How a release is announced: the module's default, or the one publish
/// command a Redisson script names in its arguments (`VIA`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// PUBLISH, and in cluster mode SPUBLISH too (see [`publish`]).
    Default,
    /// PUBLISH only, as Redis's own command.
    Publish,
    /// SPUBLISH only, as Redis's own command.
    Spublish,
    /// Nothing published (`VIA NONE`: Redisson's spin lock).
    Nothing,
}

impl<'a> RedisLock<'a> {
    pub fn open(ctx: &'a Context, name: &'a RedisString) -> Self {
        Self { ctx, name, key: SignalOnWriteKey::open(ctx, name.inner), via: Via::Default }
    }

    /// Announces releases as `via` says.
    pub fn via(mut self, via: Via) -> Self {
        self.via = via;
        self
    }

    /// For read-only commands: the lock store's writes need `&mut`.
    pub fn open_readonly(ctx: &'a Context, name: &'a RedisString) -> Self {
        Self { ctx, name, key: SignalOnWriteKey::open_readonly(ctx, name.inner), via: Via::Default }
    }

    /// Sends the keyspace notification Redis's own command would send.
    fn notify(&self, class: NotifyEvent, event: &CStr) {
        notify(self.ctx, class, event, self.name.inner);
    }
}

/// Sends a keyspace notification about `key`.
fn notify(ctx: &Context, class: NotifyEvent, event: &CStr, key: *mut raw::RedisModuleString) {
    unsafe { api!(RedisModule_NotifyKeyspaceEvent)(ctx.get_raw(), class.bits(), event.as_ptr(), key) };
}

/// Replicates one command to replicas and the AOF (wrapped in MULTI/EXEC
/// with the command's other effects). `format` follows RM_Replicate:
/// `s` a RedisModuleString, `l` a long long, `c` a C string; a trailing
/// `A` leaves the AOF out.
macro_rules! replicate {
    ($ctx:expr, $command:literal, $format:literal $(, $arg:expr)*) => {
        unsafe { api!(RedisModule_Replicate)($ctx.get_raw(), $command.as_ptr(), $format.as_ptr() $(, $arg)*) }
    };
}
use replicate;

impl LockStore for RedisLock<'_> {
    type Owner = RedisString;

    fn kind(&self) -> KeyType {
        key_type_of(self.key.read())
    }

    fn hold_count(&self, owner: &RedisString) -> Result<Option<i64>, LockError> {
        let mut value: *mut raw::RedisModuleString = ptr::null_mut();
        unsafe {
            api!(RedisModule_HashGet)(
                self.key.read(),
                raw::REDISMODULE_HASH_NONE as c_int,
                owner.inner,
                &mut value as *mut *mut raw::RedisModuleString,
                ptr::null_mut::<c_void>(),
            );
        }
        if value.is_null() {
            return Ok(None);
        }
        // SAFETY: `value` is the field's value, ours until freed below.
        let count = parse_hold_count(unsafe { string_bytes(value) });
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
        let key = self.key.read();
        if key.is_null() {
            return 0;
        }
        unsafe { api!(RedisModule_ValueLength)(key) as i64 }
    }

    fn expire_at(&self) -> Option<i64> {
        let key = self.key.read();
        if key.is_null() {
            return None;
        }
        match unsafe { api!(RedisModule_GetAbsExpire)(key) } {
            at if at == i64::from(raw::REDISMODULE_NO_EXPIRE) => None,
            at => Some(at),
        }
    }

    fn increment(&mut self, owner: &RedisString, by: i64, new_count: i64) {
        // HashSet copies the value: a first hold's 1 is the constant.
        let value = Argument::integer(self.ctx, new_count);
        unsafe {
            api!(RedisModule_HashSet)(
                self.key.write(),
                raw::REDISMODULE_HASH_NONE as c_int,
                owner.inner,
                value.inner(),
                ptr::null_mut::<c_void>(),
            );
        }
        replicate!(self.ctx, c"HINCRBY", c"sss", self.name.inner, owner.inner, Argument::integer(self.ctx, by).inner());
        self.notify(NotifyEvent::HASH, c"hincrby");
    }

    fn set_expire_at(&mut self, at_ms: i64) {
        unsafe { api!(RedisModule_SetAbsExpire)(self.key.write(), at_ms) };
        replicate!(self.ctx, c"PEXPIREAT", c"ss", self.name.inner, Argument::integer(self.ctx, at_ms).inner());
        self.notify(NotifyEvent::GENERIC, c"expire");
    }

    fn remove_last_hold(&mut self, _owner: &RedisString) {
        // The script's HINCRBY to 0 is announced, but neither written nor
        // replicated: the DEL that follows makes it moot.
        self.notify(NotifyEvent::HASH, c"hincrby");
        self.delete();
    }

    fn delete(&mut self) {
        unsafe { api!(RedisModule_DeleteKey)(self.key.write()) };
        replicate!(self.ctx, c"DEL", c"s", self.name.inner);
        self.notify(NotifyEvent::GENERIC, c"del");
    }

    fn publish_release(&mut self) {
        let channel = joined_string(self.ctx, &release_channel_parts(self.name.as_slice()));
        publish_via(self.ctx, &channel, unlock_message(), self.name.as_slice(), self.via);
    }
}

/// Publishes as `via` says: the module's default for `name`'s command
/// ([`publish`]), or as the one command a Redisson script names.
fn publish_via(ctx: &Context, channel: &RedisString, message: *mut raw::RedisModuleString, name: &[u8], via: Via) {
    match via {
        Via::Default => publish(ctx, channel, message, name),
        Via::Publish => publish_only(ctx, channel, message, false),
        Via::Spublish => publish_only(ctx, channel, message, true),
        Via::Nothing => {}
    }
}

/// Publishes as Redis's own PUBLISH (or SPUBLISH, `sharded`) command: the
/// cluster spreads it in cluster mode; otherwise it goes to replicas, not
/// to the AOF.
fn publish_only(ctx: &Context, channel: &RedisString, message: *mut raw::RedisModuleString, sharded: bool) {
    let ctx_raw = ctx.get_raw();
    if sharded {
        unsafe { api!(RedisModule_PublishMessageShard)(ctx_raw, channel.inner, message) };
        if !cluster_mode() {
            replicate!(ctx, c"SPUBLISH", c"ssA", channel.inner, message);
        }
    } else {
        unsafe { api!(RedisModule_PublishMessage)(ctx_raw, channel.inner, message) };
        if !cluster_mode() {
            replicate!(ctx, c"PUBLISH", c"ssA", channel.inner, message);
        }
    }
}

/// Publishes as Redis's own PUBLISH would reach subscribers, and sharded
/// too in cluster mode (Redisson's waiters SSUBSCRIBE there) when the
/// channel is in the slot of `name`, the command's key. A channel of
/// another slot (the count-down latch's, for a name with braces) has its
/// sharded subscribers on another shard: it is published plainly only.
fn publish(ctx: &Context, channel: &RedisString, message: *mut raw::RedisModuleString, name: &[u8]) {
    unsafe { api!(RedisModule_PublishMessage)(ctx.get_raw(), channel.inner, message) };
    if cluster_mode() {
        if key_slot(channel.as_slice()) != key_slot(name) {
            return;
        }
        // The cluster bus takes the message to every node, replicas
        // included: replicating it too would deliver it twice. The
        // sharded copy reaches clients that SSUBSCRIBE on the lock's
        // shard, without a cluster-wide broadcast.
        unsafe { api!(RedisModule_PublishMessageShard)(ctx.get_raw(), channel.inner, message) };
    } else {
        // Like Redis's own PUBLISH: to replicas (whose subscribers may
        // wait on this lock), not to the AOF, where it would mean nothing.
        replicate!(ctx, c"PUBLISH", c"ssA", channel.inner, message);
    }
}

/// A module string of `parts` joined, for a derived name (channel, latch
/// key), joined on the stack when short (see [`with_joined`]).
pub(crate) fn joined_string(ctx: &Context, parts: &[&[u8]]) -> RedisString {
    with_joined(parts, |name| RedisString::create_from_slice(ctx.get_raw(), name))
}

/// `x` as `redis.call` gets a script's Lua number: written with `%.17g`
/// by Redis 7.0, and by Redis 7.2+ and Valkey as the server writes any
/// double.
pub fn lua_number_text(x: f64) -> LuaText {
    if LUA_WRITES_17G.load(Ordering::Relaxed) {
        return crate::redisson::lua_number::percent_17g(x);
    }
    unsafe {
        let text = api!(RedisModule_CreateStringFromDouble)(ptr::null_mut(), x);
        let bytes = LuaText::from_slice(string_bytes(text));
        api!(RedisModule_FreeString)(ptr::null_mut(), text);
        bytes
    }
}

/// Whether the server runs in cluster mode; set once at load.
static CLUSTER_MODE: AtomicBool = AtomicBool::new(false);

pub fn cluster_mode() -> bool {
    CLUSTER_MODE.load(Ordering::Relaxed)
}

/// Whether the server's scripts write numbers with `%.17g` (before 7.2).
static LUA_WRITES_17G: AtomicBool = AtomicBool::new(false);

/// Whether the server is Valkey (`INFO server`'s `server_name`; Redis has
/// none): Valkey's module options differ from Redis's past 7.2's.
pub fn is_valkey(ctx: &Context) -> bool {
    ctx.server_info("server").field("server_name").is_some_and(|name| name.to_string_lossy() == "valkey")
}

/// Records the server's mode (cluster mode cannot change while it runs)
/// and how its scripts write numbers.
pub fn detect_server(ctx: &Context) {
    let flags = unsafe { api!(RedisModule_GetContextFlags)(ctx.get_raw()) } as u32;
    CLUSTER_MODE.store(flags & raw::REDISMODULE_CTX_FLAGS_CLUSTER != 0, Ordering::Relaxed);
    let version = unsafe { api!(RedisModule_GetServerVersion)() };
    LUA_WRITES_17G.store(version < 0x00_07_02_00, Ordering::Relaxed);
}

/// The unlock message as a module string, created once: it is published
/// on every full release.
fn unlock_message() -> *mut raw::RedisModuleString {
    static MESSAGE: ConstString = ConstString::new(UNLOCK_MESSAGE);
    MESSAGE.get()
}
