//! The caller's ACL, for keys a command derives from its arguments: Redis
//! checked only the keys in argv. Channels derived from the name are not
//! checked (see "Permissions (ACL)" in docs/commands.md): the user who may
//! write a lock's key may always announce its release.

use crate::api::api;
use redis_module::{raw, Context, RedisString};
use std::os::raw::c_int;

/// The user running the current command, looked up once when first needed.
pub struct Caller {
    ctx: *mut raw::RedisModuleCtx,
    user: Option<User>,
}

enum User {
    /// Commands from the primary or the AOF run as the server itself.
    Server,
    Known(*mut raw::RedisModuleUser),
    /// No user could be found: every check fails.
    Unknown,
}

impl Caller {
    pub fn new(ctx: &Context) -> Self {
        Self { ctx: ctx.get_raw(), user: None }
    }

    /// The server itself, for a module timer's work (no client runs it;
    /// the callers it acts for were checked when they called).
    pub fn server(ctx: &Context) -> Self {
        Self { ctx: ctx.get_raw(), user: Some(User::Server) }
    }

    /// Whether the caller may touch `key` as `flags` (REDISMODULE_CMD_KEY_*) say.
    pub fn may_access_key(&mut self, key: &RedisString, flags: u32) -> bool {
        match self.user() {
            User::Server => true,
            User::Unknown => false,
            User::Known(user) => unsafe {
                api!(RedisModule_ACLCheckKeyPermissions)(*user, key.inner, flags as c_int)
                    == raw::REDISMODULE_OK as c_int
            },
        }
    }

    /// Whether the caller may run `RLOCK.INSPECT key`: one of its ACL
    /// selectors allows both the command and the key (a selector that
    /// lets it read the key with other commands only does not count). The
    /// test of what tells about a key's holders and waiters.
    pub fn may_inspect(&mut self, key: &RedisString) -> bool {
        match self.user() {
            User::Server => true,
            User::Unknown => false,
            User::Known(user) => unsafe {
                let command = RedisString::create(None, "RLOCK.INSPECT");
                let mut argv = [command.inner, key.inner];
                api!(RedisModule_ACLCheckCommandPermissions)(*user, argv.as_mut_ptr(), 2)
                    == raw::REDISMODULE_OK as c_int
            },
        }
    }

    /// Records in `ACL LOG` (reason `key`) that the caller was refused
    /// `key`, as Redis records its own refusals of the keys in argv.
    pub fn log_refused_key(&mut self, key: &RedisString) {
        let ctx = self.ctx;
        if let User::Known(user) = self.user() {
            let reason = raw::RedisModuleACLLogEntryReason_REDISMODULE_ACL_LOG_KEY;
            unsafe { api!(RedisModule_ACLAddLogEntry)(ctx, *user, key.inner, reason) };
        }
    }

    fn user(&mut self) -> &User {
        let ctx = self.ctx;
        self.user.get_or_insert_with(|| unsafe {
            let flags = api!(RedisModule_GetContextFlags)(ctx) as u32;
            if flags & (raw::REDISMODULE_CTX_FLAGS_REPLICATED | raw::REDISMODULE_CTX_FLAGS_LOADING) != 0 {
                return User::Server;
            }
            let name = api!(RedisModule_GetCurrentUserName)(ctx);
            if name.is_null() {
                return User::Unknown;
            }
            let user = api!(RedisModule_GetModuleUserFromUserName)(name);
            api!(RedisModule_FreeString)(ctx, name);
            if user.is_null() {
                User::Unknown
            } else {
                User::Known(user)
            }
        })
    }
}

impl Drop for Caller {
    fn drop(&mut self) {
        if let Some(User::Known(user)) = self.user.take() {
            unsafe { api!(RedisModule_FreeModuleUser)(user) };
        }
    }
}
