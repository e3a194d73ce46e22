//! Command documentation and key specs, set with RM_SetCommandInfo (Redis
//! 7.0): Redis checks the arity, ACL selectors see precise key access
//! flags (a `%R~` user may call RLOCK.STATUS but not take a lock), and
//! COMMAND DOCS gives redis-cli its argument hints.

use crate::api::api;
pub use crate::grammar::{Arg, ArgKind, Grammar, Keys};
use redis_module::{raw, Context};
use std::ffi::CStr;
use std::os::raw::c_int;
use std::ptr;

/// What Redis is told about one command. Its key is argument 1, unless
/// it has none ([`KEYLESS`]) or its command says otherwise ([`Keys`]).
pub struct CommandInfo {
    pub name: &'static CStr,
    pub summary: &'static CStr,
    /// Redis arity, counting the command name; negative means "at least".
    pub arity: i32,
    /// COMMAND DOCS' complexity, N named (`O(N) where N is ...`).
    pub complexity: &'static CStr,
    /// `REDISMODULE_CMD_KEY_*` flags of the lock key; [`KEYLESS`] for a
    /// command that declares no key.
    pub key_flags: u32,
    /// The arguments after the key.
    pub args: &'static [Arg],
}

impl CommandInfo {
    /// What its syntax line and syntax errors are read from.
    pub fn grammar(&self, keys: Keys) -> Grammar<'_> {
        Grammar { name: self.name, keys, keyless: self.key_flags == KEYLESS, args: self.args }
    }
}

impl Keys {
    /// RM_CreateCommand's first key, last key and step.
    pub fn legacy_range(self, keyless: bool) -> [c_int; 3] {
        match self {
            _ if keyless => [0; 3],
            // Numbered: the key specs set later are what Redis uses.
            Keys::First | Keys::Numbered => [1; 3],
            Keys::Pairs => [2, -1, 2],
        }
    }
}

/// The `key_flags` of a command without a key (one that reads the
/// server's own state, and checks the caller's ACL itself).
pub const KEYLESS: u32 = 0;

const SINCE: &CStr = c"0.1.0";

/// Sets the info of a command registered under `info.name`.
pub fn set(ctx: &Context, info: &CommandInfo, keys: Keys) -> Result<(), String> {
    let name = info.name.to_string_lossy();
    let command = unsafe { api!(RedisModule_GetCommand)(ctx.get_raw(), info.name.as_ptr()) };
    if command.is_null() {
        return Err(format!("{name} is not registered"));
    }
    // Both arrays end with an all-zero entry. Redis copies everything.
    let mut key_specs = [key_spec(info.key_flags, keys), unsafe { std::mem::zeroed() }, unsafe { std::mem::zeroed() }];
    if let Some(keyword) = keyword_key(info.args) {
        key_specs[1] = latch_key_spec(keyword, info.args);
    }
    let keyless = info.key_flags == KEYLESS;
    let mut arrays = Vec::new();
    let grammar = info.grammar(keys);
    let args = arguments(grammar.all_args(), &mut arrays);
    let version = raw::RedisModuleCommandInfoVersion {
        version: 1,
        sizeof_historyentry: std::mem::size_of::<raw::RedisModuleCommandHistoryEntry>(),
        sizeof_keyspec: std::mem::size_of::<raw::RedisModuleCommandKeySpec>(),
        sizeof_arg: std::mem::size_of::<raw::RedisModuleCommandArg>(),
    };
    let command_info = raw::RedisModuleCommandInfo {
        version: &version,
        summary: info.summary.as_ptr(),
        complexity: info.complexity.as_ptr(),
        since: SINCE.as_ptr(),
        history: ptr::null_mut(),
        tips: ptr::null(),
        arity: info.arity as c_int,
        key_specs: if keyless { key_specs[1..].as_mut_ptr() } else { key_specs.as_mut_ptr() },
        args,
    };
    if unsafe { api!(RedisModule_SetCommandInfo)(command, &command_info) } == raw::REDISMODULE_OK as c_int {
        Ok(())
    } else {
        Err(format!("RedisModule_SetCommandInfo refused the info of {name}: {}", std::io::Error::last_os_error()))
    }
}

/// The lock key, argument 1; or every second argument from 2 on; or as
/// many as argument 1 counts.
fn key_spec(flags: u32, keys: Keys) -> raw::RedisModuleCommandKeySpec {
    let mut spec: raw::RedisModuleCommandKeySpec = unsafe { std::mem::zeroed() };
    spec.flags = u64::from(flags);
    spec.begin_search_type = raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_INDEX;
    let (pos, lastkey, keystep) = match keys {
        Keys::First => (1, 0, 1),
        Keys::Pairs => (2, -1, 2),
        Keys::Numbered => {
            spec.bs.index.pos = 1;
            spec.find_keys_type = raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_KEYNUM;
            spec.fk.keynum =
                raw::RedisModuleCommandKeySpec__bindgen_ty_2__bindgen_ty_2 { keynumidx: 0, firstkey: 1, keystep: 1 };
            return spec;
        }
    };
    spec.find_keys_type = raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_RANGE;
    spec.bs.index.pos = pos;
    spec.fk.range = raw::RedisModuleCommandKeySpec__bindgen_ty_2__bindgen_ty_1 { lastkey, keystep, limit: 0 };
    spec
}

/// The keyword of the one key an argument names after a keyword
/// (`LATCH latch_key`), if any.
fn keyword_key(args: &[Arg]) -> Option<&'static CStr> {
    args.iter().find_map(|arg| match arg.kind {
        ArgKind::Key => arg.token,
        ArgKind::Block(parts) | ArgKind::OneOf(parts) => keyword_key(parts),
        _ => None,
    })
}

/// The unlock latch key after `keyword`: read, and written with an
/// expiry. Searched for after the required arguments that precede any
/// keyword (an owner spelled like the keyword is not taken for it).
fn latch_key_spec(keyword: &'static CStr, args: &[Arg]) -> raw::RedisModuleCommandKeySpec {
    let mut spec: raw::RedisModuleCommandKeySpec = unsafe { std::mem::zeroed() };
    spec.flags =
        u64::from(raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_ACCESS | raw::REDISMODULE_CMD_KEY_INSERT);
    spec.begin_search_type = raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_KEYWORD;
    let leading = args.iter().take_while(|arg| !arg.optional && arg.token.is_none()).count();
    spec.bs.keyword = raw::RedisModuleCommandKeySpec__bindgen_ty_1__bindgen_ty_2 {
        keyword: keyword.as_ptr(),
        startfrom: 2 + leading as c_int,
    };
    spec.find_keys_type = raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_RANGE;
    spec.fk.range = raw::RedisModuleCommandKeySpec__bindgen_ty_2__bindgen_ty_1 { lastkey: 0, keystep: 1, limit: 0 };
    spec
}

/// The zero-terminated array of `args`, block arguments pointing to their
/// own arrays; `arrays` keeps them all alive until Redis has copied them.
fn arguments<'a>(
    args: impl Iterator<Item = &'a Arg>,
    arrays: &mut Vec<Vec<raw::RedisModuleCommandArg>>,
) -> *mut raw::RedisModuleCommandArg {
    let mut array: Vec<raw::RedisModuleCommandArg> = args
        .map(|arg| {
            let mut raw_arg: raw::RedisModuleCommandArg = unsafe { std::mem::zeroed() };
            raw_arg.name = arg.name.as_ptr();
            let (kind, multiple) = match arg.kind {
                ArgKind::Multiple(kind) => (kind, true),
                ArgKind::Repeated(_) => (&arg.kind, true),
                _ => (&arg.kind, false),
            };
            // A key after a keyword is the latch's, the second spec.
            raw_arg.key_spec_index = match (kind, arg.token) {
                (ArgKind::Key, None) => 0,
                (ArgKind::Key, Some(_)) => 1,
                _ => -1,
            };
            raw_arg.type_ = match kind {
                ArgKind::Key => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_KEY,
                ArgKind::String => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_STRING,
                ArgKind::Integer => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_INTEGER,
                ArgKind::PureToken => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_PURE_TOKEN,
                ArgKind::Block(subargs) | ArgKind::Repeated(subargs) => {
                    raw_arg.subargs = arguments(subargs.iter(), arrays);
                    raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_BLOCK
                }
                ArgKind::OneOf(choices) => {
                    raw_arg.subargs = arguments(choices.iter(), arrays);
                    raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_ONEOF
                }
                // A multiple of a multiple says nothing more.
                ArgKind::Multiple(_) => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_STRING,
            };
            raw_arg.token = arg.token.map_or(ptr::null(), CStr::as_ptr);
            raw_arg.flags = if arg.optional { raw::REDISMODULE_CMD_ARG_OPTIONAL as c_int } else { 0 };
            if multiple {
                raw_arg.flags |= raw::REDISMODULE_CMD_ARG_MULTIPLE as c_int;
            }
            raw_arg
        })
        .collect();
    array.push(unsafe { std::mem::zeroed() });
    let start = array.as_mut_ptr();
    // Moving the Vec into `arrays` keeps its buffer where it is.
    arrays.push(array);
    start
}
