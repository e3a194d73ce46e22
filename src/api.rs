//! Module API functions: the `api!` accessor and the load-time check that
//! every function the module calls is exported by the server.

use redis_module::raw;

/// A module API function pointer (read it inside `unsafe`). [`missing_api`]
/// refuses to load the module unless every one used is present, so the
/// `None` arm cannot be reached.
macro_rules! api {
    ($name:ident) => {
        match redis_module::raw::$name {
            Some(function) => function,
            None => unreachable!(concat!(stringify!($name), " is checked at load")),
        }
    };
}
pub(crate) use api;

/// The bytes of a module string, in place (no copy).
///
/// # Safety
/// `string` is a live module string, and neither freed nor changed while
/// the bytes are used.
pub unsafe fn string_bytes<'a>(string: *mut raw::RedisModuleString) -> &'a [u8] {
    let mut len = 0;
    let data = raw::string_ptr_len(string, &mut len);
    std::slice::from_raw_parts(data.cast::<u8>(), len)
}

/// Subscribes `callback` to the server event `id` (a raw subscription:
/// redis-module's own passes some events' data on wrongly, the cron's
/// `hz` among them); false when the server refuses it.
pub fn subscribe_to_server_event(
    ctx: &redis_module::Context,
    id: u64,
    callback: unsafe extern "C" fn(*mut raw::RedisModuleCtx, raw::RedisModuleEvent, u64, *mut std::os::raw::c_void),
) -> bool {
    let event = raw::RedisModuleEvent { id, dataver: 1 };
    let status = unsafe { api!(RedisModule_SubscribeToServerEvent)(ctx.get_raw(), event, Some(callback)) };
    status == raw::REDISMODULE_OK as std::os::raw::c_int
}

/// The first module API function this module needs that the server does
/// not export (all exist since Redis 7.0).
pub fn missing_api() -> Option<&'static str> {
    macro_rules! first_missing {
        ($($name:ident),* $(,)?) => {{
            $(if unsafe { raw::$name }.is_none() {
                return Some(stringify!($name));
            })*
            None
        }};
    }
    first_missing!(
        RedisModule_ACLAddLogEntry,
        RedisModule_ACLCheckCommandPermissions,
        RedisModule_ACLCheckChannelPermissions,
        RedisModule_ACLCheckKeyPermissions,
        RedisModule_AvoidReplicaTraffic,
        RedisModule_BlockClient,
        RedisModule_ChannelAtPosWithFlags,
        RedisModule_CloseKey,
        RedisModule_CommandFilterArgDelete,
        RedisModule_CommandFilterArgGet,
        RedisModule_CommandFilterArgInsert,
        RedisModule_CommandFilterArgReplace,
        RedisModule_CommandFilterArgsCount,
        RedisModule_CreateCommand,
        RedisModule_CreateStringFromDouble,
        RedisModule_CreateString,
        RedisModule_CreateTimer,
        RedisModule_DeleteKey,
        RedisModule_FreeModuleUser,
        RedisModule_FreeServerInfo,
        RedisModule_FreeString,
        RedisModule_GetAbsExpire,
        RedisModule_GetBlockedClientHandle,
        RedisModule_GetBlockedClientPrivateData,
        RedisModule_GetClientId,
        RedisModule_GetCommand,
        RedisModule_GetContextFlags,
        RedisModule_GetCurrentUserName,
        RedisModule_GetDetachedThreadSafeContext,
        RedisModule_GetModuleUserFromUserName,
        RedisModule_GetSelectedDb,
        RedisModule_GetServerInfo,
        RedisModule_GetServerVersion,
        RedisModule_HashGet,
        RedisModule_HashSet,
        RedisModule_IsChannelsPositionRequest,
        RedisModule_IsKeysPositionRequest,
        RedisModule_KeyAtPos,
        RedisModule_KeyType,
        RedisModule_ListDelete,
        RedisModule_ListGet,
        RedisModule_ListPop,
        RedisModule_ListPush,
        RedisModule_Milliseconds,
        RedisModule_NotifyKeyspaceEvent,
        RedisModule_OpenKey,
        RedisModule_PublishMessage,
        RedisModule_PublishMessageShard,
        RedisModule_RegisterCommandFilter,
        RedisModule_ReplyWithArray,
        RedisModule_ReplyWithLongLong,
        RedisModule_ReplyWithStringBuffer,
        RedisModule_Replicate,
        RedisModule_RetainString,
        RedisModule_ScanCursorCreate,
        RedisModule_ScanCursorDestroy,
        RedisModule_ScanKey,
        RedisModule_SelectDb,
        RedisModule_ServerInfoGetField,
        RedisModule_SetAbsExpire,
        RedisModule_SetCommandInfo,
        RedisModule_SetDisconnectCallback,
        RedisModule_SetModuleOptions,
        RedisModule_SignalModifiedKey,
        RedisModule_StopTimer,
        RedisModule_SubscribeToServerEvent,
        RedisModule_StringDMA,
        RedisModule_StringSet,
        RedisModule_StringTruncate,
        RedisModule_SubscribeToKeyspaceEvents,
        RedisModule_UnblockClient,
        RedisModule_UnregisterCommandFilter,
        RedisModule_ValueLength,
        RedisModule_ZsetAdd,
        RedisModule_ZsetFirstInScoreRange,
        RedisModule_ZsetRangeCurrentElement,
        RedisModule_ZsetRangeEndReached,
        RedisModule_ZsetRangeNext,
        RedisModule_ZsetRangeStop,
        RedisModule_ZsetRem,
        RedisModule_ZsetScore,
    )
}
