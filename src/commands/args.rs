//! Argument parsing shared by the commands of every primitive.

use super::info::{Arg, ArgKind};
use crate::error::LockError;
use crate::handoff::Request;
use crate::keyspace::latch::UnlockLatch;
use crate::keyword::matches_keyword;
use crate::store::Via;
use crate::{config, lease};
use redis_module::{NextArg, RedisError, RedisString};
use rlock_protocol::DEFAULT_LATCH_MS;
use smallvec::SmallVec;
use std::iter::Peekable;

/// A command's arguments, the command's name first, inline up to
/// [`INLINE_ARGS`]: a heap buffer per call (allocated and freed through
/// Redis's allocator, which looks up each block's size twice) costs more
/// than the parsing.
pub type Args = SmallVec<[RedisString; INLINE_ARGS]>;
/// Enough for Redisson's unlock as it becomes `RLOCK.RELEASE` (ten).
pub const INLINE_ARGS: usize = 10;

/// Arguments of the commands shaped `CMD key owner [lease_ms]`.
pub struct OwnerArgs {
    pub name: RedisString,
    pub owner: RedisString,
    pub lease_ms: i64,
}

impl OwnerArgs {
    /// Parses `key owner [lease_ms]`; a missing lease is the configured default.
    pub fn parse(args: Args) -> Result<Self, RedisError> {
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

/// An optional `lease_ms` before `keywords`, the command's own: one of
/// them where the lease may stand is left for the caller (a syntax error
/// there, not a bad lease), as the command's grammar reads it.
pub fn parse_optional_lease<I: Iterator<Item = RedisString>>(
    args: &mut Peekable<I>,
    keywords: &[&[u8]],
) -> Result<i64, RedisError> {
    // The argument's bytes are looked up once, for all the keywords; a
    // digit first (as every lease) is no keyword.
    let is_lease = |arg: &RedisString| {
        let arg = arg.as_slice();
        arg.first().is_some_and(u8::is_ascii_digit) || !keywords.iter().any(|keyword| matches_keyword(arg, keyword))
    };
    match args.next_if(is_lease) {
        None => Ok(config::default_lease_ms()),
        Some(arg) => Ok(lease::parse_lease_ms(arg.as_slice())?),
    }
}

/// An optional `WAIT wait_ms`, the rest of the arguments.
pub fn parse_wait(mut args: impl Iterator<Item = RedisString>) -> Result<Option<i64>, RedisError> {
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

/// Whose unlock latch a release keeps: named by its request id (the key
/// derived from the lock's name), or the key itself, declared to Redis
/// (`RLOCK.RELEASE … LATCH latch_key`: Redis checks its ACL and slot).
pub enum LatchName {
    Request(RedisString),
    Key(RedisString),
}

/// The rest of the arguments as `[ID request_id [PX latch_ms]]` (or, where
/// `declared_key`, `[LATCH latch_key [PX latch_ms]]`): the latch and how
/// long it lives. Nothing may follow.
pub fn parse_latch(
    mut args: impl Iterator<Item = RedisString>,
    declared_key: bool,
) -> Result<Option<(LatchName, i64)>, RedisError> {
    let nonempty = |arg: Option<RedisString>| arg.filter(|arg| !arg.as_slice().is_empty());
    let name = match args.next() {
        None => return Ok(None),
        Some(arg) if is_keyword(&arg, b"ID") => {
            let request_id = nonempty(args.next()).ok_or(LockError::RequestIdMissing)?;
            // Redis's keyword search compares as C strings, up to a NUL.
            let as_redis_reads = request_id.as_slice().split(|&byte| byte == 0).next().unwrap_or_default();
            if declared_key && matches_keyword(as_redis_reads, b"LATCH") {
                return Err(LockError::RequestIdIsLatch.into());
            }
            LatchName::Request(request_id)
        }
        Some(arg) if declared_key && is_keyword(&arg, b"LATCH") => {
            LatchName::Key(nonempty(args.next()).ok_or(LockError::LatchKeyMissing)?)
        }
        Some(_) => return Err(LockError::ReleaseSyntax.into()),
    };
    let latch_ms = match args.next() {
        None => DEFAULT_LATCH_MS,
        Some(arg) if is_keyword(&arg, b"PX") => {
            lease::parse_latch_ms(args.next().ok_or(LockError::LatchMissing)?.as_slice())?
        }
        Some(_) => return Err(LockError::ReleaseSyntax.into()),
    };
    if args.next().is_some() {
        return Err(LockError::ReleaseSyntax.into());
    }
    Ok(Some((name, latch_ms)))
}

/// The tail of a family release, `[lease_ms] [ID request_id [PX
/// latch_ms]]`: the lease, and the request's unlock latch on `name`.
pub fn parse_release_tail<I: Iterator<Item = RedisString>>(
    mut args: Peekable<I>,
    name: &[u8],
    now_ms: i64,
    keywords: &[&[u8]],
) -> Result<(i64, Option<UnlockLatch>), RedisError> {
    let lease_ms = parse_optional_lease(&mut args, keywords)?;
    let request = match parse_latch(args, false)? {
        Some((LatchName::Request(id), latch_ms)) => Some((id, latch_ms)),
        // Not parsed where no latch key is declared.
        Some((LatchName::Key(_), _)) => return Err(LockError::ReleaseSyntax.into()),
        None => None,
    };
    let request = request.as_ref().map(|(id, latch_ms)| (id.as_slice(), *latch_ms));
    Ok((lease_ms, UnlockLatch::for_request(name, request, now_ms)?))
}

/// An integer argument named `name` (`permits`, `count`, `delta`), as
/// Redis reads integers: base 10, no `+`, no leading zeros.
pub fn parse_integer(arg: &RedisString, name: &'static str) -> Result<i64, LockError> {
    crate::lock::parse_hold_count(arg.as_slice()).map_err(|_| LockError::ArgumentNotInteger(name))
}

/// An integer argument that must be 0 or more.
pub fn parse_non_negative(arg: &RedisString, name: &'static str) -> Result<i64, LockError> {
    match parse_integer(arg, name)? {
        n if n < 0 => Err(LockError::ArgumentNegative(name)),
        n => Ok(n),
    }
}

/// The optional `[PX ttl_ms]` after a semaphore's permits, the last
/// arguments.
pub fn parse_optional_ttl(mut args: impl Iterator<Item = RedisString>) -> Result<Option<i64>, RedisError> {
    let ttl_ms = match args.next() {
        None => None,
        Some(arg) if is_keyword(&arg, b"PX") => {
            Some(lease::parse_ttl_ms(args.next().ok_or(LockError::Syntax("PX needs ttl_ms"))?.as_slice())?)
        }
        Some(_) => return Err(RedisError::from(LockError::Syntax("after permits, only PX ttl_ms"))),
    };
    if args.next().is_some() {
        return Err(RedisError::from(LockError::Syntax("after permits, only PX ttl_ms")));
    }
    Ok(ttl_ms)
}

/// Takes a trailing `VIA PUBLISH|SPUBLISH` off `args` when more than
/// `fixed` arguments come before it: the one command a release is
/// announced with, as Redisson's scripts take it as an argument.
pub fn take_via(args: &mut Args, fixed: usize) -> Result<Via, LockError> {
    match take_release_via(args, fixed) {
        Ok(Via::Nothing) | Err(_) => Err(LockError::Syntax("VIA takes PUBLISH or SPUBLISH")),
        via => via,
    }
}

/// [`take_via`] for a lock's release, which `VIA NONE` announces with
/// nothing (as Redisson's spin lock's scripts do).
pub fn take_release_via(args: &mut Args, fixed: usize) -> Result<Via, LockError> {
    Ok(match take_trailing(args, fixed, b"VIA") {
        None => Via::Default,
        Some(arg) if is_keyword(&arg, b"PUBLISH") => Via::Publish,
        Some(arg) if is_keyword(&arg, b"SPUBLISH") => Via::Spublish,
        Some(arg) if is_keyword(&arg, b"NONE") => Via::Nothing,
        Some(_) => return Err(LockError::Syntax("VIA takes PUBLISH, SPUBLISH or NONE")),
    })
}

/// A trailing `CHANNEL channel`: the channel the command publishes on, as
/// a rewritten Redisson script names it. A command that takes it is
/// flagged `getchannels-api`, and declares it to Redis (see
/// `registry::run`): Redis checks that the caller may publish there before
/// the command runs, and the command publishes with the call's string.
/// The command still checks that it is its own channel.
pub fn take_channel(args: &mut Args, fixed: usize) -> Option<RedisString> {
    take_trailing(args, fixed, CHANNEL_KEYWORD)
}

/// Whether `arg`, last but one, makes the last argument the channel:
/// what Redis is told, for the caller's ACL. [`take_channel`] takes no
/// other channel.
pub fn is_channel_keyword(arg: &[u8]) -> bool {
    matches_keyword(arg, CHANNEL_KEYWORD)
}

const CHANNEL_KEYWORD: &[u8] = b"CHANNEL";

/// Takes a trailing `<keyword> value` off `args` when more than `fixed`
/// arguments come before it, and returns the value.
pub fn take_trailing(args: &mut Args, fixed: usize, keyword: &[u8]) -> Option<RedisString> {
    let at = trailing_keyword_at(args.len(), fixed)?;
    if !is_keyword(&args[at], keyword) {
        return None;
    }
    let value = args.pop();
    args.pop();
    value
}

/// Where a trailing `<keyword> value` of a call of `argc` arguments has its
/// keyword, when `fixed` arguments come before it: the one place
/// [`take_trailing`] and the channel declared to Redis (`registry`) look.
pub fn trailing_keyword_at(argc: usize, fixed: usize) -> Option<usize> {
    argc.checked_sub(2).filter(|&at| at >= fixed)
}

/// Keywords are case-insensitive.
pub fn is_keyword(arg: &RedisString, keyword: &[u8]) -> bool {
    matches_keyword(arg.as_slice(), keyword)
}

/// The word after `REPLY`: only `FULL` (the acquires' full reply).
pub fn parse_reply_full(arg: Option<RedisString>) -> Result<bool, LockError> {
    match arg {
        Some(arg) if is_keyword(&arg, b"FULL") => Ok(true),
        _ => Err(LockError::Syntax("REPLY takes FULL")),
    }
}

/// Whether an acquire may take `WAIT wait_ms` (and block).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Blocking {
    Allowed,
    NotOffered,
}

/// An acquire's keywords after the lease, in any order, each at most once:
/// `[WAIT wait_ms] [ID request_id [PX window_ms]] [REPLY FULL]`.
pub struct AcquireOptions {
    pub wait_ms: Option<i64>,
    pub request: Option<Request>,
    pub full_reply: bool,
}

impl AcquireOptions {
    pub fn parse(args: impl Iterator<Item = RedisString>, blocking: Blocking) -> Result<Self, RedisError> {
        let syntax = match blocking {
            Blocking::Allowed => {
                "after owner and lease_ms, only WAIT wait_ms, ID request_id [PX window_ms] and REPLY FULL, each once"
            }
            Blocking::NotOffered => "after lease_ms, only ID request_id [PX window_ms] and REPLY FULL, each once",
        };
        let mut options = Self { wait_ms: None, request: None, full_reply: false };
        let mut args = args.peekable();
        // Each keyword once; compared in place (every acquire parses these).
        let mut seen = [false; 3];
        while let Some(keyword) = args.next() {
            let which = [b"WAIT".as_slice(), b"ID", b"REPLY"].iter().position(|word| is_keyword(&keyword, word));
            match which {
                Some(which) if !seen[which] => seen[which] = true,
                _ => return Err(LockError::Syntax(syntax).into()),
            }
            match which {
                Some(0) if blocking == Blocking::Allowed => {
                    let wait_ms = args.next().ok_or(LockError::WaitSyntax)?;
                    options.wait_ms = Some(lease::parse_wait_ms(wait_ms.as_slice())?);
                }
                Some(1) => options.request = Some(parse_request(&mut args)?),
                Some(2) => options.full_reply = parse_reply_full(args.next())?,
                _ => return Err(LockError::Syntax(syntax).into()),
            }
        }
        Ok(options)
    }
}

/// `request_id [PX window_ms]`, after an acquire's `ID`.
pub fn parse_request<I: Iterator<Item = RedisString>>(args: &mut Peekable<I>) -> Result<Request, LockError> {
    let id = args.next().filter(|id| !id.as_slice().is_empty()).ok_or(LockError::RequestIdMissing)?;
    let window_ms = match args.next_if(|arg| is_keyword(arg, b"PX")) {
        None => DEFAULT_LATCH_MS,
        Some(_) => parse_window_ms(args.next().ok_or(LockError::Syntax("PX needs window_ms"))?)?,
    };
    Ok(Request { id: id.as_slice().to_vec(), window_ms })
}

/// `PX window_ms`, bounded as a lease.
fn parse_window_ms(arg: RedisString) -> Result<i64, LockError> {
    lease::parse_lease_ms(arg.as_slice())
        .map_err(|_| LockError::Syntax("window_ms must be a positive integer of at most 31536000000 (365 days)"))
}

pub const OWNER: Arg = Arg { name: c"owner", kind: ArgKind::String, optional: false, token: None };
/// `key owner [key owner ...]`, keys of a command with `Keys::Pairs`.
pub const LOCK_OWNERS: Arg = Arg {
    name: c"lock",
    kind: ArgKind::Repeated(&[Arg { name: c"key", kind: ArgKind::Key, optional: false, token: None }, OWNER]),
    optional: false,
    token: None,
};
pub const LEASE_MS: Arg = Arg { name: c"lease_ms", kind: ArgKind::Integer, optional: true, token: None };
/// A trailing `LIKESCRIPT`: the command does what Redisson's script does.
pub const LIKESCRIPT: Arg =
    Arg { name: c"likescript", kind: ArgKind::PureToken, optional: true, token: Some(c"LIKESCRIPT") };
/// `lease_ms` where it must be given.
pub const REQUIRED_LEASE_MS: Arg = Arg { optional: false, ..LEASE_MS };
/// `key owner request_id`: what a cancel names (`RLOCK.CANCEL`,
/// `RRW.CANCEL`).
pub fn parse_cancel(args: Args) -> Result<[RedisString; 3], RedisError> {
    let mut args = args.into_iter().skip(1);
    let named = [args.next_arg()?, args.next_arg()?, args.next_arg()?];
    args.done()?;
    if named[2].is_empty() {
        return Err(LockError::RequestIdEmpty.into());
    }
    Ok(named)
}

/// A blocked acquire's request id (`RLOCK.CANCEL`, `RRW.CANCEL`).
pub const REQUEST_ID: Arg = Arg { name: c"request_id", kind: ArgKind::String, optional: false, token: None };

/// `NOREENTRY`, the keyword of an acquire that refuses its owner's re-entry.
pub const NO_REENTRY: &[u8] = b"NOREENTRY";
pub const HOLDS: &[u8] = b"HOLDS";
/// `[HOLDS n]`
pub const HOLDS_ARG: Arg = Arg { name: c"n", kind: ArgKind::Integer, optional: true, token: Some(c"HOLDS") };
/// `[NOREENTRY]`
pub const NO_REENTRY_ARG: Arg =
    Arg { name: c"noreentry", kind: ArgKind::PureToken, optional: true, token: Some(c"NOREENTRY") };
/// `[WAIT wait_ms]`
pub const WAIT_MS: Arg = Arg { name: c"wait_ms", kind: ArgKind::Integer, optional: true, token: Some(c"WAIT") };
/// `[ID request_id [PX latch_ms]]`
pub const LATCH: Arg = Arg::block(
    c"latch",
    &[
        Arg { name: c"request_id", kind: ArgKind::String, optional: false, token: Some(c"ID") },
        Arg { name: c"latch_ms", kind: ArgKind::Integer, optional: true, token: Some(c"PX") },
    ],
);
/// `[ID request_id | LATCH latch_key [PX latch_ms]]`: RLock's release,
/// whose latch may be a key declared to Redis.
pub const LATCH_OR_KEY: Arg = Arg::block(
    c"latch",
    &[
        Arg {
            name: c"name",
            kind: ArgKind::OneOf(&[
                Arg { name: c"request_id", kind: ArgKind::String, optional: false, token: Some(c"ID") },
                Arg { name: c"latch_key", kind: ArgKind::Key, optional: false, token: Some(c"LATCH") },
            ]),
            optional: false,
            token: None,
        },
        Arg { name: c"latch_ms", kind: ArgKind::Integer, optional: true, token: Some(c"PX") },
    ],
);
/// `[ID request_id [PX window_ms]]`: an acquire's request id.
pub const REQUEST: Arg = Arg::block(
    c"request",
    &[
        Arg { name: c"request_id", kind: ArgKind::String, optional: false, token: Some(c"ID") },
        Arg { name: c"window_ms", kind: ArgKind::Integer, optional: true, token: Some(c"PX") },
    ],
);
/// `[VIA PUBLISH|SPUBLISH]`
pub const VIA: Arg = Arg {
    name: c"publisher",
    kind: ArgKind::OneOf(&[Arg::keyword(c"publish", c"PUBLISH"), Arg::keyword(c"spublish", c"SPUBLISH")]),
    optional: true,
    token: Some(c"VIA"),
};
/// `[VIA PUBLISH|SPUBLISH|NONE]`: a lock's release (see [`take_release_via`]).
pub const RELEASE_VIA: Arg = Arg {
    kind: ArgKind::OneOf(&[
        Arg::keyword(c"publish", c"PUBLISH"),
        Arg::keyword(c"spublish", c"SPUBLISH"),
        Arg::keyword(c"none", c"NONE"),
    ]),
    ..VIA
};
/// `[CHANNEL channel]`, last (see [`take_channel`])
pub const CHANNEL: Arg = Arg { name: c"channel", kind: ArgKind::String, optional: true, token: Some(c"CHANNEL") };
/// `[REPLY FULL]`
pub const REPLY_FULL: Arg = Arg::block(
    c"reply",
    &[
        Arg { name: c"reply", kind: ArgKind::PureToken, optional: false, token: Some(c"REPLY") },
        Arg { name: c"full", kind: ArgKind::PureToken, optional: false, token: Some(c"FULL") },
    ],
);
