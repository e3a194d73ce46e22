//! One acquire attempt, of any kind. It runs to its end (see
//! [`run_to_end`]), so a caller that is cancelled at any point leaves no
//! hold behind: a granted attempt becomes a [`Hold`] inside the reply
//! channel, and a hold nobody receives is dropped, which gives it back; a
//! fair waiter queued by an attempt nobody receives gives its place up. An
//! acquire whose reply never came is never sent again blindly: its outcome
//! is settled first.

use crate::engine::acquire_request::{acquire_command, send_first, Naming, ReplyForm, Sent};
use crate::engine::blocking::{self, Blocked};
use crate::engine::handle::Handle;
use crate::engine::hold::Hold;
use crate::engine::holds::{Ended, Renewal};
use crate::engine::protocol;
use crate::engine::release::release;
use crate::engine::resend::{resend, Again, ResentGrant};
use crate::engine::run_to_end::run_to_end;
use crate::error::{Error, Result};
use crate::transport::connection::Connection;
use crate::transport::replica_sync::Plan;
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::time::Instant;

pub(crate) enum Attempt {
    Granted(Hold),
    /// Held by someone else: try again in this many ms (-1: when woken,
    /// the lock has no expiry). The holder's PTTL, or a fair lock's hint.
    Refused {
        retry_ms: i64,
    },
}

/// How an attempt's acquire reaches the server.
pub(crate) enum Transport {
    /// The shared connection, or replica sync's own with its `WAIT`.
    Shared { sync: Option<Plan> },
    /// A pooled connection of its own, the call blocking on the server.
    Blocking(Blocked),
}

/// Tries once to take the lock for `lease`; a fair lock given
/// `queue_wait_ms` with the waiting form (queued when refused).
pub(crate) async fn attempt(
    handle: &Handle,
    renewal: Renewal,
    lease: Duration,
    queue_wait_ms: Option<i64>,
) -> Result<Attempt> {
    let sync = handle.shared().replica_sync_plan(&handle.id().name).await?;
    let lock = handle.clone();
    let transport = Transport::Shared { sync };
    run_to_end(handle.shared(), |reply_tx| run(lock, renewal, (lease, queue_wait_ms), transport, reply_tx))
        .await
        .unwrap_or(Err(Error::ClientClosed))
}

/// One attempt over either transport, to its end.
pub(crate) async fn run(
    lock: Handle,
    renewal: Renewal,
    (lease, queue_wait_ms): (Duration, Option<i64>),
    transport: Transport,
    mut reply_tx: oneshot::Sender<Result<Attempt>>,
) {
    let (shared, state) = (lock.shared(), lock.state());
    let _gate = state.gate.lock().await;
    let (sync, mut blocked) = match transport {
        Transport::Shared { sync } => (sync, None),
        Transport::Blocking(blocked) => (None, Some(blocked)),
    };
    let blocking = blocked.is_some();
    if let Some(answer) = not_sent(&lock, blocking) {
        return drop(reply_tx.send(answer));
    }
    let requested_at = Instant::now();
    let watchdog = shared.options.watchdog_timeout;
    let (counted, lease_sent) = state.lease_for_acquire(lease, requested_at, watchdog);
    let lease_ms = protocol::clamp_lease_ms(lease_sent);
    let sync = sync.as_ref();
    let mut connection = sync.map_or_else(|| shared.connection.clone(), |plan| plan.connection.clone());
    // Safe to send again (see `acquire_request`): a resend gets a lost
    // reply's outcome, adding no level; a blocked call is cancelled by id.
    let mut naming = Naming::new(shared, &connection, state, (counted, blocking));
    // In a cluster a resendable acquire waits a bounded time for its node:
    // the resend below settles it, on the slot's new owner after a failover.
    let reply_bound = shared.options.cluster_reply_timeout.saturating_add(sync.map_or(Duration::ZERO, |p| p.timeout));
    let call = (lease_ms, queue_wait_ms, requested_at);
    let sent = match blocked.as_mut() {
        None => send_first(shared, state, (&mut connection, reply_bound), call, (&mut naming, sync)).await,
        Some(blocked) => {
            match Box::pin(blocking::send(&lock, blocked, call, naming.named.as_ref(), &mut reply_tx)).await {
                Ok(sent) => sent,
                Err(CallEnded(answer)) => {
                    naming.done(&shared.latch_sweeper);
                    return drop(reply_tx.send(answer));
                }
            }
        }
    };
    // A transient failure leaves the outcome unknown, to settle by a
    // resend; not a refusal before the acquire ran (READONLY, NOREPLICAS,
    // a refused connection…): that is a reply, and nothing was granted
    // that a resend in the background would have to find and give back.
    let unsettled = |err: &Error| err.is_transient() && (blocking || !err.surely_not_run());
    // The outcome is in: the record may go (a resend keeps it for now).
    if !sent.as_ref().is_err_and(unsettled) {
        naming.done(&shared.latch_sweeper);
    }
    let (observed, token, lease_start, lease_left, reply_tx) = match sent {
        Ok(Sent::Refused { retry_ms }) => {
            let place = queue_wait_ms.filter(|_| !blocking);
            return Box::pin(refused(&lock, &connection, retry_ms, place, reply_tx)).await;
        }
        Ok(Sent::Granted { observed, token, lease_start, lease_left }) => {
            (observed, token, lease_start, lease_left, reply_tx)
        }
        Ok(Sent::Unsynced { acknowledged, required }) => {
            Box::pin(give_back(&lock, &connection)).await;
            return drop(reply_tx.send(Err(Error::ReplicaSync { acknowledged, required })));
        }
        Err(err) if unsettled(&err) => {
            let call = (lease_ms, queue_wait_ms, counted);
            let settled = Box::pin(settle(&lock, &mut connection, (blocked, naming, sync), call, err, reply_tx));
            let Some(ResentGrant { observed, lease_left, token, reply_tx, .. }) = settled.await else { return };
            // The grant may have run long after the request (a stalled
            // server): the lease the resend saw is the better estimate.
            (observed, token, requested_at, lease_left, reply_tx)
        }
        Err(err) => return drop(reply_tx.send(Err(err))),
    };
    let granted = Granted { renewal, lease, lease_sent, requested_at: lease_start, observed, lease_left, token };
    let orphaned = grant(&lock, granted, reply_tx);
    let short_replay = lease_left.is_some_and(|(_, left)| left < lease_sent);
    Box::pin(after_grant(&lock, &connection, orphaned, short_replay.then_some(lease_sent))).await;
}

/// After a grant is handed over, before this lock's next call (the gate is
/// still held): levels nothing tracks are given back, and a replayed
/// grant's short lease is renewed to `renew`.
async fn after_grant(lock: &Handle, connection: &Connection, orphaned: usize, renew: Option<Duration>) {
    if orphaned > 0 {
        release_orphans(lock, connection, orphaned).await;
    }
    if let Some(lease_sent) = renew {
        renew_replayed(lock, connection, lease_sent).await;
    }
}

/// A grant replayed with less lease left than was sent (a level the server
/// counted beyond this client's holds, its lease as it stood; a grant that
/// waited out a stall) gets the lease sent at once, as an acquire that ran
/// would have set it: the watchdog's next round may come after that
/// lease's end. Call it holding the lock's gate.
async fn renew_replayed(lock: &Handle, connection: &Connection, lease_sent: Duration) {
    let state = lock.state();
    let Some(incarnation) = state.read(|holds| (holds.count() > 0).then(|| holds.incarnation())) else { return };
    let sent_at = Instant::now();
    let renew = state.id.renew(protocol::clamp_lease_ms(lease_sent));
    match renew.query_async::<i64>(&mut connection.clone()).await {
        Ok(1) => state.renewed(incarnation, sent_at, lease_sent),
        Ok(_) => state.lose_incarnation(incarnation),
        // Unanswered: the watchdog, or the lease estimate, settles it.
        Err(_) => {}
    }
}

/// The answer to an attempt that is not sent: the client closed, or a
/// blocking call for a lock this owner holds meanwhile through another
/// handle (a blocking call is for a lock the owner does not hold; the
/// shared attempt re-enters).
fn not_sent(lock: &Handle, blocking: bool) -> Option<Result<Attempt>> {
    if lock.shared().is_closed() {
        return Some(Err(Error::ClientClosed));
    }
    (blocking && lock.state().read(|holds| holds.count()) > 0).then_some(Ok(Attempt::Refused { retry_ms: 0 }))
}

/// A refusal: this owner no longer holds the lock (see [`end_refused`]).
/// A fair waiter queued (`place`: its queue wait) for a caller who is gone
/// gives its place up: nobody would take the turn.
async fn refused(
    lock: &Handle,
    connection: &Connection,
    retry_ms: i64,
    place: Option<i64>,
    reply_tx: oneshot::Sender<Result<Attempt>>,
) {
    end_refused(lock).await;
    if reply_tx.send(Ok(Attempt::Refused { retry_ms })).is_err() {
        if let Some(wait_ms) = place {
            give_up_place(lock, connection, wait_ms).await;
        }
    }
}

/// An acquire was refused: another owner has the lock, so none of this
/// owner's levels are left, and its holds end as lost. Unless the server
/// still counts them: a lock-delay refuses even a holder's re-entry, and
/// the holds it has stay and renew. A holder asks (STATUS) before it ends
/// its holds; unanswered, they end. Call it holding the lock's gate.
pub(crate) async fn end_refused(lock: &Handle) {
    let state = lock.state();
    let counted = state.read(|holds| holds.count());
    if counted > 0 && lock.status().await.is_ok_and(|status| status.hold_count >= counted as i64) {
        return;
    }
    state.update(|holds| ((), holds.refused()));
}

/// Settles an acquire whose outcome `err` left unknown: a blocked call is
/// taken off the server first, then the acquire is sent again (without
/// `WAIT` or `BLOCK`, asking for the full reply) until the server answers.
/// The grant found, acknowledged by enough replicas; `None` when the
/// attempt ended here (its caller answered).
async fn settle(
    lock: &Handle,
    connection: &mut Connection,
    (blocked, naming, sync): (Option<Blocked>, Naming, Option<&Plan>),
    (lease_ms, queue_wait_ms, counted): (i64, Option<i64>, usize),
    err: Error,
    reply_tx: oneshot::Sender<Result<Attempt>>,
) -> Option<ResentGrant> {
    let mut resent_wait = queue_wait_ms;
    if let Some(blocked) = blocked {
        // No grant can follow once the server dropped the call.
        blocking::kill(lock, blocked).await;
        resent_wait = None;
    }
    // Sent without an id or a count: see the module docs of `resend`.
    if !naming.resendable() {
        let _ = reply_tx.send(Err(err));
        return None;
    }
    let id = &lock.state().id;
    let acquire = acquire_command(id, lease_ms, (resent_wait, None), naming.parts(), ReplyForm::Full);
    let holding = |held| acquire_command(id, lease_ms, (resent_wait, None), (None, Some(held)), ReplyForm::Full);
    let again = Again { acquire: &acquire, holding: &holding };
    let resent = resend(lock, connection, (again, naming.named, sync), counted, err, reply_tx).await?;
    // Each resend carries its own WAIT, right behind it on its node.
    if let (Some(plan), Some(acknowledged)) = (sync, resent.acknowledged) {
        if acknowledged < i64::from(plan.required) {
            give_back(lock, connection).await;
            let required = plan.required;
            let _ = resent.reply_tx.send(Err(Error::ReplicaSync { acknowledged, required }));
            return None;
        }
    }
    Some(resent)
}

/// How a blocking call ended without a grant to record: the caller's
/// answer.
pub(crate) struct CallEnded(pub Result<Attempt>);

/// A grant to record: how it was asked for, and what is known of it.
pub(crate) struct Granted {
    pub renewal: Renewal,
    pub lease: Duration,
    pub lease_sent: Duration,
    pub requested_at: Instant,
    /// The owner's count right after the grant.
    pub observed: i64,
    /// The lease left as read later, `(read sent at, lease left)`.
    pub lease_left: Option<(Instant, Duration)>,
    /// A fenced lock's fencing token (`None` for other kinds).
    pub token: Option<i64>,
}

/// Records the hold and hands it over; a closed client gives it back.
/// Returns the levels the server counted beyond this client's holds (see
/// [`Holds::granted`](crate::engine::holds::Holds::granted)): nothing else will
/// release them.
pub(crate) fn grant(lock: &Handle, granted: Granted, reply_tx: oneshot::Sender<Result<Attempt>>) -> usize {
    let Granted { renewal, lease, lease_sent, requested_at, observed, lease_left, token } = granted;
    let state = lock.state();
    // Counted with other kinds' holds (their requests wait for this one's
    // gate): fewer levels than all of them and this grant, and theirs ended.
    let siblings = state.siblings_count();
    let (ticket, orphaned, lease_end, siblings_ended) = state.update(|holds| {
        let siblings_ended = siblings > 0 && usize::try_from(observed).unwrap_or(0) <= holds.count() + siblings;
        let (ticket, mut ended, orphaned) = holds.granted(renewal, lease, lease_sent, requested_at, observed);
        if let Some((read_at, left)) = lease_left {
            holds.leased(read_at, left);
        }
        // Recorded after its lease may have ended (a caller that left the
        // future unpolled, a stalled server): lost from the start, never
        // a guard that looks held.
        if ended == Ended::No {
            ended = holds.expire_overdue(Instant::now());
        }
        ((ticket, orphaned, holds.expires_at(), siblings_ended), ended)
    });
    if siblings_ended {
        state.lose_siblings();
    }
    lock.shared().registry.note_lease_end(lease_end);
    // Levels beyond this kind's holds may be another kind's of this owner.
    let orphaned = match orphaned > 0 && state.shares_count() {
        true => 0,
        false => orphaned,
    };
    // Dropped unsent (the caller is gone) or refused: the hold releases.
    let hold = Hold::new(lock.clone(), ticket, lease, token);
    // Checked after the hold is recorded: the watchdog's stop marks every
    // recorded hold lost, and a hold recorded after it is given back here.
    if lock.shared().is_closed() || lock.shared().registry.is_stopped() {
        drop(hold);
        let _ = reply_tx.send(Err(Error::ClientClosed));
        return orphaned;
    }
    let _ = reply_tx.send(Ok(Attempt::Granted(hold)));
    orphaned
}

/// Releases levels nothing tracks any more (see [`grant`]), before this
/// lock's next call: the caller still holds its gate.
pub(crate) async fn release_orphans(lock: &Handle, connection: &Connection, orphaned: usize) {
    for _ in 0..orphaned {
        give_back(lock, connection).await;
    }
}

/// Gives back a grant that is not recorded as a hold, re-leasing to what
/// the recorded holds need.
pub(crate) async fn give_back(lock: &Handle, connection: &Connection) {
    let (shared, state) = (lock.shared(), lock.state());
    let watchdog = shared.options.watchdog_timeout;
    let now = Instant::now();
    let own = state.read(|holds| holds.lease_needed(now, watchdog));
    let lease = own.max(state.siblings_lease_needed(now, watchdog)).unwrap_or(watchdog);
    let _ = release(shared, connection, &state.id, protocol::clamp_lease_ms(lease)).await;
}

/// Gives up a fair waiter's place in the queue (RFAIR.CANCEL), retrying
/// transient failures (a repeat finds nothing to remove). Call it holding
/// the lock's gate, so that no acquire of this owner runs after it.
pub(crate) async fn give_up_place(lock: &Handle, connection: &Connection, wait_ms: i64) {
    let cancel = lock.id().cancel(wait_ms);
    let send = || async { Ok(cancel.query_async::<()>(&mut connection.clone()).await?) };
    // Gone with the client, or refused: the place lapses at its deadline.
    let _ = lock.shared().options.retry.run(Error::is_transient, send).await;
}
