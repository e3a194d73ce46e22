use super::inspect;
use crate::commands::args::{is_keyword, parse_integer, Args};
use crate::commands::info::{Arg, ArgKind, CommandInfo, KEYLESS};
use crate::commands::registry::command;
use crate::commands::reply::fields;
use crate::error::LockError;
use crate::keyspace::KeyType;
use crate::lock::{parse_hold_count, LockStore};
use crate::primitive;
use crate::rwlock::MAX_READ_HOLDS;
use crate::store::{now_ms, Caller, RedisKeyspace, RedisLock};
use redis_module::{Context, NextArg, RedisError, RedisResult, RedisString, RedisValue};
use rlock_protocol::permit_timeout_key;

/// The kinds listed without `TYPE`: a `counter` is any integer string, so
/// it is listed only when asked for.
const LISTED_KINDS: [&str; 5] = ["lock", "fair", "read-write", "fenced", "permit-semaphore"];

/// The most fields a lock's hash has: a read-write lock's read holds, its
/// writer and its mode. A bigger hash is no lock's and is not read.
const MOST_LOCK_FIELDS: i64 = MAX_READ_HOLDS + 2;

/// `RLOCK.LIST cursor [MATCH pattern] [COUNT count] [TYPE kind]`: one
/// `SCAN` step (its cursor, `MATCH` and `COUNT`), keeping the keys that
/// hold lock-family state and that the caller's ACL lets it read: the next
/// cursor, and for each key its `key`, `kind`, `holders` (how many) and
/// `ttl_ms`. `TYPE` keeps one kind (`counter` only when asked for). A
/// key is inspected only when its type may be a kind listed, so a step
/// costs the `SCAN` step, a key lookup per key, and a lock's worth of
/// reads per lock-family key.
fn list(ctx: &Context, args: Args) -> RedisResult {
    let mut args = args.into_iter().skip(1).peekable();
    let cursor = args.next_arg()?;
    if std::str::from_utf8(cursor.as_slice()).ok().and_then(|text| text.parse::<u64>().ok()).is_none() {
        return Err(RedisError::from(LockError::Syntax("cursor must be a SCAN cursor (an unsigned 64-bit integer)")));
    }
    let mut scan: Vec<RedisString> = vec![cursor];
    let mut kind = None;
    while let Some(option) = args.next() {
        let value = args.next().ok_or(LockError::Syntax("MATCH, COUNT and TYPE each take a value"))?;
        match () {
            _ if is_keyword(&option, b"MATCH") => scan.extend([option, value]),
            _ if is_keyword(&option, b"COUNT") => {
                if !parse_integer(&value, "count").is_ok_and(|count| count > 0) {
                    return Err(RedisError::from(LockError::Syntax("COUNT must be a positive integer")));
                }
                scan.extend([option, value]);
            }
            _ if is_keyword(&option, b"TYPE") => {
                let known = LISTED_KINDS.iter().chain(&["counter"]).find(|k| is_keyword(&value, k.as_bytes()));
                kind = Some(*known.ok_or(LockError::Syntax(
                    "TYPE takes lock, fair, read-write, fenced, permit-semaphore or counter",
                ))?);
            }
            _ => return Err(RedisError::from(LockError::Syntax("after the cursor, only MATCH, COUNT and TYPE"))),
        }
    }
    let scan_args: Vec<&RedisString> = scan.iter().collect();
    let RedisValue::Array(step) = ctx.call("SCAN", scan_args.as_slice())? else {
        return Err(RedisError::Str("ERR SCAN replied no array"));
    };
    let [next, RedisValue::Array(keys)] = step.as_slice() else {
        return Err(RedisError::Str("ERR SCAN replied no cursor and keys"));
    };
    let (now, mut caller) = (now_ms(), Caller::new(ctx));
    let mut listed = Vec::new();
    for key in keys.iter().filter_map(bytes) {
        let name = RedisString::create_from_slice(ctx.get_raw(), &key);
        if !may_be_listed(ctx, &name, &key, kind) || !caller.may_inspect(&name) {
            continue;
        }
        let mut keyspace = RedisKeyspace::open_to_inspect(ctx, &name);
        let Ok(found) = inspect(&mut keyspace, &key, now, primitive::inspectors()) else { continue };
        let wanted = match kind {
            Some(kind) => found.kind == kind,
            None => LISTED_KINDS.contains(&found.kind),
        };
        if wanted {
            listed.push(fields(vec![
                ("key", RedisValue::StringBuffer(key)),
                ("kind", RedisValue::SimpleStringStatic(found.kind)),
                ("holders", RedisValue::Integer(found.holders.len() as i64)),
                ("ttl_ms", RedisValue::Integer(found.ttl_ms)),
            ]));
        }
    }
    Ok(RedisValue::Array(vec![RedisValue::StringBuffer(bytes(next).unwrap_or_default()), RedisValue::Array(listed)]))
}

/// The kinds whose key is a hash.
const HASH_KINDS: [&str; 4] = ["lock", "fair", "read-write", "fenced"];

/// Whether key `name` may hold state of a kind listed, told from its type
/// alone (a string's, from being an integer, and a permit semaphore's set
/// of permits): most keys a step returns are no lock's, and skip the ACL
/// check and the kinds' inspectors. A hash too big to be a lock's is
/// skipped unread.
fn may_be_listed(ctx: &Context, name: &RedisString, key: &[u8], kind: Option<&str>) -> bool {
    let opened = ctx.open_key(name);
    match opened.key_type() {
        redis_module::KeyType::Hash => {
            kind.is_none_or(|kind| HASH_KINDS.contains(&kind))
                && RedisLock::open_readonly(ctx, name).holder_count() <= MOST_LOCK_FIELDS
        }
        redis_module::KeyType::String => {
            let integer = opened.read().ok().flatten().is_some_and(|value| parse_hold_count(value).is_ok());
            integer
                && match kind {
                    Some("counter") => true,
                    None | Some("permit-semaphore") => {
                        let timeouts = RedisString::create_from_slice(ctx.get_raw(), &permit_timeout_key(key));
                        RedisLock::open_readonly(ctx, &timeouts).kind() == KeyType::Zset
                    }
                    Some(_) => false,
                }
        }
        _ => false,
    }
}

/// A string of `SCAN`'s reply.
fn bytes(value: &RedisValue) -> Option<Vec<u8>> {
    match value {
        RedisValue::SimpleString(text) | RedisValue::BulkString(text) => Some(text.clone().into_bytes()),
        RedisValue::StringBuffer(bytes) => Some(bytes.clone()),
        _ => None,
    }
}

command!(
    list,
    c"readonly",
    CommandInfo {
        name: c"rlock.list",
        summary: c"One SCAN step over the keys holding lock-family state that the caller may read: the next cursor, and each key's kind, holders and ttl_ms.",
        arity: -2,
        complexity: c"O(N) where N is the number of keys the SCAN step visits (COUNT)",
        key_flags: KEYLESS,
        args: &[
            Arg { name: c"cursor", kind: ArgKind::String, optional: false, token: None },
            Arg { name: c"pattern", kind: ArgKind::String, optional: true, token: Some(c"MATCH") },
            Arg { name: c"count", kind: ArgKind::Integer, optional: true, token: Some(c"COUNT") },
            Arg {
                name: c"kind",
                kind: ArgKind::OneOf(&[
                    Arg::keyword(c"lock", c"lock"),
                    Arg::keyword(c"fair", c"fair"),
                    Arg::keyword(c"read-write", c"read-write"),
                    Arg::keyword(c"fenced", c"fenced"),
                    Arg::keyword(c"permit-semaphore", c"permit-semaphore"),
                    Arg::keyword(c"counter", c"counter"),
                ]),
                optional: true,
                token: Some(c"TYPE"),
            },
        ],
    },
);
