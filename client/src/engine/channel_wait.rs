//! Redisson's waiting loop, for every primitive: try; when refused,
//! subscribe to the primitive's channel (then try again at once: a message
//! may have gone out before the subscription), and from then on try again
//! at each message or when the pause the refusal gave runs out, whichever
//! is first. A lock pauses for its holder's PTTL (at most [`BUS_PERIOD`]
//! when its messages cross a cluster's bus); the synchronizers for at
//! most [`FALLBACK_PERIOD`], which Redisson's semaphore lacks: a missed
//! message (a reconnection, a change made with plain commands) then costs
//! at most one period, never a hang.

use crate::error::{Error, Result};
use crate::shared::Shared;
use crate::transport::subscriptions::Subscription;
use crate::transport::wakeups::WakeRule;
use std::future::Future;
use std::time::Duration;
use tokio::time::Instant;

/// Longest pause between two tries while waiting.
pub(crate) const FALLBACK_PERIOD: Duration = Duration::from_secs(1);

/// Longest pause of a lock's waiter whose messages cross the cluster bus,
/// which may lose one: a lost release then costs this, not the lease.
const BUS_PERIOD: Duration = Duration::from_secs(3);

/// How long past the limit a try in flight is awaited. A try sent before
/// the limit may be granted on the server before it (a blocking wait,
/// timed by the server from its arrival, ends a little after the caller's
/// limit): taking that reply beats giving the grant back later, during
/// which the lock is held by nobody who wants it.
pub(crate) const REPLY_GRACE: Duration = Duration::from_millis(100);

/// How long past [`REPLY_GRACE`] a caller awaits its blocked call's way
/// off the server's queue (a cancel, then the call's reply): a server that
/// answers takes a round trip or two; one that hangs, the caller leaves
/// to a task.
pub(crate) const CANCEL_GRACE: Duration = Duration::from_millis(300);

/// One try's outcome.
pub(crate) enum Tried<T> {
    Done(T),
    /// Not yet: try again at a message, or after this pause at the latest.
    Again(Duration),
}

/// Where a waiter listens.
pub(crate) struct Channel<'a> {
    /// The key the channel belongs to (for cluster routing).
    pub key: &'a [u8],
    pub name: &'a [u8],
    pub rule: WakeRule,
}

/// Runs `try_once` until it is done or `limit` passes (`None`: no limit;
/// `Ok(None)` once it passes). The first try is always made and awaited;
/// a later one in flight at the limit is awaited for [`REPLY_GRACE`] more,
/// then dropped, so `try_once` must be cancel-safe.
/// Transient failures are retried within the client's retry options:
/// `try_once` returns [`Error::is_transient`] errors only when it may be
/// sent again safely; other errors end the wait.
pub(crate) async fn wait_for<T, F, Fut>(
    shared: &Shared,
    channel: Channel<'_>,
    limit: Option<Duration>,
    mut try_once: F,
) -> Result<Option<T>>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Tried<T>>>,
{
    wait_settling(shared, channel, limit, |give_up_at| until(give_up_at, try_once())).await
}

/// `work`'s output, or `None` once `at` passes first (`None`: no bound).
pub(crate) async fn until<F: Future>(at: Option<Instant>, work: F) -> Option<F::Output> {
    match at {
        None => Some(work.await),
        Some(at) => tokio::time::timeout_at(at, work).await.ok(),
    }
}

/// [`wait_for`] whose tries give up on their own: `try_once(give_up_at)`
/// answers `None` when it gave up at `give_up_at` (the limit plus
/// [`REPLY_GRACE`]; `None` for the first try and without a limit). A try
/// may take up to [`CANCEL_GRACE`] longer to give up: a call blocked on
/// the server is first taken off its queue, so that no grant follows the
/// caller's `None`.
pub(crate) async fn wait_settling<T, F, Fut>(
    shared: &Shared,
    channel: Channel<'_>,
    limit: Option<Duration>,
    mut try_once: F,
) -> Result<Option<T>>
where
    F: FnMut(Option<Instant>) -> Fut,
    Fut: Future<Output = Option<Result<Tried<T>>>>,
{
    let deadline = limit.and_then(|limit| Instant::now().checked_add(limit));
    let retry = &shared.options.retry;
    let mut closed = shared.closed();
    let mut subscription: Option<Subscription> = None;
    let mut subscribe_tried = false;
    let mut failures = 0;
    let mut tries = 0;
    loop {
        if *closed.borrow_and_update() {
            return Err(Error::ClientClosed);
        }
        if let Some(subscription) = subscription.as_mut() {
            subscription.mark_seen();
        }
        let give_up_at = deadline.filter(|_| tries > 0).map(|deadline| deadline + REPLY_GRACE);
        let Some(tried) = try_once(give_up_at).await else { return Ok(None) };
        tries += 1;
        let (pause, refused) = match tried {
            Ok(Tried::Done(value)) => return Ok(Some(value)),
            Ok(Tried::Again(pause)) => {
                failures = 0;
                (pause, true)
            }
            Err(err) if err.is_transient() && failures < retry.attempts => {
                failures += 1;
                (retry.delay, false)
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
        // Once refused (a failed try is tried again soon anyway). Without
        // pub/sub the loop still works: it polls.
        if refused && !subscribe_tried {
            subscribe_tried = true;
            subscription = subscribe(shared, &channel).await?;
            if subscription.is_some() {
                continue;
            }
        }
        let pause = match &subscription {
            Some(subscription) if subscription.crosses_bus() => pause.min(BUS_PERIOD),
            _ => pause,
        };
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

/// Joins `channel`'s subscription; `None` when that fails for a reason
/// that may pass (the waiter then polls on its timer). A refusal by the
/// ACL (`NOPERM`) is the caller's error: polling would hide a missing
/// permission behind slow wakeups. In a cluster, at most the cluster reply
/// timeout: a hung node (or a SUBSCRIBE to it that holds up the pub/sub
/// connection) leaves the waiter on its timer, and the subscription,
/// abandoned, is left as its waiter leaves.
async fn subscribe(shared: &Shared, channel: &Channel<'_>) -> Result<Option<Subscription>> {
    let subscribed = async {
        let Ok(subscriptions) = shared.subscriptions().await else { return Ok(None) };
        match subscriptions.subscribe(channel.key, channel.name, channel.rule).await {
            Ok(subscription) => Ok(Some(subscription)),
            Err(err) if err.code() == Some("NOPERM") => Err(Error::from(err)),
            Err(_) => Ok(None),
        }
    };
    match shared.connection.is_cluster() {
        true => tokio::time::timeout(shared.options.cluster_reply_timeout, subscribed).await.unwrap_or(Ok(None)),
        false => subscribed.await,
    }
}
