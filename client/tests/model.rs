//! Model-based randomized test: random steps on two locks, several handles
//! and two clients against a real server, with faults (DEL, FORCERELEASE,
//! stalls, restarts, dropped clients). After every step the client's
//! promises are checked against the server (HGETALL, PTTL, PUBSUB) and what
//! the model knows (which guards exist, which must be lost).
//!
//! `RLOCK_SEED` replays a run's choices (timing may still differ: the step
//! log is the reproduction), `RLOCK_MODEL_STEPS` sets the number of steps and
//! `RLOCK_MODEL_OPS` (comma-separated kinds, see [`KINDS`]) restricts them.

use redis::aio::ConnectionManager;
use rlock_client::{Client, ClientOptions, Error, Guard, Lock, ReplicaSync};
use std::collections::{BTreeSet, HashMap};
use std::io::{Read, Write};
use std::time::Duration;
use testkit::{Rng, Server};
use tokio::task::JoinHandle;
use tokio::time::Instant;

const LOCKS: [&str; 2] = ["model-a", "model-b"];
const CLIENTS: usize = 2;
const HANDLES: usize = 3;
const WATCHDOG: Duration = Duration::from_millis(900);
const LONGEST_LEASE_MS: u64 = 2000;
/// How long the client may take to catch up with a change: the longest
/// lease (an orphaned fixed lease runs out) plus two watchdog timeouts.
const SETTLE: Duration = Duration::from_millis(LONGEST_LEASE_MS + 1800);
/// How long a hold without guard or waiter may stay when nothing explains
/// it (a release in flight): well under a watchdog lease, so that a leaked
/// hold is caught before it expires on its own.
const ORPHAN_GRACE: Duration = Duration::from_millis(400);
const MAX_GUARDS: usize = 8;
const MAX_PENDING: usize = 3;
const DEFAULT_STEPS: usize = 200;

/// Operation kinds and their weights.
const KINDS: [(&str, u64); 12] = [
    ("try_lock", 24),
    ("lock_with_lease", 8),
    ("spawn_lock", 6),
    ("collect", 6),
    ("abort", 3),
    ("unlock", 16),
    ("drop", 10),
    ("delete", 4),
    ("force_release", 4),
    ("stall", 5),
    ("restart", 3),
    ("client", 3),
];
/// What may run while the server stalls.
const DURING_STALL: [&str; 6] = ["try_lock", "lock_with_lease", "spawn_lock", "collect", "unlock", "drop"];

/// Client slot, lock and handle.
#[derive(Clone, Copy)]
struct At {
    slot: usize,
    lock: usize,
    handle: usize,
}

impl std::fmt::Debug for At {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "c{}/{}/h{}", self.slot, LOCKS[self.lock], self.handle)
    }
}

/// Which `Lock` a try_lock goes through: the handle, a clone of it, or
/// `lock_with_owner` with the handle's owner (all the same holder).
#[derive(Debug, Clone, Copy)]
enum Via {
    Handle,
    Clone,
    SameOwner,
}

#[derive(Debug, Clone)]
enum Op {
    TryLock { at: At, via: Via, wait_ms: u64, lease_ms: Option<u64> },
    LockWithLease { at: At, lease_ms: u64, bound_ms: u64 },
    SpawnLock { at: At },
    Collect { task: usize },
    Abort { task: usize },
    Unlock { guard: usize },
    Drop { guard: usize },
    Delete { lock: usize },
    ForceRelease { lock: usize },
    Restart { lose_data: bool },
    DropClient { slot: usize },
    NewClient { slot: usize },
}

/// Why a guard must be (or become) lost, and must send nothing on unlock.
#[derive(Debug, Clone, Copy)]
enum Doom {
    /// Its hold was deleted, flushed or seen absent on the server.
    HoldGone,
    ClientClosed,
}

/// Who a handle's owner id is, for messages and excuses.
struct Owner {
    label: String,
    at: At,
    epoch: u64,
}

struct Held {
    id: usize,
    guard: Guard,
    lock: usize,
    slot: usize,
    epoch: u64,
    owner: Vec<u8>,
    /// A fixed lease ends on the server between these instants.
    lease_ends: Option<(Instant, Instant)>,
    /// [`Model::faults`] when the guard was asked for.
    faults: u64,
    /// [`Model::deletes`] when the guard was asked for.
    deletes: u64,
    doom: Option<Doom>,
    seen_lost: bool,
}

struct Pending {
    id: usize,
    task: JoinHandle<rlock_client::Result<Guard>>,
    at: At,
    epoch: u64,
    owner: Vec<u8>,
    closed_at_spawn: bool,
    faults: u64,
    deletes: u64,
}

struct Slot {
    client: Option<Client>,
    /// `handles[lock][handle]`; kept after the client is dropped.
    handles: Vec<Vec<Lock>>,
    /// Bumped when the client is dropped and when it is replaced: guards and
    /// tasks of older epochs belong to a dropped client.
    epoch: u64,
}

/// What the server says about one lock.
struct LockView {
    holds: HashMap<Vec<u8>, i64>,
    pttl: i64,
}

struct Observed {
    locks: Vec<LockView>,
    numsub: Vec<i64>,
    channels: Vec<Vec<u8>>,
}

struct Model {
    server: Server,
    admin: ConnectionManager,
    slots: Vec<Slot>,
    guards: Vec<Held>,
    pending: Vec<Pending>,
    owners: HashMap<Vec<u8>, Owner>,
    /// Until when a hold without guard is explained for an owner: one of
    /// its guards was just reported lost (the server's lease ends a moment
    /// after the client's estimate).
    excused_until: HashMap<Vec<u8>, Instant>,
    /// A restart breaks connections: background releases may be lost and
    /// leases run out instead.
    restarted_until: Option<Instant>,
    /// Stalls and restarts so far: a watchdog lease may run out across one.
    faults: u64,
    /// DELs and force releases so far: a `lock()` task pending across one
    /// may have been granted before it, and its hold deleted.
    deletes: u64,
    next_id: usize,
    log: Vec<String>,
}

fn options() -> ClientOptions {
    ClientOptions::default().with_watchdog_timeout(WATCHDOG).with_replica_sync(ReplicaSync::Off)
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_steps_keep_the_clients_promises() {
    let mut rng = Rng::from_env("model");
    let steps = env_or("RLOCK_MODEL_STEPS", DEFAULT_STEPS);
    let only: Option<String> = std::env::var("RLOCK_MODEL_OPS").ok();
    let kinds: Vec<(&str, u64)> = KINDS
        .iter()
        .copied()
        .filter(|(kind, _)| only.as_ref().is_none_or(|o| o.split(',').any(|k| k == *kind)))
        .collect();
    let server = Server::builder()
        .config("appendonly", "yes")
        .config("appendfsync", "always")
        .config("enable-debug-command", "local")
        .start();
    let stall_weight = kinds.iter().find(|(kind, _)| *kind == "stall").map_or(0, |(_, weight)| *weight);
    let stalled_kinds: Vec<_> = kinds.iter().copied().filter(|(kind, _)| DURING_STALL.contains(kind)).collect();
    let mut model = Model::new(server).await;
    for number in 0..steps {
        // A step is one operation, or a burst of a few with no check (and
        // so no time for the watchdog) in between; maybe during a stall.
        let stall_ms = (!stalled_kinds.is_empty() && rng.chance(stall_weight)).then(|| 300 + rng.below(701));
        let burst = if rng.chance(25) { 2 + rng.below(2) } else { 1 };
        let stall = stall_ms.map(|ms| model.start_stall(ms));
        for part in 0..burst {
            let op = model.draw(&mut rng, if stall.is_some() { &stalled_kinds } else { &kinds });
            let during = stall_ms.map_or(String::new(), |ms| format!("during DEBUG SLEEP {ms}ms: "));
            model.log.push(format!("{number:3}.{part} {during}{op:?}"));
            let outcome = model.act(&op, stall.is_some()).await;
            model.log.push(format!("        -> {outcome}"));
        }
        if let Some(stall) = stall {
            model.end_stall(stall).await;
        }
        model.check().await;
    }
    model.end().await;
}

impl Model {
    async fn new(server: Server) -> Self {
        let admin = ConnectionManager::new(server.client()).await.expect("admin connection");
        let mut model = Self {
            server,
            admin,
            slots: vec![],
            guards: vec![],
            pending: vec![],
            owners: HashMap::new(),
            excused_until: HashMap::new(),
            restarted_until: None,
            faults: 0,
            deletes: 0,
            next_id: 0,
            log: vec![],
        };
        for slot in 0..CLIENTS {
            model.slots.push(Slot { client: None, handles: vec![], epoch: 0 });
            model.new_client(slot).await;
        }
        model
    }

    fn fail(&self, what: &str) -> ! {
        panic!("{what}\n--- steps (replay with the RLOCK_SEED printed above) ---\n{}", self.log.join("\n"))
    }

    fn closed(&self, slot: usize, epoch: u64) -> bool {
        self.slots[slot].client.is_none() || self.slots[slot].epoch != epoch
    }

    fn handle(&self, at: At) -> &Lock {
        &self.slots[at.slot].handles[at.lock][at.handle]
    }

    fn label(&self, owner: &[u8]) -> &str {
        self.owners.get(owner).map_or("?", |o| o.label.as_str())
    }

    fn new_id(&mut self) -> usize {
        self.next_id += 1;
        self.next_id
    }

    // ---- drawing steps ----

    fn draw(&self, rng: &mut Rng, kinds: &[(&'static str, u64)]) -> Op {
        let may_reconnect = kinds.iter().any(|(kind, _)| *kind == "client");
        if let Some(slot) = (0..CLIENTS).find(|&s| self.slots[s].client.is_none()) {
            if may_reconnect && rng.chance(15) {
                return Op::NewClient { slot };
            }
        }
        for _ in 0..1000 {
            let kind = pick_weighted(rng, kinds);
            if let Some(op) = self.propose(rng, kind) {
                return op;
            }
        }
        self.fail("RLOCK_MODEL_OPS allows no operation in this state")
    }

    fn propose(&self, rng: &mut Rng, kind: &str) -> Option<Op> {
        let mut at = At {
            slot: rng.below(CLIENTS as u64) as usize,
            lock: rng.below(LOCKS.len() as u64) as usize,
            handle: rng.below(HANDLES as u64) as usize,
        };
        // Often the owner of an existing guard: reentry, and re-locking
        // after the hold was deleted, are where bookkeeping goes wrong.
        if !self.guards.is_empty() && rng.chance(40) {
            at = self.owners[&rng.pick(&self.guards).owner].at;
        }
        let lease_ms = 200 + rng.below(LONGEST_LEASE_MS - 199);
        let guard = (!self.guards.is_empty()).then(|| rng.pick(&self.guards).id);
        let task = (!self.pending.is_empty()).then(|| rng.pick(&self.pending).id);
        let lock = rng.below(LOCKS.len() as u64) as usize;
        match kind {
            "try_lock" => {
                let via = *rng.pick(&[Via::Handle, Via::Clone, Via::SameOwner]);
                let wait_ms = if rng.chance(50) { 0 } else { 50 + rng.below(251) };
                let lease_ms = rng.chance(30).then_some(lease_ms);
                let via = if self.slots[at.slot].client.is_none() { Via::Handle } else { via };
                self.may_acquire(at, lease_ms.is_some()).then_some(Op::TryLock { at, via, wait_ms, lease_ms })
            }
            "lock_with_lease" => {
                self.may_acquire(at, true).then_some(Op::LockWithLease { at, lease_ms, bound_ms: 200 + rng.below(601) })
            }
            "spawn_lock" => {
                (self.pending.len() < MAX_PENDING && self.may_acquire(at, false)).then_some(Op::SpawnLock { at })
            }
            "collect" => task.map(|task| Op::Collect { task }),
            "abort" => task.map(|task| Op::Abort { task }),
            "unlock" => guard.map(|guard| Op::Unlock { guard }),
            "drop" => guard.map(|guard| Op::Drop { guard }),
            "delete" => Some(Op::Delete { lock }),
            "force_release" => Some(Op::ForceRelease { lock }),
            "restart" => Some(Op::Restart { lose_data: rng.chance(25) }),
            "stall" => None, // drawn apart: it wraps a step
            "client" => {
                let slot = at.slot;
                Some(if self.slots[slot].client.is_none() { Op::NewClient { slot } } else { Op::DropClient { slot } })
            }
            other => panic!("unknown operation kind {other:?} in RLOCK_MODEL_OPS"),
        }
    }

    /// Whether an acquire through `at` keeps every owner's holds of one
    /// renewal kind: a fixed lease shared with other holds (reentry resets
    /// the key's TTL) has no single meaning, so the model avoids it.
    fn may_acquire(&self, at: At, fixed: bool) -> bool {
        if self.guards.len() >= MAX_GUARDS {
            return false;
        }
        let owner = self.handle(at).owner();
        let mine = || self.guards.iter().filter(|g| g.lock == at.lock && g.owner == owner);
        let fixed_active =
            mine().any(|g| g.lease_ends.is_some_and(|(_, latest)| !g.guard.is_lost() || Instant::now() < latest));
        let watchdog_live = mine().any(|g| g.lease_ends.is_none() && !g.guard.is_lost());
        let pending = self.pending.iter().any(|p| p.at.lock == at.lock && p.owner == owner);
        !fixed_active && !(fixed && (watchdog_live || pending))
    }

    // ---- running steps ----

    /// Sends `DEBUG SLEEP` on a connection of its own, before the step's
    /// operations start: the server sleeps as soon as it reads it.
    fn start_stall(&self, ms: u64) -> std::net::TcpStream {
        let mut stall = std::net::TcpStream::connect(("127.0.0.1", self.server.port())).expect("stall connection");
        let secs = format!("{:.3}", ms as f64 / 1000.0);
        let command = format!("*3\r\n$5\r\nDEBUG\r\n$5\r\nSLEEP\r\n${}\r\n{secs}\r\n", secs.len());
        stall.write_all(command.as_bytes()).expect("send DEBUG SLEEP");
        stall
    }

    /// Waits for the `DEBUG SLEEP` reply: the server is awake again.
    async fn end_stall(&mut self, mut stall: std::net::TcpStream) {
        let reply = tokio::task::spawn_blocking(move || {
            stall.set_read_timeout(Some(Duration::from_secs(10))).expect("read timeout");
            let mut reply = [0u8; 5];
            stall.read_exact(&mut reply).map(|_| reply)
        })
        .await
        .expect("stall reader");
        if !matches!(reply, Ok(ref r) if r == b"+OK\r\n") {
            self.fail(&format!("DEBUG SLEEP failed: {reply:?}"));
        }
        self.faults += 1;
    }

    async fn act(&mut self, op: &Op, stalled: bool) -> String {
        match *op {
            Op::TryLock { at, via, wait_ms, lease_ms } => self.try_lock(at, via, wait_ms, lease_ms).await,
            Op::LockWithLease { at, lease_ms, bound_ms } => self.lock_with_lease(at, lease_ms, bound_ms).await,
            Op::SpawnLock { at } => self.spawn_lock(at),
            Op::Collect { task } => self.collect(task).await,
            Op::Abort { task } => self.abort(task).await,
            Op::Unlock { guard } => self.unlock(guard, stalled).await,
            Op::Drop { guard } => self.drop_guard(guard),
            Op::Delete { lock } => self.delete(lock, "DEL").await,
            Op::ForceRelease { lock } => self.delete(lock, "RLOCK.FORCERELEASE").await,
            Op::Restart { lose_data } => self.restart(lose_data).await,
            Op::DropClient { slot } => self.drop_client(slot),
            Op::NewClient { slot } => self.new_client(slot).await,
        }
    }

    async fn try_lock(&mut self, at: At, via: Via, wait_ms: u64, lease_ms: Option<u64>) -> String {
        let started = Instant::now();
        let lock = match (via, &self.slots[at.slot].client) {
            (Via::SameOwner, Some(client)) => client.lock_with_owner(LOCKS[at.lock], self.handle(at).owner()),
            _ => self.handle(at).clone(),
        };
        let lease = lease_ms.map(Duration::from_millis);
        match lock.try_lock(Duration::from_millis(wait_ms), lease).await {
            Ok(Some(guard)) => self.acquired(at, guard, lease.map(|lease| (started, lease))),
            Ok(None) if self.slots[at.slot].client.is_none() => self.fail("try_lock on a dropped client: Ok(None)"),
            Ok(None) => "busy".into(),
            Err(err) => self.acquire_failed(at, err),
        }
    }

    async fn lock_with_lease(&mut self, at: At, lease_ms: u64, bound_ms: u64) -> String {
        let lease = Duration::from_millis(lease_ms);
        let started = Instant::now();
        let attempt = tokio::time::timeout(Duration::from_millis(bound_ms), self.handle(at).lock_with_lease(lease));
        match attempt.await {
            Ok(Ok(guard)) => self.acquired(at, guard, Some((started, lease))),
            Ok(Err(err)) => self.acquire_failed(at, err),
            Err(_) if self.slots[at.slot].client.is_none() => self.fail("lock on a dropped client kept waiting"),
            Err(_) => "gave up (future dropped)".into(),
        }
    }

    fn spawn_lock(&mut self, at: At) -> String {
        let lock = self.handle(at).clone();
        let owner = lock.owner().to_vec();
        let task = tokio::spawn(async move { lock.lock().await });
        let (id, epoch) = (self.new_id(), self.slots[at.slot].epoch);
        let closed_at_spawn = self.slots[at.slot].client.is_none();
        let (faults, deletes) = (self.faults, self.deletes);
        self.pending.push(Pending { id, task, at, epoch, owner, closed_at_spawn, faults, deletes });
        format!("task T{id}")
    }

    /// A guard from a lock call through `at` (with a fixed lease: asked for
    /// at `.0`): it holds for the handle's owner.
    fn acquired(&mut self, at: At, guard: Guard, lease: Option<(Instant, Duration)>) -> String {
        if self.slots[at.slot].client.is_none() {
            self.fail(&format!("a lock call on a dropped client returned a guard {guard:?}"));
        }
        let epoch = self.slots[at.slot].epoch;
        let lease_ends = lease.map(|(started, lease)| (started + lease, Instant::now() + lease));
        self.add_guard(at, epoch, guard, lease_ends, (self.faults, self.deletes))
    }

    /// Adds a guard got through `at`'s handle (or its clone, or its owner)
    /// of client epoch `epoch`.
    fn add_guard(
        &mut self,
        at: At,
        epoch: u64,
        guard: Guard,
        lease_ends: Option<(Instant, Instant)>,
        (faults, deletes): (u64, u64),
    ) -> String {
        let owner = guard.lock().owner().to_vec();
        let handles_owner = &self.slots[at.slot].handles[at.lock][at.handle];
        if epoch == self.slots[at.slot].epoch && owner != handles_owner.owner() {
            self.fail(&format!("{guard:?} does not hold for its handle's owner {}", self.label(handles_owner.owner())));
        }
        let id = self.new_id();
        let doom = self.closed(at.slot, epoch).then_some(Doom::ClientClosed);
        let (lock, slot) = (at.lock, at.slot);
        let held = Held { id, guard, lock, slot, epoch, owner, lease_ends, faults, deletes, doom, seen_lost: false };
        self.guards.push(held);
        format!("G{id}")
    }

    fn acquire_failed(&self, at: At, err: Error) -> String {
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

    async fn collect(&mut self, task: usize) -> String {
        let index = self.pending.iter().position(|p| p.id == task).expect("pending task");
        match tokio::time::timeout(Duration::from_secs(1), &mut self.pending[index].task).await {
            Ok(result) => {
                let pending = self.pending.remove(index);
                self.finish(pending, result)
            }
            Err(_) => "still waiting".into(),
        }
    }

    async fn abort(&mut self, task: usize) -> String {
        let index = self.pending.iter().position(|p| p.id == task).expect("pending task");
        let mut pending = self.pending.remove(index);
        pending.task.abort();
        let result = (&mut pending.task).await;
        self.finish(pending, result)
    }

    /// Moves finished `lock()` tasks into the guards: before observing the
    /// server, so that every hold it shows for them is accounted for.
    async fn collect_finished(&mut self) {
        while let Some(index) = self.pending.iter().position(|p| p.task.is_finished()) {
            let mut pending = self.pending.remove(index);
            let result = (&mut pending.task).await;
            let outcome = self.finish(pending, result);
            self.log.push(format!("     (finished: {outcome})"));
        }
    }

    fn finish(
        &mut self,
        pending: Pending,
        result: Result<rlock_client::Result<Guard>, tokio::task::JoinError>,
    ) -> String {
        let name = format!("T{}", pending.id);
        match result {
            Ok(Ok(guard)) if pending.closed_at_spawn => {
                self.fail(&format!("{name}: lock() on a dropped client returned {guard:?}"))
            }
            Ok(Ok(guard)) if guard.lock().owner() != pending.owner => {
                self.fail(&format!("{name}: {guard:?} does not hold for its handle's owner"))
            }
            Ok(Ok(guard)) => {
                format!(
                    "{name} -> {}",
                    self.add_guard(pending.at, pending.epoch, guard, None, (pending.faults, pending.deletes))
                )
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

    fn take_guard(&mut self, id: usize) -> Held {
        let index = self.guards.iter().position(|g| g.id == id).expect("guard");
        self.guards.remove(index)
    }

    /// Unlock: a lost or stale guard must answer NotOwner and send nothing
    /// (its owner's count must not drop: that would be a newer hold).
    async fn unlock(&mut self, id: usize, stalled: bool) -> String {
        let held = self.take_guard(id);
        let stale = held.guard.is_lost() || held.doom.is_some();
        // While the server sleeps a read would wait for it: no before/after then.
        let before = if stale && !stalled { self.read_hold(held.lock, &held.owner).await } else { None };
        let started = Instant::now();
        let result = held.guard.unlock().await;
        if stale {
            let why = format!("G{id} ({:?}, lost: {})", held.doom, held.seen_lost);
            if !matches!(result, Err(Error::NotOwner | Error::ClientClosed)) {
                self.fail(&format!("unlock of stale/lost {why} returned {result:?}, not Err(NotOwner)"));
            }
            if let Some((count, pttl)) = before {
                let after = self.read_hold(held.lock, &held.owner).await.map_or(count, |(after, _)| after);
                let expired = after == 0 && pttl >= 0 && pttl as u128 <= started.elapsed().as_millis() + 50;
                if after < count && !expired {
                    self.fail(&format!("unlock of stale/lost {why} released a newer hold: count {count} -> {after}"));
                }
            }
        }
        format!("{result:?}")
    }

    fn drop_guard(&mut self, id: usize) -> String {
        let held = self.take_guard(id);
        format!("dropped (lost: {}, doom: {:?})", held.guard.is_lost(), held.doom)
    }

    async fn delete(&mut self, lock: usize, command: &str) -> String {
        self.collect_finished().await;
        let deleted: i64 = self.admin(redis::cmd(command).arg(LOCKS[lock])).await;
        self.deletes += 1;
        for held in self.guards.iter_mut().filter(|g| g.lock == lock) {
            held.doom = held.doom.or(Some(Doom::HoldGone));
        }
        format!("{deleted}")
    }

    async fn restart(&mut self, lose_data: bool) -> String {
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

    fn drop_client(&mut self, slot: usize) -> String {
        let epoch = self.slots[slot].epoch;
        self.slots[slot].client = None;
        self.slots[slot].epoch += 1;
        for held in self.guards.iter_mut().filter(|g| g.slot == slot && g.epoch == epoch) {
            held.doom = held.doom.or(Some(Doom::ClientClosed));
        }
        "dropped".into()
    }

    async fn new_client(&mut self, slot: usize) -> String {
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

    async fn admin<T: redis::FromRedisValue>(&mut self, cmd: &redis::Cmd) -> T {
        let deadline = Instant::now() + SETTLE;
        loop {
            match cmd.query_async(&mut self.admin).await {
                Ok(value) => return value,
                Err(err) if Instant::now() > deadline => self.fail(&format!("admin command failed: {err}")),
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        }
    }

    async fn read_hold(&mut self, lock: usize, owner: &[u8]) -> Option<(i64, i64)> {
        let mut pipe = redis::pipe();
        pipe.cmd("HGET").arg(LOCKS[lock]).arg(owner).cmd("PTTL").arg(LOCKS[lock]);
        let (count, pttl): (Option<i64>, i64) = pipe.query_async(&mut self.admin).await.ok()?;
        Some((count.unwrap_or(0), pttl))
    }

    async fn observe(&mut self) -> Option<Observed> {
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

    // ---- invariants ----

    /// Polls until every invariant holds, failing after [`SETTLE`]: the
    /// client learns of external changes only at its next watchdog round.
    async fn check(&mut self) {
        let deadline = Instant::now() + SETTLE;
        let mut orphans = HashMap::new();
        loop {
            self.collect_finished().await;
            self.check_lost_is_final().await;
            let problems = match self.observe().await {
                None => vec!["the server did not answer".to_owned()],
                Some(server) => {
                    self.check_no_leaked_hold(&server, &mut orphans);
                    let mut problems = self.check_lost_when_not_held(&server);
                    problems.extend(self.check_one_owner(&server));
                    problems.extend(self.check_hold_counts(&server));
                    problems.extend(self.check_no_idle_subscription(&server));
                    problems
                }
            };
            if problems.is_empty() {
                return;
            }
            if Instant::now() > deadline {
                self.fail(&format!("invariants still violated after {SETTLE:?}:\n  {}", problems.join("\n  ")));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Invariant 3a: once lost, a guard stays lost, and `lost()` completes.
    async fn check_lost_is_final(&mut self) {
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
    fn check_no_leaked_hold(&self, server: &Observed, orphans: &mut HashMap<(usize, Vec<u8>), Instant>) {
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
    fn excused(&self, owner: &[u8], now: Instant) -> bool {
        let closed = self.owners.get(owner).is_none_or(|o| self.closed(o.at.slot, o.epoch));
        closed
            || self.restarted_until.is_some_and(|until| now < until)
            || self.excused_until.get(owner).is_some_and(|&until| now < until)
    }

    /// Invariant 3b: a guard whose hold is gone (or whose client was
    /// dropped) is reported lost. And a hold goes only for a reason: its
    /// guard's unlock, a delete, its lease's end, or a fault (a stall or
    /// restart may outlast a watchdog lease); never another guard's release.
    fn check_lost_when_not_held(&mut self, server: &Observed) -> Vec<String> {
        let now = Instant::now();
        let mut problems = vec![];
        for index in 0..self.guards.len() {
            let held = &self.guards[index];
            if held.doom.is_none() && !server.locks[held.lock].holds.contains_key(&held.owner) {
                let lease_ended = held.lease_ends.is_some_and(|(earliest, _)| now >= earliest);
                if !lease_ended && held.faults == self.faults && held.deletes == self.deletes {
                    self.fail(&format!(
                        "the hold of G{} ({}) vanished: no delete, no fault, lease not over; another release took it",
                        held.id,
                        self.label(&held.owner)
                    ));
                }
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
    fn check_one_owner(&self, server: &Observed) -> Vec<String> {
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
    fn check_hold_counts(&self, server: &Observed) -> Vec<String> {
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
    fn check_no_idle_subscription(&self, server: &Observed) -> Vec<String> {
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

    fn live(&self, lock: usize) -> impl Iterator<Item = &Held> + '_ {
        self.guards.iter().filter(move |g| g.lock == lock && !g.guard.is_lost())
    }

    /// Invariants 4 and 5 at the end: with every guard, task and client
    /// gone, no hold outlives its lease and no subscription is left.
    async fn end(mut self) {
        self.guards.clear();
        for pending in std::mem::take(&mut self.pending) {
            pending.task.abort();
            let _ = pending.task.await;
        }
        self.slots.clear();
        self.log.push("end: every guard, task and client dropped".into());
        let deadline = Instant::now() + SETTLE;
        loop {
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
            if problems.is_empty() {
                return;
            }
            if Instant::now() > deadline {
                self.fail(&format!("after the end, still after {SETTLE:?}:\n  {}", problems.join("\n  ")));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

fn pick_weighted(rng: &mut Rng, kinds: &[(&'static str, u64)]) -> &'static str {
    let total: u64 = kinds.iter().map(|(_, weight)| weight).sum();
    let mut draw = rng.below(total.max(1));
    for (kind, weight) in kinds {
        if draw < *weight {
            return kind;
        }
        draw -= weight;
    }
    panic!("RLOCK_MODEL_OPS selects no known operation kind")
}
