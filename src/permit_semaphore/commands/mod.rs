//! The `RPSEM.*` commands, one file each. Every one first reclaims the
//! expired permits, so each may write.

mod acquired;
mod add_permits;
mod available;
mod lease;
mod permits;
mod release;
mod set_permits;
mod try_acquire;
mod try_set_permits;
mod update_lease;

/// This kind's `INFO` counters.
pub static STATS: crate::stats::KindStats = crate::stats::KindStats::new("permit_semaphore");

use crate::commands::args::{is_keyword, parse_non_negative, take_trailing, take_via, Args, VIA};
use crate::commands::info::{Arg, ArgKind};
use crate::error::LockError;
use crate::store::Via;
use redis_module::{raw, RedisString};

/// `lease_ms`, or `-1` for a permit that never expires.
use crate::commands::args::REQUIRED_LEASE_MS as LEASE;
/// One permit id.
const ID: Arg = Arg { name: c"id", kind: ArgKind::String, optional: false, token: None };
/// `id [id ...]`: one permit per id.
const IDS: Arg = Arg { kind: ArgKind::Multiple(&ArgKind::String), ..ID };
/// Each command may reclaim expired permits: a read-write update.
const KEY_FLAGS: u32 = raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_ACCESS | raw::REDISMODULE_CMD_KEY_UPDATE;

/// The permit ids, as given (binary).
fn ids(args: &[RedisString]) -> Vec<&[u8]> {
    args.iter().map(RedisString::as_slice).collect()
}

/// `AT now_ms`: the clock of a rewritten Redisson script.
const AT: Arg = Arg { name: c"now_ms", kind: ArgKind::Integer, optional: false, token: Some(c"AT") };
/// `[AT now_ms [VIA PUBLISH|SPUBLISH]]`: a rewritten Redisson script's
/// clock, then its publisher (`VIA` only with `AT`).
const SCRIPT: Arg = Arg::block(c"script", &[AT, VIA]);

/// A rewritten Redisson script's `[AT now_ms [VIA PUBLISH|SPUBLISH]]`,
/// taken off the end of `args` when more than `fixed` arguments (the
/// command's name and key first) come before: with `AT`, the command runs
/// as the script (see `permit_semaphore::script`), on the script's clock.
fn script_clock(args: &mut Args, fixed: usize) -> Result<(Option<i64>, Via), LockError> {
    let via = take_via(args, fixed)?;
    let at = take_trailing(args, fixed, b"AT").map(|now| parse_non_negative(&now, "now_ms")).transpose()?;
    if at.is_none() && via != Via::Default {
        return Err(LockError::Syntax("VIA only with AT now_ms"));
    }
    // A script tail cut short (`… AT now_ms VIA`, `… AT`) is no id: the
    // grammar reads the keyword there, and so must the handler, or the
    // keywords are taken as ids (a write) instead of refused.
    let cut_short = |arg: &RedisString| is_keyword(arg, b"AT") || is_keyword(arg, b"VIA");
    if at.is_none() && args.len() > fixed && args.last().is_some_and(cut_short) {
        return Err(LockError::Syntax("AT needs now_ms, VIA needs PUBLISH|SPUBLISH"));
    }
    Ok((at, via))
}

/// The reads take nothing but the key before `AT` and `VIA`.
fn key_only(args: &[RedisString]) -> Result<(), LockError> {
    match args.len() {
        2 => Ok(()),
        _ => Err(LockError::Syntax("after the key, only AT now_ms and VIA PUBLISH|SPUBLISH")),
    }
}
