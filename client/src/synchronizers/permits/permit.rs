//! A held permit: its id, its loss signal, its release.

use super::keeper::Keeper;
use super::{PermitExpirableSemaphore, PermitOptions};
use crate::error::{Error, Result};
use std::future::Future;
use tokio::sync::oneshot;
use tokio::time::Instant;

/// One permit of a [`PermitExpirableSemaphore`]. Give it back with
/// [`Permit::release`]; dropped unreleased, it is released in the
/// background (without blocking).
///
/// ```no_run
/// # async fn example(client: rlock_client::Client) -> rlock_client::Result<()> {
/// let permit = client.permit_semaphore("render:workers").acquire(std::time::Duration::from_secs(60)).await?;
/// tokio::select! {
///     _ = permit.lost() => { /* its lease ran out: stop */ }
///     _ = async { /* the work */ } => {}
/// }
/// permit.release().await?; // Err(Error::PermitLapsed) if the lease had run out
/// # Ok(()) }
/// ```
#[must_use = "the permit is released when dropped"]
pub struct Permit {
    semaphore: PermitExpirableSemaphore,
    id: [u8; 16],
    keeper: Option<Keeper>,
}

impl std::fmt::Debug for Permit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Permit").field("semaphore", &self.semaphore).field("id", &self.id_hex()).finish()
    }
}

impl Permit {
    pub(crate) fn new(
        semaphore: PermitExpirableSemaphore,
        id: [u8; 16],
        options: PermitOptions,
        requested_at: Instant,
    ) -> Self {
        let keeper = Keeper::start(semaphore.clone(), id, options, requested_at);
        Self { semaphore, id, keeper: Some(keeper) }
    }

    /// The permit's id: 16 random bytes, the member of `{name}:timeout`.
    pub fn id(&self) -> &[u8; 16] {
        &self.id
    }

    /// The id in hex, as Redisson shows permit ids.
    pub fn id_hex(&self) -> String {
        self.id.iter().map(|byte| format!("{byte:02x}")).collect()
    }

    /// True once the permit is known to be lost.
    pub fn is_lost(&self) -> bool {
        self.keeper.as_ref().is_none_or(|keeper| *keeper.lost.borrow())
    }

    /// Completes when the permit is lost: its fixed lease ended, a renewal
    /// found it gone, renewals failed until its lease ran out, or the
    /// client was dropped. Stop the work it protects.
    pub fn lost(&self) -> impl Future<Output = ()> + Send + 'static {
        let lost = self.keeper.as_ref().map(|keeper| keeper.lost.clone());
        async move {
            if let Some(mut lost) = lost {
                let _ = lost.wait_for(|lost| *lost).await;
            }
        }
    }

    /// Gives the permit back. [`Error::PermitLapsed`] when its lease had
    /// run out (the server has taken it back, and says so, where Redisson
    /// answers as if it were never held), [`Error::NotOwner`] when it was
    /// not held (released, or removed from the semaphore).
    pub async fn release(mut self) -> Result<()> {
        match self.give_back().await.unwrap_or(Err(Error::ClientClosed))? {
            1 => Ok(()),
            0 => Err(Error::NotOwner),
            -1 => Err(Error::PermitLapsed),
            other => Err(Error::UnexpectedReply(format!("RPSEM.RELEASE replied {other}"))),
        }
    }

    /// Stops keeping the permit and releases it in a task of its own, so
    /// that a cancelled `release()` still gives it back.
    fn give_back(&mut self) -> oneshot::Receiver<Result<i64>> {
        let (reply_tx, reply_rx) = oneshot::channel();
        if self.keeper.take().is_some() {
            let (semaphore, id) = (self.semaphore.clone(), self.id);
            let runtime = semaphore.shared.runtime.clone();
            runtime.spawn(async move {
                let _ = reply_tx.send(semaphore.release_id(&id).await);
            });
        }
        reply_rx
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        drop(self.give_back());
    }
}
