//! Redisson's acquire loop, for every kind: try; when refused, subscribe to
//! the kind's channel (before the next try, so no wake-up is missed), then
//! wait for a wake-up or the retry time the refusal gave, whichever is
//! first, and try again.
//!
//! A fair waiter is queued on the server by its waiting tries, sleeps for
//! the hint each one replies, and gives its place up (RFAIR.CANCEL) however
//! the wait ends without the lock: its limit, an error, or the caller
//! dropping the future.

use crate::attempt::{attempt, give_up_place, Attempt};
use crate::commands::Kind;
use crate::error::{Error, Result};
use crate::guard::Hold;
use crate::handle::Handle;
use crate::holds::Renewal;
use crate::protocol;
use crate::subscriptions::Subscription;
use std::time::Duration;
use tokio::time::Instant;

/// How often a waiter retries a lock whose key has no expiry (only a
/// release message, or this, wakes it).
const NO_EXPIRY_RETRY: Duration = Duration::from_secs(1);

impl Handle {
    /// Waits up to `limit` (`None`: without limit) for a hold of `lease`
    /// (`None`: the watchdog timeout); `None` once the limit passes;
    /// [`Error::ClientClosed`] as soon as the client is closed. The first
    /// try is always made, as Redisson's.
    pub async fn acquire(
        &self,
        renewal: Renewal,
        lease: Option<Duration>,
        limit: Option<Duration>,
    ) -> Result<Option<Hold>> {
        let shared = self.shared();
        let lease = lease.unwrap_or(shared.options.watchdog_timeout);
        protocol::lease_ms(lease)?;
        // A limit past the clock's range is no limit.
        let deadline = limit.and_then(|limit| Instant::now().checked_add(limit));
        let queue_wait_ms = self.queue_wait_ms(limit);
        let mut place = QueuePlace { handle: queue_wait_ms.map(|_| self.clone()), wait_ms: queue_wait_ms.unwrap_or(0) };
        let retry = &shared.options.retry;
        let mut closed = shared.closed();
        let mut subscription: Option<Subscription> = None;
        let mut subscribe_tried = false;
        let mut failures = 0;
        let mut attempts = 0;
        loop {
            if *closed.borrow_and_update() {
                return Err(Error::ClientClosed);
            }
            if let Some(subscription) = subscription.as_mut() {
                subscription.mark_seen();
            }
            // An attempt may wait for this lock's earlier call to settle.
            // Past the first, the limit holds: a grant that comes too late
            // is dropped, which gives it back.
            let attempted = attempt(self, renewal, lease, queue_wait_ms);
            let attempted = match deadline.filter(|_| attempts > 0) {
                None => attempted.await,
                Some(deadline) => match tokio::time::timeout_at(deadline, attempted).await {
                    Ok(attempted) => attempted,
                    Err(_) => return Ok(None),
                },
            };
            attempts += 1;
            let pause = match attempted {
                Ok(Attempt::Granted(hold)) => {
                    place.handle = None; // the grant took it off the queue
                    return Ok(Some(hold));
                }
                Ok(Attempt::Refused { retry_ms }) => {
                    failures = 0;
                    u64::try_from(retry_ms).map_or(NO_EXPIRY_RETRY, Duration::from_millis)
                }
                Err(err) if err.is_transient() && failures < retry.attempts => {
                    failures += 1;
                    retry.delay
                }
                Err(err) => return Err(err),
            };
            let pause = match deadline {
                None => pause,
                Some(deadline) => match deadline.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => pause.min(left),
                    _ => return Ok(None),
                },
            };
            if !subscribe_tried {
                subscribe_tried = true;
                // Without pub/sub the loop still works: it polls.
                let rule = self.id().kind.wake_rule();
                subscription = match shared.subscriptions().await {
                    Ok(subscriptions) => subscriptions.subscribe(&self.id().name, &self.channel, rule).await.ok(),
                    Err(_) => None,
                };
                if subscription.is_some() {
                    continue;
                }
            }
            let woken = async {
                match subscription.as_mut() {
                    Some(subscription) => subscription.released().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = woken => {}
                _ = tokio::time::sleep(pause) => {}
                _ = closed.changed() => {}
            }
        }
    }

    /// The `WAIT` of a fair lock's tries: how long its place in the queue
    /// lasts once its turn may have come (Redisson's: the caller's wait
    /// limit, else `fairLockWaitTimeout`). `None` for the no-wait form
    /// (a zero limit: nothing is queued) and for the other kinds.
    fn queue_wait_ms(&self, limit: Option<Duration>) -> Option<i64> {
        match (self.id().kind, limit) {
            (Kind::Fair, Some(limit)) if limit.is_zero() => None,
            (Kind::Fair, Some(limit)) => Some(protocol::clamp_lease_ms(limit)),
            (Kind::Fair, None) => Some(protocol::clamp_lease_ms(self.shared().options.fair_wait_timeout)),
            _ => None,
        }
    }
}

/// A fair waiter's place in the queue, given up when dropped while armed
/// (after this lock's calls in flight, which may have queued it).
struct QueuePlace {
    handle: Option<Handle>,
    wait_ms: i64,
}

impl Drop for QueuePlace {
    fn drop(&mut self) {
        if let Some(handle) = self.handle.take() {
            let wait_ms = self.wait_ms;
            let runtime = handle.shared().runtime.clone();
            runtime.spawn(async move {
                let _gate = handle.state().gate.lock().await;
                give_up_place(&handle, &handle.shared().connection, wait_ms).await;
            });
        }
    }
}
