//! The blocking waiting mode ([`ClientOptions::blocking_connections`](crate::ClientOptions)):
//! a refused waiter of a plain lock asks the server to grant it the lock
//! (`RLOCK.ACQUIRE … WAIT`), in arrival order, on a connection of its own
//! from a bounded pool, never on the shared multiplexed one.
//!
//! Like every attempt it runs to its end. The server times the wait from
//! the call's arrival, so it ends a little after the caller's limit: the
//! caller awaits the reply [`REPLY_GRACE`] past its limit (a grant made in
//! time is the caller's). A caller that gives up while blocked (a dropped
//! future, a reply later than that) leaves the rest of it to take the
//! call's reply, for [`REPLY_GRACE`] more; a grant that came is given back. A call still blocked then, or whose connection
//! fails, is killed on the server (`CLIENT KILL ID`) before the lock's
//! count is read, so no grant can follow the read and none goes unclaimed.
//! (The module refuses `CLIENT UNBLOCK`: it could lose a grant's reply.)
//! Without a free pooled connection, for held (re-entered) locks, with
//! replica sync, on a cluster, or against a module without `WAIT`, the
//! waiter waits by pub/sub as before.

use crate::attempt::{grant, release_orphans, settle, Attempt, Granted};
use crate::channel_wait::REPLY_GRACE;
use crate::commands::Kind;
use crate::connection::Connection;
use crate::error::{Error, Result};
use crate::handle::Handle;
use crate::holds::Renewal;
use crate::protocol;
use crate::run_to_end::run_to_end;
use redis::aio::MultiplexedConnection;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::{oneshot, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

/// The longest one blocking call waits when the caller has no limit: it
/// then queues again (at the back).
const LONGEST_BLOCK: Duration = Duration::from_secs(30);

/// Dedicated connections for blocking calls, at most `size` at once.
pub(crate) struct BlockingPool {
    redis: redis::Client,
    idle: Mutex<Vec<Dedicated>>,
    slots: Arc<Semaphore>,
    /// Set when the server's module refused `WAIT`.
    unsupported: AtomicBool,
}

struct Dedicated {
    connection: MultiplexedConnection,
    /// Its `CLIENT ID`, to unblock or kill it from the shared connection.
    id: i64,
}

impl BlockingPool {
    pub fn new(redis: redis::Client, size: usize) -> Self {
        Self {
            redis,
            idle: Mutex::default(),
            slots: Arc::new(Semaphore::new(size)),
            unsupported: AtomicBool::new(false),
        }
    }

    /// A connection and its slot, or `None` when all are busy.
    async fn take(&self) -> Option<(Dedicated, OwnedSemaphorePermit)> {
        let slot = self.slots.clone().try_acquire_owned().ok()?;
        let idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner).pop();
        let dedicated = match idle {
            Some(dedicated) => dedicated,
            None => {
                // No reply timeout: the call blocks as long as it asks to.
                let config = redis::AsyncConnectionConfig::new().set_response_timeout(None);
                let mut connection = self.redis.get_multiplexed_async_connection_with_config(&config).await.ok()?;
                let id = redis::cmd("CLIENT").arg("ID").query_async(&mut connection).await.ok()?;
                Dedicated { connection, id }
            }
        };
        Some((dedicated, slot))
    }

    fn put_back(&self, dedicated: Dedicated) {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner).push(dedicated);
    }
}

/// One blocking attempt for up to `wait` (`None`: [`LONGEST_BLOCK`]), or
/// `None` when this attempt cannot block (see the module's notes).
pub(crate) async fn attempt(
    handle: &Handle,
    renewal: Renewal,
    lease: Duration,
    wait: Option<Duration>,
) -> Option<Result<Attempt>> {
    let shared = handle.shared();
    let pool = shared.blocking.as_ref()?;
    if handle.id().kind != Kind::Plain
        || pool.unsupported.load(Ordering::Relaxed)
        || handle.state().read(|holds| holds.count()) > 0
        || !matches!(shared.replica_sync_plan(&handle.id().name).await, Ok(None))
    {
        return None;
    }
    let (dedicated, slot) = pool.take().await?;
    let wait_ms = protocol::clamp_lease_ms(wait.unwrap_or(LONGEST_BLOCK).min(LONGEST_BLOCK));
    let lock = handle.clone();
    let blocked = run_to_end(shared, |reply_tx| run(lock, renewal, lease, wait_ms, (dedicated, slot), reply_tx));
    Some(blocked.await.unwrap_or(Err(Error::ClientClosed)))
}

async fn run(
    lock: Handle,
    renewal: Renewal,
    lease: Duration,
    wait_ms: i64,
    (mut dedicated, _slot): (Dedicated, OwnedSemaphorePermit),
    mut reply_tx: oneshot::Sender<Result<Attempt>>,
) {
    let (shared, state) = (lock.shared(), lock.state());
    let Some(pool) = shared.blocking.as_ref() else { return };
    let _gate = state.gate.lock().await;
    // Held meanwhile through another handle: the plain attempt re-enters.
    if shared.is_closed() || state.read(|holds| holds.count()) > 0 {
        pool.put_back(dedicated);
        return drop(reply_tx.send(Ok(Attempt::Refused { retry_ms: 0 })));
    }
    let requested_at = Instant::now();
    let watchdog = shared.options.watchdog_timeout;
    let lease_sent = state.read(|holds| holds.lease_for_acquire(lease, requested_at, watchdog));
    let mut acquire = state.id.acquire(protocol::clamp_lease_ms(lease_sent), None);
    acquire.arg("WAIT").arg(wait_ms);
    let mut closed = shared.closed();
    let reply = {
        let request = acquire.query_async::<Option<i64>>(&mut dedicated.connection);
        tokio::pin!(request);
        tokio::select! {
            reply = &mut request => reply,
            _ = async { tokio::select! {
                _ = reply_tx.closed() => {}
                _ = closed.wait_for(|closed| *closed) => {}
            } } => {
                // The caller gave up, or the client closed: take the reply
                // if it comes soon.
                match tokio::time::timeout(REPLY_GRACE, &mut request).await {
                    Ok(reply) => reply,
                    Err(elapsed) => Err(std::io::Error::from(elapsed).into()),
                }
            }
        }
    };
    let observed = match reply.map_err(Error::from) {
        Ok(Some(retry_ms)) => {
            pool.put_back(dedicated);
            return drop(reply_tx.send(Ok(Attempt::Refused { retry_ms })));
        }
        Ok(None) => {
            pool.put_back(dedicated);
            None
        }
        // A module without WAIT: wait by pub/sub from now on.
        Err(Error::Redis(err)) if err.code() == Some("ERR") => {
            pool.unsupported.store(true, Ordering::Relaxed);
            pool.put_back(dedicated);
            return drop(reply_tx.send(Ok(Attempt::Refused { retry_ms: 0 })));
        }
        // An error reply: the call ended without a grant.
        Err(err) if !err.is_transient() => {
            pool.put_back(dedicated);
            return drop(reply_tx.send(Err(err)));
        }
        Err(err) => {
            // No grant can follow once the server dropped the connection.
            let mut connection = shared.connection.clone();
            let ordered = kill(&lock, &mut connection, dedicated.id).await;
            match settle(&lock, &mut connection, 0, err, ordered, reply_tx).await {
                Some((observed, _, settled_tx)) => {
                    reply_tx = settled_tx;
                    Some(observed)
                }
                None => return,
            }
        }
    };
    let granted =
        Granted { renewal, lease, lease_sent, requested_at, counted: 0, observed, lease_left: None, token: 0 };
    let orphaned = grant(&lock, granted, reply_tx);
    release_orphans(&lock, &shared.connection, orphaned).await;
}

/// Kills the dedicated connection `id` on the server, retrying transient
/// failures. True once the kill surely runs before what is sent next on
/// `connection` (it was answered, or is queued there ahead of it).
async fn kill(lock: &Handle, connection: &mut Connection, id: i64) -> bool {
    let retry = &lock.shared().options.retry;
    let kill = redis::cmd("CLIENT").arg("KILL").arg("ID").arg(id).clone();
    for _ in 0..=retry.attempts {
        match kill.query_async::<i64>(connection).await.map_err(Error::from) {
            Ok(_) => return true,
            Err(err) if err.is_timeout() => return true,
            Err(err) if err.is_transient() => tokio::time::sleep(retry.delay).await,
            Err(_) => return false,
        }
    }
    false
}
