//! Command handlers: parse arguments, run the lock logic on the key, reply.
//! One file per command.

mod acquire;
mod force_release;
pub mod info;
pub mod registry;
mod release;
mod renew;
mod status;

pub use registry::register;

use crate::{config, lease};
use info::{Arg, ArgKind};
use redis_module::{NextArg, RedisError, RedisString};

/// Arguments of the commands shaped `CMD key owner [lease_ms]`.
struct OwnerArgs {
    name: RedisString,
    owner: RedisString,
    lease_ms: i64,
}

impl OwnerArgs {
    /// Parses `key owner [lease_ms]`; a missing lease is the configured default.
    fn parse(args: Vec<RedisString>) -> Result<Self, RedisError> {
        let mut args = args.into_iter().skip(1);
        let name = args.next_arg()?;
        let owner = args.next_arg()?;
        let lease_ms = match args.next() {
            None => config::default_lease_ms(),
            Some(arg) => lease::parse_lease_ms(arg.as_slice())?,
        };
        args.done()?;
        Ok(Self { name, owner, lease_ms })
    }
}

const OWNER: Arg = Arg { name: c"owner", kind: ArgKind::String, optional: false, token: None };
const LEASE_MS: Arg = Arg { name: c"lease_ms", kind: ArgKind::Integer, optional: true, token: None };
