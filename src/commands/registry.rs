//! Every command registers itself: its file declares it with [`command!`],
//! which adds a [`Command`] to [`COMMANDS`], and [`register`] creates them
//! all at load. Adding a command never edits a central list.
//!
//! Not through `redis_module!`'s `commands:` list or `#[command]`: the
//! latter needs RedisModule_SetCommandACLCategories, which Redis 7.0 lacks.

use super::args::{self, Args};
use super::info::{self, CommandInfo};
use crate::api::api;
use crate::error::LockError;
use crate::grammar;
use linkme::distributed_slice;
use redis_module::{raw, Context, RedisError, RedisResult, RedisString};
use std::ffi::CStr;
use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::NonNull;
use std::slice;
use std::sync::OnceLock;

/// The C entry point Redis calls.
pub type Entry = extern "C" fn(*mut raw::RedisModuleCtx, *mut *mut raw::RedisModuleString, c_int) -> c_int;

pub struct Command {
    pub entry: Entry,
    /// RM_CreateCommand flags, e.g. `write deny-oom fast`.
    pub flags: &'static CStr,
    pub info: CommandInfo,
    pub keys: info::Keys,
    /// Where its calls name owners, found from `info` on first use.
    pub owner_places: OnceLock<grammar::OwnerPlaces>,
}

impl Command {
    fn owner_places(&self) -> grammar::OwnerPlaces {
        *self.owner_places.get_or_init(|| grammar::OwnerPlaces::of(&self.info.grammar(self.keys)))
    }

    /// Whether a call of `argc` arguments (`arg` reads one) names an empty
    /// owner, which every command refuses: no holder is told apart by it.
    /// The filter asks too: a Redisson call whose native form would be
    /// refused so stays with Lua, which takes it.
    pub fn names_empty_owner<'a>(&self, arg: impl Fn(usize) -> &'a [u8], argc: usize) -> bool {
        self.owner_places().positions(argc).any(|at| arg(at).is_empty())
    }
}

#[distributed_slice]
pub static COMMANDS: [Command];

/// Declares a command: `command!(handler, c"flags", CommandInfo { .. });`
/// where `handler` is `fn(&Context, Args) -> RedisResult`; its key is
/// argument 1, unless a last `Keys` says otherwise.
macro_rules! command {
    ($handler:path, $flags:expr, $info:expr $(,)?) => {
        $crate::commands::registry::command!($handler, $flags, $info, $crate::commands::info::Keys::First);
    };
    ($handler:path, $flags:expr, $info:expr, $keys:expr $(,)?) => {
        #[linkme::distributed_slice($crate::commands::registry::COMMANDS)]
        static COMMAND: $crate::commands::registry::Command = $crate::commands::registry::Command {
            entry: {
                extern "C" fn entry(
                    ctx: *mut redis_module::raw::RedisModuleCtx,
                    argv: *mut *mut redis_module::raw::RedisModuleString,
                    argc: std::os::raw::c_int,
                ) -> std::os::raw::c_int {
                    $crate::commands::registry::run(ctx, argv, argc, $handler, &COMMAND)
                }
                entry
            },
            flags: $flags,
            info: $info,
            keys: $keys,
            owner_places: std::sync::OnceLock::new(),
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
    handler: fn(&Context, Args) -> RedisResult,
    command: &Command,
) -> c_int {
    // Redis asks a `getchannels-api` command for the channels it publishes
    // on (to check the caller's ACL) by calling it in this mode: it only
    // declares them.
    if unsafe { api!(RedisModule_IsChannelsPositionRequest)(ctx) } != 0 {
        declare_named_channel(ctx, argv, argc, command.info.arity.unsigned_abs());
        return raw::REDISMODULE_OK as c_int;
    }
    // Redis 7.0 and Valkey route a call in a cluster by the legacy key
    // range, which cannot say "argument 1 counts the keys": a
    // `getkeys-api` command is asked for its keys by calling it so.
    if command.keys == info::Keys::Numbered && unsafe { api!(RedisModule_IsKeysPositionRequest)(ctx) } != 0 {
        declare_numbered_keys(ctx, argv, argc);
        return raw::REDISMODULE_OK as c_int;
    }
    let context = Context::new(ctx);
    let words = |argv: &[*mut raw::RedisModuleString]| -> Vec<&[u8]> {
        argv.iter().map(|&arg| RedisString::string_as_slice(arg)).collect()
    };
    let given = raw_args(argv, argc);
    let reply = if command.names_empty_owner(|at| RedisString::string_as_slice(given[at]), given.len()) {
        Err(LockError::OwnerEmpty.into())
    } else {
        let args = decode_args(ctx, argv, argc);
        catch_unwind(AssertUnwindSafe(|| handler(&context, args)))
            .unwrap_or_else(|_| Err(RedisError::Str("ERR rlock internal error: the command was aborted")))
            .map_err(|err| grammar::explain(err, &command.info.grammar(command.keys), &words(given)))
    };
    context.reply(reply) as c_int
}

/// A command's name in capitals, and the command.
type Named = (Box<[u8]>, &'static Command);

/// The command called `name`, in any case: by binary search over the
/// names in capitals (as the filter's rewrites write them), made and
/// sorted once. The filter asks once a command name (see its keywords
/// table): a walk over the commands' C names (each measured anew) cost
/// about 950 instructions, this search about 200.
pub fn named(name: &[u8]) -> Option<&'static Command> {
    static BY_NAME: OnceLock<Vec<Named>> = OnceLock::new();
    let by_name = BY_NAME.get_or_init(|| {
        let mut by_name: Vec<Named> = COMMANDS
            .iter()
            .map(|command| (command.info.name.to_bytes().to_ascii_uppercase().into(), command))
            .collect();
        by_name.sort_unstable_by(|(a, _), (b, _)| a.cmp(b));
        by_name
    });
    let find = |name: &[u8]| by_name.binary_search_by(|(other, _)| (**other).cmp(name)).ok().map(|at| by_name[at].1);
    match name.iter().any(u8::is_ascii_lowercase) {
        false => find(name),
        true => find(&name.to_ascii_uppercase()),
    }
}

/// The call's arguments, the command's name first.
fn raw_args<'a>(argv: *mut *mut raw::RedisModuleString, argc: c_int) -> &'a [*mut raw::RedisModuleString] {
    if argv.is_null() {
        return &[];
    }
    unsafe { slice::from_raw_parts(argv, usize::try_from(argc).unwrap_or(0)) }
}

/// Declares a trailing `CHANNEL channel` after the command's `fixed`
/// arguments (its arity), as [`args::take_channel`] takes it: a key named
/// CHANNEL is no keyword.
fn declare_named_channel(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
    fixed: u32,
) {
    if argv.is_null() {
        return;
    }
    let argv = unsafe { slice::from_raw_parts(argv, usize::try_from(argc).unwrap_or(0)) };
    let Some(at) = args::trailing_keyword_at(argv.len(), fixed as usize) else { return };
    if args::is_channel_keyword(RedisString::string_as_slice(argv[at])) {
        let flags = raw::REDISMODULE_CMD_CHANNEL_PUBLISH as c_int;
        unsafe { api!(RedisModule_ChannelAtPosWithFlags)(ctx, argc - 1, flags) };
    }
}

/// Declares the keys of a [`info::Keys::Numbered`] call: as many as
/// argument 1 counts, from argument 2 on. A bad count declares none, and
/// the command then refuses the call.
fn declare_numbered_keys(ctx: *mut raw::RedisModuleCtx, argv: *mut *mut raw::RedisModuleString, argc: c_int) {
    if argv.is_null() || argc < 2 {
        return;
    }
    let argv = unsafe { slice::from_raw_parts(argv, usize::try_from(argc).unwrap_or(0)) };
    let numkeys = std::str::from_utf8(RedisString::string_as_slice(argv[1])).ok().and_then(|n| n.parse::<c_int>().ok());
    let Some(numkeys) = numkeys.filter(|&n| n > 0 && n <= argc - 2) else { return };
    for position in 2..2 + numkeys {
        unsafe { api!(RedisModule_KeyAtPos)(ctx, position) };
    }
}

/// What redis-module's `decode_args` makes, inline (see [`Args`]).
fn decode_args(ctx: *mut raw::RedisModuleCtx, argv: *mut *mut raw::RedisModuleString, argc: c_int) -> Args {
    if argv.is_null() {
        return Args::new();
    }
    let argv = unsafe { slice::from_raw_parts(argv, usize::try_from(argc).unwrap_or(0)) };
    let strings = argv.iter().map(|&arg| RedisString::new(NonNull::new(ctx), arg));
    if argv.len() <= args::INLINE_ARGS {
        strings.collect()
    } else {
        // Collected at once into a heap buffer of the right size, which
        // the arguments then keep (no inline start copied out as it grows).
        Args::from_vec(strings.collect())
    }
}

/// Whether the command takes `CHANNEL` (see [`args::take_channel`]).
fn takes_channel(command: &Command) -> bool {
    command.info.args.iter().any(|arg| arg.token == args::CHANNEL.token)
}

fn has_flag(flags: &CStr, flag: &str) -> bool {
    flags.to_str().is_ok_and(|flags| flags.split(' ').any(|each| each == flag))
}

/// The ACL category every command joins (`+@rlock`), where the server's
/// module API has categories.
const CATEGORY: &CStr = c"rlock";

/// Creates every command in [`COMMANDS`] and sets its info; puts each in
/// the `@rlock` ACL category where the server has module categories.
pub fn register(ctx: &Context) -> Result<(), String> {
    let categorized = add_category(ctx);
    COMMANDS.iter().try_for_each(|command| {
        let name = command.info.name;
        if takes_channel(command) && !has_flag(command.flags, "getchannels-api") {
            // Its channel would be published on with no ACL check.
            return Err(format!("{} takes CHANNEL without getchannels-api", name.to_string_lossy()));
        }
        if command.keys == info::Keys::Numbered && !has_flag(command.flags, "getkeys-api") {
            // A cluster would route it by a key range that names no key.
            return Err(format!("{} counts its keys without getkeys-api", name.to_string_lossy()));
        }
        let [first, last, step] = command.keys.legacy_range(command.info.key_flags == info::KEYLESS);
        let created = unsafe {
            api!(RedisModule_CreateCommand)(
                ctx.get_raw(),
                name.as_ptr(),
                Some(command.entry),
                command.flags.as_ptr(),
                first,
                last,
                step,
            )
        };
        if created != raw::REDISMODULE_OK as c_int {
            return Err(format!("cannot create the command {}", name.to_string_lossy()));
        }
        info::set(ctx, &command.info, command.keys)?;
        if categorized {
            categorize(ctx, name)?;
        }
        Ok(())
    })
}

/// Adds the `@rlock` category where the server's module API has
/// categories (Redis 7.2+, Valkey 8: told by the functions, not the
/// version); false on Redis 7.0, where users name the commands instead.
fn add_category(ctx: &Context) -> bool {
    let (Some(add), Some(_)) =
        (unsafe { raw::RedisModule_AddACLCategory }, unsafe { raw::RedisModule_SetCommandACLCategories })
    else {
        return false;
    };
    // Refused when the category exists already (a MODULE LOAD after an
    // UNLOAD): putting commands in it still works then.
    unsafe { add(ctx.get_raw(), CATEGORY.as_ptr()) };
    true
}

/// Puts the command `name` in the `@rlock` category (see [`add_category`]).
fn categorize(ctx: &Context, name: &CStr) -> Result<(), String> {
    let Some(set) = (unsafe { raw::RedisModule_SetCommandACLCategories }) else { return Ok(()) };
    let command = unsafe { api!(RedisModule_GetCommand)(ctx.get_raw(), name.as_ptr()) };
    if unsafe { set(command, CATEGORY.as_ptr()) } == raw::REDISMODULE_OK as c_int {
        Ok(())
    } else {
        Err(format!("cannot put {} in the @rlock ACL category", name.to_string_lossy()))
    }
}
