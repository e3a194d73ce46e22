//! The kinds of lock, as type parameters of [`Lock`](crate::Lock) and
//! [`Guard`](crate::Guard): every kind has the same handle and guard, and
//! differs only in its commands and its waiting rules.

use crate::engine::commands::Kind;

/// A kind of lock. Sealed: [`Plain`], [`Fair`], [`Read`], [`Write`], [`Fenced`].
pub trait LockKind: sealed::Sealed + Send + Sync + 'static {}

pub(crate) mod sealed {
    pub trait Sealed {
        const KIND: crate::engine::commands::Kind;
    }
}

macro_rules! kinds {
    ($($(#[$doc:meta])* $name:ident => $kind:expr;)*) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $name {}

        impl sealed::Sealed for $name {
            const KIND: Kind = $kind;
        }

        impl LockKind for $name {}
    )*};
}

kinds! {
    /// Redisson's `RLock` (`RLOCK.*`): waiters wake in no particular order.
    Plain => Kind::Plain;
    /// Redisson's fair lock (`RFAIR.*`): waiters get it in arrival order.
    Fair => Kind::Fair;
    /// The read side of Redisson's read-write lock (`RRW.* READ`): shared
    /// by readers, excluded by a writer.
    Read => Kind::Read;
    /// The write side of Redisson's read-write lock (`RRW.* WRITE`):
    /// excludes readers and other writers; its holder may also read.
    Write => Kind::Write;
    /// Redisson's fenced lock (`RFENCED.ACQUIRE`, then `RLOCK.*`): an
    /// `RLock` whose every acquire also takes a fencing token.
    Fenced => Kind::Fenced;
}
