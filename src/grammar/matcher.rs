//! Where a call stops fitting its command's argument table. Used only to
//! explain a refused call (the handlers parse), so it may be lenient:
//! keywords after the positional arguments are taken in any order, each
//! once, as the handlers take them.

use super::render_kind;
use super::{Arg, ArgKind};
use crate::keyword::matches_keyword;
use std::fmt;

/// The first thing wrong with a call.
#[derive(Debug, PartialEq, Eq)]
pub enum Misfit {
    /// Argument `position` (the command's name is 0) fits nowhere.
    Unexpected { position: usize, arg: Vec<u8> },
    /// `what` should follow argument `after` (or come first).
    Missing { after: Option<Vec<u8>>, what: String },
}

/// Arguments are quoted up to this many bytes (a value may be 70 KB).
const QUOTED_MAX: usize = 40;

fn quoted(arg: &[u8]) -> String {
    let shown = arg[..arg.len().min(QUOTED_MAX)].escape_ascii();
    if arg.len() > QUOTED_MAX {
        format!("{shown}...")
    } else {
        shown.to_string()
    }
}

impl fmt::Display for Misfit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unexpected { position, arg } => write!(f, "unexpected argument {position} ('{}')", quoted(arg)),
            Self::Missing { after: Some(after), what } => write!(f, "'{}' needs {what}", quoted(after)),
            Self::Missing { after: None, what } => write!(f, "{what} is missing"),
        }
    }
}

/// The misfit of `argv` (the command's name first) against `args`, or
/// none when it fits. `in_order`: the keyed arguments only in the order
/// the table lists them (else in any order, each once).
pub fn misfit<'a>(args: impl Iterator<Item = &'a Arg>, argv: &[&[u8]], in_order: bool) -> Option<Misfit> {
    let args: Vec<&Arg> = args.collect();
    let mut tokens = Vec::new();
    args.iter().for_each(|arg| collect_tokens(arg, &mut tokens));
    let mut cursor = Cursor { argv, at: 1, tokens, in_order };
    cursor.call(&args).err()
}

fn collect_tokens(arg: &Arg, tokens: &mut Vec<&'static [u8]>) {
    tokens.extend(arg.token.map(|token| token.to_bytes()));
    if let ArgKind::Block(parts) | ArgKind::Repeated(parts) | ArgKind::OneOf(parts) = arg.kind {
        parts.iter().for_each(|part| collect_tokens(part, tokens));
    }
}

/// Whether `arg` is told by a keyword: its token, or its first part's, or
/// every choice's.
fn is_keyed(arg: &Arg) -> bool {
    arg.token.is_some()
        || match arg.kind {
            ArgKind::Block(parts) | ArgKind::Repeated(parts) => {
                let leading = parts.iter().position(|part| !part.optional).map_or(parts.len(), |first| first + 1);
                !parts.is_empty() && parts[..leading].iter().all(is_keyed)
            }
            ArgKind::OneOf(choices) => choices.iter().all(is_keyed),
            _ => false,
        }
}

/// Whether `word` starts `arg` (a keyed one).
fn starts(arg: &Arg, word: &[u8]) -> bool {
    match (arg.token, &arg.kind) {
        (Some(token), _) => matches_keyword(word, token.to_bytes()),
        // A block starts with its first part, or any optional one before it.
        (None, ArgKind::Block(parts) | ArgKind::Repeated(parts)) => {
            let leading = parts.iter().position(|part| !part.optional).map_or(parts.len(), |first| first + 1);
            parts[..leading].iter().any(|part| starts(part, word))
        }
        (None, ArgKind::OneOf(choices)) => choices.iter().any(|choice| starts(choice, word)),
        _ => false,
    }
}

struct Cursor<'a> {
    argv: &'a [&'a [u8]],
    at: usize,
    /// Every keyword of the command: where an optional value may stand,
    /// a keyword is not taken for it.
    tokens: Vec<&'static [u8]>,
    in_order: bool,
}

type Step = Result<(), Misfit>;

impl Cursor<'_> {
    fn peek(&self) -> Option<&[u8]> {
        self.argv.get(self.at).copied()
    }

    fn is_keyword(&self, word: &[u8]) -> bool {
        self.tokens.iter().any(|token| matches_keyword(word, token))
    }

    /// A value (not a keyword) stands here.
    fn value_here(&self) -> bool {
        self.peek().is_some_and(|word| !self.is_keyword(word))
    }

    fn unexpected(&self) -> Misfit {
        let arg = self.peek().unwrap_or_default().to_vec();
        Misfit::Unexpected { position: self.at, arg }
    }

    fn missing(&self, what: String) -> Misfit {
        let after = self.at.checked_sub(1).filter(|&before| before > 0).map(|before| self.argv[before].to_vec());
        Misfit::Missing { after, what }
    }

    /// The whole call: the positional arguments in order, then the keyed
    /// ones in any order, each once.
    fn call(&mut self, args: &[&Arg]) -> Step {
        let in_order = args.iter().position(|arg| is_keyed(arg) && arg.optional).unwrap_or(args.len());
        let (positional, keyed) = args.split_at(in_order);
        positional.iter().try_for_each(|arg| self.part(arg))?;
        let mut left: Vec<&Arg> = keyed.to_vec();
        while let Some(word) = self.peek() {
            let Some(found) = left.iter().position(|arg| starts(arg, word)) else { return Err(self.unexpected()) };
            let arg = match self.in_order {
                // In order, the keyed arguments listed before this one are past.
                true if left[..found].iter().any(|arg| !arg.optional) => return Err(self.unexpected()),
                true => {
                    let arg = left[found];
                    left.drain(..=found);
                    arg
                }
                false => left.remove(found),
            };
            self.take(arg)?;
        }
        // A required keyword left over follows nothing in particular.
        match left.iter().find(|arg| !arg.optional) {
            Some(arg) => Err(Misfit::Missing { after: None, what: super::render(arg) }),
            None => Ok(()),
        }
    }

    /// One part of a sequence: taken when it stands here, skipped when it
    /// is optional and does not.
    fn part(&mut self, arg: &Arg) -> Step {
        let here = match self.peek() {
            Some(word) if is_keyed(arg) => starts(arg, word),
            Some(_) if arg.optional => self.value_here(),
            Some(_) => true,
            None => false,
        };
        match here {
            true => self.take(arg),
            false if arg.optional => Ok(()),
            false if self.peek().is_some() => Err(self.unexpected()),
            false => Err(self.missing(super::render(arg))),
        }
    }

    /// Takes `arg`, which stands here.
    fn take(&mut self, arg: &Arg) -> Step {
        let keyword_taken = arg.token.is_some();
        if keyword_taken {
            self.at += 1;
        }
        let value = |cursor: &mut Self| match cursor.peek() {
            Some(_) => {
                cursor.at += 1;
                Ok(())
            }
            None => Err(cursor.missing(render_kind(arg))),
        };
        match arg.kind {
            ArgKind::PureToken if keyword_taken => Ok(()),
            ArgKind::Key | ArgKind::String | ArgKind::Integer | ArgKind::PureToken => value(self),
            ArgKind::Multiple(_) => {
                value(self)?;
                while self.value_here() {
                    self.at += 1;
                }
                Ok(())
            }
            ArgKind::Block(parts) => parts.iter().try_for_each(|part| self.part(part)),
            ArgKind::Repeated(parts) => loop {
                parts.iter().try_for_each(|part| self.part(part))?;
                if !self.value_here() {
                    return Ok(());
                }
            },
            ArgKind::OneOf(choices) => match self.peek() {
                None => Err(self.missing(render_kind(arg))),
                Some(word) => match choices.iter().find(|choice| starts(choice, word)) {
                    Some(choice) => self.take(choice),
                    None => Err(self.unexpected()),
                },
            },
        }
    }
}
