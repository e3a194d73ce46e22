//! A command's grammar is its argument table (`CommandInfo::args`, see
//! `commands::info`), the one place it is written: COMMAND DOCS (`commands::info`), the syntax line
//! of docs/commands.md and of every syntax error, and where a call stops
//! fitting, are all read from it.

mod matcher;
mod table;
#[cfg(test)]
mod tests;

use crate::error::LockError;
use redis_module::RedisError;
use std::iter::StepBy;
use std::ops::Range;
pub use table::{Arg, ArgKind, Grammar, Keys};

/// The prefix of every syntax error (`LockError::Syntax`), which clients
/// and tests look for.
const SYNTAX_ERROR: &str = "ERR syntax error: ";
/// Options the handler takes only in the order its syntax lists them.
const OUT_OF_ORDER: &str = "options out of order: give them in the order of the syntax";

/// `RLOCK.RELEASE key owner [lease_ms] [ID request_id [PX latch_ms]] …`
pub fn syntax_line(grammar: &Grammar) -> String {
    let name = grammar.name.to_string_lossy().to_ascii_uppercase();
    let args = grammar.all_args().map(render);
    std::iter::once(name).chain(args).collect::<Vec<_>>().join(" ")
}

/// One argument as Redis's docs write it: `[WAIT wait_ms]`, `id [id ...]`.
fn render(arg: &Arg) -> String {
    let body = match (arg.token, &arg.kind) {
        (Some(token), ArgKind::PureToken) => token.to_string_lossy().into_owned(),
        (Some(token), _) => format!("{} {}", token.to_string_lossy(), render_kind(arg)),
        (None, _) => render_kind(arg),
    };
    if arg.optional {
        format!("[{body}]")
    } else {
        body
    }
}

/// What follows an argument's token.
fn render_kind(arg: &Arg) -> String {
    let name = arg.name.to_string_lossy();
    let joined = |parts: &[Arg], separator: &str| parts.iter().map(render).collect::<Vec<_>>().join(separator);
    match arg.kind {
        ArgKind::Key | ArgKind::String | ArgKind::Integer => name.into_owned(),
        ArgKind::PureToken => arg.token.map_or(name, |token| token.to_string_lossy()).into_owned(),
        ArgKind::Block(parts) => joined(parts, " "),
        ArgKind::Repeated(parts) => format!("{0} [{0} ...]", joined(parts, " ")),
        ArgKind::Multiple(_) => format!("{name} [{name} ...]"),
        // Keywords alone as `PUBLISH|SPUBLISH`; choices with values spaced,
        // as Redis's docs write them (`EX seconds | PX milliseconds`).
        ArgKind::OneOf(choices) if choices.iter().all(|choice| matches!(choice.kind, ArgKind::PureToken)) => {
            joined(choices, "|")
        }
        ArgKind::OneOf(choices) => joined(choices, " | "),
    }
}

/// A handler's syntax error (or its "wrong number of arguments" for an
/// argument its grammar does not place) restated with the command's
/// grammar: the first argument that does not fit, or what is missing, or
/// else the handler's own reason; then the syntax line. Other errors pass.
pub fn explain(err: RedisError, grammar: &Grammar, argv: &[&[u8]]) -> RedisError {
    let reason = match &err {
        RedisError::WrongArity => Some("wrong number of arguments"),
        RedisError::Str(text) => text.strip_prefix(SYNTAX_ERROR),
        RedisError::String(text) => text.strip_prefix(SYNTAX_ERROR),
        _ => None,
    };
    let Some(reason) = reason else { return err };
    let said = match grammar.keys {
        // Its keys are counted: the argument after them is not placed by
        // the table alone.
        Keys::Numbered => None,
        Keys::First | Keys::Pairs => matcher::misfit(grammar.all_args(), argv, false).map(|misfit| misfit.to_string()),
    };
    // Every argument fits, yet the handler found too many or too few: its
    // options stand in another order than it takes them.
    let out_of_order = || {
        let counted = matches!(err, RedisError::WrongArity) && grammar.keys != Keys::Numbered;
        counted && matcher::misfit(grammar.all_args(), argv, true).is_some()
    };
    let said = match said {
        Some(misfit) => misfit,
        None if out_of_order() => OUT_OF_ORDER.to_owned(),
        None => reason.to_owned(),
    };
    RedisError::from(LockError::SyntaxOf(format!("{said}; syntax: {}", syntax_line(grammar))))
}

/// Where a command's calls name their owners: the `owner` after the fixed
/// arguments before it, or each `owner` of its `key owner` pairs. Found
/// once per command: every call checks them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OwnerPlaces {
    None,
    At(usize),
    EverySecondFrom(usize),
}

impl OwnerPlaces {
    pub fn of(grammar: &Grammar) -> Self {
        let is_owner = |arg: &Arg| arg.name.to_bytes() == b"owner";
        let mut position = 1;
        for arg in grammar.all_args() {
            match arg.kind {
                _ if is_owner(arg) => return OwnerPlaces::At(position),
                ArgKind::Repeated(parts) if parts.len() == 2 && is_owner(&parts[1]) => {
                    return OwnerPlaces::EverySecondFrom(position + 1);
                }
                ArgKind::Key | ArgKind::String | ArgKind::Integer if !arg.optional && arg.token.is_none() => {
                    position += 1
                }
                _ => break,
            }
        }
        OwnerPlaces::None
    }

    /// The owners' positions in a call of `argc` arguments.
    pub fn positions(self, argc: usize) -> StepBy<Range<usize>> {
        match self {
            OwnerPlaces::None => (0..0).step_by(1),
            OwnerPlaces::At(position) => (position..argc.min(position + 1)).step_by(1),
            OwnerPlaces::EverySecondFrom(first) => (first..argc).step_by(2),
        }
    }
}
