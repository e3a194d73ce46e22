//! The invariants, checked after every step and at the end.

use super::*;

impl Model {
    /// Polls until every invariant holds, failing after [`SETTLE`]: the
    /// client learns of external changes only at its next watchdog round.
    pub(super) async fn check(&mut self) {
        let mut orphans = HashMap::new();
        let settled = testkit::until_ok(SETTLE, async || {
            self.collect_finished().await;
            self.mark_new_guards().await;
            self.check_lost_is_final().await;
            let problems = match self.observe().await {
                None => vec!["the server did not answer".to_owned()],
                Some(server) => {
                    self.check_no_leaked_hold(&server, &mut orphans);
                    self.check_vanished_only_by_expiry(&server).await;
                    let mut problems = self.check_lost_when_not_held(&server);
                    problems.extend(self.check_one_owner(&server));
                    problems.extend(self.check_hold_counts(&server));
                    problems.extend(self.check_no_idle_subscription(&server));
                    problems
                }
            };
            problems.is_empty().then_some(()).ok_or(problems)
        })
        .await;
        if let Err(problems) = settled {
            self.fail(&format!("invariants still violated after {SETTLE:?}:\n  {}", problems.join("\n  ")));
        }
    }

    /// Invariant 3a: once lost, a guard stays lost, and `lost()` completes.
    pub(super) async fn check_lost_is_final(&mut self) {
        for index in 0..self.guards.len() {
            let held = &self.guards[index];
            let lost = held.guard.is_lost();
            if held.seen_lost && !lost {
                self.fail(&format!("G{} was reported lost, then not lost", held.id));
            }
            if lost && tokio::time::timeout(Duration::ZERO, held.guard.lost()).await.is_err() {
                self.fail(&format!("G{} is_lost() but lost() does not complete", held.id));
            }
            if lost && !held.seen_lost {
                let owner = held.owner.clone();
                self.excused_until.insert(owner, Instant::now() + WATCHDOG);
            }
            self.guards[index].seen_lost = lost;
        }
    }

    /// Invariant 2, promptly for holds nobody accounts for: a lock call
    /// that returned Err or None, a dropped guard, an aborted waiter leave
    /// no hold behind, not even one left to run out its lease.
    pub(super) fn check_no_leaked_hold(&self, server: &Observed, orphans: &mut HashMap<(usize, Vec<u8>), Instant>) {
        let now = Instant::now();
        let mut current = HashMap::new();
        for (lock, view) in server.locks.iter().enumerate() {
            for owner in view.holds.keys() {
                let accounted = self.live(lock).any(|g| &g.owner == owner)
                    || self.pending.iter().any(|p| p.at.lock == lock && &p.owner == owner);
                if accounted || self.excused(owner, now) {
                    continue;
                }
                let key = (lock, owner.clone());
                let since = orphans.get(&key).copied().unwrap_or(now);
                if now.duration_since(since) > ORPHAN_GRACE {
                    self.fail(&format!(
                        "{} {}: hold left with no guard and no waiter for {ORPHAN_GRACE:?} (count {}, pttl {})",
                        LOCKS[lock],
                        self.label(owner),
                        view.holds[owner],
                        view.pttl
                    ));
                }
                current.insert(key, since);
            }
        }
        *orphans = current;
    }

    /// Holds of a dropped client run out their lease; so may holds whose
    /// release a restart cut off, or whose loss the client just reported.
    pub(super) fn excused(&self, owner: &[u8], now: Instant) -> bool {
        let closed = self.owners.get(owner).is_none_or(|o| self.closed(o.at.slot, o.epoch));
        closed
            || self.restarted_until.is_some_and(|until| now < until)
            || self.excused_until.get(owner).is_some_and(|&until| now < until)
    }

    /// Marks the guards taken since the last marker, and those whose
    /// marker the subscriber missed (it was away): an expiry of their
    /// lock's key after it ended their hold.
    pub(super) async fn mark_new_guards(&mut self) {
        let unmarked =
            |held: &Held, expiries: &expiries::Expiries| held.marker.is_none_or(|m| !expiries.seen(m.marker));
        if !self.guards.iter().any(|g| unmarked(g, &self.expiries)) {
            return;
        }
        // Not seen (the subscriber away): no expiry can excuse them.
        let Some(marker) = self.expiries.barrier(&mut self.admin).await else { return };
        // Every marker published before the barrier is in by now, unless the
        // subscriber missed it.
        for index in 0..self.guards.len() {
            if unmarked(&self.guards[index], &self.expiries) {
                self.guards[index].marker = Some(Marked { marker, held: true });
            }
        }
    }

    /// Invariant 3b's reasons: a hold goes only by its guard's unlock, a
    /// delete, its lease's end, or a fault (a stall or restart may outlast
    /// a watchdog lease); never by another guard's release. A watchdog
    /// lease that ran out on the server (a client starved of the CPU for
    /// longer than a lease renews late) shows as an expiry of the lock's
    /// key after the guard's marker (published as the lock call returned,
    /// with a read that its owner held the lock then); a release never
    /// does.
    async fn check_vanished_only_by_expiry(&mut self, server: &Observed) {
        let now = Instant::now();
        let unexplained = |held: &Held| {
            held.doom.is_none()
                && !server.locks[held.lock].holds.contains_key(&held.owner)
                && held.lease_ends.is_none_or(|(earliest, _)| now < earliest)
                && held.asked.faults == self.faults
                && held.asked.deletes == self.deletes
        };
        let vanished: Vec<usize> = (0..self.guards.len()).filter(|&i| unexplained(&self.guards[i])).collect();
        if vanished.is_empty() {
            return;
        }
        let barrier = self.expiries.barrier(&mut self.admin).await;
        for index in vanished {
            let held = &self.guards[index];
            let key = LOCKS[held.lock].as_bytes();
            let expired_since = |since: Option<u64>| match (since, barrier) {
                (Some(since), Some(until)) => self.expiries.expired_between(key, since, until),
                _ => false,
            };
            // An expiry after a marker ends only a hold present at it. A
            // guard the client handed over lost was never held by its
            // account: its lease ran out first (its key may have expired
            // before the marker), which an expiry since the call shows.
            let ended_after_marker = held.marker.is_some_and(|m| m.held && expired_since(Some(m.marker)));
            let why = match (ended_after_marker, held.handed_over_lost && expired_since(held.asked.marker)) {
                (true, _) => "its key expired on the server, its watchdog late",
                (false, true) => "handed over lost, its key expired since the call",
                (false, false) => self.fail(&format!(
                    "the hold of G{} ({}) vanished: no delete, no fault, lease not over, key not expired; another \
                     release took it (lost: {}, handed over lost: {}, marker {:?})",
                    held.id,
                    self.label(&held.owner),
                    held.guard.is_lost(),
                    held.handed_over_lost,
                    held.marker
                )),
            };
            self.log.push(format!("     (G{}: {why})", held.id));
            self.guards[index].doom = Some(Doom::HoldGone);
        }
    }

    /// Invariant 3b: a guard whose hold is gone (or whose client was
    /// dropped) is reported lost; why it may be gone is checked first
    /// ([`Self::check_vanished_only_by_expiry`]).
    pub(super) fn check_lost_when_not_held(&mut self, server: &Observed) -> Vec<String> {
        let mut problems = vec![];
        for index in 0..self.guards.len() {
            let held = &self.guards[index];
            if held.doom.is_none() && !server.locks[held.lock].holds.contains_key(&held.owner) {
                self.guards[index].doom = Some(Doom::HoldGone);
            }
            let held = &self.guards[index];
            if let (Some(doom), false) = (held.doom, held.guard.is_lost()) {
                problems.push(format!("G{} ({}) not reported lost ({doom:?})", held.id, self.label(&held.owner)));
            }
        }
        problems
    }

    /// Invariant 1: never two owners at once.
    pub(super) fn check_one_owner(&self, server: &Observed) -> Vec<String> {
        let mut problems = vec![];
        for (lock, view) in server.locks.iter().enumerate() {
            let owners: BTreeSet<&str> = self.live(lock).map(|g| self.label(&g.owner)).collect();
            if owners.len() > 1 {
                problems.push(format!("{}: guards not lost for several owners {owners:?}", LOCKS[lock]));
            }
            if view.holds.len() > 1 {
                problems.push(format!("{}: several owners on the server {:?}", LOCKS[lock], view.holds.len()));
            }
        }
        problems
    }

    /// Invariant 2: a guard not reported lost is held on the server, once
    /// per guard; and no hold outlives its lease without a guard (a pending
    /// `lock()` task may already hold one more).
    pub(super) fn check_hold_counts(&self, server: &Observed) -> Vec<String> {
        let mut problems = vec![];
        for (lock, view) in server.locks.iter().enumerate() {
            let mut owners: BTreeSet<&[u8]> = view.holds.keys().map(Vec::as_slice).collect();
            owners.extend(self.live(lock).map(|g| g.owner.as_slice()));
            for owner in owners {
                let guards = self.live(lock).filter(|g| g.owner == owner).count() as i64;
                let pending = self.pending.iter().filter(|p| p.at.lock == lock && p.owner == owner).count() as i64;
                let count = view.holds.get(owner).copied().unwrap_or(0);
                if !(guards..=guards + pending).contains(&count) {
                    problems.push(format!(
                        "{} {}: {guards} guards not lost, {pending} pending, server count {count} (pttl {})",
                        LOCKS[lock],
                        self.label(owner),
                        view.pttl
                    ));
                }
            }
        }
        problems
    }

    /// Invariant 5 between steps: nobody waits, so nobody is subscribed.
    pub(super) fn check_no_idle_subscription(&self, server: &Observed) -> Vec<String> {
        let mut problems = vec![];
        for (lock, &count) in server.numsub.iter().enumerate() {
            if count > 0 && !self.pending.iter().any(|p| p.at.lock == lock) {
                problems.push(format!("{}: {count} subscribers and no waiter", LOCKS[lock]));
            }
        }
        let waited: Vec<Vec<u8>> =
            self.pending.iter().map(|p| rlock_client::release_channel(LOCKS[p.at.lock].as_bytes())).collect();
        for channel in server.channels.iter().filter(|c| !waited.contains(c)) {
            problems.push(format!("channel {} subscribed", String::from_utf8_lossy(channel)));
        }
        problems
    }

    pub(super) async fn observe(&mut self) -> Option<Observed> {
        let mut pipe = redis::pipe();
        for name in LOCKS {
            pipe.cmd("HGETALL").arg(name).cmd("PTTL").arg(name);
        }
        let channels: Vec<Vec<u8>> = LOCKS.iter().map(|name| rlock_client::release_channel(name.as_bytes())).collect();
        pipe.cmd("PUBSUB").arg("NUMSUB").arg(&channels).cmd("PUBSUB").arg("CHANNELS");
        let mut replies: Vec<redis::Value> = pipe.query_async(&mut self.admin).await.ok()?;
        let all_channels: Vec<Vec<u8>> = redis::from_redis_value(replies.pop()?).ok()?;
        let numsub: Vec<(Vec<u8>, i64)> = redis::from_redis_value(replies.pop()?).ok()?;
        let mut locks = vec![];
        for pair in replies.chunks(2) {
            let holds = redis::from_redis_value(pair[0].clone()).ok()?;
            locks.push(LockView { holds, pttl: redis::from_redis_value(pair[1].clone()).ok()? });
        }
        Some(Observed { locks, numsub: numsub.into_iter().map(|(_, n)| n).collect(), channels: all_channels })
    }

    pub(super) fn live(&self, lock: usize) -> impl Iterator<Item = &Held> + '_ {
        self.guards.iter().filter(move |g| g.lock == lock && !g.guard.is_lost())
    }

    /// Invariants 4 and 5 at the end: with every guard, task and client
    /// gone, no hold outlives its lease and no subscription is left.
    pub(super) async fn end(mut self) {
        self.guards.clear();
        for pending in std::mem::take(&mut self.pending) {
            pending.task.abort();
            let _ = pending.task.await;
        }
        self.slots.clear();
        self.log.push("end: every guard, task and client dropped".into());
        let settled = testkit::until_ok(SETTLE, async || {
            let problems = match self.observe().await {
                None => vec!["the server did not answer".to_owned()],
                Some(server) => {
                    let mut problems: Vec<String> = (server.locks.iter().zip(LOCKS))
                        .filter(|(view, _)| !view.holds.is_empty())
                        .map(|(view, name)| {
                            format!("{name} still held: {} fields, pttl {}", view.holds.len(), view.pttl)
                        })
                        .collect();
                    problems.extend(self.check_no_idle_subscription(&server));
                    problems
                }
            };
            problems.is_empty().then_some(()).ok_or(problems)
        })
        .await;
        if let Err(problems) = settled {
            self.fail(&format!("after the end, still after {SETTLE:?}:\n  {}", problems.join("\n  ")));
        }
    }
}
