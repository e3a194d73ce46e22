//! The kinds of lock, as type parameters of [`Lock`](crate::Lock) and
//! [`Guard`](crate::Guard): every kind has the same handle and guard, and
//! differs only in its commands and its waiting rules.

use crate::engine::commands::Kind;

/// A kind of lock. Sealed: [`Plain`], [`Fair`], [`Read`], [`Write`], [`Fenced`].
///
/// Code that works with any kind of lock is generic over it:
///
/// ```no_run
/// use rlock_client::{Lock, LockKind, Result};
///
/// async fn with_lock<K: LockKind>(lock: &Lock<K>) -> Result<()> {
///     let guard = lock.lock().await?;
///     // the critical section
///     guard.unlock().await
/// }
///
/// # async fn example(client: rlock_client::Client) -> Result<()> {
/// with_lock(&client.lock("a")).await?;
/// with_lock(&client.fair_lock("b")).await?;
/// with_lock(&client.read_write_lock("c").write()).await?;
/// # Ok(()) }
/// ```
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
    ///
    /// ```no_run
    /// # fn example(client: rlock_client::Client) {
    /// let lock: rlock_client::Lock<rlock_client::kind::Plain> = client.lock("orders:42");
    /// # }
    /// ```
    Plain => Kind::Plain;
    /// Redisson's fair lock (`RFAIR.*`): waiters get it in arrival order.
    ///
    /// ```no_run
    /// # fn example(client: rlock_client::Client) {
    /// let lock: rlock_client::Lock<rlock_client::kind::Fair> = client.fair_lock("jobs:queue");
    /// # }
    /// ```
    Fair => Kind::Fair;
    /// The read side of Redisson's read-write lock (`RRW.* READ`): shared
    /// by readers, excluded by a writer.
    ///
    /// ```no_run
    /// # fn example(client: rlock_client::Client) {
    /// let lock: rlock_client::Lock<rlock_client::kind::Read> = client.read_write_lock("catalog").read();
    /// # }
    /// ```
    Read => Kind::Read;
    /// The write side of Redisson's read-write lock (`RRW.* WRITE`):
    /// excludes readers and other writers; its holder may also read.
    ///
    /// ```no_run
    /// # fn example(client: rlock_client::Client) {
    /// let lock: rlock_client::Lock<rlock_client::kind::Write> = client.read_write_lock("catalog").write();
    /// # }
    /// ```
    Write => Kind::Write;
    /// Redisson's fenced lock (`RFENCED.ACQUIRE`, then `RLOCK.*`): an
    /// `RLock` whose every acquire also takes a fencing token.
    ///
    /// ```no_run
    /// # fn example(client: rlock_client::Client) {
    /// let lock: rlock_client::Lock<rlock_client::kind::Fenced> = client.fenced_lock("report:daily");
    /// # }
    /// ```
    Fenced => Kind::Fenced;
}
