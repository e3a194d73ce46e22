//! The reference model of one fair lock: the waiters in arrival order, who
//! holds, and since when the lock is free. [`Model::check`] holds a server
//! snapshot against it: the holder, the live waiters' order in the queue,
//! disconnected blocked waiters gone, and the progress bound (the lock is
//! never free while a live waiter has waited past its turn plus its wait).

use std::time::{Duration, Instant};

pub type Uid = u32;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// RFAIR.ACQUIRE … WAIT, woken on its channel or at its hint's end.
    Poll,
    /// Redisson's fair scripts (Lua), given the server's clock.
    Script,
    /// RFAIR.ACQUIRE … WAIT … BLOCK: granted by the server.
    Block,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Life {
    /// Comes back within its bound: it must keep its place.
    Live,
    /// Killed between calls: the server drops it once its deadline passes.
    Dead,
    /// Disconnected while blocked (killed or gave up): it leaves at once.
    Gone(Instant),
    /// Came back past its bound (the machine lagged, or a script waiter's
    /// deadline moved before its return): it may have lost its place.
    Lapsed,
}

#[derive(Debug)]
pub struct Waiter {
    pub uid: Uid,
    pub kind: Kind,
    pub wait: Duration,
    pub life: Life,
    /// Its deadline on the server at the latest snapshot.
    pub deadline: Option<Instant>,
    /// A BLOCK call the server took at `.0`, blocking until `.1` at most.
    pub blocked: Option<(Instant, Instant)>,
}

impl Waiter {
    pub fn new(uid: Uid, kind: Kind, wait: Duration) -> Self {
        Self { uid, kind, wait, life: Life::Live, deadline: None, blocked: None }
    }
}

#[derive(Debug)]
pub struct Hold {
    pub uid: Uid,
    /// Its lease ends between these instants.
    pub lease_end: (Instant, Instant),
}

/// One atomic read of the lock, the queue and the deadlines.
#[derive(Debug)]
pub struct Snapshot {
    /// Before and after the read.
    pub taken: (Instant, Instant),
    pub holders: Vec<(Uid, i64)>,
    pub pttl: i64,
    pub queue: Vec<Uid>,
    pub deadlines: Vec<(Uid, Instant)>,
}

/// What a check learned: grants the server made to blocked waiters, a
/// lease that ran out, waiters the server dropped.
#[derive(Debug, Default)]
pub struct Learned {
    pub granted: Vec<Uid>,
    pub expired: Option<Uid>,
    pub dropped: Vec<Uid>,
    /// Script waiters excused: their deadline came, or a script dropped them.
    pub lapsed: Vec<Uid>,
}

#[derive(Default)]
pub struct Model {
    pub order: Vec<Waiter>,
    pub holder: Option<Hold>,
    /// When the lock became free, moved to a later departure ahead of the
    /// first live waiter (its turn comes then).
    pub free_base: Option<Instant>,
    /// Scheduling slack for every time bound (grows with measured lag).
    pub slack: Duration,
    /// The step just checked ran one of Redisson's scripts.
    pub script_step: bool,
}

pub type Verdict<T = ()> = Result<T, String>;

fn ms(d: Duration) -> u128 {
    d.as_millis()
}

impl Model {
    pub fn position(&self, uid: Uid) -> Option<usize> {
        self.order.iter().position(|w| w.uid == uid)
    }

    pub fn waiter(&mut self, uid: Uid) -> Option<&mut Waiter> {
        self.order.iter_mut().find(|w| w.uid == uid)
    }

    pub fn arrive(&mut self, waiter: Waiter) {
        self.order.push(waiter);
    }

    /// The live waiters before `uid` (all of them when it is not queued).
    fn live_ahead(&self, uid: Uid) -> Vec<Uid> {
        self.order.iter().take_while(|w| w.uid != uid).filter(|w| w.life == Life::Live).map(|w| w.uid).collect()
    }

    /// `uid` took the lock between `at.0` and `at.1`.
    pub fn grant(&mut self, uid: Uid, at: (Instant, Instant), lease: Duration) -> Verdict {
        let ahead = self.live_ahead(uid);
        if !ahead.is_empty() {
            return Err(format!("order: {uid} was granted the lock ahead of live waiters {ahead:?}"));
        }
        if let Some(hold) = &self.holder {
            if hold.lease_end.0 > at.1 + self.slack {
                let left = ms(hold.lease_end.0 - at.1);
                return Err(format!("two holders: {uid} was granted while {} held for {left} ms more", hold.uid));
            }
        }
        if let Some(position) = self.position(uid) {
            let taker = self.order.remove(position);
            // Every grant takes the taker's wait off a script waiter's
            // deadline (Redisson's arithmetic, which the commands keep for
            // them).
            self.take_off_script_deadlines(0, taker.wait);
        }
        self.holder = Some(Hold { uid, lease_end: (at.0 + lease, at.1 + lease) });
        self.free_base = None;
        Ok(())
    }

    /// The holder released the lock by `at`.
    pub fn release(&mut self, at: Instant) {
        self.holder = None;
        self.free_base = Some(at);
    }

    /// `uid` left the queue by `at` (gave up). When nobody live was ahead
    /// of it and the lock is free, the next waiter's turn comes at `at`
    /// (RFAIR.CANCEL tells it), or when the server sees it (Redisson's
    /// give-up tells no one: by the script waiter's deadline).
    pub fn leave(&mut self, uid: Uid, at: Instant) {
        let Some(position) = self.position(uid) else { return };
        let first = self.order[..position].iter().all(|w| w.life != Life::Live);
        let waiter = self.order.remove(position);
        // A give-up takes the leaver's wait off the deadlines behind it.
        self.take_off_script_deadlines(position, waiter.wait);
        let turn = match waiter.kind {
            Kind::Script => waiter.deadline.unwrap_or(at),
            _ => at,
        };
        if let (true, Some(base)) = (first, self.free_base) {
            self.free_base = Some(base.max(turn));
        }
    }

    /// Redisson's arithmetic on the deadlines of the script waiters from
    /// `from` on: a step may drop one before a snapshot saw the lowered
    /// deadline, so the model lowers it as the server does.
    pub fn take_off_script_deadlines(&mut self, from: usize, wait: Duration) {
        for waiter in self.order[from..].iter_mut().filter(|w| w.kind == Kind::Script) {
            if let Some(deadline) = waiter.deadline {
                waiter.deadline = deadline.checked_sub(wait).or(Some(deadline));
            }
        }
    }

    /// How long the server may keep a waiter that does not come back,
    /// counted from its turn `turn`: until its turn plus its wait (native),
    /// its deadline (script), at once (disconnected).
    fn skipped_by(waiter: &Waiter, turn: Instant) -> Instant {
        match (waiter.life, waiter.kind, waiter.deadline) {
            (Life::Gone(at), ..) => turn.max(at),
            (_, Kind::Script, Some(deadline)) => turn.max(deadline),
            _ => turn + waiter.wait,
        }
    }

    /// Holds the snapshot against the model. `in_flight(uid)`: a BLOCK call
    /// of `uid` is under way (the server may have granted it).
    pub fn check(
        &mut self,
        snap: &Snapshot,
        in_flight: impl Fn(Uid) -> bool,
        lease_of: impl Fn(Uid) -> Duration,
    ) -> Verdict<Learned> {
        let mut learned = Learned::default();
        let (before, after) = snap.taken;
        if snap.holders.len() > 1 || snap.holders.iter().any(|(_, count)| *count != 1) {
            return Err(format!("lock hash {:?}", snap.holders));
        }
        let server_holder = snap.holders.first().map(|(uid, _)| *uid);
        match (&self.holder, server_holder) {
            (Some(hold), Some(uid)) if hold.uid == uid => {
                if snap.pttl >= 0 {
                    let left = Duration::from_millis(snap.pttl as u64);
                    self.holder.as_mut().unwrap().lease_end = (before + left, after + left);
                }
            }
            (Some(hold), _) if hold.lease_end.0 > after + self.slack => {
                let left = ms(hold.lease_end.0 - after);
                return Err(format!(
                    "holder: {} should hold {left} ms more, the server has {server_holder:?}",
                    hold.uid
                ));
            }
            (Some(hold), _) => {
                learned.expired = Some(hold.uid);
                let end = hold.lease_end.1;
                self.release(end);
            }
            (None, _) => {}
        }
        if let (None, Some(uid)) = (&self.holder, server_holder) {
            if !in_flight(uid) {
                return Err(format!("holder: the server has {uid}, nobody holds in the model"));
            }
            self.grant(uid, (before.min(self.free_base.unwrap_or(before)), after), lease_of(uid))?;
            if snap.pttl >= 0 {
                let left = Duration::from_millis(snap.pttl as u64);
                self.holder.as_mut().unwrap().lease_end = (before + left, after + left);
            }
            learned.granted.push(uid);
        }
        self.check_queue(snap, &mut learned)?;
        self.check_progress(server_holder.is_none(), before)?;
        Ok(learned)
    }

    fn check_queue(&mut self, snap: &Snapshot, learned: &mut Learned) -> Verdict {
        let (before, after) = snap.taken;
        if let Some(stranger) = snap.queue.iter().find(|uid| self.position(**uid).is_none()) {
            return Err(format!("queue {:?}: {stranger} is queued, but not waiting in the model", snap.queue));
        }
        for waiter in &mut self.order {
            // A script waiter's place lasts until its deadline, which others
            // move (Redisson's grant and give-up take waits off it); a
            // script step may drop script waiters by Redisson's rules.
            let queued = snap.queue.contains(&waiter.uid);
            let (script, live) = (waiter.kind == Kind::Script, waiter.life == Life::Live);
            let due = waiter.deadline.is_some_and(|at| at <= before + self.slack);
            if script && live && (due || (self.script_step && !queued)) {
                waiter.life = Life::Lapsed;
                learned.lapsed.push(waiter.uid);
            }
            waiter.deadline = snap.deadlines.iter().find(|(uid, _)| *uid == waiter.uid).map(|(_, at)| *at);
        }
        let live = |order: &[Waiter], uid: &Uid| order.iter().any(|w| w.uid == *uid && w.life == Life::Live);
        let expected: Vec<Uid> = self.order.iter().filter(|w| w.life == Life::Live).map(|w| w.uid).collect();
        let found: Vec<Uid> = snap.queue.iter().copied().filter(|uid| live(&self.order, uid)).collect();
        if found != expected {
            return Err(format!(
                "queue: live waiters {found:?} on the server, {expected:?} in arrival order (queue {:?}, deadlines {})",
                snap.queue,
                self.deadlines_text(before)
            ));
        }
        for waiter in &self.order {
            if let Life::Gone(at) = waiter.life {
                if snap.queue.contains(&waiter.uid) && before > at + self.slack {
                    let ago = ms(before - at);
                    return Err(format!(
                        "queue: {} was disconnected while blocked {ago} ms ago, still queued",
                        waiter.uid
                    ));
                }
            }
        }
        // Waiters that do not come back and are no longer queued: forgotten,
        // their time folded into the turn of the next.
        let mut turn = self.free_base;
        let mut kept = Vec::new();
        let mut first_live_seen = false;
        for waiter in self.order.drain(..) {
            first_live_seen |= waiter.life == Life::Live;
            if waiter.life == Life::Live || snap.queue.contains(&waiter.uid) {
                kept.push(waiter);
                continue;
            }
            if let (false, Some(base)) = (first_live_seen, turn) {
                // A script waiter's deadline moves with every grant and
                // give-up (Redisson's arithmetic): it was dropped by this
                // snapshot, which is when the next one's turn came.
                let skipped = match waiter.kind {
                    Kind::Script => before,
                    _ => Self::skipped_by(&waiter, base).min(after),
                };
                turn = Some(skipped.max(base));
            }
            learned.dropped.push(waiter.uid);
        }
        self.order = kept;
        self.free_base = turn;
        Ok(())
    }

    /// The lock is free (at `now`): the first live waiter's turn has come by
    /// the time every waiter ahead of it was skipped; it comes back within
    /// its wait (a blocked one is granted at once).
    fn check_progress(&self, free: bool, now: Instant) -> Verdict {
        let (true, Some(base)) = (free, self.free_base) else { return Ok(()) };
        let mut turn = base;
        for waiter in &self.order {
            if waiter.life != Life::Live {
                turn = Self::skipped_by(waiter, turn);
                continue;
            }
            let bound = match waiter.blocked {
                Some((since, until)) if until > now + self.slack => turn.max(since),
                _ => turn + waiter.wait,
            } + self.slack;
            if now > bound {
                let (free_for, late) = (ms(now.saturating_duration_since(base)), ms(now - bound));
                return Err(format!(
                    "progress: the lock has been free for {free_for} ms, {late} ms past the bound of live waiter {} \
                     (wait {} ms, blocked {}); waiters {}",
                    waiter.uid,
                    ms(waiter.wait),
                    waiter.blocked.is_some(),
                    self.deadlines_text(now)
                ));
            }
            return Ok(());
        }
        Ok(())
    }

    /// The waiters with their life and deadline (ms from `now`).
    pub fn deadlines_text(&self, now: Instant) -> String {
        let text: Vec<String> = self
            .order
            .iter()
            .map(|w| {
                let deadline = w.deadline.map_or("-".into(), |at| {
                    if at >= now {
                        format!("+{}", ms(at - now))
                    } else {
                        format!("-{}", ms(now - at))
                    }
                });
                format!("{}:{:?}:{:?}:w{}:d{deadline}", w.uid, w.kind, w.life, ms(w.wait))
            })
            .collect();
        format!("[{}]", text.join(" "))
    }
}
