use crate::error::{Error, Result};
use crate::handle::Handle;
use crate::holds::{Released, Ticket};
use crate::kind::{Fenced, LockKind, Plain};
use crate::lock::Lock;
use crate::protocol;
use crate::release::release;
use crate::run_to_end::run_to_end;
use std::future::Future;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// Proof of one hold on a lock. Give it back with [`Guard::unlock`].
///
/// Dropping a guard without unlocking stops its renewal and releases the
/// hold in a background task (without blocking). A guard whose hold is
/// lost sends nothing: it can never release a newer hold.
#[must_use = "the lock is released when the guard is dropped"]
pub struct Guard<K: LockKind = Plain> {
    lock: Lock<K>,
    hold: Hold,
}

impl<K: LockKind> std::fmt::Debug for Guard<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard").field("lock", &self.lock).field("lost", &self.is_lost()).finish()
    }
}

impl<K: LockKind> Guard<K> {
    pub(crate) fn new(lock: Lock<K>, hold: Hold) -> Self {
        Self { lock, hold }
    }

    /// The lock this guard holds.
    pub fn lock(&self) -> &Lock<K> {
        &self.lock
    }

    /// Releases this hold. [`Error::NotOwner`] when the hold was lost
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
}

impl Guard<Fenced> {
    /// The fencing token of this acquire: greater than every token issued
    /// for the lock before it (re-entries included). Pass it with every
    /// write the lock protects, and have the store refuse a token lower
    /// than the highest it has seen: a holder whose lease ran out while it
    /// was paused then cannot overwrite its successor's work.
    pub fn token(&self) -> i64 {
        self.hold.token
    }
}

/// One hold, whatever the lock's kind: given back when dropped unreleased.
pub(crate) struct Hold {
    handle: Handle,
    ticket: Ticket,
    /// The lease this hold was taken for.
    lease: Duration,
    lost: watch::Receiver<bool>,
    /// False once the hold was given back.
    held: bool,
    /// A fenced lock's fencing token (0 for other kinds).
    token: i64,
}

impl Hold {
    pub fn new(handle: Handle, ticket: Ticket, lease: Duration, token: i64) -> Self {
        let lost = handle.state().lost_signal(&ticket);
        Self { handle, ticket, lease, lost, held: true, token }
    }

    async fn unlock(mut self) -> Result<()> {
        self.held = false;
        give_back(&self.handle, self.ticket, self.lease).await.unwrap_or(Err(Error::ClientClosed))
    }

    fn is_lost(&self) -> bool {
        *self.lost.borrow() || self.lost.has_changed().is_err()
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        if self.held && !self.is_lost() {
            // Never polled: the release runs in a task of its own.
            drop(give_back(&self.handle, self.ticket, self.lease));
        }
    }
}

/// Sends the release for `ticket` and updates the holds, to the end (see
/// [`run_to_end`]), so that a cancelled `unlock()` cannot leave the hold
/// half given back. Nothing is sent when the hold is no longer current.
fn give_back(handle: &Handle, ticket: Ticket, lease: Duration) -> impl Future<Output = Option<Result<()>>> {
    let lock = handle.clone();
    run_to_end(handle.shared(), move |reply_tx| async move {
        let _ = reply_tx.send(release_hold(&lock, ticket, lease).await);
    })
}

async fn release_hold(handle: &Handle, ticket: Ticket, lease: Duration) -> Result<()> {
    let (shared, state) = (handle.shared(), handle.state());
    let _gate = state.gate.lock().await;
    let requested_at = Instant::now();
    let watchdog = shared.options.watchdog_timeout;
    let Some(lease_sent) = state.read(|holds| {
        holds.is_current(&ticket).then(|| holds.lease_for_release(&ticket, requested_at, watchdog, lease))
    }) else {
        return Err(Error::NotOwner);
    };
    let lease_ms = protocol::clamp_lease_ms(lease_sent);
    match release(shared, &shared.connection, &state.id, lease_ms).await {
        Ok(reply) => {
            let lease_set = state.id.kind.release_sets_lease().then_some(lease_sent);
            let lease_end = state.update(|holds| {
                let ended = holds.released(&ticket, reply, lease_set, requested_at);
                (holds.expires_at(), ended)
            });
            // The holds left may now end before the watchdog's next wake.
            shared.registry.note_lease_end(lease_end);
            if reply == Released::NotHeld {
                Err(Error::NotOwner)
            } else {
                Ok(())
            }
        }
        Err(err) => {
            state.update(|holds| ((), holds.forget(&ticket)));
            Err(err)
        }
    }
}
