//! Acquiring a lock of any kind: Redisson's waiting loop
//! ([`wait_settling`]), woken by the kind's channel or at the holder's PTTL.
//!
//! A fair waiter is queued on the server by its waiting tries, sleeps for
//! the hint each one replies, and gives its place up (RFAIR.CANCEL) however
//! the wait ends without the lock: its limit, an error, or the caller
//! dropping the future.

use crate::engine::attempt::{attempt, give_up_place, Attempt};
use crate::engine::blocking;
use crate::engine::channel_wait::{until, wait_settling, Channel, Tried, CANCEL_GRACE};
use crate::engine::handle::Handle;
use crate::engine::hold::Hold;
use crate::engine::holds::Renewal;
use crate::engine::kind::Kind;
use crate::engine::protocol;
use crate::error::Result;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::time::Instant;
use tracing::Instrument;

/// How often a waiter retries a lock whose key has no expiry (only a
/// release message, or this, wakes it).
const NO_EXPIRY_RETRY: Duration = Duration::from_secs(1);

impl Handle {
    /// Waits up to `limit` (`None`: without limit) for a hold of `lease`
    /// (`None`: the watchdog timeout); `None` once the limit passes;
    /// [`Error::ClientClosed`](crate::Error::ClientClosed) as soon as the client is closed. The first
    /// try is always made, as Redisson's.
    pub async fn acquire(
        &self,
        renewal: Renewal,
        lease: Option<Duration>,
        limit: Option<Duration>,
    ) -> Result<Option<Hold>> {
        let (name, owner) = self.id().traced();
        let span =
            tracing::debug_span!(target: "rlock", "acquire", lock = %name, owner = %owner, kind = ?self.id().kind);
        let started = Instant::now();
        // Boxed: unboxed, the nested futures are too deep a type for the
        // compiler's default limit in a caller's crate (the doc tests).
        let acquired = Box::pin(self.acquire_traced(renewal, lease, limit)).instrument(span.clone()).await;
        let waited_ms = started.elapsed().as_millis() as u64;
        span.in_scope(|| match &acquired {
            Ok(Some(_)) => tracing::debug!(target: "rlock", waited_ms, "granted"),
            Ok(None) => tracing::debug!(target: "rlock", waited_ms, "not granted within the limit"),
            Err(err) => tracing::debug!(target: "rlock", waited_ms, error = %err, "acquire failed"),
        });
        acquired
    }

    async fn acquire_traced(
        &self,
        renewal: Renewal,
        lease: Option<Duration>,
        limit: Option<Duration>,
    ) -> Result<Option<Hold>> {
        let shared = self.shared();
        let lease = lease.unwrap_or(shared.options.watchdog_timeout);
        protocol::lease_ms(lease)?;
        let queue_wait_ms = self.queue_wait_ms(limit);
        let mut place = QueuePlace { handle: queue_wait_ms.map(|_| self.clone()), wait_ms: queue_wait_ms.unwrap_or(0) };
        let channel = Channel { key: &self.id().name, name: &self.channel, rule: self.id().kind.wake_rule() };
        // An attempt may wait for this lock's earlier call to settle. Past
        // the first, the limit holds: a grant that comes too late is
        // dropped, which gives it back.
        // Past the first try, a waiter may block on the server instead:
        // at the limit that call leaves the server's queue before the
        // caller is told `None` (a grant made first is the caller's),
        // unless the server hangs (then a task settles it).
        let deadline = limit.and_then(|limit| Instant::now().checked_add(limit));
        let first = &AtomicBool::new(true);
        let hold = wait_settling(shared, channel, limit, |give_up_at| async move {
            let blocked = match first.swap(false, Ordering::Relaxed) {
                true => None,
                false => {
                    let left = deadline.map(|deadline| deadline.saturating_duration_since(Instant::now()));
                    let settled_by = give_up_at.map(|at| at + CANCEL_GRACE);
                    // Boxed: only a try past the first blocks, and its large
                    // future would make every acquire's larger (each is
                    // moved into its box above: a copy per call).
                    let blocked = blocking::attempt(self, renewal, lease, (left, queue_wait_ms), give_up_at);
                    until(settled_by, Box::pin(blocked)).await?
                }
            };
            let (attempted, blocked) = match blocked {
                Some(attempted) => (attempted, true),
                None => (until(give_up_at, attempt(self, renewal, lease, queue_wait_ms)).await?, false),
            };
            Some(attempted.map(|attempted| match attempted {
                Attempt::Granted(hold) => Tried::Done(hold),
                // A blocking call ended: ask again at once.
                Attempt::Refused { .. } if blocked => Tried::Again(Duration::ZERO),
                Attempt::Refused { retry_ms } => {
                    Tried::Again(u64::try_from(retry_ms).map_or(NO_EXPIRY_RETRY, Duration::from_millis))
                }
            }))
        })
        .await?;
        if hold.is_some() {
            place.handle = None; // the grant took it off the queue
        }
        Ok(hold)
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
