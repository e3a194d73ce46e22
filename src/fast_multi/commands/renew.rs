use crate::commands::args::{is_keyword, parse_non_negative, Args, OWNER, REQUIRED_LEASE_MS};
use crate::commands::info::{Arg, ArgKind, CommandInfo};
use crate::commands::registry::command;
use crate::error::LockError;
use crate::fast_multi::{self, Renewal};
use crate::lease::parse_lease_ms;
use crate::store::{lua_number_text, now_ms, RedisKeyspace};
use redis_module::{raw, Context, RedisResult, RedisString, RedisValue};

const SYNTAX: LockError = LockError::Syntax("after lease_ms, [AT now_ms] FIELDS field [field ...]");

/// `RFASTMULTI.RENEW key owner lease_ms [AT now_ms] FIELDS field [field ...]`:
/// the watchdog's renewal of a fast multi-lock (Redisson's
/// `FastMultilockTask`), exactly as its script: 1 when `owner` holds every
/// field, each hold's end then at least `now_ms + lease_ms` (the caller's
/// clock, the server's without `AT`) and the key's TTL at least `lease_ms`;
/// 0 when the key is missing or a field is not `owner`'s, the fields before
/// it renewed all the same.
fn renew(ctx: &Context, args: Args) -> RedisResult {
    let [_, name, owner, lease, rest @ ..] = &args[..] else { return Err(SYNTAX.into()) };
    let lease_ms = parse_lease_ms(lease.as_slice())?;
    let (at, rest) = match rest {
        [keyword, now, rest @ ..] if is_keyword(keyword, b"AT") => (Some(parse_non_negative(now, "now_ms")?), rest),
        _ => (None, rest),
    };
    let [keyword, fields @ ..] = rest else { return Err(SYNTAX.into()) };
    if !is_keyword(keyword, b"FIELDS") || fields.is_empty() {
        return Err(SYNTAX.into());
    }
    let fields: Vec<&[u8]> = fields.iter().map(RedisString::as_slice).collect();
    let server_now = now_ms();
    let renewal = Renewal { owner: owner.as_slice(), lease_ms, now_ms: at.unwrap_or(server_now), fields: &fields };
    let mut keys = RedisKeyspace::open(ctx, name);
    let held = fast_multi::renew(&mut keys, name.as_slice(), &renewal, server_now, lua_number_text)?;
    Ok(RedisValue::Integer(i64::from(held)))
}

command!(
    renew,
    c"write fast",
    CommandInfo {
        name: c"rfastmulti.renew",
        summary: c"Renews every hold of the owner in a fast multi-lock; replies 1, or 0 when one of the fields is not the owner's.",
        arity: -6,
        complexity: c"O(N) where N is the number of fields named",
        key_flags: raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_UPDATE,
        args: &[
            OWNER,
            REQUIRED_LEASE_MS,
            Arg { name: c"now_ms", kind: ArgKind::Integer, optional: true, token: Some(c"AT") },
            Arg {
                name: c"fields",
                kind: ArgKind::Repeated(&[Arg { name: c"field", kind: ArgKind::String, optional: false, token: None }]),
                optional: false,
                token: Some(c"FIELDS"),
            },
        ],
    },
);
