//! The driver: actors on one fair lock in real time, one step at a time
//! (an actor's call, or a message or blocking reply reaching it), each
//! step followed by a snapshot held against the model. Idle ticks are
//! checked as well, so a lock left free is seen while it sits free.

use crate::io::{self, Blocker, Event};
use crate::model::{Kind, Life, Model, Uid, Waiter};
use redis::{Connection, Value};
use std::collections::{HashMap, VecDeque};
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::{Duration, Instant};
use testkit::{FairScripts, Rng, Server};

pub const SLOTS: usize = 8;
pub const WAIT_MS: (u64, u64) = (150, 400);
pub const LEASE_MS: (u64, u64) = (100, 500);
/// A live waiter comes back at the latest this long before its bound.
pub const MARGIN: Duration = Duration::from_millis(80);
/// A waiter coming back this close to its bound, or later, has lapsed:
/// the machine lagged, it may have lost its place.
pub const STRICT: Duration = Duration::from_millis(20);
/// Scheduling slack of every time bound, before measured lag.
pub const SLACK: Duration = Duration::from_millis(40);
pub const TICK: Duration = Duration::from_millis(5);
/// How long after the run the queue has to drain.
pub const DRAIN: Duration = Duration::from_secs(8);

pub enum State {
    /// Comes back at `next`; must call by `must` to stay live.
    Waiting {
        next: Instant,
        must: Instant,
    },
    /// A BLOCK call sent at `sent` is under way.
    Blocked {
        sent: Instant,
    },
    Holding {
        release_at: Option<Instant>,
    },
}

pub struct Actor {
    pub uid: Uid,
    pub kind: Kind,
    pub owner: String,
    pub wait: Duration,
    pub lease: Duration,
    pub state: State,
    pub give_up_at: Option<Instant>,
    pub kill_at: Option<Instant>,
    pub blocker: Option<Blocker>,
}

#[derive(Debug, Clone, Copy)]
pub enum Action {
    Arrive,
    Return(Uid),
    GiveUp(Uid),
    Kill(Uid),
    Release(Uid),
}

#[derive(Debug, Default)]
pub struct Stats {
    pub arrivals: u32,
    pub grants: u32,
    pub blocked_grants: u32,
    pub releases: u32,
    pub expiries: u32,
    pub give_ups: u32,
    pub kills: u32,
    /// Blocked waiters cut off (killed or gave up) while blocked.
    pub cut_off: u32,
    /// Blocking calls answered before their cut-off took effect.
    pub answered_first: u32,
    pub late_returns: u32,
    pub messages: u32,
    pub lapsed: u32,
    pub missed: u32,
    pub dropped: u32,
    pub checks: u32,
}

pub struct Driver<'s> {
    pub server: &'s Server,
    pub con: Connection,
    pub scripts: FairScripts,
    pub rng: Rng,
    pub kinds: &'static [Kind],
    pub model: Model,
    pub actors: Vec<Actor>,
    pub leases: HashMap<Uid, Duration>,
    /// Blocked waiters disconnected: the server may have granted them first.
    pub disconnected: Vec<Uid>,
    pub next_uid: Uid,
    pub next_arrival: Instant,
    pub events: Receiver<Event>,
    pub events_tx: Sender<Event>,
    pub backlog: VecDeque<Event>,
    pub start: Instant,
    pub log: Vec<String>,
    lags: VecDeque<(Instant, Duration)>,
    pub draining: bool,
    pub stats: Stats,
    /// The deadlines last logged (ms since the start).
    deadlines: Vec<(Uid, u128)>,
}

impl<'s> Driver<'s> {
    pub fn new(server: &'s Server, seed: u64, kinds: &'static [Kind]) -> Self {
        let mut con = server.connection();
        let scripts = FairScripts::default();
        scripts.load(&mut con).unwrap();
        let (events_tx, events) = mpsc::channel();
        io::listen(server, events_tx.clone());
        let start = Instant::now();
        Self {
            server,
            con,
            scripts,
            rng: Rng::from_seed(seed),
            kinds,
            model: Model::default(),
            actors: vec![],
            leases: HashMap::new(),
            disconnected: vec![],
            next_uid: 1,
            next_arrival: start,
            events,
            events_tx,
            backlog: VecDeque::new(),
            start,
            log: vec![],
            lags: VecDeque::new(),
            draining: false,
            stats: Stats::default(),
            deadlines: vec![],
        }
    }

    pub fn note(&mut self, text: String) {
        let at = self.start.elapsed().as_millis();
        self.log.push(format!("{at:6} {text}"));
    }

    /// The machine was `lag` late somewhere: bounds get that much slack
    /// for the next 2 s.
    pub fn lag(&mut self, lag: Duration) {
        if lag > Duration::from_millis(3) {
            self.lags.push_back((Instant::now(), lag));
        }
    }

    fn slack(&mut self) -> Duration {
        let now = Instant::now();
        while self.lags.front().is_some_and(|(at, _)| now.duration_since(*at) > Duration::from_secs(2)) {
            self.lags.pop_front();
        }
        SLACK + self.lags.iter().map(|(_, lag)| *lag).max().unwrap_or_default()
    }

    pub fn between(&mut self, low: u64, high: u64) -> u64 {
        low + self.rng.below(high.saturating_sub(low).max(1))
    }

    pub fn actor(&mut self, uid: Uid) -> Option<&mut Actor> {
        self.actors.iter_mut().find(|a| a.uid == uid)
    }

    pub fn remove(&mut self, uid: Uid) {
        self.actors.retain(|a| a.uid != uid);
    }

    /// Runs for `length`, then lets the queue drain.
    pub fn run(&mut self, length: Duration) -> Result<(), String> {
        let end = self.start + length;
        loop {
            let now = Instant::now();
            if !self.draining && now >= end {
                self.drain();
            }
            if self.draining && self.actors.is_empty() {
                break;
            }
            if now > end + DRAIN {
                return Err(format!("drain: {} actors left after {DRAIN:?}", self.actors.len()));
            }
            self.backlog.extend(self.events.try_iter());
            if let Some(event) = self.backlog.pop_front() {
                self.on_event(event)?;
            } else {
                match self.next_due() {
                    Some((due, action)) if due <= now => {
                        self.lag(now - due);
                        self.act(action)?;
                    }
                    next => {
                        let until = next.map_or(now + TICK, |(due, _)| due.min(now + TICK));
                        io::wait_events(&self.events, &mut self.backlog, until);
                        self.lag(Instant::now().saturating_duration_since(until));
                    }
                }
            }
            self.check()?;
        }
        let live: Vec<Uid> = self.model.order.iter().filter(|w| w.life == Life::Live).map(|w| w.uid).collect();
        if !live.is_empty() {
            return Err(format!("drain: live waiters {live:?} left without the lock"));
        }
        Ok(())
    }

    /// No more arrivals, gives-up or kills; holders release soon.
    fn drain(&mut self) {
        self.draining = true;
        self.note("run over: draining".into());
        let soon = Instant::now() + Duration::from_millis(5);
        for actor in &mut self.actors {
            actor.give_up_at = None;
            actor.kill_at = None;
            if let State::Holding { release_at } = &mut actor.state {
                *release_at = Some(release_at.map_or(soon, |at| at.min(soon)));
            }
        }
    }

    fn next_due(&self) -> Option<(Instant, Action)> {
        let mut due: Vec<(Instant, Action)> = vec![];
        if !self.draining && self.actors.len() < SLOTS {
            due.push((self.next_arrival, Action::Arrive));
        }
        for actor in &self.actors {
            match actor.state {
                State::Waiting { next, .. } => due.push((next, Action::Return(actor.uid))),
                State::Holding { release_at: Some(at) } => due.push((at, Action::Release(actor.uid))),
                _ => {}
            }
            if !matches!(actor.state, State::Holding { .. }) {
                due.extend(actor.give_up_at.map(|at| (at, Action::GiveUp(actor.uid))));
                due.extend(actor.kill_at.map(|at| (at, Action::Kill(actor.uid))));
            }
        }
        due.into_iter().min_by_key(|(at, _)| *at)
    }

    fn on_event(&mut self, event: Event) -> Result<(), String> {
        match event {
            Event::Message { uid, at } => {
                let Some(actor) = self.actor(uid) else { return Ok(()) };
                if matches!(actor.state, State::Waiting { .. }) {
                    self.stats.messages += 1;
                    self.note(format!("{uid} told its turn"));
                    self.plan_return(uid, at, false);
                }
                Ok(())
            }
            Event::Reply { uid, reply, at } => self.on_block_reply(uid, reply, at),
        }
    }

    /// Plans `uid`'s return after its turn `turn`: mostly at once, a
    /// quarter of the time late (but within its wait). `fresh`: after a
    /// reply (the plan is replaced), else after a message (the earlier wins).
    pub fn plan_return(&mut self, uid: Uid, turn: Instant, fresh: bool) {
        let wait = self.actor(uid).map(|a| a.wait).unwrap_or_default();
        let room = wait.saturating_sub(MARGIN).as_millis() as u64;
        let late = self.rng.chance(25);
        self.stats.late_returns += u32::from(late);
        let delay =
            Duration::from_millis(if late { self.rng.below(room.max(1)) } else { self.rng.below(room.clamp(1, 8)) });
        let (at, bound) = (turn + delay, turn + wait);
        let Some(actor) = self.actor(uid) else { return };
        actor.state = match actor.state {
            State::Waiting { next, must } if !fresh => State::Waiting { next: next.min(at), must: must.min(bound) },
            _ => State::Waiting { next: at, must: bound },
        };
    }

    fn check(&mut self) -> Result<(), String> {
        self.model.slack = self.slack();
        self.stats.checks += 1;
        let snap = io::snapshot(&mut self.con)?;
        self.lag(snap.taken.1 - snap.taken.0);
        let (actors, disconnected, leases) = (&self.actors, &self.disconnected, &self.leases);
        let in_flight = |uid| {
            disconnected.contains(&uid)
                || actors.iter().any(|a| a.uid == uid && matches!(a.state, State::Blocked { .. }))
        };
        let since = |at: Instant| at.saturating_duration_since(self.start).as_millis();
        let floor = self.model.turn_low.map(since);
        let learned = self.model.check(&snap, in_flight, |uid| leases[&uid]).map_err(|e| {
            format!(
                "{e}\nsnapshot: holders {:?} pttl {} queue {:?}, taken at {}-{} ms, turns from {floor:?} ms",
                snap.holders,
                snap.pttl,
                snap.queue,
                since(snap.taken.0),
                since(snap.taken.1)
            )
        })?;
        for uid in learned.granted {
            self.stats.blocked_grants += 1;
            self.note(format!("{uid} granted by the server (seen holding)"));
            self.held(uid, snap.taken.1);
        }
        if let Some(uid) = learned.expired {
            self.stats.expiries += 1;
            self.note(format!("{uid}'s lease ran out"));
            if self.actor(uid).is_some_and(|a| matches!(a.state, State::Holding { .. })) {
                self.remove(uid);
            }
        }
        for uid in learned.dropped {
            self.stats.dropped += 1;
            self.note(format!("{uid} dropped from the queue"));
        }
        let deadlines: Vec<(Uid, u128)> = snap
            .deadlines
            .iter()
            .map(|(uid, at)| (*uid, at.saturating_duration_since(self.start).as_millis()))
            .collect();
        let moved = deadlines.len() != self.deadlines.len()
            || deadlines.iter().zip(&self.deadlines).any(|(a, b)| a.0 != b.0 || a.1.abs_diff(b.1) > 2);
        if moved {
            let text: Vec<String> = deadlines.iter().map(|(uid, at)| format!("{uid}@{at}")).collect();
            self.note(format!("   deadlines {}", text.join(" ")));
            self.deadlines = deadlines;
        }
        for uid in learned.lapsed {
            self.stats.lapsed += 1;
            self.note(format!("{uid} (script) excused: its deadline came, or a script dropped it"));
        }
        for uid in std::mem::take(&mut self.model.missed) {
            self.stats.missed += 1;
            self.note(format!("{uid} missed: dropped past its bound while the machine stalled the driver"));
        }
        if let Some(uid) = learned.answered {
            self.take_answer(uid)?;
            return self.check();
        }
        self.model.script_step = false;
        Ok(())
    }

    /// The server granted `uid` the lock: the blocked waiters ahead of it
    /// (in arrival order) were no longer queued, so their calls were
    /// answered (granted before it, or their block ended): their replies
    /// first.
    pub fn settle_blocked_ahead(&mut self, uid: Uid) -> Result<(), String> {
        let ahead = self.model.order.iter().take_while(|w| w.uid != uid).map(|w| w.uid).collect::<Vec<_>>();
        for waiter in ahead {
            if self.actor(waiter).is_some_and(|a| matches!(a.state, State::Blocked { .. })) {
                self.take_answer(waiter)?;
            }
        }
        Ok(())
    }

    /// Takes the reply of `uid`'s blocking call, which the server sent (it
    /// shows the waiter neither queued nor holding), and acts on it.
    fn take_answer(&mut self, uid: Uid) -> Result<(), String> {
        let Some((reply, at)) = self.reply_for(uid, Instant::now() + testkit::PATIENCE) else {
            return Err(format!("{uid}: neither queued nor holding, and its blocking call not answered"));
        };
        self.note(format!("{uid}'s blocking call answered while the driver was away"));
        self.on_block_reply(uid, reply, at)
    }

    /// The reply to `uid`'s blocking call, waited for until `until` (only
    /// what already came when that has passed).
    pub fn reply_for(&mut self, uid: Uid, until: Instant) -> Option<(Result<Value, String>, Instant)> {
        loop {
            self.backlog.extend(self.events.try_iter());
            let found = self.backlog.iter().position(|e| matches!(e, Event::Reply { uid: u, .. } if *u == uid));
            if let Some(Event::Reply { reply, at, .. }) = found.and_then(|at| self.backlog.remove(at)) {
                return Some((reply, at));
            }
            if Instant::now() >= until {
                return None;
            }
            let tick = until.min(Instant::now() + TICK);
            io::wait_events(&self.events, &mut self.backlog, tick);
            self.lag(Instant::now().saturating_duration_since(tick));
        }
    }

    /// `uid` holds the lock since about `at`: plan its release (or not: its
    /// lease runs out).
    pub fn held(&mut self, uid: Uid, at: Instant) {
        self.stats.grants += 1;
        let lease = self.leases[&uid].as_millis() as u64;
        let release_at = if self.draining {
            Some(at + Duration::from_millis(self.between(2, 20)))
        } else if self.rng.chance(70) {
            Some(at + Duration::from_millis(self.between(5, lease - 30)))
        } else {
            None
        };
        if let Some(actor) = self.actor(uid) {
            actor.state = State::Holding { release_at };
        }
    }

    /// An arrival: a new actor, queued in the model before its first call.
    pub fn arrive(&mut self) -> Result<(), String> {
        let uid = self.next_uid;
        self.next_uid += 1;
        let kind = *self.rng.pick(self.kinds);
        let wait = Duration::from_millis(self.between(WAIT_MS.0, WAIT_MS.1));
        let lease = Duration::from_millis(self.between(LEASE_MS.0, LEASE_MS.1));
        let now = Instant::now();
        let give_up_at = self.rng.chance(12).then(|| now + Duration::from_millis(self.rng.below(600)));
        let kill_at = self.rng.chance(15).then(|| now + Duration::from_millis(self.rng.below(500)));
        let blocker = (kind == Kind::Block).then(|| Blocker::new(self.server, uid, self.events_tx.clone()));
        self.next_arrival = now + Duration::from_millis(self.between(5, 60));
        self.leases.insert(uid, lease);
        self.model.arrive(Waiter::new(uid, kind, wait));
        let state = State::Waiting { next: now, must: now + wait };
        let owner = io::owner(kind, uid);
        self.actors.push(Actor { uid, kind, owner, wait, lease, state, give_up_at, kill_at, blocker });
        self.stats.arrivals += 1;
        self.note(format!("{uid} arrives ({kind:?}, wait {} ms, lease {} ms)", wait.as_millis(), lease.as_millis()));
        self.call(uid)
    }
}
