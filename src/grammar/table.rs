//! The argument table every command declares of itself (see
//! `commands::registry`): what COMMAND DOCS tells (`commands::info`) and
//! what a syntax error quotes (`grammar`) are read from it.

use std::ffi::CStr;

/// One argument of a command, as COMMAND DOCS describes it.
pub struct Arg {
    pub name: &'static CStr,
    pub kind: ArgKind,
    pub optional: bool,
    /// The keyword before the value (`ID request_id`), if any.
    pub token: Option<&'static CStr>,
}

pub enum ArgKind {
    /// The lock key (the only key, key spec 0).
    Key,
    String,
    Integer,
    /// A keyword alone (`IFEXISTS`): its token is the argument.
    PureToken,
    /// Arguments that come together, e.g. `[ID request_id [PX latch_ms]]`.
    Block(&'static [Arg]),
    /// Arguments that come together, once or more (`key owner [key owner ...]`).
    Repeated(&'static [Arg]),
    /// One argument of this kind, once or more (`id [id ...]`).
    Multiple(&'static ArgKind),
    /// Exactly one of these (`PUBLISH|SPUBLISH`), each named by its token.
    OneOf(&'static [Arg]),
}

/// Where a command's keys are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keys {
    /// One key, argument 1 (or none: a keyless command), before the `args`.
    First,
    /// `arg key owner [key owner ...]`: every second argument from 2 on,
    /// each under the `key_flags`; the `args` name them all.
    Pairs,
    /// `numkeys key [key ...] args...`, as EVAL's: argument 1 counts the
    /// keys that follow, each under the `key_flags`.
    Numbered,
}

impl Arg {
    /// An optional block of arguments that come together.
    pub const fn block(name: &'static CStr, parts: &'static [Arg]) -> Self {
        Self { name, kind: ArgKind::Block(parts), optional: true, token: None }
    }

    /// A keyword alone, e.g. one choice of a [`ArgKind::OneOf`].
    pub const fn keyword(name: &'static CStr, token: &'static CStr) -> Self {
        Self { name, kind: ArgKind::PureToken, optional: false, token: Some(token) }
    }
}

/// The arguments COMMAND DOCS lists before a command's `args`: its keys
/// (a [`Keys::Pairs`] command's `args` name them).
fn leading_args(keyless: bool, keys: Keys) -> &'static [Arg] {
    const KEY: Arg = Arg { name: c"key", kind: ArgKind::Key, optional: false, token: None };
    const NUMKEYS: Arg = Arg { name: c"numkeys", kind: ArgKind::Integer, optional: false, token: None };
    const KEYS: Arg = Arg { kind: ArgKind::Multiple(&ArgKind::Key), ..KEY };
    match keys {
        _ if keyless => &[],
        Keys::First => &[KEY],
        Keys::Numbered => &[NUMKEYS, KEYS],
        Keys::Pairs => &[],
    }
}

/// A command's grammar: its name, its keys, then its arguments.
pub struct Grammar<'a> {
    pub name: &'a CStr,
    pub keys: Keys,
    /// It declares no key (the `args` may still name one).
    pub keyless: bool,
    pub args: &'a [Arg],
}

impl Grammar<'_> {
    /// Every argument after the command's name, its keys first.
    pub fn all_args(&self) -> impl Iterator<Item = &Arg> {
        leading_args(self.keyless, self.keys).iter().chain(self.args)
    }
}
