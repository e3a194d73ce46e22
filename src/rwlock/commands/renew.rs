use super::{take_like_script, LIKESCRIPT};
use crate::commands::args::{Args, OwnerArgs, OWNER, REQUIRED_LEASE_MS};
use crate::commands::info::{Arg, CommandInfo};
use crate::commands::registry::command;
use crate::rwlock::ReadWriteLock;
use crate::store::{now_ms, RedisKeyspace};
use redis_module::{raw, Context, RedisResult, RedisValue};

/// `RRW.RENEW key owner [lease_ms [LIKESCRIPT]]`: resets the lease of all
/// of owner's read holds and its write hold; 1 when it held any, else 0.
/// `LIKESCRIPT` (after lease_ms): Redisson 3.x's read renewal, which sets
/// the lock's TTL to the lease and renews every reader's holds.
fn renew(ctx: &Context, mut args: Args) -> RedisResult {
    let like_script = take_like_script(&mut args, 5);
    let OwnerArgs { name, owner, lease_ms } = OwnerArgs::parse(args)?;
    let mut keys = RedisKeyspace::open(ctx, &name);
    let lock = ReadWriteLock::new(name.as_slice());
    let renewed = match like_script {
        false => lock.renew(&mut keys, owner.as_slice(), lease_ms, now_ms())?,
        true => lock.renew_all_like_script(&mut keys, owner.as_slice(), lease_ms, now_ms())?,
    };
    if !renewed {
        super::STATS.renew_refused();
    }
    Ok(RedisValue::Integer(i64::from(renewed)))
}

command!(
    renew,
    c"write fast",
    CommandInfo {
        name: c"rrw.renew",
        summary: c"Resets the lease of owner's read and write holds; replies 1, or 0 when it holds none. LIKESCRIPT: as Redisson 3.x's read renewal.",
        arity: -3,
        complexity: c"O(N) where N is the number of the lock's read holds (each has a timeout key)",
        key_flags: raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_UPDATE,
        args: &[OWNER, Arg::block(c"renewal", &[REQUIRED_LEASE_MS, LIKESCRIPT])],
    },
);
