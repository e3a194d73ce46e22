//! The outcome of an acquire whose reply never came, learned before the
//! acquire is ever sent again blindly: it is sent again with the same
//! request id, and the server replays a grant it recorded (adding no
//! level) or runs the acquire now ([`resend`]).
//!
//! An acquire with `HOLDS` is sent again as it was: the server answers
//! from the owner's count (see `acquire_request`); `STALEHOLDS` then means
//! the first send ran nothing and this client's holds ended.
//!
//! An acquire sent with neither (where the module cannot record an id)
//! is not settled: its caller gets the error, and a grant it may have made
//! is a level the client does not count, which the owner's next acquire
//! sees in its reply and gives back (or which ends with its lease).

use crate::engine::acquire_request::{acquire_and_wait, stale_holds, ReplyForm};
use crate::engine::attempt::{end_refused, give_back, Attempt};
use crate::engine::handle::Handle;
use crate::engine::named::Named;
use crate::error::{Error, Result};
use crate::options::RetryOptions;
use crate::transport::connection::Connection;
use crate::transport::replica_sync::Plan;
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::time::Instant;

/// Longest pause between tries that settle an acquire in the background.
const SETTLE_BACKOFF_MAX: Duration = Duration::from_secs(1);

/// What a settled grant is known by, and the caller's reply channel.
pub(crate) struct ResentGrant {
    /// The owner's count after it.
    pub observed: i64,
    /// The lease left as read: `(read sent at, lease left)`.
    pub lease_left: Option<(Instant, Duration)>,
    /// A fenced lock's token, when the server replayed it (never from a read).
    pub token: Option<i64>,
    /// Replicas that acknowledged it: the `WAIT` sent right behind the
    /// resend that got the grant, on its node (replica sync only).
    pub acknowledged: Option<i64>,
    pub reply_tx: oneshot::Sender<Result<Attempt>>,
}

/// Sends `again` (the acquire, with its request id and `REPLY FULL`; with
/// replica sync, a `WAIT` behind it, on its node) until the server answers: a grant, replayed or made now, with the owner's
/// count after it; or a refusal, which the caller gets. When no answer
/// comes in time, the caller gets `err` at once and the resends go on here
/// until the server answers or the client closes; a grant found then is
/// given back. Meanwhile this lock's other calls wait.
pub(crate) async fn resend(
    lock: &Handle,
    connection: &mut Connection,
    (again, named, sync): (Again<'_>, Option<Named>, Option<&Plan>),
    counted: usize,
    err: Error,
    reply_tx: oneshot::Sender<Result<Attempt>>,
) -> Option<ResentGrant> {
    let answered = resend_until_answered(lock, connection, (again, sync), counted, err, reply_tx).await;
    // The outcome is in (or nobody waits for it): the record may go.
    if let Some(named) = named {
        named.done(&lock.shared().latch_sweeper);
    }
    answered
}

/// The acquire to send again, and for a `HOLDS` acquire refused as
/// `STALEHOLDS`, the same acquire naming the count the server has.
pub(crate) struct Again<'a> {
    pub acquire: &'a redis::Cmd,
    pub holding: &'a (dyn Fn(usize) -> redis::Cmd + Sync),
}

async fn resend_until_answered(
    lock: &Handle,
    connection: &mut Connection,
    (again, sync): (Again<'_>, Option<&Plan>),
    counted: usize,
    err: Error,
    reply_tx: oneshot::Sender<Result<Attempt>>,
) -> Option<ResentGrant> {
    let (shared, state) = (lock.shared(), lock.state());
    let mut caller = Some((reply_tx, err));
    let mut backoff = Backoff::new(&shared.options.retry);
    // In a cluster each try waits a bounded time: a hung node's slot is
    // looked up again, and the next try goes to its new owner.
    let sync_wait = sync.map_or(Duration::ZERO, |plan| plan.timeout);
    let bound = connection.reply_bound(shared.options.cluster_reply_timeout.saturating_add(sync_wait));
    let mut asked_again: Option<redis::Cmd> = None;
    let (reply, acknowledged, sent_at) = loop {
        let sent_at = Instant::now();
        let acquire = asked_again.as_ref().unwrap_or(again.acquire);
        match acquire_and_wait(connection, &state.id, (acquire, ReplyForm::Full), (sync, &bound)).await {
            Ok((reply, acknowledged)) => break (reply, acknowledged, sent_at),
            Err(_) if shared.is_closed() => return None,
            // This client's holds ended, and the first send ran nothing:
            // they end here too, and while the caller waits the acquire is
            // asked again (once) from the owner's count, as a first send's
            // is; else refused, for the caller to ask again at once.
            Err(err) if stale_holds(&err).is_some() => {
                state.update(|holds| ((), holds.refused()));
                match stale_holds(&err).filter(|_| caller.is_some() && asked_again.is_none()) {
                    Some(held) => asked_again = Some((again.holding)(held)),
                    None => {
                        if let Some((reply_tx, _)) = caller.take() {
                            let _ = reply_tx.send(Ok(Attempt::Refused { retry_ms: 0 }));
                        }
                        return None;
                    }
                }
            }
            Err(err) if !err.is_transient() => {
                if counted > 0 {
                    state.lose();
                }
                if let Some((reply_tx, _)) = caller.take() {
                    let _ = reply_tx.send(Err(err));
                }
                return None;
            }
            Err(_) => backoff.wait(&mut caller).await,
        }
    };
    if !reply.granted {
        // Another owner has it: none of this owner's levels are left (or a
        // lock-delay refused a holder's re-entry: see `end_refused`).
        end_refused(lock).await;
        if let Some((reply_tx, _)) = caller {
            let _ = reply_tx.send(Ok(Attempt::Refused { retry_ms: reply.lease_ms }));
        }
        return None;
    }
    let lease_left = u64::try_from(reply.lease_ms).ok().map(|ms| (sent_at, Duration::from_millis(ms)));
    match caller {
        Some((reply_tx, _)) => {
            Some(ResentGrant { observed: reply.holds, lease_left, token: reply.token, acknowledged, reply_tx })
        }
        None => {
            // Nobody takes this grant: the holds counted here are checked
            // against it as any grant's are, then it is given back.
            state.update(|holds| ((), holds.granted_after(reply.holds)));
            give_back(lock, connection).await;
            None
        }
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
    fn new(retry: &RetryOptions) -> Self {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn settling_pauses_by_the_retry_policy_then_doubles_and_the_caller_gets_its_error_when_it_is_spent() {
        // (retry attempts, delay ms, the pauses in ms, the failure that
        // hands the caller its error)
        let cases: [(u32, u64, &[u64], usize); 4] = [
            (3, 100, &[100, 100, 100, 200, 400, 800, 1000, 1000], 4),
            (0, 100, &[200, 400, 800, 1000], 1),
            (1, 300, &[300, 600, 1000, 1000], 2),
            (2, 5000, &[1000, 1000, 1000, 1000], 3),
        ];
        for (attempts, delay, pauses, errored_at) in cases {
            let mut backoff = Backoff::new(&RetryOptions::new(attempts, Duration::from_millis(delay)));
            let (reply_tx, reply_rx) = oneshot::channel();
            let mut caller = Some((reply_tx, Error::ClientClosed));
            for (failure, &pause) in (1..).zip(pauses) {
                let before = Instant::now();
                backoff.wait(&mut caller).await;
                assert_eq!(
                    before.elapsed(),
                    Duration::from_millis(pause),
                    "{attempts} x {delay} ms: failure {failure}"
                );
                assert_eq!(caller.is_none(), failure >= errored_at, "{attempts} x {delay} ms: failure {failure}");
            }
            assert!(matches!(reply_rx.await, Ok(Err(Error::ClientClosed))));
        }
    }
}
