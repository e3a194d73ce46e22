//! The client's settings, checked before it connects.

use crate::engine::protocol;
use crate::error::{Error, Result};
use crate::transport::replica_sync::ReplicaSync;
use std::future::Future;
use std::time::Duration;

/// Client settings: start from [`ClientOptions::default`] and change what
/// you need with its `with_*` methods (the one way to set each).
///
/// ```
/// use rlock_client::{ClientOptions, ReplicaSync, RetryOptions};
/// use std::time::Duration;
///
/// let options = ClientOptions::default()
///     .with_watchdog_timeout(Duration::from_secs(10)) // renewed every 3.3 s
///     .with_retry(RetryOptions::new(5, Duration::from_millis(200)))
///     .with_replica_sync(ReplicaSync::Off)
///     .with_blocking_connections(0); // every waiter waits by pub/sub, as Redisson's
/// // Then Client::connect(redis_client, options), or connect_cluster, connect_sentinel.
/// ```
#[derive(Debug, Clone)]
pub struct ClientOptions {
    pub(crate) watchdog_timeout: Duration,
    pub(crate) retry: RetryOptions,
    pub(crate) replica_sync: ReplicaSync,
    pub(crate) fair_wait_timeout: Duration,
    pub(crate) blocking_connections: usize,
    pub(crate) shared_owner_ids: bool,
    pub(crate) cluster_reply_timeout: Duration,
    pub(crate) reply_timeout: Option<Duration>,
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            watchdog_timeout: Duration::from_secs(30),
            retry: RetryOptions::default(),
            replica_sync: ReplicaSync::default(),
            fair_wait_timeout: Duration::from_secs(300),
            blocking_connections: 8,
            shared_owner_ids: false,
            cluster_reply_timeout: Duration::from_secs(1),
            reply_timeout: None,
        }
    }
}

impl ClientOptions {
    /// The lease of locks taken without an explicit one, renewed every
    /// third of it while held (Redisson's `lockWatchdogTimeout`). Default 30 s.
    pub fn with_watchdog_timeout(mut self, timeout: Duration) -> Self {
        self.watchdog_timeout = timeout;
        self
    }

    /// Whether acquires wait for replicas. Default: all connected ones, 1 s.
    pub fn with_replica_sync(mut self, replica_sync: ReplicaSync) -> Self {
        self.replica_sync = replica_sync;
        self
    }

    /// How long a fair lock waiter without a wait limit keeps its place in
    /// the queue once its turn may have come (Redisson's
    /// `fairLockWaitTimeout`): a waiter that died leaves it then. Default
    /// 5 minutes.
    pub fn with_fair_wait_timeout(mut self, timeout: Duration) -> Self {
        self.fair_wait_timeout = timeout;
        self
    }

    /// Connections for the blocking waiting mode: a refused waiter of a
    /// plain lock blocks on the server (`RLOCK.ACQUIRE … WAIT`) on one of
    /// these, opened when first needed, and is granted the lock in arrival
    /// order the moment it frees. Default 8. Waiters beyond this many, and
    /// on a cluster, with replica sync, or against a module without `WAIT`,
    /// wait by pub/sub; 0 makes every waiter wait by pub/sub, as Redisson's.
    pub fn with_blocking_connections(mut self, connections: usize) -> Self {
        self.blocking_connections = connections;
        self
    }

    /// Whether owner ids given to [`Client::owned_by`](crate::Client::owned_by) may be used by
    /// other clients at the same time (a Redisson thread's
    /// `<uuid>:<thread id>`, another rlock client). Default false: an owner
    /// id is this client's alone, so every level the server counts for it
    /// beyond this client's holds is one it gave up (a lease that ran out
    /// on its clock, a release whose reply was lost), and the next acquire
    /// gives it back. When true, the client never releases a level it did
    /// not take: such levels keep the lock until their lease ends. Owner
    /// ids this client makes (`<client id>:<n>`) are always its alone.
    pub fn with_shared_owner_ids(mut self, shared: bool) -> Self {
        self.shared_owner_ids = shared;
        self
    }

    /// In a cluster: how long an acquire waits for its node's reply (plus
    /// replica sync's `WAIT` timeout) before the client gives up on that
    /// node for now: it reads the slot map again from the other nodes and
    /// settles the acquire by its request id, on the slot's new primary
    /// when a failover replaced a hung one. Only acquires that carry a
    /// request id are bounded, and none is ever sent again without it;
    /// other commands wait for their node as long as it takes. Default 1 s.
    pub fn with_cluster_reply_timeout(mut self, timeout: Duration) -> Self {
        self.cluster_reply_timeout = timeout;
        self
    }

    /// How long a command on the client's shared connection waits for its
    /// reply before it fails with a timeout (and is retried or settled as
    /// [`RetryOptions`] says). Default: redis-rs's (500 ms on one server and
    /// through Sentinel). A loaded server that answers slower than this makes
    /// calls fail that would have succeeded; a longer one finds a hung server
    /// later.
    pub fn with_reply_timeout(mut self, timeout: Duration) -> Self {
        self.reply_timeout = Some(timeout);
        self
    }

    /// How transient failures (connection loss, failover) are retried.
    pub fn with_retry(mut self, retry: RetryOptions) -> Self {
        self.retry = retry;
        self
    }
}

/// Retries of transient failures.
///
/// Reads are retried `attempts` times, `delay` apart. An acquire whose
/// reply was lost is never sent again blindly: it is sent again under its
/// request id, and the server replays its grant or runs it now (a fair
/// lock's, which has no id, reads the owner's hold count first). Releases carry a request id (Redisson's
/// unlock latch), so a retried release answers as the first one did and
/// never drops a second level. A force release is sent again only when
/// the connection was refused. The watchdog retries every `delay` until
/// the lease would be gone, then reports the lock lost.
///
/// ```
/// use rlock_client::{ClientOptions, RetryOptions};
/// use std::time::Duration;
///
/// // Ride out a failover of a few seconds: 20 retries, 250 ms apart.
/// let options = ClientOptions::default().with_retry(RetryOptions::new(20, Duration::from_millis(250)));
/// ```
#[derive(Debug, Clone)]
pub struct RetryOptions {
    /// Retries after the first failure. Default 3.
    pub(crate) attempts: u32,
    /// Pause before each retry. Default 100 ms.
    pub(crate) delay: Duration,
}

impl Default for RetryOptions {
    fn default() -> Self {
        Self { attempts: 3, delay: Duration::from_millis(100) }
    }
}

impl RetryOptions {
    /// `attempts` retries after the first failure (default 3), `delay`
    /// apart (default 100 ms).
    pub fn new(attempts: u32, delay: Duration) -> Self {
        Self { attempts, delay }
    }

    /// Sends `request` until it succeeds or fails with an error that
    /// `retryable` refuses, again at most `attempts` times, `delay` apart:
    /// the client's one retry policy. The last reply when they run out.
    pub(crate) async fn run<T, F: Future<Output = Result<T>>>(
        &self,
        retryable: impl Fn(&Error) -> bool,
        mut request: impl FnMut() -> F,
    ) -> Result<T> {
        let mut failures = 0;
        loop {
            match request().await {
                Err(err) if retryable(&err) && failures < self.attempts => {
                    failures += 1;
                    tokio::time::sleep(self.delay).await;
                }
                reply => return reply,
            }
        }
    }
}

/// Shortest watchdog timeout: its third, the renewal period, is 1 ms.
const MIN_WATCHDOG_TIMEOUT: Duration = Duration::from_millis(3);

/// Refuses options the client cannot work with, before connecting.
pub(crate) fn check(options: &ClientOptions) -> Result<()> {
    let watchdog = options.watchdog_timeout;
    if watchdog < MIN_WATCHDOG_TIMEOUT || protocol::lease_ms(watchdog).is_err() {
        return Err(Error::InvalidWatchdogTimeout(watchdog));
    }
    // Sent as RFAIR.ACQUIRE's WAIT, whose bounds are a lease's.
    if protocol::lease_ms(options.fair_wait_timeout).is_err() {
        return Err(Error::InvalidFairWaitTimeout(options.fair_wait_timeout));
    }
    if options.cluster_reply_timeout < Duration::from_millis(1) {
        return Err(Error::InvalidClusterReplyTimeout(options.cluster_reply_timeout));
    }
    match options.replica_sync {
        // WAIT takes whole milliseconds, and 0 blocks for ever.
        ReplicaSync::AllReplicas { timeout } | ReplicaSync::Replicas { timeout, .. }
            if timeout < Duration::from_millis(1) =>
        {
            Err(Error::InvalidReplicaSyncTimeout(timeout))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::time::Instant;

    /// What it shows, the retry attempts, the failures before a success,
    /// whether they may be retried, when it is sent (ms), whether it succeeds.
    type Case = (&'static str, u32, usize, bool, &'static [u64], bool);

    #[tokio::test(start_paused = true)]
    async fn a_request_is_sent_again_after_each_delay_until_it_succeeds_or_the_attempts_run_out() {
        let cases: [Case; 6] = [
            ("succeeds at once", 3, 0, true, &[0], true),
            ("succeeds on the third send", 3, 2, true, &[0, 100, 200], true),
            ("succeeds on the last send", 3, 3, true, &[0, 100, 200, 300], true),
            ("fails every time", 3, usize::MAX, true, &[0, 100, 200, 300], false),
            ("no retries", 0, usize::MAX, true, &[0], false),
            ("an error not to retry", 3, usize::MAX, false, &[0], false),
        ];
        for (what, attempts, failures, retryable, sends, succeeds) in cases {
            let retry = RetryOptions::new(attempts, Duration::from_millis(100));
            let started = Instant::now();
            let mut sent = Vec::new();
            let reply = retry
                .run(
                    |_| retryable,
                    || {
                        sent.push(started.elapsed().as_millis() as u64);
                        let fails = sent.len() <= failures;
                        async move {
                            if fails {
                                Err(Error::ClientClosed)
                            } else {
                                Ok(())
                            }
                        }
                    },
                )
                .await;
            assert_eq!(sent, sends, "{what}");
            assert_eq!(reply.is_ok(), succeeds, "{what}");
        }
    }
}
