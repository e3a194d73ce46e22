//! The `RFAIR.*` commands, one file each.

mod acquire;
mod cancel;
mod force_release;
mod release;
mod renew;
mod status;

use crate::commands::args::is_keyword;
use crate::commands::info::{Arg, ArgKind};
use crate::error::LockError;
use crate::lease;
use redis_module::{RedisError, RedisString};

/// An optional `WAIT wait_ms`, the rest of the arguments.
fn parse_wait(mut args: impl Iterator<Item = RedisString>) -> Result<Option<i64>, RedisError> {
    let wait_ms = match args.next() {
        None => None,
        Some(arg) if is_keyword(&arg, b"WAIT") => {
            Some(lease::parse_wait_ms(args.next().ok_or(LockError::WaitSyntax)?.as_slice())?)
        }
        Some(_) => return Err(LockError::WaitSyntax.into()),
    };
    if args.next().is_some() {
        return Err(LockError::WaitSyntax.into());
    }
    Ok(wait_ms)
}

const WAIT_MS: Arg = Arg { name: c"wait_ms", kind: ArgKind::Integer, optional: true, token: Some(c"WAIT") };
