use crate::error::{Error, Result};
use crate::lock::Lock;
use crate::protocol;
use crate::watchdog::Renewal;
use std::future::Future;
use std::time::Duration;
use tokio::sync::{oneshot, watch};
use tokio::time::Instant;

/// Proof of one hold on a lock. Give it back with [`Guard::unlock`].
///
/// Dropping a guard without unlocking stops its renewal and releases the
/// hold in a background task (without blocking); outside a Tokio runtime
/// the lock is left to expire with its lease.
#[must_use = "the lock is released when the guard is dropped"]
pub struct Guard {
    lock: Lock,
    lease_ms: i64,
    lost: watch::Receiver<bool>,
    /// False once the hold was given back.
    held: bool,
}

impl std::fmt::Debug for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard").field("lock", &self.lock).field("lost", &self.is_lost()).finish()
    }
}

impl Guard {
    pub(crate) fn new(lock: Lock, lease: Duration, renewal: Renewal, requested_at: Instant) -> Self {
        let lost = lock.shared().watchdog.hold(lock.id().clone(), lease, renewal, requested_at);
        let lease_ms = lease.as_millis() as i64;
        Self { lock, lease_ms, lost, held: true }
    }

    /// The lock this guard holds.
    pub fn lock(&self) -> &Lock {
        &self.lock
    }

    /// Releases this hold. [`Error::NotOwner`] when the lock was lost
    /// meanwhile (expired, force-released or deleted).
    pub async fn unlock(mut self) -> Result<()> {
        self.held = false;
        match release_in_background(&self.lock, self.lease_ms).await {
            Ok(Ok(Some(_))) => Ok(()),
            Ok(Ok(None)) => Err(Error::NotOwner),
            Ok(Err(err)) => Err(err.into()),
            Err(_) => Err(Error::ClientClosed),
        }
    }

    /// True once the lock is known to be lost.
    pub fn is_lost(&self) -> bool {
        *self.lost.borrow() || self.lost.has_changed().is_err()
    }

    /// Completes when the lock is lost: the server said it is no longer
    /// held (renewal replied 0, or a check found it force-released or
    /// deleted), renewal kept failing until the lease ran out, a fixed
    /// lease ended, or the client was dropped. Stop the work it protects.
    pub fn lost(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut lost = self.lost.clone();
        async move {
            // An error means the watchdog forgot the lock: not held either.
            let _ = lost.wait_for(|lost| *lost).await;
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if !self.held {
            return;
        }
        if tokio::runtime::Handle::try_current().is_ok() {
            drop(release_in_background(&self.lock, self.lease_ms));
        } else {
            self.lock.shared().watchdog.unhold(self.lock.id(), false);
        }
    }
}

/// Sends RLOCK.RELEASE and updates the watchdog in a task of its own, so
/// that a cancelled `unlock()` cannot leave the hold half given back.
/// Releases are never retried: a repeat could drop another reentry level.
fn release_in_background(lock: &Lock, lease_ms: i64) -> oneshot::Receiver<redis::RedisResult<Option<i64>>> {
    let (reply_tx, reply_rx) = oneshot::channel();
    let lock = lock.clone();
    tokio::spawn(async move {
        let release = protocol::release(lock.name(), lock.owner(), lease_ms);
        let reply = release.query_async::<Option<i64>>(&mut lock.shared().connection.clone()).await;
        let watchdog = &lock.shared().watchdog;
        match reply {
            Ok(Some(1)) => watchdog.unhold(lock.id(), true),
            Ok(None) => watchdog.lose(lock.id()),
            _ => watchdog.unhold(lock.id(), false),
        }
        let _ = reply_tx.send(reply);
    });
    reply_rx
}
