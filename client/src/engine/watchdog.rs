//! The client's watchdog: one background task that, every period, renews
//! all of the client's watchdog holds and checks its fixed-lease holds, of
//! every kind (each with its own RENEW or STATUS), in one pipelined round
//! trip (in a cluster, one batch per primary, each command of it followed
//! on its own through a redirect). It signals a
//! lock as lost when the server says it is no longer held, or when renewal
//! kept failing until the lease ran out.

use crate::engine::commands::Status;
use crate::engine::holds::Upkeep;
use crate::engine::lock_state::{LockState, Registry};
use crate::engine::protocol;
use crate::transport::connection::Connection;
use crate::transport::NodeReplies;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

#[derive(Clone)]
pub(crate) struct Watchdog {
    registry: Arc<Registry>,
    counters: Arc<Counters>,
}

#[derive(Default)]
struct Counters {
    rounds: AtomicU64,
    failed_rounds: AtomicU64,
}

/// What the client's watchdog has done, for monitoring.
///
/// ```no_run
/// # fn example(client: rlock_client::Client) {
/// let stats = client.watchdog_stats();
/// println!("{} locks kept, {} of {} rounds failed, {} lost", stats.locks, stats.failed_rounds, stats.rounds, stats.lost);
/// # }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WatchdogStats {
    /// Locks renewed (watchdog) or checked (fixed lease) each round now.
    pub locks: usize,
    /// Rounds with at least one lock. A round's commands go out at once:
    /// one pipeline to a single server; in a cluster, each command on its
    /// own to its primary (a redirect is followed for that command alone).
    pub rounds: u64,
    /// Rounds in which a server (in a cluster: any primary) failed or
    /// timed out.
    pub failed_rounds: u64,
    /// Locks reported lost.
    pub lost: u64,
}

/// Where a round's commands go: the client's connection (in the unit
/// tests, a scripted server, so that the watchdog's timing runs on paused
/// time).
pub(crate) trait RoundTrip: Send + 'static {
    /// See [`Connection::per_node_pipelines`].
    fn send(
        &mut self,
        commands: Vec<(Vec<u8>, redis::Cmd)>,
        timeout: Duration,
    ) -> impl Future<Output = NodeReplies> + Send;
}

impl RoundTrip for Connection {
    fn send(
        &mut self,
        commands: Vec<(Vec<u8>, redis::Cmd)>,
        timeout: Duration,
    ) -> impl Future<Output = NodeReplies> + Send {
        self.per_node_pipelines(commands, timeout)
    }
}

/// One lock's part of a round.
struct Task {
    state: Arc<LockState>,
    incarnation: u64,
    upkeep: Upkeep,
}

impl Watchdog {
    /// Starts the task: it keeps up the holds in `registry` every
    /// `timeout / 3`, retries failed rounds every `retry_delay`, and stops
    /// when `closed` turns true.
    pub fn start(
        registry: Arc<Registry>,
        connection: impl RoundTrip,
        timeout: Duration,
        retry_delay: Duration,
        closed: watch::Receiver<bool>,
    ) -> Self {
        let watchdog = Self { registry, counters: Arc::default() };
        tokio::spawn(watchdog.clone().run(connection, timeout, retry_delay, closed));
        watchdog
    }

    pub fn stats(&self) -> WatchdogStats {
        let count = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        let locks = self.registry.live().iter().filter(|state| state.read(|holds| holds.count() > 0)).count();
        WatchdogStats {
            locks,
            rounds: count(&self.counters.rounds),
            failed_rounds: count(&self.counters.failed_rounds),
            lost: self.registry.lost_count(),
        }
    }

    async fn run(
        self,
        mut connection: impl RoundTrip,
        timeout: Duration,
        retry_delay: Duration,
        mut closed: watch::Receiver<bool>,
    ) {
        // Also when the runtime drops this task: nobody renews then either.
        let _stop = StopOnExit(self.registry.clone());
        let period = timeout / 3;
        // A fixed schedule: a round every `period`, however long rounds
        // take; after a failed round, the next comes after `retry_delay`.
        let mut next = Instant::now() + period;
        loop {
            // Between rounds, wake too when a lease ends by the client's
            // estimate (a fixed lease may be far shorter than the period),
            // and recompute when a lease comes to end before `next`.
            self.registry.watchdog_wakes_by(next);
            let lease_ends = self.earliest_lease_end().unwrap_or(next);
            tokio::select! {
                _ = tokio::time::sleep_until(next.min(lease_ends)) => {}
                _ = self.registry.lease_ends_sooner.notified() => continue,
                _ = closed.wait_for(|closed| *closed) => break,
            }
            if Instant::now() < next {
                self.expire_overdue();
                continue;
            }
            next = if self.round(&mut connection, timeout).await {
                (next + period).max(Instant::now())
            } else {
                Instant::now() + retry_delay.min(period)
            };
        }
    }

    /// One round trip for every lock with holds. False when it failed.
    async fn round(&self, connection: &mut impl RoundTrip, timeout: Duration) -> bool {
        let now = Instant::now();
        let tasks: Vec<Task> = self
            .registry
            .live()
            .into_iter()
            .filter_map(|state| {
                let (incarnation, upkeep) = state.read(|holds| (holds.incarnation(), holds.upkeep(now, timeout)));
                // One expiry for the kinds counted together: a renewal
                // keeps what the other kinds' holds need too.
                let upkeep = match upkeep {
                    Some(Upkeep::Renew(lease)) => {
                        // RRW.RENEW sets every read key of the owner, the
                        // other side's holds' too: never shorter than they need.
                        Some(Upkeep::Renew(self.registry.at_least_shared_expiry_lease(&state, lease, now, timeout)))
                    }
                    other => other,
                };
                Some(Task { state, incarnation, upkeep: upkeep? })
            })
            .collect();
        if tasks.is_empty() {
            return true;
        }
        self.counters.rounds.fetch_add(1, Ordering::Relaxed);
        let commands = tasks
            .iter()
            .map(|task| {
                let id = &task.state.id;
                let cmd = match task.upkeep {
                    Upkeep::Renew(lease) => id.renew(protocol::clamp_lease_ms(lease)),
                    Upkeep::Check => id.status(),
                };
                (id.name.to_vec(), cmd)
            })
            .collect();
        let sent_at = Instant::now();
        // A server that hangs must not hang the watchdog: give up on it when
        // the next round is due, so overdue leases are still noticed; in a
        // cluster, only its own locks wait for the next round.
        let replies = connection.send(commands, timeout / 3).await;
        tasks.iter().zip(replies.replies).for_each(|(task, reply)| apply(task, reply, sent_at));
        let ok = replies.all_answered;
        if !ok {
            self.counters.failed_rounds.fetch_add(1, Ordering::Relaxed);
        }
        self.expire_overdue();
        ok
    }

    fn earliest_lease_end(&self) -> Option<Instant> {
        self.registry.live().iter().filter_map(|state| state.read(|holds| holds.expires_at())).min()
    }

    /// Holds whose lease has surely ended are lost, renewed or not.
    fn expire_overdue(&self) {
        let now = Instant::now();
        for state in self.registry.live() {
            state.update(|holds| {
                let ended = holds.expire_overdue(now);
                ((), ended)
            });
        }
    }
}

/// Applies one lock's reply. An error for this lock alone: try again next
/// round.
fn apply(task: &Task, reply: redis::RedisResult<redis::Value>, sent_at: Instant) {
    let held = match (task.upkeep, reply) {
        (Upkeep::Renew(lease), Ok(redis::Value::Int(1))) => {
            task.state.renewed(task.incarnation, sent_at, lease);
            let (name, owner) = task.state.id.traced();
            tracing::trace!(target: "rlock", lock = %name, owner = %owner, lease_ms = lease.as_millis() as u64, "renewed");
            true
        }
        (Upkeep::Renew(_), Ok(redis::Value::Int(0))) => {
            let (name, owner) = task.state.id.traced();
            tracing::debug!(target: "rlock", lock = %name, owner = %owner, "renewal refused: not held");
            false
        }
        (Upkeep::Check, Ok(reply)) => {
            Status::parse(reply, task.state.id.kind).map_or(true, |status| status.hold_count > 0)
        }
        _ => true,
    };
    // A request in flight on this lock settles its holds itself: a
    // release may have just emptied the key, an acquire re-created it.
    if !held {
        if let Ok(_idle) = task.state.gate.try_lock() {
            task.state.lose_incarnation(task.incarnation);
        }
    }
}

/// Stops the registry when the watchdog's task ends, by returning or by
/// being dropped with its runtime: nobody renews from then on, so no
/// holder may count on its lock, and requests no longer run inline.
struct StopOnExit(Arc<Registry>);

impl Drop for StopOnExit {
    fn drop(&mut self) {
        self.0.stop();
    }
}

#[cfg(test)]
mod tests;
