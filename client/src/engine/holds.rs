//! The client's view of one lock's holds, as a pure state machine (the
//! clock is passed in), so every rule is unit-tested without Redis.
//!
//! One `Holds` exists per lock name and owner id: the server keeps one
//! hold count per owner, so every handle with that owner shares it. Every
//! grant's reply gives the owner's count on the server, which settles what
//! this client counts: fewer means its earlier holds were lost, more means
//! levels it no longer counts (a lease it gave up on its own clock, a
//! release whose reply was lost), given back when the owner id is this
//! client's alone. A hold
//! is one granted acquire not yet given back. An *incarnation* is one
//! unbroken stretch of holding: it ends when the last hold is released or
//! when the holds are lost, and a guard from an ended incarnation is stale.

use std::time::Duration;
use tokio::time::Instant;

/// How a hold keeps (or does not keep) its lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Renewal {
    /// Renewed every watchdog period until released.
    Watchdog,
    /// Not renewed: the hold needs the lock until its deadline only.
    Fixed,
}

/// Identifies one hold: the incarnation it belongs to and its number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ticket {
    pub incarnation: u64,
    hold: u64,
}

#[derive(Debug, Clone, Copy)]
struct Hold {
    id: u64,
    renewal: Renewal,
    /// For a fixed hold, when its lease ends (measured from before the
    /// request that granted it).
    deadline: Instant,
}

/// What a release replied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Released {
    /// 1: the key was deleted.
    Fully,
    /// 0: one level released, the lock is still held.
    OneLevel,
    /// nil: the owner did not hold the lock.
    NotHeld,
}

/// How an incarnation ended, when it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ended {
    /// Still going (or nothing was held).
    No,
    /// The last hold was given back.
    Released,
    /// The server no longer has the holds this client counted.
    Lost,
}

/// What the watchdog must do for a lock this round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Upkeep {
    /// The kind's RENEW with this lease: a watchdog hold remains.
    Renew(Duration),
    /// The kind's STATUS: only fixed holds remain; notice an early loss.
    Check,
}

/// The earliest the server may expire the key, by this machine's clock:
/// the request that last set the lease, plus that lease, as `(sent at,
/// ends at)`. The holds' levels are [`Holds`]'s; this is their lease.
#[derive(Debug, Default, Clone, Copy)]
struct LeaseEstimate(Option<(Instant, Instant)>);

impl LeaseEstimate {
    /// A command sent at `sent_at` set `lease`: it counts unless one sent
    /// later already did.
    fn set(&mut self, sent_at: Instant, lease: Duration) {
        if self.0.is_none_or(|(last_sent_at, _)| sent_at >= last_sent_at) {
            self.0 = Some((sent_at, sent_at + lease));
        }
    }

    fn ends_at(&self) -> Option<Instant> {
        self.0.map(|(_, ends_at)| ends_at)
    }
}

/// The holds of one owner on one lock: their levels, and their lease.
#[derive(Debug, Default)]
pub(crate) struct Holds {
    incarnation: u64,
    next_hold: u64,
    holds: Vec<Hold>,
    lease: LeaseEstimate,
    /// Other clients may use this owner id too (see
    /// [`Holds::for_shared_owner`]): levels beyond this client's count may
    /// be theirs.
    shared_owner: bool,
    /// The server counts exactly these holds of this owner, under the lease
    /// estimated here (see [`Holds::counted_exactly`]).
    exact: bool,
}

impl Holds {
    /// The holds of an owner id that other clients may use at the same
    /// time: levels beyond this client's count are never given back.
    pub fn for_shared_owner() -> Self {
        Self { shared_owner: true, ..Self::default() }
    }

    /// The holds of an owner id minted for this client just now: the
    /// server counts none of its levels yet.
    pub fn fresh() -> Self {
        Self { exact: true, ..Self::default() }
    }

    /// Whether the server counts exactly the holds counted here, and no
    /// level beyond them: then an acquire naming that count is granted
    /// afresh (a level added, the lease sent set), never a replay of an
    /// earlier grant, and its short reply tells all. Not so until a reply
    /// shows the owner's count (a handle on an owner id used before), nor
    /// once a level may have stayed behind on the server (a lease given up
    /// on this clock, a release whose reply was lost, levels to give
    /// back): an acquire then finding one more is answered as a replay,
    /// with that level's lease as it stands, which only the full reply
    /// tells.
    pub fn counted_exactly(&self) -> bool {
        self.exact
    }

    /// Holds this client counts: what the server's count should be.
    pub fn count(&self) -> usize {
        self.holds.len()
    }

    pub fn incarnation(&self) -> u64 {
        self.incarnation
    }

    pub fn is_current(&self, ticket: &Ticket) -> bool {
        ticket.incarnation == self.incarnation && self.holds.iter().any(|hold| hold.id == ticket.hold)
    }

    /// The lease the remaining holds need from `now`: the watchdog timeout
    /// while a watchdog hold remains, else the longest fixed deadline left.
    pub fn lease_needed(&self, now: Instant, watchdog: Duration) -> Option<Duration> {
        self.holds.iter().map(|hold| hold.need(now, watchdog)).max()
    }

    /// The lease to send with an acquire for `lease`: never shorter than
    /// what the holds already taken need (a re-entry with a short lease
    /// must not cut the outer hold's lease; Redisson's does).
    pub fn lease_for_acquire(&self, lease: Duration, now: Instant, watchdog: Duration) -> Duration {
        self.lease_needed(now, watchdog).map_or(lease, |needed| needed.max(lease))
    }

    /// An acquire was refused: another owner has the lock, so none of
    /// this owner's levels are left.
    pub fn refused(&mut self) -> Ended {
        match self.holds.is_empty() {
            true => Ended::No,
            false => self.end(Ended::Lost),
        }
    }

    /// A grant after which the owner's count on the server is `observed`,
    /// checked against the holds counted here: fewer than one more means
    /// they were lost meanwhile (the grant started afresh), and they end.
    pub fn granted_after(&mut self, observed: i64) -> Ended {
        // Levels beyond the holds, to give back, may stay behind.
        self.exact = false;
        match usize::try_from(observed).unwrap_or(0) > self.holds.len() || self.holds.is_empty() {
            true => Ended::No,
            false => self.end(Ended::Lost),
        }
    }

    /// Records a granted acquire sent at `requested_at` with `lease_sent`.
    /// `observed` is the owner's count on the server right after the
    /// grant. Fewer than one more than counted here: the earlier holds were
    /// lost meanwhile, and this grant started afresh. More: levels nothing
    /// here counts, returned as the number to give back (none with a shared
    /// owner id: they may be another client's).
    pub fn granted(
        &mut self,
        renewal: Renewal,
        lease: Duration,
        lease_sent: Duration,
        requested_at: Instant,
        observed: i64,
    ) -> (Ticket, Ended, usize) {
        let ended = self.granted_after(observed);
        let observed = usize::try_from(observed).unwrap_or(0);
        if self.holds.is_empty() {
            self.incarnation += 1;
        }
        self.next_hold += 1;
        let hold = Hold { id: self.next_hold, renewal, deadline: requested_at + lease };
        self.holds.push(hold);
        self.leased(requested_at, lease_sent);
        let beyond = observed.saturating_sub(self.holds.len());
        let orphaned = if self.shared_owner { 0 } else { beyond };
        self.exact = observed == self.holds.len() && !self.shared_owner;
        (Ticket { incarnation: self.incarnation, hold: hold.id }, ended, orphaned)
    }

    /// The lease to send with the release of `ticket`: what the other
    /// holds need (the server applies it only when one remains).
    pub fn lease_for_release(&self, ticket: &Ticket, now: Instant, watchdog: Duration, own: Duration) -> Duration {
        let others = self.holds.iter().filter(|hold| hold.id != ticket.hold);
        others.map(|hold| hold.need(now, watchdog)).max().unwrap_or(own)
    }

    /// Applies a release reply for `ticket`, sent at `requested_at` with
    /// `lease_sent` for the holds left (`None`: it sets no lease, as a read
    /// release, whose holds keep their own).
    pub fn released(
        &mut self,
        ticket: &Ticket,
        reply: Released,
        lease_sent: Option<Duration>,
        requested_at: Instant,
    ) -> Ended {
        if ticket.incarnation != self.incarnation {
            return Ended::No;
        }
        self.holds.retain(|hold| hold.id != ticket.hold);
        match reply {
            // The key is gone: the server counts none of this owner's levels.
            Released::NotHeld => self.end_with_none_left(Ended::Lost),
            // The server had fewer holds than counted: the rest are gone.
            Released::Fully if !self.holds.is_empty() => self.end_with_none_left(Ended::Lost),
            Released::Fully => self.end_with_none_left(Ended::Released),
            // No hold left here, yet the server still counts one: not ours
            // to release (another process may share the owner id). It
            // expires with the lease just sent.
            Released::OneLevel if self.holds.is_empty() => self.end(Ended::Released),
            Released::OneLevel => {
                if let Some(lease_sent) = lease_sent {
                    self.leased(requested_at, lease_sent);
                }
                Ended::No
            }
        }
    }

    /// Drops `ticket`'s hold without knowing whether the server released
    /// it (its release never got a reply): it expires with its lease.
    pub fn forget(&mut self, ticket: &Ticket) -> Ended {
        if !self.is_current(ticket) {
            return Ended::No;
        }
        self.exact = false;
        self.holds.retain(|hold| hold.id != ticket.hold);
        if self.holds.is_empty() {
            self.end(Ended::Released)
        } else {
            Ended::No
        }
    }

    /// The holds of `incarnation` are known to be gone.
    pub fn lose(&mut self, incarnation: u64) -> Ended {
        if incarnation != self.incarnation || self.holds.is_empty() {
            return Ended::No;
        }
        self.end(Ended::Lost)
    }

    /// What the watchdog must do this round; `None` when nothing is held.
    pub fn upkeep(&self, now: Instant, watchdog: Duration) -> Option<Upkeep> {
        if self.holds.iter().any(|hold| hold.renewal == Renewal::Watchdog) {
            return self.lease_needed(now, watchdog).map(Upkeep::Renew);
        }
        (!self.holds.is_empty()).then_some(Upkeep::Check)
    }

    /// A renewal sent at `sent_at` with `lease_sent` succeeded.
    pub fn renewed(&mut self, incarnation: u64, sent_at: Instant, lease_sent: Duration) {
        if incarnation == self.incarnation && !self.holds.is_empty() {
            self.leased(sent_at, lease_sent);
        }
    }

    /// A command sent at `sent_at` set the lease. Commands on one
    /// connection run in the order they were sent, so the last one sent
    /// decides, whatever order their replies are handled in.
    pub fn leased(&mut self, sent_at: Instant, lease: Duration) {
        self.lease.set(sent_at, lease);
    }

    /// When the lease of the holds ends at the earliest, if any are held.
    pub fn expires_at(&self) -> Option<Instant> {
        self.lease.ends_at().filter(|_| !self.holds.is_empty())
    }

    /// Holds whose lease has surely ended by `now`, by this clock, are
    /// lost. The server may still count them (its clock started later):
    /// the next grant's count shows them.
    pub fn expire_overdue(&mut self, now: Instant) -> Ended {
        let overdue = !self.holds.is_empty() && self.lease.ends_at().is_some_and(|ends_at| ends_at <= now);
        match overdue {
            true => self.end(Ended::Lost),
            false => Ended::No,
        }
    }

    /// Ends the incarnation after a reply showed the key gone: the server
    /// counts none of the owner's levels (unless another client shares it).
    fn end_with_none_left(&mut self, how: Ended) -> Ended {
        let ended = self.end(how);
        self.exact = !self.shared_owner;
        ended
    }

    /// Ends the incarnation; its levels may stay behind on the server
    /// (a lease given up on this clock, a refusal of the owner's own
    /// re-entry, a release of unknown outcome) until a reply shows them.
    fn end(&mut self, how: Ended) -> Ended {
        self.exact = false;
        self.holds.clear();
        self.lease = LeaseEstimate::default();
        self.incarnation += 1;
        how
    }
}

impl Hold {
    fn need(&self, now: Instant, watchdog: Duration) -> Duration {
        match self.renewal {
            Renewal::Watchdog => watchdog,
            Renewal::Fixed => self.deadline.saturating_duration_since(now),
        }
    }
}

#[cfg(test)]
mod tests;
