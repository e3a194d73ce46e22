use crate::commands::args::{Args, REQUIRED_LEASE_MS};
use crate::commands::info::{Arg, ArgKind, CommandInfo, Keys};
use crate::commands::registry::command;
use crate::error::LockError;
use crate::lease::{expiry, parse_lease_ms};
use crate::rwlock::{positive_count, ReadWriteLock};
use crate::store::{now_ms, RedisKeyspace};
use redis_module::{raw, Context, RedisResult, RedisString, RedisValue};

/// Why counted arguments do not add up (the grammar adds the syntax line).
const SYNTAX: &str =
    "numkeys and each count must be positive, and count the keys and the owners that follow: one group per key";

/// `RRW.RENEWREADS numkeys key [key ...] lease_ms count owner [owner ...]
/// [count owner [owner ...] ...]` (one group per key): Redisson's batch
/// renewal of read locks (ReadLockTask). Per key, each owner that holds
/// has its read holds' leases reset, then the lock's TTL becomes the lease
/// when any did; replies 1 or 0 per key. Every lock is checked before
/// any is written.
fn renew_reads(ctx: &Context, args: Args) -> RedisResult {
    let args: Vec<RedisString> = args.into_iter().skip(1).collect();
    let numkeys = args.first().and_then(|arg| positive_count(arg.as_slice())).ok_or(LockError::Syntax(SYNTAX))?;
    let names = args.get(1..=numkeys).ok_or(LockError::Syntax(SYNTAX))?;
    let lease_ms = parse_lease_ms(args.get(numkeys + 1).ok_or(LockError::Syntax(SYNTAX))?.as_slice())?;
    let mut rest = &args[numkeys + 2..];
    let mut groups: Vec<Vec<&[u8]>> = Vec::with_capacity(numkeys);
    for _ in names {
        let owners = rest.first().and_then(|arg| positive_count(arg.as_slice())).ok_or(LockError::Syntax(SYNTAX))?;
        let group = rest.get(1..=owners).ok_or(LockError::Syntax(SYNTAX))?;
        groups.push(group.iter().map(RedisString::as_slice).collect());
        rest = &rest[1 + owners..];
    }
    if !rest.is_empty() {
        return Err(LockError::Syntax(SYNTAX).into());
    }
    let now = now_ms();
    let expire_at = expiry(now, lease_ms)?;
    let mut planned = Vec::with_capacity(numkeys);
    for (name, owners) in names.iter().zip(&groups) {
        let mut keys = RedisKeyspace::open(ctx, name);
        let lock = ReadWriteLock::new(name.as_slice());
        let plan = lock.check_owners(&mut keys, owners)?;
        planned.push((keys, lock, plan));
    }
    let mut renewed = Vec::with_capacity(numkeys);
    for (mut keys, lock, plan) in planned {
        let held = lock.renew_owners(&mut keys, plan, expire_at)?;
        if !held {
            super::STATS.renew_refused();
        }
        renewed.push(RedisValue::Integer(i64::from(held)));
    }
    Ok(RedisValue::Array(renewed))
}

command!(
    renew_reads,
    c"write fast getkeys-api",
    CommandInfo {
        name: c"rrw.renewreads",
        summary: c"Redisson's batch renewal of read locks: per key, resets the read holds of each owner that holds, then the lock's TTL when any did; replies 1 or 0 per key.",
        arity: -6,
        complexity: c"O(N) where N is the number of owners named plus the read holds of each lock",
        key_flags: raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_UPDATE,
        args: &[
            REQUIRED_LEASE_MS,
            Arg {
                name: c"holds",
                kind: ArgKind::Repeated(&[
                    Arg { name: c"count", kind: ArgKind::Integer, optional: false, token: None },
                    Arg { name: c"owner", kind: ArgKind::Multiple(&ArgKind::String), optional: false, token: None },
                ]),
                optional: false,
                token: None,
            },
        ],
    },
    Keys::Numbered,
);
