//! Shared state of one lock name and owner in a client: its [`Holds`], the
//! lost signal of the current incarnation, and the gate that serialises
//! the requests that change the holds. The [`Registry`] gives every handle
//! with the same name and owner the same state.

use crate::engine::holds::{Ended, Holds, Ticket};
use crate::engine::kind::Kind;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// A lock as the server knows it: name, owner id and kind (a read-write
/// lock's owner counts its read and its write holds apart).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct LockId {
    pub name: Arc<[u8]>,
    pub owner: Arc<[u8]>,
    pub kind: Kind,
}

impl LockId {
    /// The lock's name and owner, for `tracing` fields: formatted only
    /// when a subscriber records them (every acquire and release traces).
    pub fn traced(&self) -> (Lossy<'_>, Lossy<'_>) {
        (Lossy(&self.name), Lossy(&self.owner))
    }
}

/// Bytes shown as text, invalid UTF-8 replaced (`String::from_utf8_lossy`).
pub(crate) struct Lossy<'a>(&'a [u8]);

impl std::fmt::Display for Lossy<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&String::from_utf8_lossy(self.0))
    }
}

pub(crate) struct LockState {
    pub id: LockId,
    /// Held across each acquire and release request and its bookkeeping,
    /// so that the hold count this client keeps follows the server's even
    /// when calls on one lock race (never while waiting for a release).
    /// One gate for the kinds whose holds the server counts as one (a
    /// plain, a fair and a fenced lock of one name and owner id): their
    /// requests too go one at a time.
    pub gate: Arc<tokio::sync::Mutex<()>>,
    /// The states of other kinds that count their holds with this one's,
    /// made while this one lived (never forgotten: see
    /// [`LockState::counted_with_others`]).
    siblings: Mutex<Vec<Weak<LockState>>>,
    inner: Mutex<Inner>,
    lost_count: Arc<AtomicU64>,
}

struct Inner {
    holds: Holds,
    /// Fires when the current incarnation's holds are lost; replaced when
    /// a new incarnation starts.
    lost: watch::Sender<bool>,
}

impl LockState {
    /// Whether a live state of another kind counts its holds in the same
    /// server count (one owner id used for a plain and a fenced lock on
    /// one name, say): the levels beyond one kind's holds may then be the
    /// other's.
    pub fn shares_count(&self) -> bool {
        !self.live_siblings().is_empty()
    }

    /// Whether a state of another kind counting its holds with this one's
    /// has lived beside it at any time: its levels may still be on the
    /// server (one given up on this client's clock, a release without a
    /// reply) after it is gone, and nothing here counts them, so this
    /// state's count is never taken as the server's (no `HOLDS`).
    pub fn counted_with_others(&self) -> bool {
        !self.siblings.lock().unwrap_or_else(PoisonError::into_inner).is_empty()
    }

    /// The lease the holds of the live states of other kinds counted with
    /// this one need from `now`: the server keeps one expiry for all of
    /// them, so every acquire, release and renewal sets at least that.
    pub fn siblings_lease_needed(&self, now: Instant, watchdog: std::time::Duration) -> Option<std::time::Duration> {
        self.live_siblings().iter().filter_map(|sibling| sibling.read(|holds| holds.lease_needed(now, watchdog))).max()
    }

    /// `lease`, or longer where the holds of the kinds counted with this
    /// one need more (see [`Self::siblings_lease_needed`]).
    pub fn at_least_siblings_lease(
        &self,
        lease: std::time::Duration,
        now: Instant,
        watchdog: std::time::Duration,
    ) -> std::time::Duration {
        self.siblings_lease_needed(now, watchdog).map_or(lease, |needed| needed.max(lease))
    }

    fn live_siblings(&self) -> Vec<Arc<LockState>> {
        self.siblings.lock().unwrap_or_else(PoisonError::into_inner).iter().filter_map(Weak::upgrade).collect()
    }

    /// The holds the live states of other kinds counted with this one
    /// count: levels of the same count on the server.
    pub fn siblings_count(&self) -> usize {
        self.live_siblings().iter().map(|sibling| sibling.read(|holds| holds.count())).sum()
    }

    /// A grant of this kind found fewer levels on the server than every
    /// kind counted with it holds here, plus one: the earlier holds ended
    /// (a delete, a lease run out), the other kinds' with them.
    pub fn lose_siblings(&self) {
        self.live_siblings().iter().for_each(|sibling| sibling.lose());
    }

    /// The holds counted here, and the lease to send with an acquire for
    /// `lease` (see [`Holds::lease_for_acquire`]): never shorter than what
    /// the holds of the kinds counted with this one need either.
    pub fn lease_for_acquire(
        &self,
        lease: std::time::Duration,
        now: Instant,
        watchdog: std::time::Duration,
    ) -> (usize, std::time::Duration) {
        let (counted, own) = self.read(|holds| (holds.count(), holds.lease_for_acquire(lease, now, watchdog)));
        (counted, self.at_least_siblings_lease(own, now, watchdog))
    }

    /// Runs `change` on the holds and signals a loss it reports.
    pub fn update<T>(&self, change: impl FnOnce(&mut Holds) -> (T, Ended)) -> T {
        let mut inner = self.lock();
        let before = inner.holds.incarnation();
        let (value, ended) = change(&mut inner.holds);
        if ended == Ended::Lost {
            self.lost_count.fetch_add(1, Ordering::Relaxed);
            inner.lost.send_replace(true);
            let (name, owner) = self.id.traced();
            tracing::warn!(target: "rlock", lock = %name, owner = %owner, kind = ?self.id.kind, "lock lost");
        }
        if inner.holds.incarnation() != before {
            match inner.lost.receiver_count() {
                // Nobody holds the old signal: it is reset in place (every
                // first acquire after a full release starts an incarnation).
                0 => drop(inner.lost.send_if_modified(|lost| {
                    *lost = false;
                    false
                })),
                // Receivers of the old signal see it closed: stale, so lost.
                _ => inner.lost = watch::channel(false).0,
            }
        }
        value
    }

    /// Reads the holds.
    pub fn read<T>(&self, read: impl FnOnce(&Holds) -> T) -> T {
        read(&self.lock().holds)
    }

    /// The lost signal of the incarnation `ticket` belongs to; an already
    /// closed one when that incarnation is over.
    pub fn lost_signal(&self, ticket: &Ticket) -> watch::Receiver<bool> {
        let inner = self.lock();
        if inner.holds.is_current(ticket) {
            inner.lost.subscribe()
        } else {
            watch::channel(true).1
        }
    }

    /// The holds of the current incarnation are gone.
    pub fn lose(&self) {
        self.update(|holds| ((), holds.lose(holds.incarnation())));
    }

    /// The server renewed the holds of `incarnation` at `sent_at` for
    /// `lease` (nothing, if it is over).
    pub fn renewed(&self, incarnation: u64, sent_at: Instant, lease: Duration) {
        self.update(|holds| {
            holds.renewed(incarnation, sent_at, lease);
            ((), Ended::No)
        });
    }

    /// The holds of `incarnation` are gone (nothing, if it is over).
    pub fn lose_incarnation(&self, incarnation: u64) {
        self.update(|holds| ((), holds.lose(incarnation)));
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Every lock state of a client, by name and owner.
pub(crate) struct Registry {
    states: Mutex<HashMap<LockId, Weak<LockState>>>,
    /// Set when the watchdog stopped: nothing renews any more.
    stopped: AtomicBool,
    /// Told of holds whose lease ends before the watchdog's next wake (a
    /// grant, a release that left a shorter lease), so that it wakes then.
    pub lease_ends_sooner: tokio::sync::Notify,
    /// The watchdog's next wake at the latest, in µs since `epoch`: a lease
    /// that ends later need not wake it (most grants: waking it costs a
    /// scan of every lock).
    watchdog_wakes_by: AtomicU64,
    epoch: Instant,
    lost_count: Arc<AtomicU64>,
}

impl Default for Registry {
    fn default() -> Self {
        Self {
            states: Mutex::default(),
            stopped: AtomicBool::new(false),
            lease_ends_sooner: tokio::sync::Notify::new(),
            watchdog_wakes_by: AtomicU64::new(0),
            epoch: Instant::now(),
            lost_count: Arc::default(),
        }
    }
}

impl Registry {
    /// The watchdog will wake by `at`, and look at every hold recorded
    /// after this call. Called before it scans the holds.
    pub fn watchdog_wakes_by(&self, at: Instant) {
        self.watchdog_wakes_by.store(self.micros(at), Ordering::SeqCst);
    }

    /// A lock's holds now end at `lease_end` (by this client's estimate):
    /// wakes the watchdog unless it wakes by then.
    pub fn note_lease_end(&self, lease_end: Option<Instant>) {
        if lease_end.is_some_and(|end| self.micros(end) < self.watchdog_wakes_by.load(Ordering::SeqCst)) {
            self.lease_ends_sooner.notify_one();
        }
    }

    fn micros(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.epoch).as_micros()).unwrap_or(u64::MAX)
    }

    /// The state of `id`, shared with every other live handle on it;
    /// `shared_owner`: other clients may use its owner id too; `minted`:
    /// its owner id was made for this handle just now (the server counts
    /// none of its levels). A new state takes the gate of a live state of
    /// another kind that the server counts with it, if any.
    pub fn state(&self, id: LockId, shared_owner: bool, minted: bool) -> Arc<LockState> {
        let mut states = self.states.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(state) = states.get(&id).and_then(Weak::upgrade) {
            return state;
        }
        let holds = match (shared_owner, minted) {
            (true, _) => Holds::for_shared_owner(),
            (false, true) => Holds::fresh(),
            (false, false) => Holds::default(),
        };
        let others: Vec<Arc<LockState>> = Self::counted_with(&states, &id).collect();
        let gate = others.first().map_or_else(Arc::default, |other| other.gate.clone());
        let siblings = Mutex::new(others.iter().map(Arc::downgrade).collect());
        let state = Arc::new(LockState {
            id: id.clone(),
            gate,
            siblings,
            inner: Mutex::new(Inner { holds, lost: watch::channel(false).0 }),
            lost_count: self.lost_count.clone(),
        });
        for other in &others {
            other.siblings.lock().unwrap_or_else(PoisonError::into_inner).push(Arc::downgrade(&state));
        }
        states.insert(id, Arc::downgrade(&state));
        state
    }

    /// `lease`, or longer where other holds on the lock's one expiry need
    /// more: those of the kinds counted with `state`'s
    /// ([`LockState::at_least_siblings_lease`]) and those of the other side
    /// of a read-write lock, which RRW.RENEW and either side's release set too.
    pub fn at_least_shared_expiry_lease(
        &self,
        state: &LockState,
        lease: std::time::Duration,
        now: Instant,
        watchdog: std::time::Duration,
    ) -> std::time::Duration {
        let lease = state.at_least_siblings_lease(lease, now, watchdog);
        self.other_side_lease_needed(&state.id, now, watchdog).map_or(lease, |needed| needed.max(lease))
    }

    /// The lease the holds of the other side of `id`'s read-write lock (the
    /// same name and owner id) need from `now`: the two sides count apart but
    /// share the lock's one expiry, which a release of either side sets (a
    /// write release to its lease, a read release to the read keys left).
    fn other_side_lease_needed(
        &self,
        id: &LockId,
        now: Instant,
        watchdog: std::time::Duration,
    ) -> Option<std::time::Duration> {
        let kind = match id.kind {
            Kind::Read => Kind::Write,
            Kind::Write => Kind::Read,
            Kind::Plain | Kind::Fair | Kind::Fenced => return None,
        };
        let states = self.states.lock().unwrap_or_else(PoisonError::into_inner);
        let other = states.get(&LockId { kind, ..id.clone() }).and_then(Weak::upgrade)?;
        drop(states);
        other.read(|holds| holds.lease_needed(now, watchdog))
    }

    /// The live states of other kinds whose holds the server counts with
    /// `id`'s (the same name and owner id), looked up kind by kind.
    fn counted_with<'a>(
        states: &'a HashMap<LockId, Weak<LockState>>,
        id: &'a LockId,
    ) -> impl Iterator<Item = Arc<LockState>> + 'a {
        Kind::ALL
            .into_iter()
            .filter(|kind| *kind != id.kind && kind.shares_counts_with(id.kind))
            .filter_map(|kind| states.get(&LockId { kind, ..id.clone() }).and_then(Weak::upgrade))
    }

    /// The live states (forgetting the dead ones).
    pub fn live(&self) -> Vec<Arc<LockState>> {
        let mut states = self.states.lock().unwrap_or_else(PoisonError::into_inner);
        states.retain(|_, state| state.strong_count() > 0);
        states.values().filter_map(Weak::upgrade).collect()
    }

    /// Every state of the lock `name`, whatever its owner and kind.
    pub fn named(&self, name: &[u8]) -> Vec<Arc<LockState>> {
        self.live().into_iter().filter(|state| &*state.id.name == name).collect()
    }

    /// The watchdog stopped: every hold is lost, now and when granted later.
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        self.live().iter().for_each(|state| state.lose());
    }

    pub fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::SeqCst)
    }

    /// Locks reported lost so far.
    pub fn lost_count(&self) -> u64 {
        self.lost_count.load(Ordering::Relaxed)
    }
}
