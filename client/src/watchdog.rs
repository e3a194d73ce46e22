//! The client's watchdog: one background task that, every period, renews
//! all of the client's watchdog locks and checks its fixed-lease locks, in
//! one pipelined round trip (one per primary in a cluster). It signals a
//! lock as lost when the server says it is no longer held, or when renewal
//! kept failing until the lease ran out.

use crate::connection::Connection;
use crate::protocol::{self, Status};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// A lock as the server knows it: name and owner id.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct LockId {
    pub name: Arc<[u8]>,
    pub owner: Arc<[u8]>,
}

/// How a held lock keeps (or does not keep) its lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Renewal {
    /// Renewed to `lease` every period until released.
    Watchdog,
    /// Not renewed: expires at the end of its lease.
    Fixed,
}

struct Entry {
    /// Tells a stale round trip's reply from the current entry's.
    generation: u64,
    lease: Duration,
    renewal: Renewal,
    /// Guards of this client that hold the lock.
    holds: usize,
    /// When the lease ends at the latest, by this machine's clock: measured
    /// from *before* the request that set it.
    expires_at: Instant,
    lost: watch::Sender<bool>,
}

#[derive(Clone)]
pub(crate) struct Watchdog {
    entries: Arc<Mutex<HashMap<LockId, Entry>>>,
    generations: Arc<AtomicU64>,
    counters: Arc<Counters>,
}

#[derive(Default)]
struct Counters {
    rounds: AtomicU64,
    failed_rounds: AtomicU64,
    lost: AtomicU64,
}

/// What the client's watchdog has done, for monitoring.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WatchdogStats {
    /// Locks renewed (watchdog) or checked (fixed lease) each round now.
    pub locks: usize,
    /// Rounds with at least one lock: one pipelined round trip each.
    pub rounds: u64,
    /// Rounds that failed or timed out.
    pub failed_rounds: u64,
    /// Locks reported lost.
    pub lost: u64,
}

impl Watchdog {
    /// Starts the task: it renews every `period`, retries failed rounds
    /// every `retry_delay`, and stops when `closed` turns true.
    pub fn start(
        connection: Connection,
        period: Duration,
        retry_delay: Duration,
        closed: watch::Receiver<bool>,
    ) -> Self {
        let watchdog = Self { entries: Arc::default(), generations: Arc::default(), counters: Arc::default() };
        tokio::spawn(watchdog.clone().run(connection, period, retry_delay, closed));
        watchdog
    }

    /// Records one more hold of a lock just acquired by a request sent at
    /// `requested_at`. Returns the lock's lost signal.
    pub fn hold(&self, id: LockId, lease: Duration, renewal: Renewal, requested_at: Instant) -> watch::Receiver<bool> {
        let mut entries = self.lock();
        let entry = entries.entry(id).or_insert_with(|| Entry {
            generation: self.generations.fetch_add(1, Ordering::Relaxed),
            lease,
            renewal,
            holds: 0,
            expires_at: requested_at + lease,
            lost: watch::channel(false).0,
        });
        entry.holds += 1;
        entry.lease = lease;
        entry.renewal = renewal;
        entry.expires_at = entry.expires_at.max(requested_at + lease);
        entry.lost.subscribe()
    }

    /// One hold ended. With `fully`, the server deleted the lock: every hold
    /// of it ends.
    pub fn unhold(&self, id: &LockId, fully: bool) {
        let mut entries = self.lock();
        if let Some(entry) = entries.get_mut(id) {
            entry.holds = entry.holds.saturating_sub(1);
            if fully || entry.holds == 0 {
                entries.remove(id);
            }
        }
    }

    /// The server says the lock is not ours: signal every holder.
    pub fn lose(&self, id: &LockId) {
        if let Some(entry) = self.lock().remove(id) {
            self.signal_lost(&entry);
        }
    }

    pub fn stats(&self) -> WatchdogStats {
        let count = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        WatchdogStats {
            locks: self.lock().len(),
            rounds: count(&self.counters.rounds),
            failed_rounds: count(&self.counters.failed_rounds),
            lost: count(&self.counters.lost),
        }
    }

    fn signal_lost(&self, entry: &Entry) {
        self.counters.lost.fetch_add(1, Ordering::Relaxed);
        entry.lost.send_replace(true);
    }

    async fn run(
        self,
        mut connection: Connection,
        period: Duration,
        retry_delay: Duration,
        mut closed: watch::Receiver<bool>,
    ) {
        // A fixed schedule: a round every `period`, however long rounds
        // take; after a failed round, the next comes after `retry_delay`.
        let mut next = Instant::now() + period;
        loop {
            tokio::select! {
                _ = tokio::time::sleep_until(next) => {}
                _ = closed.wait_for(|closed| *closed) => break,
            }
            next = if self.round(&mut connection, period).await {
                (next + period).max(Instant::now())
            } else {
                Instant::now() + retry_delay.min(period)
            };
        }
        // Nobody renews from now on: no holder may count on its lock.
        let entries: Vec<Entry> = self.lock().drain().map(|(_, entry)| entry).collect();
        entries.iter().for_each(|entry| self.signal_lost(entry));
    }

    /// One round trip for every tracked lock. False when it failed.
    async fn round(&self, connection: &mut Connection, period: Duration) -> bool {
        let batch: Vec<(LockId, u64, Renewal, i64)> = self
            .lock()
            .iter()
            .map(|(id, e)| (id.clone(), e.generation, e.renewal, e.lease.as_millis() as i64))
            .collect();
        if !batch.is_empty() {
            self.counters.rounds.fetch_add(1, Ordering::Relaxed);
        }
        let ok = batch.is_empty() || {
            let commands = batch
                .iter()
                .map(|(id, _, renewal, lease_ms)| {
                    let cmd = match renewal {
                        Renewal::Watchdog => protocol::renew(&id.name, &id.owner, *lease_ms),
                        Renewal::Fixed => protocol::status(&id.name, &id.owner),
                    };
                    (id.name.to_vec(), cmd)
                })
                .collect();
            let sent_at = Instant::now();
            // A server that hangs must not hang the watchdog: give up on it
            // when the next round is due, so overdue leases are still
            // noticed; in a cluster, only its own locks wait for next round.
            let replies = connection.per_node_pipelines(commands, period).await;
            self.apply(&batch, replies.replies, sent_at);
            replies.all_answered
        };
        if !ok {
            self.counters.failed_rounds.fetch_add(1, Ordering::Relaxed);
        }
        self.expire_overdue();
        ok
    }

    fn apply(
        &self,
        batch: &[(LockId, u64, Renewal, i64)],
        replies: Vec<redis::RedisResult<redis::Value>>,
        sent_at: Instant,
    ) {
        let mut entries = self.lock();
        for ((id, generation, renewal, _), reply) in batch.iter().zip(replies) {
            let Some(entry) = entries.get_mut(id).filter(|e| e.generation == *generation) else {
                continue; // released or replaced meanwhile
            };
            let held = match (renewal, reply) {
                (Renewal::Watchdog, Ok(redis::Value::Int(1))) => {
                    entry.expires_at = sent_at + entry.lease;
                    true
                }
                (Renewal::Watchdog, Ok(redis::Value::Int(0))) => false,
                (Renewal::Fixed, Ok(reply)) => Status::parse(reply).map_or(true, |status| status.hold_count > 0),
                // An error reply for this lock alone: try again next round.
                _ => true,
            };
            if !held {
                if let Some(entry) = entries.remove(id) {
                    self.signal_lost(&entry);
                }
            }
        }
    }

    /// Locks whose lease has surely ended are lost, renewed or not.
    fn expire_overdue(&self) {
        let now = Instant::now();
        self.lock().retain(|_, entry| {
            let alive = entry.expires_at > now;
            if !alive {
                self.signal_lost(entry);
            }
            alive
        });
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<LockId, Entry>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
