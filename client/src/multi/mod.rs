//! Several locks held as one: [`MultiLock`] (all of them, Redisson's
//! `RedissonMultiLock`) and [`RedLock`] (a majority of independent
//! primaries, Redisson's `RedissonRedLock`), built on the lock handles.

mod redlock;

pub use redlock::{RedLock, RedLockGuard};

use crate::error::{Error, Result};
use crate::guard::Guard;
use crate::kind::{LockKind, Plain};
use crate::lock::Lock;
use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::{Duration, Instant};

/// All of several locks, on one server or many, held as one. They are
/// taken in one fixed order (by name, then owner), so two multi-locks over
/// overlapping sets cannot deadlock; when one cannot be had, those taken
/// are given back before trying again. Each hold is renewed by its
/// client's watchdog (one task per client renews all its holds).
pub struct MultiLock<K: LockKind = Plain> {
    locks: Vec<Lock<K>>,
}

impl<K: LockKind> MultiLock<K> {
    /// The locks to hold at once (of any clients, so of any servers).
    pub fn new(locks: impl IntoIterator<Item = Lock<K>>) -> Self {
        let mut locks: Vec<Lock<K>> = locks.into_iter().collect();
        locks.sort_by(|a, b| (a.name(), a.owner()).cmp(&(b.name(), b.owner())));
        Self { locks }
    }

    /// Waits, without limit, until every lock is ours; the watchdog
    /// renews them.
    pub async fn lock(&self) -> Result<MultiGuard<K>> {
        loop {
            if let Some(guard) = self.try_lock(Duration::from_secs(60), None).await? {
                return Ok(guard);
            }
        }
    }

    /// Tries for at most `wait` to hold every lock at once; `None` when
    /// that did not happen, with nothing left held. With a `lease` each
    /// hold ends with it; without, the watchdog renews them.
    pub async fn try_lock(&self, wait: Duration, lease: Option<Duration>) -> Result<Option<MultiGuard<K>>> {
        let deadline = Instant::now() + wait;
        loop {
            let mut held = Vec::with_capacity(self.locks.len());
            for lock in &self.locks {
                let left = deadline.saturating_duration_since(Instant::now());
                match lock.try_lock(left, lease).await {
                    Ok(Some(guard)) => held.push(guard),
                    Ok(None) => break,
                    Err(err) => {
                        give_back(held).await;
                        return Err(err);
                    }
                }
            }
            if held.len() == self.locks.len() {
                return Ok(Some(MultiGuard { guards: held }));
            }
            give_back(held).await;
            if Instant::now() >= deadline {
                return Ok(None);
            }
        }
    }
}

/// Proof that every lock of a [`MultiLock`] is held.
#[must_use = "the locks are released when the guard is dropped"]
pub struct MultiGuard<K: LockKind = Plain> {
    guards: Vec<Guard<K>>,
}

impl<K: LockKind> MultiGuard<K> {
    /// The holds, one per lock, in the order they were taken.
    pub fn guards(&self) -> &[Guard<K>] {
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
async fn give_back<K: LockKind>(held: Vec<Guard<K>>) {
    let _ = unlock_all(held).await;
}

/// Unlocks every guard; the first error, after trying them all (a hold
/// already lost is no error here: the goal is that none is left).
async fn unlock_all<K: LockKind>(guards: Vec<Guard<K>>) -> Result<()> {
    let mut first_error = None;
    for guard in guards {
        match guard.unlock().await {
            Ok(()) | Err(Error::NotOwner) => {}
            Err(err) => first_error = first_error.or(Some(err)),
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// Completes once `enough` of the guards are lost.
fn lost_when<K: LockKind>(guards: &[Guard<K>], enough: usize) -> impl Future<Output = ()> + Send + 'static {
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
