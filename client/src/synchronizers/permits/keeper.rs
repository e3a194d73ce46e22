//! What keeps a permit while it is held: a task that renews its lease
//! every third of it (when asked) and says when the permit is lost.

use super::{PermitExpirableSemaphore, PermitOptions};
use crate::engine::protocol;
use crate::engine::requests::{command, send};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// Stops its task when dropped.
pub(crate) struct Keeper {
    task: JoinHandle<()>,
    pub lost: watch::Receiver<bool>,
}

impl Drop for Keeper {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Keeper {
    /// Keeps permit `id`, taken by a request sent at `requested_at` (its
    /// lease counts from then: never later than the server's).
    pub fn start(
        semaphore: PermitExpirableSemaphore,
        id: [u8; 16],
        options: PermitOptions,
        requested_at: Instant,
    ) -> Self {
        let (lost_tx, lost) = watch::channel(false);
        let runtime = semaphore.shared.runtime.clone();
        let task = runtime.spawn(async move {
            keep(&semaphore, &id, options, requested_at).await;
            lost_tx.send_replace(true);
        });
        Self { task, lost }
    }
}

/// Returns when the permit is lost: its fixed lease ended, a renewal found
/// it gone, renewals failed until the lease ran out, or the client closed.
async fn keep(semaphore: &PermitExpirableSemaphore, id: &[u8], options: PermitOptions, requested_at: Instant) {
    let shared = &semaphore.shared;
    let mut closed = shared.closed();
    let mut lease_end = requested_at + options.lease;
    let period = options.lease / 3;
    let mut next = if options.renew { requested_at + period } else { lease_end };
    let update =
        command("RPSEM.UPDATELEASE", &semaphore.name).arg(id).arg(protocol::clamp_lease_ms(options.lease)).clone();
    loop {
        tokio::select! {
            _ = tokio::time::sleep_until(next) => {}
            _ = closed.wait_for(|closed| *closed) => return,
        }
        if !options.renew || Instant::now() >= lease_end {
            return;
        }
        let sent_at = Instant::now();
        // A renewal may run twice: the shared connection's fast path.
        match send::<i64>(shared, &semaphore.name, &update).await {
            Ok(1) => {
                lease_end = sent_at + options.lease;
                next = sent_at + period;
            }
            Ok(_) => return, // gone: lapsed, released or deleted
            Err(_) => next = (Instant::now() + shared.options.retry.delay).min(lease_end),
        }
    }
}
