//! Several locks held as one: [`MultiLock`] (all of them, Redisson's
//! `RedissonMultiLock`) and [`RedLock`] (a majority of independent
//! primaries, Redisson's `RedissonRedLock`), built on the lock handles.

mod redlock;

pub use redlock::{RedLock, RedLockGuard};

use crate::error::{Error, Result};
use crate::guard::Guard;
use crate::lock::Lock;
use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::{Duration, Instant};

/// All of several locks, on one server or many, held as one. They are
/// taken in one order, by name and then server, the same in every process
/// that names its servers alike, so two multi-locks over overlapping sets
/// cannot deadlock; when one cannot be had, those taken are given back
/// before trying again. The locks may be of any kinds; a lock named twice
/// (one name on one server, whatever the kinds) is taken once, through the
/// first handle given. Each hold is renewed by its client's watchdog (one task per
/// client renews all its holds).
///
/// ```no_run
/// use rlock_client::MultiLock;
/// use std::time::Duration;
///
/// # async fn example(client: rlock_client::Client) -> rlock_client::Result<()> {
/// let both = MultiLock::new([client.lock("account:1"), client.lock("account:2")]);
/// if let Some(guard) = both.try_lock(Duration::from_secs(2), None).await? {
///     // Both accounts are ours: move the money.
///     guard.unlock().await?;
/// }
/// # Ok(()) }
/// ```
pub struct MultiLock {
    locks: Vec<Lock>,
}

impl MultiLock {
    /// The locks to hold at once (of any clients, so of any servers).
    pub fn new(locks: impl IntoIterator<Item = Lock>) -> Self {
        let mut locks: Vec<(Vec<u8>, String, Lock)> =
            locks.into_iter().map(|lock| (lock.name().to_vec(), lock.server(), lock)).collect();
        locks.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
        locks.dedup_by(|a, b| (&a.0, &a.1) == (&b.0, &b.1));
        Self { locks: locks.into_iter().map(|(_, _, lock)| lock).collect() }
    }

    /// Waits, without limit, until every lock is ours; the watchdog
    /// renews them.
    pub async fn lock(&self) -> Result<MultiGuard> {
        loop {
            if let Some(guard) = self.try_lock(Duration::from_secs(60), None).await? {
                return Ok(guard);
            }
        }
    }

    /// Tries for at most `wait` to hold every lock at once; `None` when
    /// that did not happen, with nothing left held. With a `lease` each
    /// hold ends with it, counted from the first lock's acquire: an attempt
    /// that took longer than the lease to get the last lock gives them all
    /// back and tries again. Without, the watchdog renews them.
    pub async fn try_lock(&self, wait: Duration, lease: Option<Duration>) -> Result<Option<MultiGuard>> {
        let deadline = Deadline::after(wait);
        loop {
            let started = Instant::now();
            let mut held = Vec::with_capacity(self.locks.len());
            for lock in &self.locks {
                match lock.try_lock(deadline.left(), lease).await {
                    Ok(Some(guard)) => held.push(guard),
                    Ok(None) => break,
                    Err(err) => {
                        give_back(held).await;
                        return Err(err);
                    }
                }
            }
            let in_time = lease.is_none_or(|lease| started.elapsed() < lease);
            if held.len() == self.locks.len() && in_time {
                return Ok(Some(MultiGuard { guards: held }));
            }
            give_back(held).await;
            if deadline.passed() {
                return Ok(None);
            }
        }
    }
}

/// The end of a wait; a wait too long to add to the clock never ends.
#[derive(Clone, Copy)]
struct Deadline(Option<Instant>);

impl Deadline {
    fn after(wait: Duration) -> Self {
        Deadline(Instant::now().checked_add(wait))
    }

    fn left(self) -> Duration {
        self.0.map_or(Duration::MAX, |end| end.saturating_duration_since(Instant::now()))
    }

    fn passed(self) -> bool {
        self.0.is_some_and(|end| Instant::now() >= end)
    }
}

/// Proof that every lock of a [`MultiLock`] is held.
///
/// ```no_run
/// # async fn example(client: rlock_client::Client) -> rlock_client::Result<()> {
/// let both = rlock_client::MultiLock::new([client.lock("account:1"), client.lock("account:2")]);
/// let guard = both.lock().await?;
/// assert_eq!(guard.guards().len(), 2);
/// tokio::select! {
///     _ = guard.lost() => { /* one of the locks is gone: stop */ }
///     _ = async { /* the work */ } => {}
/// }
/// guard.unlock().await?;
/// # Ok(()) }
/// ```
#[must_use = "the locks are released when the guard is dropped"]
pub struct MultiGuard {
    guards: Vec<Guard>,
}

impl std::fmt::Debug for MultiGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MultiGuard").field("guards", &self.guards).finish()
    }
}

impl MultiGuard {
    /// The holds, one per lock, in the order they were taken.
    pub fn guards(&self) -> &[Guard] {
        &self.guards
    }

    /// Releases every hold; the first error, after trying them all.
    pub async fn unlock(self) -> Result<()> {
        unlock_all(self.guards).await
    }

    /// Completes when any of the locks is lost.
    pub fn lost(&self) -> impl Future<Output = ()> + Send + 'static {
        lost_when(&self.guards, 1)
    }
}

/// Gives back holds taken by an attempt that did not get enough of them.
async fn give_back(held: Vec<Guard>) {
    let _ = unlock_all(held).await;
}

/// Unlocks every guard; after trying them all, the first error, or
/// [`Error::NotOwner`] when a hold had been lost meanwhile.
async fn unlock_all(guards: Vec<Guard>) -> Result<()> {
    let (mut first_error, mut lost) = (None, false);
    for guard in guards {
        match guard.unlock().await {
            Ok(()) => {}
            Err(Error::NotOwner) => lost = true,
            Err(err) => first_error = first_error.or(Some(err)),
        }
    }
    match (first_error, lost) {
        (Some(err), _) => Err(err),
        (None, true) => Err(Error::NotOwner),
        (None, false) => Ok(()),
    }
}

/// Whether an acquire's error says only that its server could not be
/// reached in time (a RedLock counts that primary out), not that the
/// request itself is wrong.
fn is_unreachable(err: &Error) -> bool {
    match err {
        Error::Redis(err) => {
            err.is_io_error() || err.is_connection_dropped() || err.is_connection_refusal() || err.is_timeout()
        }
        Error::OutcomeUnknown(_) => true,
        _ => false,
    }
}

/// Completes once `enough` of the guards are lost.
fn lost_when(guards: &[Guard], enough: usize) -> impl Future<Output = ()> + Send + 'static {
    let mut signals: Vec<Option<Pin<Box<dyn Future<Output = ()> + Send>>>> =
        guards.iter().map(|guard| Some(Box::pin(guard.lost()) as Pin<Box<dyn Future<Output = ()> + Send>>)).collect();
    let mut lost = 0;
    std::future::poll_fn(move |cx| {
        for signal in signals.iter_mut() {
            if signal.as_mut().is_some_and(|future| future.as_mut().poll(cx).is_ready()) {
                *signal = None;
                lost += 1;
            }
        }
        if lost >= enough {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
}
