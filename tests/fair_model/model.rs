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
    /// Dropped by the server while the driver, stalled by the machine, did
    /// not call for it: its turn had come and its wait had run out (see
    /// [`Model::excuse_missed`]).
    Missed,
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
    /// A blocked waiter the server no longer shows (neither queued nor
    /// holding): it was answered, and the check stopped short of it; the
    /// driver takes its reply and checks again.
    pub answered: Option<Uid>,
}

#[derive(Default)]
pub struct Model {
    pub order: Vec<Waiter>,
    pub holder: Option<Hold>,
    /// When the lock became free, moved to a later departure ahead of the
    /// first live waiter (its turn comes then).
    pub free_base: Option<Instant>,
    /// The earliest the turn of the first waiter in `order` can come while
    /// the lock is free (the freeing's lower bound, moved past the waiters
    /// the server dropped ahead of it): the floor [`Model::excuse_missed`]
    /// counts from.
    pub turn_low: Option<Instant>,
    /// Live waiters the server dropped once their turn and wait had passed
    /// while the driver was stalled ([`Life::Missed`]), not yet logged.
    pub missed: Vec<Uid>,
    /// The first live waiter still queued, and the earliest its turn can
    /// come, as [`Model::excuse_missed`] last found them.
    first_live: Option<(Uid, Instant)>,
    /// Scheduling slack for every time bound (grows with measured lag).
    pub slack: Duration,
    /// The step just checked ran one of Redisson's scripts.
    pub script_step: bool,
}

pub type Verdict<T = ()> = Result<T, String>;

/// How far the server's clock (whole ms) may put an event before the
/// instants the driver bounds it by.
const CLOCK_TOLERANCE: Duration = Duration::from_millis(2);

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
        // Nobody ahead of it was queued then (a stall may have kept the
        // driver from seeing them go).
        self.excuse_missed((|_| false, |_| false), Some(uid), at.1);
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

    /// The holder released the lock between `at.0` and `at.1`.
    pub fn release(&mut self, at: (Instant, Instant)) {
        self.holder = None;
        self.free_base = Some(at.1);
        self.turn_low = Some(at.0);
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
                let end = hold.lease_end;
                self.release(end);
            }
            (None, _) => {}
        }
        learned.answered = self.excuse_missed((|uid| snap.queue.contains(&uid), &in_flight), server_holder, after);
        if learned.answered.is_some() {
            return Ok(learned);
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

    /// Excuses the live waiters the server no longer queued (`queued`) by
    /// `by` (up to `stop_at`, the server's holder) where it may have dropped
    /// them rightly while the driver, stalled by the machine, did not call
    /// for them ([`Life::Missed`]). A native waiter that does not call is
    /// kept until its deadline as the server last showed it, or, once its
    /// turn has come, its turn plus its wait, whichever is earlier (its turn
    /// sets its deadline to that). Its turn comes no earlier than the lock's
    /// freeing (the holder's lease end, or `turn_low`), nor than the
    /// earliest each native waiter ahead that left could have left by the
    /// same rule; behind a live waiter still queued it has not come. A
    /// waiter dropped before that stays live, and the queue check fails on
    /// it: no stall explains it. Stops at a waiter in a BLOCK call that the
    /// server no longer shows: it was answered, granted (its lease perhaps
    /// run out since) or its block ended, which only its reply tells; that
    /// waiter is returned.
    fn excuse_missed(
        &mut self,
        (queued, in_flight): (impl Fn(Uid) -> bool, impl Fn(Uid) -> bool),
        stop_at: Option<Uid>,
        by: Instant,
    ) -> Option<Uid> {
        self.first_live = None;
        let base = self.holder.as_ref().map(|hold| hold.lease_end.0).or(self.turn_low)?;
        // The earliest the next waiter's turn can come; `None` behind a live
        // waiter still queued.
        let mut turn = Some(base);
        // The turn of the first waiter that stays in the order.
        let mut first_kept = None;
        for waiter in &mut self.order {
            let queued = queued(waiter.uid);
            let native = waiter.kind != Kind::Script;
            if queued || stop_at == Some(waiter.uid) {
                first_kept.get_or_insert(turn.unwrap_or(base));
            }
            if stop_at == Some(waiter.uid) {
                break;
            }
            let by_turn = turn.map(|turn| turn + waiter.wait);
            let leaves = [waiter.deadline, by_turn].into_iter().flatten().min();
            // The next turn comes once this one has left, and not before.
            let next = turn.map(|turn| leaves.map_or(turn, |at| at.max(turn)));
            match waiter.life {
                Life::Live if queued => {
                    if native && turn.is_some() {
                        self.first_live = Some((waiter.uid, turn.unwrap_or(base)));
                    }
                    turn = None;
                }
                // Its deadline decides, as in check_queue: dropped, it left
                // no later than its turn.
                Life::Live if !native && waiter.deadline.is_some_and(|at| at <= by + self.slack) => {
                    waiter.life = Life::Lapsed;
                    self.missed.push(waiter.uid);
                }
                Life::Live if !native => {}
                // Answered (the server holds a blocked waiter alive): granted
                // (its lease perhaps run out since), or its block ended.
                Life::Live if waiter.blocked.is_some() || in_flight(waiter.uid) => return Some(waiter.uid),
                Life::Live => {
                    if leaves.is_none_or(|at| at > by + CLOCK_TOLERANCE) {
                        first_kept.get_or_insert(turn.unwrap_or(base));
                        break;
                    }
                    waiter.life = Life::Missed;
                    self.missed.push(waiter.uid);
                    turn = next;
                }
                Life::Dead | Life::Missed if native => turn = next,
                _ => {}
            }
        }
        self.turn_low = Some(first_kept.or(turn).unwrap_or(base));
        None
    }

    /// The earliest `uid`'s turn can have come, when it is the first live
    /// waiter still queued: its return is bounded by that plus its wait
    /// too, as the message that told its turn may reach a stalled driver
    /// late (and it was sent no earlier than this).
    pub fn turn_floor(&self, uid: Uid) -> Option<Instant> {
        self.first_live.filter(|(first, _)| *first == uid).map(|(_, turn)| turn)
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
            // Due by the latest the server can have read the queue (the
            // snapshot's end: a stall may fall within it).
            let due = waiter.deadline.is_some_and(|at| at <= after + self.slack);
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
