//! The client's view of one lock's holds, as a pure state machine (the
//! clock is passed in), so every rule is unit-tested without Redis.
//!
//! One `Holds` exists per lock name and owner id: the server keeps one
//! hold count per owner, so every handle with that owner shares it. A hold
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

/// The outcome of an acquire whose reply never came, settled by reading
/// the owner's hold count afterwards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Settled {
    Granted,
    NotGranted,
}

/// The holds of one owner on one lock.
#[derive(Debug, Default)]
pub(crate) struct Holds {
    incarnation: u64,
    next_hold: u64,
    holds: Vec<Hold>,
    /// The earliest the server may expire the key, by this machine's
    /// clock: the request that last set the lease, plus that lease, as
    /// `(sent at, expires at)`.
    lease: Option<(Instant, Instant)>,
    /// How much later than `lease`'s end the server's expiry may be: the
    /// time the request that set it took to be answered (it ran somewhere
    /// in between). `None` until answered.
    lease_lag: Option<Duration>,
    /// The leases of renewals that went unanswered. Each may still land,
    /// but only before the expiry it would extend (on a missing key it
    /// does nothing), so each pushes the server's expiry out by at most
    /// its lease: together, by at most their sum.
    late_leases: Duration,
    /// Levels given up for lost on this clock alone (their lease estimate
    /// ran out) that the server may still count: the estimate runs from
    /// when a request was sent, and a stalled server applies it later. A
    /// later acquire would re-enter them unseen; it reads the count instead.
    unaccounted: usize,
    /// When those levels have surely expired on the server (`None`: no
    /// bound is known).
    unaccounted_until: Option<Instant>,
}

impl Holds {
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

    /// Levels the server may still count though no hold here has them
    /// (see [`Holds::expire_overdue`]): the next acquire must read the
    /// owner's count after its grant.
    pub fn unaccounted(&self, now: Instant) -> usize {
        match self.unaccounted_until {
            Some(until) if now >= until => 0,
            _ => self.unaccounted,
        }
    }

    /// Levels the server may count for this owner: the holds counted here
    /// and those given up on this clock alone. An acquire with any reads
    /// the count after its grant.
    pub fn levels(&self, now: Instant) -> usize {
        self.holds.len() + self.unaccounted(now)
    }

    /// Of the `observed` count after a grant, the levels beyond the holds
    /// counted here and the grant that are this client's own, given up on
    /// its clock alone: nobody holds them any more, so they are to be
    /// given back. The count settles them either way.
    /// Levels that have surely expired are not claimed: with an owner id
    /// shared with another client, the extra levels may be that client's.
    pub fn claim_unaccounted(&mut self, observed: Option<i64>, now: Instant) -> usize {
        let Some(observed) = observed else { return 0 };
        let beyond = usize::try_from(observed).unwrap_or(0).saturating_sub(self.holds.len() + 1);
        let claimed = self.unaccounted(now).min(beyond);
        self.unaccounted = 0;
        claimed
    }

    /// An acquire was refused: another owner has the lock, so none of
    /// this owner's levels are left.
    pub fn refused(&mut self) -> Ended {
        self.unaccounted = 0;
        match self.holds.is_empty() {
            true => Ended::No,
            false => self.end(Ended::Lost),
        }
    }

    /// Records a granted acquire sent at `requested_at` with `lease_sent`.
    /// `observed` is the owner's count on the server right after the grant
    /// when it was read; a count other than one more than ours means the
    /// earlier holds were lost meanwhile and this grant started afresh.
    pub fn granted(
        &mut self,
        renewal: Renewal,
        lease: Duration,
        lease_sent: Duration,
        requested_at: Instant,
        observed: Option<i64>,
    ) -> (Ticket, Ended) {
        let consistent = observed.is_none_or(|count| count == self.holds.len() as i64 + 1);
        let ended = if consistent || self.holds.is_empty() { Ended::No } else { self.end(Ended::Lost) };
        if self.holds.is_empty() {
            self.incarnation += 1;
        }
        self.next_hold += 1;
        let hold = Hold { id: self.next_hold, renewal, deadline: requested_at + lease };
        self.holds.push(hold);
        self.leased(requested_at, lease_sent);
        (Ticket { incarnation: self.incarnation, hold: hold.id }, ended)
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
            Released::NotHeld => self.end(Ended::Lost),
            // The server had fewer holds than counted: the rest are gone.
            Released::Fully if !self.holds.is_empty() => self.end(Ended::Lost),
            Released::Fully => self.end(Ended::Released),
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

    /// The request sent at `sent_at` was answered at `answered_at`: if it
    /// set the lease, the server's expiry is at most that much later.
    pub fn answered(&mut self, sent_at: Instant, answered_at: Instant) {
        if self.lease.is_some_and(|(last_sent_at, _)| last_sent_at == sent_at) {
            self.lease_lag = Some(answered_at.saturating_duration_since(sent_at));
        }
    }

    /// A renewal with `lease_sent` went unanswered: it may still land, and
    /// push the expiry out by up to that lease (see `late_leases`).
    pub fn unanswered(&mut self, lease_sent: Duration) {
        self.late_leases += lease_sent;
    }

    /// A command sent at `sent_at` set the lease. Commands on one
    /// connection run in the order they were sent, so the last one sent
    /// decides, whatever order their replies are handled in.
    pub fn leased(&mut self, sent_at: Instant, lease: Duration) {
        if self.lease.is_none_or(|(last_sent_at, _)| sent_at >= last_sent_at) {
            self.lease = Some((sent_at, sent_at + lease));
            self.lease_lag = None;
        }
    }

    /// When the lease of the holds ends at the earliest, if any are held.
    pub fn expires_at(&self) -> Option<Instant> {
        self.lease.filter(|_| !self.holds.is_empty()).map(|(_, expires_at)| expires_at)
    }

    /// Holds whose lease has surely ended by `now`, by this clock, are
    /// lost; the server may still count them (see `unaccounted`).
    pub fn expire_overdue(&mut self, now: Instant) -> Ended {
        let overdue = !self.holds.is_empty() && self.lease.is_some_and(|(_, expires_at)| expires_at <= now);
        if !overdue {
            return Ended::No;
        }
        let surely_expired =
            self.lease.zip(self.lease_lag).map(|((_, expires_at), lag)| expires_at + lag + self.late_leases);
        if self.unaccounted(now) == 0 {
            (self.unaccounted, self.unaccounted_until) = (0, surely_expired);
        } else {
            self.unaccounted_until = self.unaccounted_until.zip(surely_expired).map(|(a, b)| a.max(b));
        }
        self.unaccounted += self.holds.len();
        self.end(Ended::Lost)
    }

    fn end(&mut self, how: Ended) -> Ended {
        self.holds.clear();
        (self.lease, self.lease_lag, self.late_leases) = (None, None, Duration::ZERO);
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

/// Settles an acquire whose reply was lost: `counted` holds before it,
/// `observed` the server's count read after it. `ordered` when the read
/// should have run after the acquire (same connection, no error seen
/// since): then a count means the acquire ran and was granted (a count of
/// 1 where more were counted: the earlier holds had expired, and it took
/// the lock afresh), none that it was refused. A count that the acquire
/// cannot explain shows the order was lost after all (another call on the
/// shared connection reconnected it). Without the order, only a count the
/// acquire alone explains is a grant; a count of 1 after 1 reads as "not
/// granted", at worst leaving one unrenewed level that ends with the other
/// holds and a lease.
pub(crate) fn settle(counted: usize, observed: i64, ordered: bool) -> Settled {
    let counted = counted as i64;
    let explained = observed == 0 || observed == 1 || observed == counted + 1;
    let granted =
        if ordered && explained { observed >= 1 } else { observed == counted + 1 || (observed == 1 && counted > 1) };
    if granted {
        Settled::Granted
    } else {
        Settled::NotGranted
    }
}

#[cfg(test)]
mod tests;
