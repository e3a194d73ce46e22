//! Every command registers itself: its file declares it with [`command!`],
//! which adds a [`Command`] to [`COMMANDS`], and [`register`] creates them
//! all at load. Adding a command never edits a central list.
//!
//! Not through `redis_module!`'s `commands:` list or `#[command]`: the
//! latter needs RedisModule_SetCommandACLCategories, which Redis 7.0 lacks.

use super::info::{self, CommandInfo};
use crate::api::api;
use linkme::distributed_slice;
use redis_module::{decode_args, raw, Context, RedisError, RedisResult, RedisString};
use std::ffi::CStr;
use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The C entry point Redis calls.
pub type Entry = extern "C" fn(*mut raw::RedisModuleCtx, *mut *mut raw::RedisModuleString, c_int) -> c_int;

pub struct Command {
    pub entry: Entry,
    /// RM_CreateCommand flags, e.g. `write deny-oom fast`.
    pub flags: &'static CStr,
    pub info: CommandInfo,
}

#[distributed_slice]
pub static COMMANDS: [Command];

/// Declares a command: `command!(handler, c"flags", CommandInfo { .. });`
/// where `handler` is `fn(&Context, Vec<RedisString>) -> RedisResult`.
macro_rules! command {
    ($handler:path, $flags:expr, $info:expr $(,)?) => {
        #[linkme::distributed_slice($crate::commands::registry::COMMANDS)]
        static COMMAND: $crate::commands::registry::Command = $crate::commands::registry::Command {
            entry: {
                extern "C" fn entry(
                    ctx: *mut redis_module::raw::RedisModuleCtx,
                    argv: *mut *mut redis_module::raw::RedisModuleString,
                    argc: std::os::raw::c_int,
                ) -> std::os::raw::c_int {
                    $crate::commands::registry::run(ctx, argv, argc, $handler)
                }
                entry
            },
            flags: $flags,
            info: $info,
        };
    };
}
pub(crate) use command;

/// Runs one call of a handler and replies. A panic (a bug) becomes an
/// error reply instead of taking the server down.
pub fn run(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
    handler: fn(&Context, Vec<RedisString>) -> RedisResult,
) -> c_int {
    let context = Context::new(ctx);
    let args = decode_args(ctx, argv, argc);
    let reply = catch_unwind(AssertUnwindSafe(|| handler(&context, args)))
        .unwrap_or_else(|_| Err(RedisError::Str("ERR rlock internal error: the command was aborted")));
    context.reply(reply) as c_int
}

/// Creates every command in [`COMMANDS`] and sets its info. The key is
/// argument 1 of every command.
pub fn register(ctx: &Context) -> Result<(), String> {
    COMMANDS.iter().try_for_each(|command| {
        let name = command.info.name;
        let key = i32::from(command.info.key_flags != info::KEYLESS);
        let created = unsafe {
            api!(RedisModule_CreateCommand)(
                ctx.get_raw(),
                name.as_ptr(),
                Some(command.entry),
                command.flags.as_ptr(),
                key,
                key,
                key,
            )
        };
        if created != raw::REDISMODULE_OK as c_int {
            return Err(format!("cannot create the command {}", name.to_string_lossy()));
        }
        info::set(ctx, &command.info)
    })
}
