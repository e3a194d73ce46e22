//! The blocking waiting mode ([`ClientOptions::blocking_connections`](crate::ClientOptions)):
//! a refused waiter of a plain lock asks the server to grant it the lock
//! (`RLOCK.ACQUIRE … WAIT`), in arrival order, and a queued waiter of a
//! fair lock to grant it its turn (`RFAIR.ACQUIRE … WAIT queue_wait BLOCK`),
//! in queue order, on a connection of its own from a bounded pool, never
//! on the shared multiplexed one.
//!
//! Like every attempt it runs to its end. The server times the wait from
//! the call's arrival, so it ends a little after the caller's limit: the
//! caller awaits the reply [`REPLY_GRACE`] past its limit (a grant made in
//! time is the caller's). A caller that gives up while blocked (a reply
//! later than that, a dropped future) takes its call off the server's
//! queue at once (`RLOCK.CANCEL` by the call's request id; a fair waiter
//! leaves the queue with `RFAIR.CANCEL`), so that a release grants the
//! lock to a live waiter, then takes the call's reply, for [`REPLY_GRACE`]
//! more. A call still blocked then, or whose connection fails, is killed
//! on the server (`CLIENT KILL ID`), so that no grant can follow; then the
//! request is sent again without `WAIT` or `BLOCK` under its id (a grant
//! it got is replayed, else it runs now). A caller whose limit passed
//! awaits that for up to
//! [`CANCEL_GRACE`](crate::engine::channel_wait::CANCEL_GRACE) (a server that answers takes a
//! round trip or two): it is told `None` once no grant can follow, and a
//! grant made first is its own (a client slow to send its call delays
//! the server's timer past the caller's limit). A dropped future, or a
//! server that hangs past that, leaves the rest to a task, which gives
//! such a grant back.
//! (The module refuses `CLIENT UNBLOCK`: it could lose a grant's reply.)
//! Without a free pooled connection, for held (re-entered) locks, with
//! replica sync, on a cluster, or against a module without `WAIT` (or
//! `BLOCK`), the waiter waits by pub/sub as before. A fair waiter killed
//! on the server leaves the queue there too.

use crate::engine::acquire_request::{acquire_command, ReplyForm, Sent};
use crate::engine::attempt::{give_up_place, run, Attempt, CallEnded, Transport};
use crate::engine::channel_wait::{until, REPLY_GRACE};
use crate::engine::commands::FullReply;
use crate::engine::handle::Handle;
use crate::engine::holds::Renewal;
use crate::engine::kind::Kind;
use crate::engine::named::{refuses_record, Named};
use crate::engine::protocol;
use crate::engine::run_to_end::run_to_end;
use crate::error::{Error, Result};
use crate::transport::blocking_pool::{Dedicated, Pooled};
use redis::Value;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::time::Instant;

/// The longest one blocking call waits when the caller has no limit: it
/// then queues again (at the back).
const LONGEST_BLOCK: Duration = Duration::from_secs(30);

/// The blocking call of a kind: a plain lock's `RLOCK.ACQUIRE … WAIT`, a
/// fair lock's `RFAIR.ACQUIRE … WAIT queue_wait BLOCK` (granted in queue
/// order); `None` for the kinds that wait by pub/sub only.
fn blocking_kind(kind: Kind, queue_wait_ms: Option<i64>) -> Option<(usize, Option<i64>)> {
    match (kind, queue_wait_ms) {
        (Kind::Plain, _) => Some((0, None)),
        (Kind::Fair, Some(queue_wait_ms)) => Some((1, Some(queue_wait_ms))),
        _ => None,
    }
}

/// One blocking attempt for up to `wait` (`None`: [`LONGEST_BLOCK`]), or
/// `None` when this attempt cannot block (see the module's notes). A fair
/// lock's attempt keeps the waiter's place in the queue (`queue_wait_ms`).
/// At `give_up_at` the caller gives up: a call not yet sent is not, and a
/// blocked one leaves the server's queue; the attempt then answers what
/// the call came to (a grant made first, else a refusal).
pub(crate) async fn attempt(
    handle: &Handle,
    renewal: Renewal,
    lease: Duration,
    (wait, queue_wait_ms): (Option<Duration>, Option<i64>),
    give_up_at: Option<Instant>,
) -> Option<Result<Attempt>> {
    let shared = handle.shared();
    let pool = shared.blocking.as_ref()?;
    let (kind, queue_wait_ms) = blocking_kind(handle.id().kind, queue_wait_ms)?;
    if pool.is_unsupported(kind)
        || handle.state().read(|holds| holds.count()) > 0
        // A plain lock's call is cancelled by its request id.
        || (queue_wait_ms.is_none() && shared.record_refused.load(Ordering::Relaxed))
    {
        return None;
    }
    let pooled = async {
        match shared.replica_sync_plan(&handle.id().name).await {
            Ok(None) => pool.take().await,
            _ => None,
        }
    };
    // Nothing sent yet by the caller's limit: nothing to take back.
    let pooled = match until(give_up_at, pooled).await {
        None => return Some(Ok(Attempt::Refused { retry_ms: 0 })),
        Some(pooled) => pooled?,
    };
    let wait_ms = protocol::clamp_lease_ms(wait.unwrap_or(LONGEST_BLOCK).min(LONGEST_BLOCK));
    let lock = handle.clone();
    let transport = Transport::Blocking(Blocked { pooled, kind, wait_ms, give_up_at });
    let blocked = run_to_end(shared, |reply_tx| run(lock, renewal, (lease, queue_wait_ms), transport, reply_tx));
    Some(blocked.await.unwrap_or(Err(Error::ClientClosed)))
}

/// One blocking call: its pooled connection, its kind's index in
/// [`BlockingPool::is_unsupported`](crate::transport::blocking_pool::BlockingPool::is_unsupported),
/// and how long it blocks.
pub(crate) struct Blocked {
    pooled: Pooled,
    kind: usize,
    wait_ms: i64,
    /// When the caller gives up (see [`attempt`]).
    give_up_at: Option<Instant>,
}

/// Sends the blocking call (`lease_ms`, a fair waiter's `queue_wait_ms`,
/// sent at `requested_at`) and takes its reply. A caller who gives up
/// meanwhile (at its `give_up_at`, or `reply_tx` closed) or a client that
/// closes takes the call off the server's queue first. The outcome, or a transient error for
/// the caller's attempt to settle; [`CallEnded`] when the call ended without
/// a grant.
pub(crate) async fn send(
    lock: &Handle,
    blocked: &mut Blocked,
    (lease_ms, queue_wait_ms, requested_at): (i64, Option<i64>, Instant),
    named: Option<&Named>,
    reply_tx: &mut oneshot::Sender<Result<Attempt>>,
) -> Result<Result<Sent>, CallEnded> {
    let (shared, id) = (lock.shared(), lock.id());
    // The full reply says how long the server kept the call: the grant's
    // lease starts when it is granted, not when it was asked for.
    let acquire = acquire_command(id, lease_ms, (queue_wait_ms, Some(blocked.wait_ms)), (named, None), ReplyForm::Full);
    let mut closed = shared.closed();
    let (reply, cancelled) = {
        let request = acquire.query_async::<Value>(&mut blocked.pooled.dedicated().connection);
        tokio::pin!(request);
        tokio::select! {
            reply = &mut request => (reply, false),
            _ = async { tokio::select! {
                _ = reply_tx.closed() => {}
                _ = closed.wait_for(|closed| *closed) => {}
                _ = until(blocked.give_up_at, std::future::pending::<()>()) => {}
            } } => {
                // The caller gave up, or the client closed: the wait leaves
                // the server's queue now, so that no release grants the lock
                // to nobody; a grant made before is the call's reply, and
                // is given back. Then take the reply if it comes soon.
                let cancelled = cancel(lock, named, queue_wait_ms).await;
                match tokio::time::timeout(REPLY_GRACE, &mut request).await {
                    Ok(reply) => (reply, cancelled),
                    Err(elapsed) => (Err(std::io::Error::from(elapsed).into()), false),
                }
            }
        }
    };
    let received_at = Instant::now();
    let refused = |retry_ms| Ok(Ok(Sent::Refused { retry_ms }));
    match reply.map_err(Error::from).and_then(|reply| FullReply::parse(&reply, id.kind)) {
        // The cancelled call's reply: nothing was granted.
        Err(Error::Redis(_)) if cancelled => match shared.is_closed() {
            true => Err(CallEnded(Err(Error::ClientClosed))),
            false => Err(CallEnded(Ok(Attempt::Refused { retry_ms: 0 }))),
        },
        Ok(FullReply { granted: false, lease_ms: retry_ms, .. }) => refused(retry_ms),
        Ok(FullReply { granted: true, holds, waited_ms, .. }) => {
            let lease_start = lease_start(requested_at, received_at, waited_ms);
            Ok(Ok(Sent::Granted { observed: holds, token: None, lease_start, lease_left: None }))
        }
        // An ACL refusing the record key, or a module without WAIT (or
        // BLOCK): wait by pub/sub from now on.
        Err(err) if refuses_record(&shared.record_refused, &err) => {
            Err(CallEnded(Ok(Attempt::Refused { retry_ms: 0 })))
        }
        Err(Error::Redis(err)) if err.code() == Some("ERR") => {
            if let Some(pool) = shared.blocking.as_ref() {
                pool.set_unsupported(blocked.kind);
            }
            Err(CallEnded(Ok(Attempt::Refused { retry_ms: 0 })))
        }
        // Waiting would close a cycle: nothing was taken, and waiting by
        // pub/sub instead would wait for ever.
        Err(err @ Error::Deadlock { .. }) => Err(CallEnded(Err(err))),
        // A transient failure (the caller's attempt settles it), or an
        // error reply: the call ended without a grant.
        Err(err) => Ok(Err(err)),
    }
}

/// When a blocked grant's lease started, by this machine's clock, at the
/// earliest: the call was sent at `requested_at` and answered by
/// `received_at`, and the server kept it `waited_ms` from its arrival
/// (after the send). The server counts whole milliseconds of its clock,
/// so one may be a tick short: one less is counted.
fn lease_start(requested_at: Instant, received_at: Instant, waited_ms: i64) -> Instant {
    let waited = Duration::from_millis(u64::try_from(waited_ms.saturating_sub(1)).unwrap_or(0));
    requested_at + waited.min(received_at.saturating_duration_since(requested_at))
}

/// Takes a given-up blocked call off the server's queue: a plain lock's by
/// its request id, a fair waiter's by leaving the queue (its call then
/// replies as refused). True when a plain lock's call was cancelled, so
/// that its error reply means no grant.
async fn cancel(lock: &Handle, named: Option<&Named>, queue_wait_ms: Option<i64>) -> bool {
    let connection = &lock.shared().connection;
    match (queue_wait_ms, named) {
        (Some(wait_ms), _) => {
            give_up_place(lock, connection, wait_ms).await;
            false
        }
        (None, Some(named)) => {
            let cancel = lock.id().cancel_request(named.request_id.as_bytes());
            matches!(cancel.query_async::<i64>(&mut connection.clone()).await, Ok(1))
        }
        (None, None) => false,
    }
}

/// Kills the call's connection on the server, retrying transient
/// failures, so that no grant can follow on it; the connection is not
/// pooled again.
pub(crate) async fn kill(lock: &Handle, mut blocked: Blocked) {
    let Dedicated { id, addr, .. } = blocked.pooled.dedicated();
    let kill = redis::cmd("CLIENT").arg("KILL").arg("ID").arg(*id).arg("ADDR").arg(&*addr).clone();
    let connection = &lock.shared().connection;
    let send = || async { Ok(kill.query_async::<i64>(&mut connection.clone()).await?) };
    // A timed-out kill is queued ahead of what is sent next: not sent again.
    let _ = lock.shared().options.retry.run(|err| err.is_transient() && !err.is_timeout(), send).await;
    blocked.pooled.discard();
}

#[cfg(test)]
mod tests {
    use super::lease_start;
    use std::time::Duration;
    use tokio::time::Instant;

    #[test]
    fn a_blocked_grants_lease_starts_when_the_server_granted_it() {
        let sent = Instant::now();
        let ms = Duration::from_millis;
        let received = sent + ms(950);
        // waited ms (server) -> lease start after the send
        let cases = [
            (900, ms(899)),
            (1, ms(0)),
            (0, ms(0)),
            (-5, ms(0)),
            // a wait longer than the client saw (clock skew): what the client saw
            (5_000, ms(950)),
        ];
        for (waited_ms, after_send) in cases {
            assert_eq!(lease_start(sent, received, waited_ms) - sent, after_send, "waited {waited_ms} ms");
        }
    }
}
