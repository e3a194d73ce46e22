use crate::engine::hold::Hold;
use crate::error::Result;
use crate::lock::Lock;
use std::future::Future;

/// Proof of one hold on a lock. Give it back with [`Guard::unlock`].
///
/// Dropping a guard without unlocking stops its renewal and releases the
/// hold in a background task (without blocking). A guard whose hold is
/// lost sends nothing: it can never release a newer hold.
///
/// ```no_run
/// use rlock_client::Error;
///
/// # async fn example(client: rlock_client::Client) -> rlock_client::Result<()> {
/// # async fn do_the_work() {}
/// let guard = client.lock("orders:42").lock().await?;
/// tokio::select! {
///     _ = guard.lost() => { /* the lock is gone: stop the work */ }
///     _ = do_the_work() => {}
/// }
/// match guard.unlock().await {
///     Err(Error::NotOwner) => println!("the lock was lost before the release"),
///     released => released?,
/// }
/// # Ok(()) }
/// ```
#[must_use = "the lock is released when the guard is dropped"]
pub struct Guard {
    lock: Lock,
    hold: Hold,
}

impl std::fmt::Debug for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard").field("lock", &self.lock).field("lost", &self.is_lost()).finish()
    }
}

impl Guard {
    pub(crate) fn new(lock: Lock, hold: Hold) -> Self {
        Self { lock, hold }
    }

    /// The lock this guard holds.
    pub fn lock(&self) -> &Lock {
        &self.lock
    }

    /// Releases this hold. [`Error::NotOwner`](crate::Error::NotOwner) when the hold was lost
    /// meanwhile (expired, force-released or deleted): then nothing is
    /// sent. A connection error means the release may or may not have
    /// happened; the hold is forgotten and expires with its lease at the
    /// latest.
    pub async fn unlock(self) -> Result<()> {
        self.hold.unlock().await
    }

    /// True once the lock is known to be lost.
    pub fn is_lost(&self) -> bool {
        self.hold.is_lost()
    }

    /// Completes when the lock is lost: the server said it is no longer
    /// held (renewal replied 0, or a check found it force-released or
    /// deleted), renewal kept failing until the lease ran out, a fixed
    /// lease ended, or the client was dropped. Stop the work it protects.
    pub fn lost(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut lost = self.hold.lost.clone();
        async move {
            // A closed signal means the holds' incarnation ended: lost too.
            let _ = lost.wait_for(|lost| *lost).await;
        }
    }

    /// A fenced lock's fencing token of this acquire (`None` for other
    /// kinds): greater than every token issued for the lock before it
    /// (re-entries included). Pass it with every write the lock protects,
    /// and have the store refuse a token lower than the highest it has
    /// seen ([`Fence`](crate::Fence)): a holder whose lease ran out while
    /// it was paused then cannot overwrite its successor's work.
    pub fn token(&self) -> Option<i64> {
        self.hold.token
    }
}
