use crate::client::Shared;
use crate::connection::Connection;
use crate::error::{Error, Result};
use crate::guard::Guard;
use crate::protocol::{self, Acquired, Status};
use crate::replica_sync::Plan;
use crate::subscriptions::Subscription;
use crate::watchdog::{LockId, Renewal};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::time::Instant;

/// How often a waiter retries a lock whose key has no expiry (only a
/// release message, or this, wakes it).
const NO_EXPIRY_RETRY: Duration = Duration::from_secs(1);

/// A handle on one lock, with one owner id. Get it from
/// [`Client::lock`](crate::Client::lock).
///
/// The lock is reentrant through the handle and its clones: each
/// successful `lock*` call adds a hold, each [`Guard::unlock`] removes one.
#[derive(Clone)]
pub struct Lock {
    shared: Arc<Shared>,
    id: LockId,
    channel: Arc<[u8]>,
}

impl std::fmt::Debug for Lock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lock")
            .field("name", &String::from_utf8_lossy(&self.id.name))
            .field("owner", &String::from_utf8_lossy(&self.id.owner))
            .finish()
    }
}

impl Lock {
    pub(crate) fn new(shared: Arc<Shared>, name: &[u8], owner: &[u8]) -> Self {
        let channel = protocol::release_channel(name).into();
        Self { shared, id: LockId { name: name.into(), owner: owner.into() }, channel }
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    pub(crate) fn id(&self) -> &LockId {
        &self.id
    }

    /// The lock's name: its Redis key.
    pub fn name(&self) -> &[u8] {
        &self.id.name
    }

    /// This handle's owner id: the hash field it holds the lock under.
    pub fn owner(&self) -> &[u8] {
        &self.id.owner
    }

    /// Waits, without limit, until the lock is ours. The lease is the
    /// watchdog timeout, renewed until the guard is unlocked or dropped.
    pub async fn lock(&self) -> Result<Guard> {
        loop {
            if let Some(guard) = self.acquire(Renewal::Watchdog, None, None).await? {
                return Ok(guard);
            }
        }
    }

    /// Waits, without limit, until the lock is ours for `lease`. No
    /// watchdog: the lock expires at the end of the lease.
    pub async fn lock_with_lease(&self, lease: Duration) -> Result<Guard> {
        loop {
            if let Some(guard) = self.acquire(Renewal::Fixed, Some(lease), None).await? {
                return Ok(guard);
            }
        }
    }

    /// Tries for at most `wait`; `None` when the lock stayed taken. With a
    /// `lease` the lock expires after it; without, the watchdog renews it.
    pub async fn try_lock(&self, wait: Duration, lease: Option<Duration>) -> Result<Option<Guard>> {
        let renewal = if lease.is_some() { Renewal::Fixed } else { Renewal::Watchdog };
        self.acquire(renewal, lease, Some(Instant::now() + wait)).await
    }

    /// Deletes the lock whoever holds it (Redisson's `forceUnlock`).
    /// True when there was a lock.
    pub async fn force_unlock(&self) -> Result<bool> {
        let deleted: i64 = self.query(protocol::force_release(&self.id.name)).await?;
        if deleted == 1 {
            self.shared.watchdog.lose(&self.id);
        }
        Ok(deleted == 1)
    }

    /// Whether anyone holds the lock.
    pub async fn is_locked(&self) -> Result<bool> {
        Ok(self.status().await?.locked)
    }

    /// Whether this handle's owner holds the lock.
    pub async fn is_held(&self) -> Result<bool> {
        Ok(self.status().await?.hold_count > 0)
    }

    /// How many times this handle's owner holds the lock (0: not at all).
    pub async fn hold_count(&self) -> Result<u64> {
        Ok(self.status().await?.hold_count.max(0) as u64)
    }

    /// The lease left on the lock, whoever holds it; `None` when nobody
    /// does, `Duration::MAX` for a lock key without expiry.
    pub async fn remaining_lease(&self) -> Result<Option<Duration>> {
        let status = self.status().await?;
        Ok(match status.ttl_ms {
            _ if !status.locked => None,
            -1 => Some(Duration::MAX),
            ms => Some(Duration::from_millis(ms.max(0) as u64)),
        })
    }

    async fn status(&self) -> Result<Status> {
        Status::parse(self.query(protocol::status(&self.id.name, &self.id.owner)).await?)
    }

    /// Runs an idempotent command, retrying transient failures.
    async fn query<T: redis::FromRedisValue>(&self, cmd: redis::Cmd) -> Result<T> {
        let retry = &self.shared.options.retry;
        let mut failures = 0;
        loop {
            match cmd.query_async(&mut self.shared.connection.clone()).await.map_err(Error::from) {
                Err(err) if err.is_transient() && failures < retry.attempts => {
                    failures += 1;
                    tokio::time::sleep(retry.delay).await;
                }
                result => return result,
            }
        }
    }

    /// Redisson's acquire loop: try; when refused, subscribe to the release
    /// channel (before the next try, so no release is missed), then wait for
    /// a release message or the holder's PTTL, whichever is first, and try
    /// again. `None` once `deadline` passes.
    async fn acquire(
        &self,
        renewal: Renewal,
        lease: Option<Duration>,
        deadline: Option<Instant>,
    ) -> Result<Option<Guard>> {
        if self.shared.is_closed() {
            return Err(Error::ClientClosed);
        }
        let lease = lease.unwrap_or(self.shared.options.watchdog_timeout);
        let lease_ms = protocol::lease_ms(lease)?;
        let retry = &self.shared.options.retry;
        let mut subscription: Option<Subscription> = None;
        let mut subscribe_tried = false;
        let mut failures = 0;
        loop {
            if let Some(subscription) = subscription.as_mut() {
                subscription.mark_seen();
            }
            let pause = match self.attempt(lease_ms).await {
                Ok((Acquired::Yes, requested_at)) => {
                    return Ok(Some(Guard::new(self.clone(), lease, renewal, requested_at)));
                }
                Ok((Acquired::No { pttl_ms }, _)) => {
                    failures = 0;
                    u64::try_from(pttl_ms).map_or(NO_EXPIRY_RETRY, Duration::from_millis)
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
                // Without pub/sub the loop still works: it polls at the PTTL.
                subscription = match self.shared.subscriptions().await {
                    Ok(subscriptions) => subscriptions.subscribe(&self.id.name, &self.channel).await.ok(),
                    Err(_) => None,
                };
                if subscription.is_some() {
                    continue;
                }
            }
            match subscription.as_mut() {
                Some(subscription) => {
                    tokio::select! {
                        _ = subscription.released() => {}
                        _ = tokio::time::sleep(pause) => {}
                    }
                }
                None => tokio::time::sleep(pause).await,
            }
        }
    }

    /// One RLOCK.ACQUIRE (with its WAIT, when replicas must be synced). It
    /// runs in its own task: if the caller is cancelled while the request
    /// is in flight, the task gives back a lock the request took, so a
    /// dropped `lock()` future leaves no lock behind.
    async fn attempt(&self, lease_ms: i64) -> Result<(Acquired, Instant)> {
        let sync = self.shared.replica_sync_plan(&self.id.name).await?;
        let requested_at = Instant::now();
        let acquire = protocol::acquire(&self.id.name, &self.id.owner, lease_ms);
        let (id, mut connection) = (self.id.clone(), self.shared.connection.clone());
        let (reply_tx, reply_rx) = oneshot::channel();
        tokio::spawn(async move {
            let release = |connection: &mut Connection| {
                let release = protocol::release(&id.name, &id.owner, lease_ms);
                let mut connection = connection.clone();
                async move { release.query_async::<Option<i64>>(&mut connection).await }
            };
            let reply = match sync {
                None => acquire.query_async::<Option<i64>>(&mut connection).await.map_err(Error::from),
                Some(plan) => match synced_acquire(acquire, plan).await {
                    Err(Error::ReplicaSync { acknowledged, required }) => {
                        let _ = release(&mut connection).await;
                        Err(Error::ReplicaSync { acknowledged, required })
                    }
                    reply => reply,
                },
            };
            if let Err(Ok(None)) = reply_tx.send(reply) {
                let _ = release(&mut connection).await;
            }
        });
        let reply = reply_rx.await.map_err(|_| Error::ClientClosed)??;
        Ok((Acquired::from(reply), requested_at))
    }
}

/// RLOCK.ACQUIRE and WAIT in one round trip, on the sync connection.
/// [`Error::ReplicaSync`] when the lock was granted but not acknowledged.
async fn synced_acquire(acquire: redis::Cmd, mut plan: Plan) -> Result<Option<i64>> {
    let mut pipe = redis::pipe();
    pipe.add_command(acquire).cmd("WAIT").arg(plan.required).arg(plan.timeout.as_millis() as u64);
    let (reply, acknowledged): (Option<i64>, i64) = pipe.query_async(&mut plan.connection).await?;
    if reply.is_none() && acknowledged < i64::from(plan.required) {
        return Err(Error::ReplicaSync { acknowledged, required: plan.required });
    }
    Ok(reply)
}
