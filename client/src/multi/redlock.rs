//! RedLock: a lock held on a majority of independent primaries, as
//! Redisson's `RedissonRedLock` and the Redlock algorithm. Each lock of
//! the set is on its own primary (a handle of its own client). An attempt
//! tries all of them at once, each for a short time; it counts only if a
//! majority granted it and the lease left, after the time the attempt took
//! and an allowance for clock drift, is positive. Otherwise what it got is
//! given back on every primary.

use super::{is_unreachable, lost_when, unlock_all, Deadline};
use crate::error::Result;
use crate::guard::Guard;
use crate::lock::Lock;
use std::future::Future;
use std::time::{Duration, Instant};
use tokio::task::JoinSet;

/// A lock on each of N independent primaries, held by holding a majority.
///
/// ```no_run
/// use rlock_client::{Client, RedLock};
/// use std::time::Duration;
///
/// # async fn example() -> rlock_client::Result<()> {
/// let mut locks = Vec::new();
/// for url in ["redis://10.0.0.1:6379/", "redis://10.0.0.2:6379/", "redis://10.0.0.3:6379/"] {
///     locks.push(Client::open(url).await?.lock("orders:42"));
/// }
/// let redlock = RedLock::new(locks);
/// assert_eq!(redlock.quorum(), 2);
/// if let Some(guard) = redlock.try_lock(Duration::from_secs(1), Some(Duration::from_secs(10))).await? {
///     // Safe to work until guard.valid_until().
///     guard.unlock().await?;
/// }
/// # Ok(()) }
/// ```
pub struct RedLock {
    locks: Vec<Lock>,
}

/// How long one primary may take to answer an attempt's acquire, at most:
/// a slow or dead one must not eat the lease the others granted.
const PER_PRIMARY: Duration = Duration::from_millis(500);

impl RedLock {
    /// `locks`: one handle per primary, each from a client of its own.
    pub fn new(locks: impl IntoIterator<Item = Lock>) -> Self {
        Self { locks: locks.into_iter().collect() }
    }

    /// How many primaries must grant the lock.
    pub fn quorum(&self) -> usize {
        self.locks.len() / 2 + 1
    }

    /// Tries for at most `wait` to hold a majority; `None` when no attempt
    /// got one, with nothing left held. With a `lease` the holds end with
    /// it; without, each client's watchdog renews them, and the lease the
    /// validity is counted from is the watchdog timeout.
    pub async fn try_lock(&self, wait: Duration, lease: Option<Duration>) -> Result<Option<RedLockGuard>> {
        let deadline = Deadline::after(wait);
        let counted_lease = lease.unwrap_or_else(|| self.locks.first().map_or(Duration::ZERO, Lock::watchdog_timeout));
        let per_primary = PER_PRIMARY.min(counted_lease / 10).max(Duration::from_millis(5));
        loop {
            let started = Instant::now();
            let mut attempts = JoinSet::new();
            for lock in &self.locks {
                let lock = lock.clone();
                attempts.spawn(async move {
                    // Dropped on timeout: a grant that lands anyway is given back.
                    tokio::time::timeout(per_primary, lock.try_lock(Duration::ZERO, lease)).await
                });
            }
            let (mut held, mut refusal): (Vec<Guard>, Option<crate::Error>) = (Vec::new(), None);
            while let Some(attempt) = attempts.join_next().await {
                match attempt {
                    Ok(Ok(Ok(Some(guard)))) => held.push(guard),
                    Ok(Ok(Err(err))) if !is_unreachable(&err) => refusal = refusal.or(Some(err)),
                    _ => {}
                }
            }
            // Redlock's drift allowance: 1% of the lease, plus 2 ms.
            let drift = counted_lease / 100 + Duration::from_millis(2);
            let spent = started.elapsed() + drift;
            if held.len() >= self.quorum() && spent < counted_lease {
                let valid_until = started + counted_lease - drift;
                return Ok(Some(RedLockGuard { guards: held, quorum: self.quorum(), valid_until }));
            }
            let _ = unlock_all(held).await;
            // A request no primary can grant (a bad lease, no module): said so.
            if let Some(err) = refusal {
                return Err(err);
            }
            if deadline.passed() {
                return Ok(None);
            }
            // Apart, so that competing attempts do not split the primaries again.
            tokio::time::sleep(per_primary.min(deadline.left())).await;
        }
    }
}

/// Proof that a [`RedLock`]'s majority is held.
///
/// ```no_run
/// # async fn example(redlock: rlock_client::RedLock) -> rlock_client::Result<()> {
/// if let Some(guard) = redlock.try_lock(std::time::Duration::from_secs(1), None).await? {
///     println!("{} primaries granted it", guard.guards().len());
///     tokio::select! {
///         _ = guard.lost() => { /* no longer a majority: stop */ }
///         _ = async { /* the work */ } => {}
///     }
///     guard.unlock().await?;
/// }
/// # Ok(()) }
/// ```
#[must_use = "the locks are released when the guard is dropped"]
#[derive(Debug)]
pub struct RedLockGuard {
    guards: Vec<Guard>,
    quorum: usize,
    valid_until: Instant,
}

impl RedLockGuard {
    /// The holds, one per primary that granted the lock.
    pub fn guards(&self) -> &[Guard] {
        &self.guards
    }

    /// Until when the majority's first lease is sure to last (without
    /// renewal): the lease from the attempt's start, less the drift
    /// allowance.
    pub fn valid_until(&self) -> Instant {
        self.valid_until
    }

    /// Releases the lock on every primary that granted it; the first
    /// error, after trying them all.
    pub async fn unlock(self) -> Result<()> {
        unlock_all(self.guards).await
    }

    /// Completes when the holds left are no longer a majority.
    pub fn lost(&self) -> impl Future<Output = ()> + Send + 'static {
        lost_when(&self.guards, self.guards.len() + 1 - self.quorum)
    }
}
