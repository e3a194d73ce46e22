//! The outcome of an acquire whose reply never came, learned before the
//! acquire is ever sent again blindly. An acquire sent with a request id
//! is sent again with the same id: the server replays a grant it recorded
//! and adds no level, or runs the acquire now ([`resend`]). An acquire
//! without one (the fair lock's; where the module cannot record) reads the
//! owner's hold count and infers the outcome from it ([`settle`]).

use crate::engine::attempt::{give_back, Attempt};
use crate::engine::commands::{FullReply, Status};
use crate::engine::handle::Handle;
use crate::engine::holds::{self, Settled};
use crate::engine::lock_state::{LockId, LockState};
use crate::engine::named::Named;
use crate::error::{Error, Result};
use crate::transport::connection::Connection;
use redis::Value;
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::time::Instant;

/// Longest pause between tries that settle an acquire in the background.
const SETTLE_BACKOFF_MAX: Duration = Duration::from_secs(1);

/// What a settled grant is known by, and the caller's reply channel.
pub(crate) struct SettledGrant {
    /// The owner's count after it.
    pub observed: i64,
    /// The lease left as read: `(read sent at, lease left)`.
    pub lease_left: Option<(Instant, Duration)>,
    /// A fenced lock's token, when the server replayed it (never from a read).
    pub token: Option<i64>,
    pub reply_tx: oneshot::Sender<Result<Attempt>>,
}

/// Sends `again` (the acquire, with its request id and `REPLY FULL`) until
/// the server answers: a grant, replayed or made now, with the owner's
/// count after it; or a refusal, which the caller gets. When no answer
/// comes in time, the caller gets `err` at once and the resends go on here
/// until the server answers or the client closes; a grant found then is
/// given back. Meanwhile this lock's other calls wait.
pub(crate) async fn resend(
    lock: &Handle,
    connection: &mut Connection,
    (again, named): (&redis::Cmd, Named),
    counted: usize,
    err: Error,
    reply_tx: oneshot::Sender<Result<Attempt>>,
) -> Option<SettledGrant> {
    let settled = resend_until_answered(lock, connection, again, counted, err, reply_tx).await;
    // The outcome is in (or nobody waits for it): the record may go.
    named.done(&lock.shared().latch_sweeper);
    settled
}

async fn resend_until_answered(
    lock: &Handle,
    connection: &mut Connection,
    again: &redis::Cmd,
    counted: usize,
    err: Error,
    reply_tx: oneshot::Sender<Result<Attempt>>,
) -> Option<SettledGrant> {
    let (shared, state) = (lock.shared(), lock.state());
    let mut caller = Some((reply_tx, err));
    let mut backoff = Backoff::new(lock);
    let (reply, sent_at) = loop {
        let sent_at = Instant::now();
        match again.query_async::<Value>(connection).await.map_err(Error::from).and_then(FullReply::parse) {
            Ok(reply) => break (reply, sent_at),
            Err(_) if shared.is_closed() => return None,
            Err(err) if !err.is_transient() => {
                lose_if(state, counted > 0);
                if let Some((reply_tx, _)) = caller.take() {
                    let _ = reply_tx.send(Err(err));
                }
                return None;
            }
            Err(_) => backoff.wait(&mut caller).await,
        }
    };
    if !reply.granted {
        // Another owner has it: none of this owner's levels are left.
        state.update(|holds| ((), holds.refused()));
        if let Some((reply_tx, _)) = caller {
            let _ = reply_tx.send(Ok(Attempt::Refused { retry_ms: reply.lease_ms }));
        }
        return None;
    }
    let lease_left = u64::try_from(reply.lease_ms).ok().map(|ms| (sent_at, Duration::from_millis(ms)));
    match caller {
        Some((reply_tx, _)) => Some(SettledGrant { observed: reply.holds, lease_left, token: reply.token, reply_tx }),
        None => {
            lose_if(state, (reply.holds as usize) < counted + 1);
            give_back(lock, connection).await;
            None
        }
    }
}

/// Settles an acquire whose reply never came by reading the owner's count
/// on `connection`, where the read runs after the acquire (if it ran at
/// all) when `ordered`. Returns the
/// count when the acquire was granted. When the count cannot be read in
/// time, the caller gets `err` at once and the settling goes on here (the
/// acquire may still be queued on a stalled server, so only an answer
/// settles it) until the server answers or the client closes; a grant
/// found then is given back. Meanwhile this lock's other calls wait.
pub(crate) async fn settle(
    lock: &Handle,
    connection: &mut Connection,
    counted: usize,
    err: Error,
    mut ordered: bool,
    reply_tx: oneshot::Sender<Result<Attempt>>,
) -> Option<SettledGrant> {
    let (shared, state) = (lock.shared(), lock.state());
    let mut reply_tx = Some((reply_tx, err));
    let mut backoff = Backoff::new(lock);
    let (observed, lease_left) = loop {
        match read_count(connection, &state.id).await {
            Ok(read) => break read,
            Err(_) if shared.is_closed() => break (-1, None),
            // The server cannot answer at all (restarted without the module,
            // say): it did not grant this acquire, and cannot vouch for the
            // holds counted here. Waiting on would block this lock's calls
            // for good.
            Err(err) if !err.is_transient() => {
                lose_if(state, counted > 0);
                if let Some((reply_tx, _)) = reply_tx.take() {
                    let _ = reply_tx.send(Err(err));
                }
                break (-1, None);
            }
            Err(err) => {
                ordered &= err.is_timeout();
                backoff.wait(&mut reply_tx).await;
            }
        }
    };
    let lost_earlier = observed >= 0 && (observed as usize) < counted;
    match (holds::settle(counted, observed, ordered), reply_tx) {
        (Settled::Granted, Some((reply_tx, _))) => Some(SettledGrant { observed, lease_left, token: None, reply_tx }),
        (Settled::Granted, None) => {
            lose_if(state, lost_earlier);
            give_back(lock, connection).await;
            None
        }
        (Settled::NotGranted, reply_tx) => {
            lose_if(state, lost_earlier);
            if let Some((reply_tx, err)) = reply_tx {
                let _ = reply_tx.send(Err(err)); // not granted: a retry is safe
            }
            None
        }
    }
}

fn lose_if(state: &LockState, lost: bool) {
    if lost {
        state.lose();
    }
}

/// The pauses between tries: the retry policy's delay; once its attempts
/// are spent the caller gets its error and the pauses double, up to
/// [`SETTLE_BACKOFF_MAX`].
struct Backoff {
    attempts: u32,
    failures: u32,
    pause: Duration,
}

impl Backoff {
    fn new(lock: &Handle) -> Self {
        let retry = &lock.shared().options.retry;
        Self { attempts: retry.attempts, failures: 0, pause: retry.delay.min(SETTLE_BACKOFF_MAX) }
    }

    async fn wait(&mut self, caller: &mut Option<(oneshot::Sender<Result<Attempt>>, Error)>) {
        self.failures += 1;
        if self.failures > self.attempts {
            if let Some((reply_tx, err)) = caller.take() {
                let _ = reply_tx.send(Err(err));
            }
            self.pause = self.pause.saturating_mul(2).min(SETTLE_BACKOFF_MAX);
        }
        tokio::time::sleep(self.pause).await;
    }
}

/// The owner's hold count, and the lease the key had left when read
/// (measured from before the read, so never overestimated).
pub(crate) async fn read_count(connection: &mut Connection, id: &LockId) -> Result<(i64, Option<(Instant, Duration)>)> {
    let sent_at = Instant::now();
    let reply: Value = id.status().query_async(connection).await?;
    let status = Status::parse(reply, id.kind)?;
    let lease_left = u64::try_from(status.ttl_ms).ok().map(|ms| (sent_at, Duration::from_millis(ms)));
    Ok((status.hold_count, lease_left))
}
