//! The operations the model draws, each against the client and the server.

use super::*;

impl Model {
    pub(super) async fn act(&mut self, op: &Op, stalled: bool) -> String {
        let outcome = self.run_op(op, stalled).await;
        // While the server sleeps a marker would wait for it (and a guard
        // taken then is excused by the stall).
        if !stalled {
            self.mark_new_guards().await;
        }
        outcome
    }

    async fn run_op(&mut self, op: &Op, stalled: bool) -> String {
        match *op {
            Op::TryLock { at, via, wait_ms, lease_ms } => {
                let asked = self.ask(stalled).await;
                self.try_lock(at, via, (wait_ms, lease_ms), asked).await
            }
            Op::LockWithLease { at, lease_ms, bound_ms } => {
                let asked = self.ask(stalled).await;
                self.lock_with_lease(at, lease_ms, bound_ms, asked).await
            }
            Op::SpawnLock { at } => {
                let asked = self.ask(stalled).await;
                self.spawn_lock(at, asked)
            }
            Op::Collect { task } => self.collect(task).await,
            Op::Abort { task } => self.abort(task).await,
            Op::Unlock { guard } => self.unlock(guard, stalled).await,
            Op::Drop { guard } => self.drop_guard(guard, stalled),
            Op::Delete { lock } => self.delete(lock, "DEL").await,
            Op::ForceRelease { lock } => self.delete(lock, "RLOCK.FORCERELEASE").await,
            Op::Restart { lose_data } => self.restart(lose_data).await,
            Op::DropClient { slot } => self.drop_client(slot),
            Op::NewClient { slot } => self.new_client(slot).await,
        }
    }

    /// What the model knows as a lock call is made; a marker published
    /// first, unless the server sleeps (a guard taken then is excused by
    /// the stall).
    async fn ask(&mut self, stalled: bool) -> Asked {
        let marker = match stalled {
            true => None,
            false => Some(self.expiries.mark(&mut self.admin).await),
        };
        Asked { faults: self.faults, deletes: self.deletes, marker }
    }

    /// `guard` as its lock call returned it: lost or not, read at once
    /// (a loss later may be a vanish the checks judge), then the marker.
    async fn hand_over(&mut self, guard: Guard, lock: usize, asked: Asked) -> HandedOver {
        let lost = guard.is_lost();
        let marked = match asked.marker {
            // The server sleeps: the marker would wait for it.
            None => None,
            Some(_) => {
                let marker = self.expiries.reserve();
                expiries::mark_holder(&mut self.admin, marker, LOCKS[lock], guard.lock().owner()).await
            }
        };
        HandedOver { guard, lost, marked }
    }

    pub(super) async fn try_lock(
        &mut self,
        at: At,
        via: Via,
        (wait_ms, lease_ms): (u64, Option<u64>),
        asked: Asked,
    ) -> String {
        let started = Instant::now();
        let lock = match (via, &self.slots[at.slot].client) {
            (Via::SameOwner, Some(client)) => client.owned_by(self.handle(at).owner()).lock(LOCKS[at.lock]),
            _ => self.handle(at).clone(),
        };
        let lease = lease_ms.map(Duration::from_millis);
        match lock.try_lock(Duration::from_millis(wait_ms), lease).await {
            Ok(Some(guard)) => {
                let handed_over = self.hand_over(guard, at.lock, asked).await;
                self.acquired(at, handed_over, lease.map(|lease| (started, lease)), asked)
            }
            Ok(None) if self.slots[at.slot].client.is_none() => self.fail("try_lock on a dropped client: Ok(None)"),
            Ok(None) => "busy".into(),
            Err(err) => self.acquire_failed(at, err),
        }
    }

    pub(super) async fn lock_with_lease(&mut self, at: At, lease_ms: u64, bound_ms: u64, asked: Asked) -> String {
        let lease = Duration::from_millis(lease_ms);
        let started = Instant::now();
        let attempt = tokio::time::timeout(Duration::from_millis(bound_ms), self.handle(at).lock_with_lease(lease));
        match attempt.await {
            Ok(Ok(guard)) => {
                let handed_over = self.hand_over(guard, at.lock, asked).await;
                self.acquired(at, handed_over, Some((started, lease)), asked)
            }
            Ok(Err(err)) => self.acquire_failed(at, err),
            Err(_) if self.slots[at.slot].client.is_none() => self.fail("lock on a dropped client kept waiting"),
            Err(_) => "gave up (future dropped)".into(),
        }
    }

    pub(super) fn spawn_lock(&mut self, at: At, asked: Asked) -> String {
        let lock = self.handle(at).clone();
        let owner = lock.owner().to_vec();
        let (mut admin, marker) = (self.admin.clone(), self.expiries.reserve());
        let task = tokio::spawn(async move {
            let guard = lock.lock().await?;
            let lost = guard.is_lost();
            let marked = expiries::mark_holder(&mut admin, marker, LOCKS[at.lock], guard.lock().owner()).await;
            Ok(HandedOver { guard, lost, marked })
        });
        let (id, epoch) = (self.new_id(), self.slots[at.slot].epoch);
        let closed_at_spawn = self.slots[at.slot].client.is_none();
        self.pending.push(Pending { id, task, at, epoch, owner, closed_at_spawn, asked });
        format!("task T{id}")
    }

    /// A guard from a lock call through `at` (with a fixed lease: asked for
    /// at `.0`): it holds for the handle's owner.
    pub(super) fn acquired(
        &mut self,
        at: At,
        handed_over: HandedOver,
        lease: Option<(Instant, Duration)>,
        asked: Asked,
    ) -> String {
        if self.slots[at.slot].client.is_none() {
            self.fail(&format!("a lock call on a dropped client returned a guard {:?}", handed_over.guard));
        }
        let epoch = self.slots[at.slot].epoch;
        let lease_ends = lease.map(|(started, lease)| (started + lease, Instant::now() + lease));
        self.add_guard(at, epoch, handed_over, lease_ends, asked)
    }

    /// Adds a guard got through `at`'s handle (or its clone, or its owner)
    /// of client epoch `epoch`.
    pub(super) fn add_guard(
        &mut self,
        at: At,
        epoch: u64,
        HandedOver { guard, lost: handed_over_lost, marked }: HandedOver,
        lease_ends: Option<(Instant, Instant)>,
        asked: Asked,
    ) -> String {
        let owner = guard.lock().owner().to_vec();
        let handles_owner = &self.slots[at.slot].handles[at.lock][at.handle];
        if epoch == self.slots[at.slot].epoch && owner != handles_owner.owner() {
            self.fail(&format!("{guard:?} does not hold for its handle's owner {}", self.label(handles_owner.owner())));
        }
        let id = self.new_id();
        let doom = self.closed(at.slot, epoch).then_some(Doom::ClientClosed);
        let (lock, slot) = (at.lock, at.slot);
        let held = Held {
            id,
            guard,
            lock,
            slot,
            epoch,
            owner,
            lease_ends,
            asked,
            handed_over_lost,
            doom,
            seen_lost: false,
            marker: marked,
        };
        self.guards.push(held);
        match handed_over_lost {
            true => format!("G{id} (lost)"),
            false => format!("G{id}"),
        }
    }

    pub(super) fn acquire_failed(&self, at: At, err: Error) -> String {
        let closed = self.slots[at.slot].client.is_none();
        let expected = if closed { matches!(err, Error::ClientClosed) } else { err.is_transient() };
        if !expected {
            self.fail(&format!(
                "lock call through {} (client dropped: {closed}) failed with {err:?}",
                self.label(self.handle(at).owner())
            ));
        }
        format!("Err({err})")
    }

    pub(super) async fn collect(&mut self, task: usize) -> String {
        let index = self.pending.iter().position(|p| p.id == task).expect("pending task");
        match tokio::time::timeout(Duration::from_secs(1), &mut self.pending[index].task).await {
            Ok(result) => {
                let pending = self.pending.remove(index);
                self.finish(pending, result)
            }
            Err(_) => "still waiting".into(),
        }
    }

    pub(super) async fn abort(&mut self, task: usize) -> String {
        let index = self.pending.iter().position(|p| p.id == task).expect("pending task");
        let mut pending = self.pending.remove(index);
        pending.task.abort();
        let result = (&mut pending.task).await;
        self.finish(pending, result)
    }

    /// Moves finished `lock()` tasks into the guards: before observing the
    /// server, so that every hold it shows for them is accounted for.
    pub(super) async fn collect_finished(&mut self) {
        while let Some(index) = self.pending.iter().position(|p| p.task.is_finished()) {
            let mut pending = self.pending.remove(index);
            let result = (&mut pending.task).await;
            let outcome = self.finish(pending, result);
            self.log.push(format!("     (finished: {outcome})"));
        }
    }

    pub(super) fn finish(
        &mut self,
        pending: Pending,
        result: Result<rlock_client::Result<HandedOver>, tokio::task::JoinError>,
    ) -> String {
        let name = format!("T{}", pending.id);
        match result {
            Ok(Ok(HandedOver { guard, .. })) if pending.closed_at_spawn => {
                self.fail(&format!("{name}: lock() on a dropped client returned {guard:?}"))
            }
            Ok(Ok(HandedOver { guard, .. })) if guard.lock().owner() != pending.owner => {
                self.fail(&format!("{name}: {guard:?} does not hold for its handle's owner"))
            }
            Ok(Ok(handed_over)) => {
                format!("{name} -> {}", self.add_guard(pending.at, pending.epoch, handed_over, None, pending.asked))
            }
            Ok(Err(Error::ClientClosed)) if self.closed(pending.at.slot, pending.epoch) => {
                format!("{name} -> Err(ClientClosed)")
            }
            Ok(Err(err)) if err.is_transient() && !pending.closed_at_spawn => format!("{name} -> Err({err})"),
            Ok(Err(err)) => self.fail(&format!("{name}: lock() failed with {err:?}")),
            Err(err) if err.is_cancelled() => format!("{name} aborted"),
            Err(err) => self.fail(&format!("{name} panicked: {err}")),
        }
    }

    pub(super) fn take_guard(&mut self, id: usize) -> Held {
        let index = self.guards.iter().position(|g| g.id == id).expect("guard");
        self.guards.remove(index)
    }

    /// Unlock: a lost or stale guard must answer NotOwner and send nothing
    /// (its owner's count must not drop: that would be a newer hold).
    pub(super) async fn unlock(&mut self, id: usize, stalled: bool) -> String {
        let held = self.take_guard(id);
        let stale = held.guard.is_lost() || held.doom.is_some();
        // While the server sleeps a read would wait for it: no before/after then.
        let before = if stale && !stalled { self.read_hold(held.lock, &held.owner).await } else { None };
        let started = Instant::now();
        let lost = held.guard.is_lost();
        let result = held.guard.unlock().await;
        if lost || matches!(result, Err(Error::NotOwner)) {
            self.lost_unseen(&held.owner, stalled);
        }
        if stale {
            let why = format!("G{id} ({:?}, lost: {})", held.doom, held.seen_lost);
            if !matches!(result, Err(Error::NotOwner | Error::ClientClosed)) {
                self.fail(&format!("unlock of stale/lost {why} returned {result:?}, not Err(NotOwner)"));
            }
            if let Some((count, pttl)) = before {
                let after = self.read_hold(held.lock, &held.owner).await.map_or(count, |(after, _)| after);
                let expired = after == 0 && pttl >= 0 && pttl as u128 <= started.elapsed().as_millis() + 50;
                // A guard of this owner dropped just before releases in the
                // background, and may land between the two reads: the count
                // may drop to the levels of the live guards, never below.
                let live = self.live_levels(held.lock, &held.owner) as i64;
                if after < count && after < live && !expired {
                    self.fail(&format!("unlock of stale/lost {why} released a newer hold: count {count} -> {after}"));
                }
            }
        }
        format!("{result:?}")
    }

    /// The guards of `owner` on `lock` that must still be held on the
    /// server: not lost, not doomed, and with no fixed lease that may have
    /// ended.
    fn live_levels(&self, lock: usize, owner: &[u8]) -> usize {
        let now = Instant::now();
        let live = |g: &&Held| {
            g.lock == lock
                && g.owner == owner
                && !g.guard.is_lost()
                && g.doom.is_none()
                && g.lease_ends.is_none_or(|(earliest, _)| now < earliest)
        };
        self.guards.iter().filter(live).count()
    }

    pub(super) fn drop_guard(&mut self, id: usize, stalled: bool) -> String {
        let held = self.take_guard(id);
        if held.guard.is_lost() {
            self.lost_unseen(&held.owner, stalled);
        }
        format!("dropped (lost: {}, doom: {:?})", held.guard.is_lost(), held.doom)
    }

    /// A guard the client found lost, gone before a check saw it (see
    /// [`Model::check_lost_is_final`]): its owner's hold may stay a
    /// watchdog lease longer (a renewal sent before the client gave up
    /// lands late), or past a stall's end plus that.
    fn lost_unseen(&mut self, owner: &[u8], stalled: bool) {
        let stall = if stalled { Duration::from_millis(LONGEST_STALL_MS) } else { Duration::ZERO };
        let until = Instant::now() + stall + WATCHDOG;
        self.excused_until.entry(owner.to_vec()).and_modify(|at| *at = (*at).max(until)).or_insert(until);
    }

    pub(super) async fn delete(&mut self, lock: usize, command: &str) -> String {
        self.collect_finished().await;
        let deleted: i64 = self.admin(redis::cmd(command).arg(LOCKS[lock])).await;
        self.deletes += 1;
        for held in self.guards.iter_mut().filter(|g| g.lock == lock) {
            held.doom = held.doom.or(Some(Doom::HoldGone));
        }
        format!("{deleted}")
    }

    pub(super) async fn restart(&mut self, lose_data: bool) -> String {
        self.collect_finished().await;
        if lose_data {
            let () = self.admin(&redis::cmd("FLUSHALL")).await;
            for held in &mut self.guards {
                held.doom = held.doom.or(Some(Doom::HoldGone));
            }
        }
        tokio::task::block_in_place(|| self.server.restart());
        self.faults += 1;
        self.restarted_until = Some(Instant::now() + Duration::from_millis(LONGEST_LEASE_MS) + WATCHDOG);
        "restarted".into()
    }

    pub(super) fn drop_client(&mut self, slot: usize) -> String {
        let epoch = self.slots[slot].epoch;
        self.slots[slot].client = None;
        self.slots[slot].epoch += 1;
        for held in self.guards.iter_mut().filter(|g| g.slot == slot && g.epoch == epoch) {
            held.doom = held.doom.or(Some(Doom::ClientClosed));
        }
        "dropped".into()
    }

    pub(super) async fn new_client(&mut self, slot: usize) -> String {
        let client = Client::connect(self.server.client(), options()).await.expect("client");
        let epoch = self.slots[slot].epoch + 1;
        let handles: Vec<Vec<Lock>> =
            LOCKS.iter().map(|name| (0..HANDLES).map(|_| client.lock(name)).collect()).collect();
        for (lock, handles) in handles.iter().enumerate() {
            for (h, handle) in handles.iter().enumerate() {
                let owner = handle.owner().to_vec();
                assert!(owner.starts_with(client.id().to_string().as_bytes()), "owner ids start with the client id");
                let label = format!("c{slot}.{epoch}/{}/h{h}", LOCKS[lock]);
                let fresh =
                    self.owners.insert(owner, Owner { label, at: At { slot, lock, handle: h }, epoch }).is_none();
                assert!(fresh, "client.lock() gives a fresh owner id");
            }
        }
        self.slots[slot] = Slot { client: Some(client), handles, epoch };
        "connected".into()
    }

    pub(super) async fn admin<T: redis::FromRedisValue>(&mut self, cmd: &redis::Cmd) -> T {
        let admin = &mut self.admin;
        match testkit::until_ok(SETTLE, async || cmd.query_async(admin).await).await {
            Ok(value) => value,
            Err(err) => self.fail(&format!("admin command failed: {err}")),
        }
    }

    pub(super) async fn read_hold(&mut self, lock: usize, owner: &[u8]) -> Option<(i64, i64)> {
        let mut pipe = redis::pipe();
        pipe.cmd("HGET").arg(LOCKS[lock]).arg(owner).cmd("PTTL").arg(LOCKS[lock]);
        let (count, pttl): (Option<i64>, i64) = pipe.query_async(&mut self.admin).await.ok()?;
        Some((count.unwrap_or(0), pttl))
    }
}
