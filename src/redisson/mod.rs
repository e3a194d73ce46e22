//! Redisson's lock scripts as native commands: a command filter
//! recognises the scripts unmodified Redisson clients send (`EVAL` by
//! text, `EVALSHA` by SHA-1) and rewrites each call into the family's
//! native command (`RLOCK.*`, `RRW.*`, `RLATCH.*`, `RSEM.*`, `RPSEM.*`,
//! `RFENCED.*`) that answers exactly as the script, with the same effects.
//! `rlock.redisson-scripts` (`native` | `off`) switches it.

#[cfg(not(test))]
pub mod filter;
pub mod keywords;
pub mod lua_number;
pub mod scripts;
pub mod via;

/// The setting's default: `native` where the filter can check the
/// caller's ACL, `off` where it cannot (Redis 7.0).
#[cfg(not(test))]
pub fn default_setting() -> crate::config::RedissonScripts {
    if filter::knows_caller() {
        crate::config::RedissonScripts::native
    } else {
        crate::config::RedissonScripts::off
    }
}
