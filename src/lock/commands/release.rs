use crate::commands::args::{
    parse_latch, parse_optional_lease, take_release_via, Args, LatchName, LATCH_OR_KEY, LEASE_MS, OWNER, RELEASE_VIA,
};
use crate::commands::info::CommandInfo;
use crate::commands::registry::command;
use crate::commands::reply;
use crate::handoff::blocking;
use crate::lock;
use crate::stats;
use crate::store::{now_ms, RedisLatch, RedisLock, Via};
use redis_module::raw;
use redis_module::{Context, NextArg, RedisError, RedisResult, RedisString};

/// `RLOCK.RELEASE key owner [lease_ms] [ID request_id | LATCH latch_key
/// [PX latch_ms]] [VIA PUBLISH|SPUBLISH|NONE]`: nil
/// when `owner` does not hold the lock, 0 when one reentry level was
/// released, 1 when fully released. With `ID`, the reply is recorded in
/// Redisson's unlock latch key for `latch_ms`, and a release with the same
/// request id replies it again and changes nothing; `LATCH` names that
/// key itself, declared to Redis (which checks its ACL and, in a cluster,
/// its slot, as for Redisson's script). `VIA` announces a
/// full release with that one command, as Redisson's script does (`NONE`:
/// with nothing, as the spin lock's).
pub fn release(ctx: &Context, args: Args) -> RedisResult {
    let ReleaseArgs { name, owner, lease_ms, latch, via } = ReleaseArgs::parse(args)?;
    let mut key = RedisLock::open(ctx, &name).via(via);
    let outcome = match latch {
        None => lock::release(&mut key, &owner, lease_ms, now_ms())?,
        Some((latch_name, latch_ms)) => {
            let mut latch = match latch_name {
                LatchName::Request(request_id) => RedisLatch::open(ctx, &name, &request_id)?,
                LatchName::Key(key) => RedisLatch::open_declared(ctx, &name, key)?,
            };
            lock::latch::release_once(&mut key, &mut latch, &owner, lease_ms, latch_ms, now_ms())?
        }
    };
    if outcome == lock::Release::Released {
        blocking::grant_next(ctx, &name, &mut key);
    }
    stats::record_release(outcome);
    Ok(reply::release(outcome))
}

struct ReleaseArgs {
    name: RedisString,
    owner: RedisString,
    lease_ms: i64,
    /// The unlock latch and how long it lives.
    latch: Option<(LatchName, i64)>,
    via: Via,
}

impl ReleaseArgs {
    /// `lease_ms` is digits only, so it cannot be mistaken for `ID`;
    /// keywords are case-insensitive.
    fn parse(mut args: Args) -> Result<Self, RedisError> {
        let via = take_release_via(&mut args, 3)?;
        let mut args = args.into_iter().skip(1).peekable();
        let name = args.next_arg()?;
        let owner = args.next_arg()?;
        let lease_ms = parse_optional_lease(&mut args, &[b"ID", b"LATCH", b"PX", b"VIA"])?;
        let latch = parse_latch(args, true)?;
        Ok(Self { name, owner, lease_ms, latch, via })
    }
}

command!(
    release,
    c"write fast",
    CommandInfo {
        name: c"rlock.release",
        summary: c"Releases one hold of owner; replies 1 when released, 0 when still held, nil when not held.",
        arity: -3,
        complexity: c"O(1)",
        key_flags: raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_DELETE,
        args: &[OWNER, LEASE_MS, LATCH_OR_KEY, RELEASE_VIA],
    },
);
