//! One hold of any lock kind, as the engine hands it over inside a
//! [`Guard`](crate::Guard): given back when dropped unreleased, and never
//! after it was lost.

use crate::engine::handle::Handle;
use crate::engine::holds::{Released, Ticket};
use crate::engine::kind::Kind;
use crate::engine::protocol;
use crate::engine::release::release;
use crate::engine::run_to_end::run_to_end;
use crate::error::{Error, Result};
use std::future::Future;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// One hold, whatever the lock's kind: given back when dropped unreleased.
pub(crate) struct Hold {
    handle: Handle,
    ticket: Ticket,
    /// The lease this hold was taken for.
    lease: Duration,
    pub lost: watch::Receiver<bool>,
    /// False once the hold was given back.
    held: bool,
    /// A fenced lock's fencing token (`None` for other kinds).
    pub token: Option<i64>,
}

impl Hold {
    pub fn new(handle: Handle, ticket: Ticket, lease: Duration, token: Option<i64>) -> Self {
        let lost = handle.state().lost_signal(&ticket);
        Self { handle, ticket, lease, lost, held: true, token }
    }

    pub async fn unlock(mut self) -> Result<()> {
        self.held = false;
        give_back(&self.handle, self.ticket, self.lease).await.unwrap_or(Err(Error::ClientClosed))
    }

    pub fn is_lost(&self) -> bool {
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
    // The release sets the lock's one expiry: not shorter than the other
    // holds on it need (other kinds counted with it, a read-write lock's
    // other side).
    let lease_sent = shared.registry.at_least_shared_expiry_lease(state, lease_sent, requested_at, watchdog);
    let lease_ms = protocol::clamp_lease_ms(lease_sent);
    // A read release drops the owner's last numbered timeout key, whichever
    // hold it was, and the lock then lives as long as the keys left, which
    // may be an earlier, shorter hold's: first give them the lease the holds
    // left need, and the write side's holds (RENEW sets each key; retried,
    // it sets the same again).
    let renews = state.id.kind == Kind::Read && state.read(|holds| holds.count() > 1);
    if renews {
        let renew = state.id.renew(lease_ms);
        let renewed = shared
            .options
            .retry
            .run(Error::is_transient, || async { Ok(renew.query_async::<i64>(&mut shared.connection.clone()).await?) });
        if let Err(err) = renewed.await {
            state.update(|holds| ((), holds.forget(&ticket)));
            return Err(err);
        }
    }
    match release(shared, &shared.connection, &state.id, lease_ms).await {
        Ok(reply) => {
            let lease_set = (state.id.kind.release_sets_lease() || renews).then_some(lease_sent);
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
