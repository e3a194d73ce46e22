//! The kinds of lock: one [`Lock`](crate::Lock) handle and
//! [`Guard`](crate::Guard) for all of them, differing only in their
//! commands (built in `commands.rs`) and the rules kept here.

use crate::transport::wakeups::WakeRule;

/// A kind of lock, as [`Lock::kind`](crate::Lock::kind) tells it.
///
/// ```no_run
/// use rlock_client::Kind;
///
/// # fn example(client: rlock_client::Client) {
/// assert_eq!(client.lock("orders:42").kind(), Kind::Plain);
/// assert_eq!(client.read_write_lock("catalog").write().kind(), Kind::Write);
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Redisson's `RLock` (`RLOCK.*`): waiters wake in no particular order.
    Plain,
    /// Redisson's fair lock (`RFAIR.*`): waiters get it in arrival order,
    /// each told on a channel of its own.
    Fair,
    /// The read side of Redisson's read-write lock (`RRW.* READ`): shared
    /// by readers, excluded by a writer.
    Read,
    /// The write side of Redisson's read-write lock (`RRW.* WRITE`):
    /// excludes readers and other writers; its holder may also read.
    Write,
    /// Redisson's fenced lock (`RFENCED.ACQUIRE`, which also replies a
    /// fencing token, then `RLOCK.*` on the same key): an `RLock` whose
    /// every acquire takes a token, [`Guard::token`](crate::Guard::token).
    Fenced,
}

impl Kind {
    pub(crate) const ALL: [Kind; 5] = [Kind::Plain, Kind::Fair, Kind::Read, Kind::Write, Kind::Fenced];

    /// Whether a release sets the lease of the holds left (a read release
    /// does not: each read hold keeps its own).
    pub(crate) fn release_sets_lease(self) -> bool {
        self != Kind::Read
    }

    /// Whether the kind's release, as Redisson's script, answers a missing
    /// lock "released" (fair) or records that in its latch (read-write)
    /// unless sent `MISSING NOTHELD`.
    pub(crate) fn answers_missing_as_released(self) -> bool {
        matches!(self, Kind::Fair | Kind::Read | Kind::Write)
    }

    /// Which messages on the kind's channel wake its waiters: a read
    /// waiter wakes on any (a `0` is a read release that freed the lock,
    /// which every reader may share); the others as Redisson's.
    pub(crate) fn wake_rule(self) -> WakeRule {
        match self {
            Kind::Read => WakeRule::EveryMessage,
            Kind::Plain | Kind::Fair | Kind::Write | Kind::Fenced => WakeRule::OneOnRelease,
        }
    }

    /// Whether the server counts an owner's holds of both kinds as one
    /// (plain, fair and fenced locks: the owner's field in the lock hash).
    pub(crate) fn shares_counts_with(self, other: Kind) -> bool {
        self.count_field() == other.count_field()
    }

    /// The field of the kind's STATUS reply that counts the owner's holds.
    pub(crate) fn count_field(self) -> &'static str {
        match self {
            Kind::Plain | Kind::Fair | Kind::Fenced => "hold_count",
            Kind::Read => "read_count",
            Kind::Write => "write_count",
        }
    }
}
