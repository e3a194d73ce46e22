//! The `RRW.*` commands, one file each.

mod acquire;
mod cancel;
mod force_release;
mod read_locked;
mod release;
mod renew;
mod renew_reads;
mod status;

/// This kind's `INFO` counters.
pub static STATS: crate::stats::KindStats = crate::stats::KindStats::new("read_write");

use super::Side;
use crate::commands::args::is_keyword;
pub(super) use crate::commands::args::LIKESCRIPT;
use crate::commands::info::{Arg, ArgKind};
use crate::error::LockError;
use redis_module::RedisString;

/// `READ` or `WRITE`, case-insensitive.
fn parse_side(arg: &RedisString) -> Result<Side, LockError> {
    if is_keyword(arg, b"READ") {
        Ok(Side::Read)
    } else if is_keyword(arg, b"WRITE") {
        Ok(Side::Write)
    } else {
        Err(LockError::ModeInvalid)
    }
}

const MODE: Arg = Arg {
    name: c"mode",
    kind: ArgKind::OneOf(&[Arg::keyword(c"read", c"READ"), Arg::keyword(c"write", c"WRITE")]),
    optional: false,
    token: None,
};

/// Takes a trailing `LIKESCRIPT` off `args` when they are at least `min`
/// (the command's name included).
fn take_like_script(args: &mut crate::commands::args::Args, min: usize) -> bool {
    let n = args.len();
    let taken = n >= min && is_keyword(&args[n - 1], b"LIKESCRIPT");
    if taken {
        args.truncate(n - 1);
    }
    taken
}
