//! The command filter: every command passes it before Redis looks it up.
//! A call of a known Redisson script becomes its native command (see
//! `scripts`); everything else is left as it came, after a check of the
//! argument count and the command name's length.
//!
//! - Registered only while `rlock.redisson-scripts` is `native`: with
//!   `off`, other commands do not pay Redis's dispatch to it.
//! - Registered with `REDISMODULE_CMDFILTER_NOSELF`: the module's own
//!   `RM_Call`s are never rewritten.
//! - Inside a script (`redis.call`) nothing is rewritten: a script may not
//!   call EVAL/EVALSHA, and a rewrite would turn that error into a lock.
//! - Idempotent: a rewritten call names an `RLOCK.*` command, which the
//!   filter leaves alone when it sees it again (Redis 7.0 filters a
//!   command postponed by CLIENT PAUSE a second time).
//! - The strings given to ArgReplace/ArgInsert are created without a
//!   context, or are the call's own arguments (borrowed by the rewrite,
//!   found by address, never copied) or shared keyword strings retained,
//!   and belong to Redis from then on. A place whose string stays is not
//!   replaced.
//! - A call whose native form names an empty owner stays with Lua: the
//!   native commands refuse one, the scripts take it.
//! - Where the filter can learn its caller (`CommandFilterGetClientId`:
//!   Valkey 8, Redis 7.2+), a call is rewritten only when the caller's
//!   user may run both the script and the native command, and publish on
//!   the script's channel; otherwise it runs as Lua, as it would without
//!   the module. Where it cannot (Redis 7.0), ACL is not checked: see
//!   docs/redisson.md.

mod call_args;

use super::keywords::Keywords;
use super::scripts::{identify, rewrite, Rewrite, Server};
use crate::api::api;
use crate::commands::registry;
use crate::{config, stats, store};
use call_args::{CallArgs, Slots, MAX_ARGS, MAX_NATIVE};
use redis_module::{raw, Context};
use std::ops::RangeInclusive;
use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Mutex, PoisonError};

/// A detached context for the filter's calls that need one (the filter
/// itself gets none). Created once at load, never freed.
static FILTER_CTX: AtomicPtr<raw::RedisModuleCtx> = AtomicPtr::new(ptr::null_mut());

/// The fewest arguments of a script call (`EVALSHA sha numkeys key`).
const MIN_ARGS: c_int = 4;

/// The filter, registered while the setting is `native` only: while it is
/// `off`, Redis runs no filter of this module, and every other command
/// costs what it costs without the module.
static REGISTERED: AtomicPtr<raw::RedisModuleCommandFilter> = AtomicPtr::new(ptr::null_mut());

/// Prepares the filter, and registers it if the setting (loaded before
/// this) is `native`.
pub fn register(ctx: &Context) -> Result<(), String> {
    super::scripts::prepare();
    let detached = unsafe { api!(RedisModule_GetDetachedThreadSafeContext)(ctx.get_raw()) };
    FILTER_CTX.store(detached, Ordering::Relaxed);
    follow_setting()
}

/// Registers the filter when the setting is `native`, unregisters it when
/// `off` (on every change; before [`register`], nothing).
pub fn follow_setting() -> Result<(), String> {
    let ctx = FILTER_CTX.load(Ordering::Relaxed);
    let registered = REGISTERED.load(Ordering::Relaxed);
    if ctx.is_null() || config::redisson_native() != registered.is_null() {
        return Ok(());
    }
    if registered.is_null() {
        let flags = raw::REDISMODULE_CMDFILTER_NOSELF as c_int;
        let filter = unsafe { api!(RedisModule_RegisterCommandFilter)(ctx, Some(filter), flags) };
        if filter.is_null() {
            return Err("cannot register the command filter for Redisson's scripts".to_owned());
        }
        REGISTERED.store(filter, Ordering::Relaxed);
    } else {
        if unsafe { api!(RedisModule_UnregisterCommandFilter)(ctx, registered) } != raw::REDISMODULE_OK as c_int {
            return Err("cannot unregister the command filter for Redisson's scripts".to_owned());
        }
        REGISTERED.store(ptr::null_mut(), Ordering::Relaxed);
    }
    Ok(())
}

/// Whether the filter can tell who calls: then it checks the ACL, and the
/// setting's default is `native`.
pub fn knows_caller() -> bool {
    unsafe { raw::RedisModule_CommandFilterGetClientId }.is_some()
        && unsafe { raw::RedisModule_GetClientUserNameById }.is_some()
        && unsafe { raw::RedisModule_ACLCheckCommandPermissions }.is_some()
}

extern "C" fn filter(fctx: *mut raw::RedisModuleCommandFilterCtx) {
    // A panic (a bug) leaves the call as it came.
    let _ = catch_unwind(AssertUnwindSafe(|| unsafe { filter_call(fctx) }));
}

unsafe fn filter_call(fctx: *mut raw::RedisModuleCommandFilterCtx) {
    let argc = api!(RedisModule_CommandFilterArgsCount)(fctx);
    if !(MIN_ARGS..=MAX_ARGS as c_int).contains(&argc) {
        return;
    }
    let mut call = CallArgs::new();
    let command = call.push(api!(RedisModule_CommandFilterArgGet)(fctx, 0));
    if command.len() != 4 && command.len() != 7 {
        return;
    }
    let script = call.push(api!(RedisModule_CommandFilterArgGet)(fctx, 1));
    // Every EVAL/EVALSHA passes here: its arguments are gathered only for
    // a known text.
    let Some((family, known)) = identify(&[command, script]) else { return };
    let ctx = FILTER_CTX.load(Ordering::Relaxed);
    if api!(RedisModule_GetContextFlags)(ctx) as u32 & raw::REDISMODULE_CTX_FLAGS_LUA != 0 {
        return;
    }
    call.read_rest(fctx, argc as usize);
    let server = Server { cluster: store::cluster_mode() };
    let Some(Rewrite { argv, channel }) = rewrite(known, call.bytes.as_slice(), server) else { return };
    // A panic under the lock (a bug) leaves the table whole: it is still used.
    let mut keywords = KEYWORDS.lock().unwrap_or_else(PoisonError::into_inner);
    // Every string of the native call is held (retained or made) before
    // any place is replaced: a place's old string may be needed later on.
    let mut strings: Slots<*mut raw::RedisModuleString, MAX_NATIVE> = Slots::new();
    let own_starts = call.starts(FIRST_KEY);
    let mut command = None;
    for arg in argv.iter() {
        let (string, keyword) = native_string(&call, &own_starts, &mut keywords, arg);
        if strings.as_slice().is_empty() {
            // The name's keyword knows its command (resolved when made).
            command = keyword.map_or_else(|| registry::named(arg), |(_, command)| command);
        }
        if !strings.push(string) {
            // Cannot happen (see MAX_NATIVE): the call stays with Lua.
            api!(RedisModule_FreeString)(ptr::null_mut(), string);
            return free_all(&strings);
        }
    }
    drop(keywords);
    if command.is_some_and(|command| command.names_empty_owner(|at| argv.arg(at), argv.len())) {
        return free_all(&strings);
    }
    if knows_caller() && !caller_may(ctx, fctx, &mut call.strings, &mut strings, channel.as_deref()) {
        stats::record_redisson_acl_lua();
        return free_all(&strings);
    }
    place(fctx, call.strings.as_slice(), strings.as_slice());
    family.record_native();
}

/// Lets go of the native call's strings: the call stays as it came.
unsafe fn free_all(strings: &Slots<*mut raw::RedisModuleString, MAX_NATIVE>) {
    strings.as_slice().iter().for_each(|&arg| api!(RedisModule_FreeString)(ptr::null_mut(), arg));
}

/// Puts the native call's strings in the call's places: a place whose
/// string stays lets go of the hold taken on it; a native call longer
/// than the script call (an option the script's text implies, such as
/// `MISSING 1`) is appended to; a shorter one loses the rest.
unsafe fn place(
    fctx: *mut raw::RedisModuleCommandFilterCtx,
    originals: &[*mut raw::RedisModuleString],
    native: &[*mut raw::RedisModuleString],
) {
    for (i, &arg) in native.iter().enumerate() {
        match originals.get(i) {
            None => _ = api!(RedisModule_CommandFilterArgInsert)(fctx, i as c_int, arg),
            Some(&original) if original == arg => api!(RedisModule_FreeString)(ptr::null_mut(), arg),
            Some(_) => _ = api!(RedisModule_CommandFilterArgReplace)(fctx, i as c_int, arg),
        }
    }
    for _ in native.len()..originals.len() {
        api!(RedisModule_CommandFilterArgDelete)(fctx, native.len() as c_int);
    }
}

/// A native argument as a string for Redis, held for it: the call's own
/// argument where the rewrite took it from the call's keys and arguments
/// (found by address: the name, owner, lease…; no walk over them for an
/// address outside `own_starts`, a keyword's), retained rather than
/// copied; else a keyword's shared string (and its entry); else a new
/// string.
#[inline]
unsafe fn native_string(
    call: &CallArgs,
    own_starts: &RangeInclusive<usize>,
    keywords: &mut Keywords<Keyword>,
    arg: &[u8],
) -> (*mut raw::RedisModuleString, Option<Keyword>) {
    let source = arg.as_ptr() as usize;
    let own = match own_starts.contains(&source) {
        true => call.bytes.as_slice().iter().skip(FIRST_KEY).position(|bytes| bytes.as_ptr() as usize == source),
        false => None,
    };
    let own = own.map(|i| FIRST_KEY + i).filter(|&i| call.bytes.as_slice()[i].len() == arg.len());
    let (string, keyword) = match own {
        Some(i) => (call.strings.as_slice()[i], None),
        None => match keywords.get(arg).or_else(|| keyword_string(keywords, arg)) {
            Some(keyword) => (keyword.0 as *mut raw::RedisModuleString, Some(keyword)),
            None => return (api!(RedisModule_CreateString)(ptr::null_mut(), arg.as_ptr().cast(), arg.len()), None),
        },
    };
    api!(RedisModule_RetainString)(ptr::null_mut(), string);
    (string, keyword)
}

/// Where a script call's keys start (`EVALSHA sha numkeys key…`): what
/// comes before is never a rewrite's.
const FIRST_KEY: usize = 3;

/// Strings of the keywords and command names rewrites add (the arguments
/// of capitals and dots only that are not the call's own), made once and
/// shared by every call after, as Redis shares its own constant strings:
/// a string made for one call and freed after it costs about 300
/// instructions. An argument a rewrite derives from the call (the
/// read-write lock's owner, cut from its write field) may take a place
/// too, so both the table and its strings are bounded: a caller fills it
/// with at most a few kilobytes, and then only makes the filter make its
/// strings per call again. No command stores an argument string as a
/// key's value (which FLUSHALL ASYNC could free on another thread): the
/// store writes copies.
static KEYWORDS: Mutex<Keywords<Keyword>> = Mutex::new(Keywords::new());

/// A keyword's shared string (its address), and the command it names if
/// it is a command's name (resolved once, when the string is made).
type Keyword = (usize, Option<&'static registry::Command>);

/// The shared string of `arg` when it is a keyword (see [`KEYWORDS`]),
/// and its entry. Made and kept on first sight (after a miss in
/// `known.get`).
unsafe fn keyword_string(known: &mut Keywords<Keyword>, arg: &[u8]) -> Option<Keyword> {
    if !known.would_keep(arg) {
        return None;
    }
    // No context: never freed.
    let string = api!(RedisModule_CreateString)(ptr::null_mut(), arg.as_ptr().cast(), arg.len());
    let keyword = (string as usize, registry::named(arg));
    known.insert(arg, keyword);
    Some(keyword)
}

/// Whether the caller's user may run the script call, the native call,
/// and publish on the script's channel. The native command checks no
/// channel it derives; the filter does so that a call the user's Lua
/// `publish` would be refused stays in Lua, answering as without the module.
unsafe fn caller_may(
    ctx: *mut raw::RedisModuleCtx,
    fctx: *mut raw::RedisModuleCommandFilterCtx,
    call: &mut Slots<*mut raw::RedisModuleString, MAX_ARGS>,
    native: &mut Slots<*mut raw::RedisModuleString, MAX_NATIVE>,
    channel: Option<&[u8]>,
) -> bool {
    let (Some(client_id), Some(user_name), Some(check_command)) = (
        raw::RedisModule_CommandFilterGetClientId,
        raw::RedisModule_GetClientUserNameById,
        raw::RedisModule_ACLCheckCommandPermissions,
    ) else {
        return false;
    };
    let name = user_name(ctx, client_id(fctx));
    if name.is_null() {
        // No such client or no user (a module's RM_Call): Lua decides.
        return false;
    }
    let user = api!(RedisModule_GetModuleUserFromUserName)(name);
    api!(RedisModule_FreeString)(ctx, name);
    if user.is_null() {
        return false;
    }
    let ok = raw::REDISMODULE_OK as c_int;
    let (call_len, native_len) = (call.as_slice().len() as c_int, native.as_slice().len() as c_int);
    let allowed = check_command(user, call.as_mut_ptr(), call_len) == ok
        && check_command(user, native.as_mut_ptr(), native_len) == ok
        && channel.is_none_or(|channel| {
            let channel = api!(RedisModule_CreateString)(ctx, channel.as_ptr().cast(), channel.len());
            let flags = raw::REDISMODULE_CMD_CHANNEL_PUBLISH as c_int;
            let may = api!(RedisModule_ACLCheckChannelPermissions)(user, channel, flags) == ok;
            api!(RedisModule_FreeString)(ctx, channel);
            may
        });
    api!(RedisModule_FreeModuleUser)(user);
    allowed
}
