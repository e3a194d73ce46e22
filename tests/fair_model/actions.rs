//! What actors do: the waiting call (arrival and return), the blocking
//! call and its reply, give-up, kill and release.

use crate::driver::{Action, Driver, State, STRICT};
use crate::io::{self, Event, NAME};
use crate::model::{Kind, Life, Uid};
use redis::Value;
use std::time::{Duration, Instant};
use testkit::server_time_ms;

fn ms(d: Duration) -> i64 {
    d.as_millis() as i64
}

impl Driver<'_> {
    pub fn act(&mut self, action: Action) -> Result<(), String> {
        match action {
            Action::Arrive => self.arrive(),
            Action::Return(uid) => self.come_back(uid),
            Action::GiveUp(uid) => self.give_up(uid),
            Action::Kill(uid) => self.kill(uid),
            Action::Release(uid) => self.release(uid),
        }
    }

    fn come_back(&mut self, uid: Uid) -> Result<(), String> {
        let now = Instant::now();
        let State::Waiting { must, .. } = self.actor(uid).unwrap().state else {
            unreachable!("a return while waiting")
        };
        // The first live waiter's bound counts from the earliest its turn
        // can have come: the message that told it may have reached the
        // driver late (the machine stalled it).
        let wait = self.actor(uid).unwrap().wait;
        let must = self.model.turn_floor(uid).map_or(must, |turn| must.min(turn + wait));
        if now + STRICT > must {
            if let Some(waiter) = self.model.waiter(uid).filter(|w| w.life == Life::Live) {
                waiter.life = Life::Lapsed;
                self.stats.lapsed += 1;
                let past = now.saturating_duration_since(must).as_millis();
                self.note(format!("{uid} lapsed: back {past} ms past its bound (less {STRICT:?})"));
            }
        }
        // A lapsed waiter (or one the server dropped after it lapsed) leaves.
        if self.model.waiter(uid).is_none_or(|w| matches!(w.life, Life::Lapsed | Life::Missed)) {
            return self.give_up(uid);
        }
        self.call(uid)
    }

    /// The waiting acquire of `uid` (its arrival or a return).
    pub fn call(&mut self, uid: Uid) -> Result<(), String> {
        let actor = self.actor(uid).unwrap();
        let (kind, owner, wait, lease) = (actor.kind, actor.owner.clone(), ms(actor.wait), ms(actor.lease));
        let t0 = Instant::now();
        let reply = match kind {
            Kind::Poll => {
                redis::cmd("RFAIR.ACQUIRE").arg(NAME).arg(&owner).arg(lease).arg("WAIT").arg(wait).query(&mut self.con)
            }
            Kind::Script => {
                self.model.script_step = true;
                let now = server_time_ms(&mut self.con);
                self.scripts.acquire(NAME, owner.as_bytes(), lease, Some(wait), now).query(&mut self.con)
            }
            Kind::Block => return self.block(uid),
        };
        let reply: Value = reply.map_err(|e| format!("{uid}: acquire: {e}"))?;
        let t1 = Instant::now();
        self.lag(t1 - t0);
        match reply {
            Value::Nil => {
                self.note(format!("{uid} acquires"));
                self.settle_blocked_ahead(uid)?;
                self.model.grant(uid, (t0, t1), Duration::from_millis(lease as u64))?;
                self.held(uid, t1);
            }
            Value::Int(hint) if hint >= 1 || kind == Kind::Script => {
                self.note(format!("{uid} queued, hint {hint} ms"));
                // Redisson's scripts reply 0 to a waiter behind a free lock's head.
                let hint = Duration::from_millis(hint.max(if kind == Kind::Script { 10 } else { 1 }) as u64);
                self.plan_return(uid, t0 + hint, true);
            }
            other => return Err(format!("{uid}: acquire replied {other:?}")),
        }
        Ok(())
    }

    /// Sends a BLOCK call and waits until the server took it: blocked, or
    /// answered.
    fn block(&mut self, uid: Uid) -> Result<(), String> {
        let actor = self.actor(uid).unwrap();
        let (owner, wait, lease) = (actor.owner.clone(), ms(actor.wait), ms(actor.lease));
        let block = self.between(30, 2 * wait as u64);
        let mut call = redis::cmd("RFAIR.ACQUIRE");
        call.arg(NAME).arg(&owner).arg(lease).arg("WAIT").arg(wait).arg("BLOCK").arg(block);
        let sent = Instant::now();
        let actor = self.actor(uid).unwrap();
        let blocker = actor.blocker.as_ref().expect("a blocking actor's connection");
        blocker.send(call);
        let client_id = blocker.client_id;
        actor.state = State::Blocked { sent };
        let bound = sent + Duration::from_secs(2);
        loop {
            if self.backlog.iter().any(|e| matches!(e, Event::Reply { uid: u, .. } if *u == uid)) {
                self.note(format!("{uid} called with BLOCK {block} ms: answered at once"));
                return Ok(());
            }
            if io::is_blocked(&mut self.con, client_id)? {
                let now = Instant::now();
                if let Some(waiter) = self.model.waiter(uid) {
                    waiter.blocked = Some((now, sent + Duration::from_millis(block)));
                }
                self.note(format!("{uid} blocks for {block} ms"));
                return Ok(());
            }
            if Instant::now() > bound {
                return Err(format!("{uid}: a BLOCK call neither blocked nor answered within 2 s"));
            }
            let until = Instant::now() + Duration::from_millis(1);
            io::wait_events(&self.events, &mut self.backlog, until);
            self.lag(Instant::now().saturating_duration_since(until));
        }
    }

    pub fn on_block_reply(&mut self, uid: Uid, reply: Result<Value, String>, at: Instant) -> Result<(), String> {
        let Some(actor) = self.actor(uid) else { return Ok(()) };
        let lease = actor.lease;
        match (&actor.state, reply) {
            (State::Blocked { sent }, Ok(Value::Nil)) => {
                let sent = *sent;
                self.note(format!("{uid} granted (blocking call)"));
                self.settle_blocked_ahead(uid)?;
                self.model.grant(uid, (sent, at), lease)?;
                self.held(uid, at);
            }
            (State::Blocked { .. }, Ok(Value::Int(hint))) if hint >= 1 => {
                if let Some(waiter) = self.model.waiter(uid) {
                    waiter.blocked = None;
                }
                self.note(format!("{uid}'s block ran out, hint {hint} ms"));
                self.plan_return(uid, at, true);
            }
            (State::Holding { .. }, Ok(Value::Nil)) => {}
            (_, reply) => return Err(format!("{uid}: blocking acquire replied {reply:?}")),
        }
        Ok(())
    }

    fn give_up(&mut self, uid: Uid) -> Result<(), String> {
        self.stats.give_ups += 1;
        if self.cut_off(uid, "gives up")? {
            return Ok(());
        }
        let Some(actor) = self.actor(uid).filter(|a| !matches!(a.state, State::Holding { .. })) else {
            return Ok(());
        };
        let (kind, owner, wait) = (actor.kind, actor.owner.clone(), ms(actor.wait));
        self.model.script_step = kind == Kind::Script;
        let sent = Instant::now();
        let reply: redis::RedisResult<Value> = match kind {
            Kind::Script => self.scripts.cancel(NAME, owner.as_bytes(), wait).query(&mut self.con),
            _ => redis::cmd("RFAIR.CANCEL").arg(NAME).arg(&owner).arg("WAIT").arg(wait).query(&mut self.con),
        };
        reply.map_err(|e| format!("{uid}: cancel: {e}"))?;
        self.lag(sent.elapsed());
        self.model.leave(uid, Instant::now());
        self.remove(uid);
        self.note(format!("{uid} gives up"));
        Ok(())
    }

    fn kill(&mut self, uid: Uid) -> Result<(), String> {
        self.stats.kills += 1;
        if self.cut_off(uid, "killed")? {
            return Ok(());
        }
        if self.actor(uid).is_none_or(|a| matches!(a.state, State::Holding { .. })) {
            return Ok(());
        }
        if let Some(waiter) = self.model.waiter(uid) {
            waiter.life = Life::Dead;
        }
        self.remove(uid);
        self.note(format!("{uid} killed (stops calling)"));
        Ok(())
    }

    /// Closes a blocked waiter's connection (from the server's side), which
    /// takes it off the queue if it was still blocked. Whether it was: a
    /// reply already come, or coming before the connection's error, ended
    /// the block first (acted on here: the waiter now waits or holds).
    fn cut_off(&mut self, uid: Uid, why: &str) -> Result<bool, String> {
        if !matches!(self.actor(uid).unwrap().state, State::Blocked { .. }) {
            return Ok(false);
        }
        if let Some((reply, at)) = self.reply_for(uid, Instant::now()) {
            self.stats.answered_first += 1;
            self.note(format!("{uid}'s blocking call answered before it {why}"));
            self.on_block_reply(uid, reply, at)?;
            return Ok(false);
        }
        let client_id = self.actor(uid).unwrap().blocker.as_ref().unwrap().client_id;
        let _: Value = redis::cmd("CLIENT")
            .arg("KILL")
            .arg("ID")
            .arg(client_id)
            .query(&mut self.con)
            .map_err(|e| format!("CLIENT KILL: {e}"))?;
        let at = Instant::now();
        match self.reply_for(uid, at + testkit::PATIENCE) {
            Some((Ok(reply), answered)) => {
                self.stats.answered_first += 1;
                self.note(format!("{uid}'s blocking call answered as it {why}"));
                self.on_block_reply(uid, Ok(reply), answered)?;
                return Ok(false);
            }
            Some((Err(_), _)) => {}
            None => return Err(format!("{uid}: its blocking call neither answered nor cut off after CLIENT KILL")),
        }
        if let Some(position) = self.model.position(uid) {
            let waiter = &mut self.model.order[position];
            waiter.life = Life::Gone(at);
            waiter.blocked = None;
            // The server gives its place up at once, with Redisson's arithmetic.
            let wait = waiter.wait;
            self.model.take_off_script_deadlines(position + 1, wait);
        }
        self.stats.cut_off += 1;
        self.disconnected.push(uid);
        self.remove(uid);
        self.note(format!("{uid} {why}: disconnected while blocked"));
        Ok(true)
    }

    fn release(&mut self, uid: Uid) -> Result<(), String> {
        let actor = self.actor(uid).unwrap();
        let (kind, owner, lease) = (actor.kind, actor.owner.clone(), ms(actor.lease));
        self.model.script_step = kind == Kind::Script;
        let sent = Instant::now();
        let reply: redis::RedisResult<Value> = match kind {
            Kind::Script => {
                let now = server_time_ms(&mut self.con);
                let id = format!("r{uid}");
                self.scripts.release(NAME, owner.as_bytes(), lease, id.as_bytes(), now).query(&mut self.con)
            }
            _ => redis::cmd("RFAIR.RELEASE").arg(NAME).arg(&owner).query(&mut self.con),
        };
        let reply = reply.map_err(|e| format!("{uid}: release: {e}"))?;
        let at = Instant::now();
        self.lag(at - sent);
        self.remove(uid);
        let holds = self.model.holder.as_ref().filter(|hold| hold.uid == uid).map(|hold| hold.lease_end.0);
        match reply {
            Value::Int(1) => {
                self.stats.releases += 1;
                let took = (at - sent).as_millis();
                self.note(format!("{uid} releases (sent {took} ms before)"));
                // RFAIR.RELEASE (as Redisson's script) replies 1 to a lock
                // whose lease already ran out: it was free since then.
                if let Some(lease_end) = holds {
                    self.model.release((sent.min(lease_end), at));
                }
            }
            Value::Nil => match holds {
                Some(end) if end > at + self.model.slack => {
                    let left = end.duration_since(at).as_millis();
                    return Err(format!("{uid}: release refused with {left} ms of its lease left"));
                }
                _ => self.note(format!("{uid} releases: its lease had run out")),
            },
            other => return Err(format!("{uid}: release replied {other:?}")),
        }
        Ok(())
    }
}
