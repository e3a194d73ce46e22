use crate::attempt::{attempt, Attempt};
use crate::client::Shared;
use crate::error::{Error, Result};
use crate::guard::Guard;
use crate::holds::Renewal;
use crate::lock_state::{LockId, LockState};
use crate::protocol::{self, Kind, Status};
use crate::subscriptions::Subscription;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// How often a waiter retries a lock whose key has no expiry (only a
/// release message, or this, wakes it).
const NO_EXPIRY_RETRY: Duration = Duration::from_secs(1);

/// A handle on one lock, with one owner id. Get it from
/// [`Client::lock`](crate::Client::lock).
///
/// The lock is reentrant through the handle, its clones and every other
/// handle of this client with the same owner: each successful `lock*` call
/// adds a hold, each [`Guard::unlock`] removes one. Acquires and releases
/// on one lock and owner are sent one at a time, so the hold count this
/// client keeps follows the server's.
#[derive(Clone)]
pub struct Lock {
    shared: Arc<Shared>,
    state: Arc<LockState>,
    channel: Arc<[u8]>,
}

/// A read-write lock (Redisson's `RReadWriteLock`): readers share it, a
/// writer has it alone (and may take reads too). Get it from
/// [`Client::read_write_lock`](crate::Client::read_write_lock).
#[derive(Clone, Debug)]
pub struct ReadWriteLock {
    pub(crate) read: Lock,
    pub(crate) write: Lock,
}

impl ReadWriteLock {
    /// The read side: a [`Lock`] many owners can hold at once.
    pub fn read(&self) -> Lock {
        self.read.clone()
    }

    /// The write side: a [`Lock`] one owner holds, excluding readers.
    pub fn write(&self) -> Lock {
        self.write.clone()
    }
}

impl std::fmt::Debug for Lock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lock")
            .field("name", &String::from_utf8_lossy(self.name()))
            .field("owner", &String::from_utf8_lossy(self.owner()))
            .finish()
    }
}

impl Lock {
    pub(crate) fn new(shared: Arc<Shared>, name: &[u8], owner: &[u8], kind: Kind) -> Self {
        let id = LockId { name: name.into(), owner: owner.into(), kind };
        let channel = protocol::channel(&id).into();
        let state = shared.registry.state(id);
        Self { shared, state, channel }
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    pub(crate) fn state(&self) -> &Arc<LockState> {
        &self.state
    }

    /// The lock's name: its Redis key.
    pub fn name(&self) -> &[u8] {
        &self.state.id.name
    }

    /// This handle's owner id: the hash field it holds the lock under.
    pub fn owner(&self) -> &[u8] {
        &self.state.id.owner
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
    /// watchdog: the hold ends with its lease.
    pub async fn lock_with_lease(&self, lease: Duration) -> Result<Guard> {
        loop {
            if let Some(guard) = self.acquire(Renewal::Fixed, Some(lease), None).await? {
                return Ok(guard);
            }
        }
    }

    /// Tries for at most `wait`; `None` when the lock stayed taken. With a
    /// `lease` the hold ends with it; without, the watchdog renews it.
    pub async fn try_lock(&self, wait: Duration, lease: Option<Duration>) -> Result<Option<Guard>> {
        let renewal = if lease.is_some() { Renewal::Fixed } else { Renewal::Watchdog };
        // A wait past the clock's range is no limit.
        self.acquire(renewal, lease, Instant::now().checked_add(wait)).await
    }

    /// Deletes the lock whoever holds it (Redisson's `forceUnlock`).
    /// True when there was a lock. Sent once: when its reply is lost, the
    /// error is returned rather than a second FORCERELEASE that could
    /// delete a holder who took the lock in between.
    pub async fn force_unlock(&self) -> Result<bool> {
        let retry = &self.shared.options.retry;
        let force_release = protocol::force_release(&self.state.id);
        // The holds it may delete: those of this client taken before it is
        // sent (a grant after it, in a race, is a new hold and stays).
        let before: Vec<_> = self
            .shared
            .registry
            .named(self.name())
            .into_iter()
            .map(|state| {
                let incarnation = state.read(|holds| holds.incarnation());
                (state, incarnation)
            })
            .collect();
        let mut refusals = 0;
        let deleted = loop {
            match force_release.query_async::<i64>(&mut self.shared.connection.clone()).await {
                // Refused connections never carried the command: try again.
                Err(err) if err.is_connection_refusal() && refusals < retry.attempts => {
                    refusals += 1;
                    tokio::time::sleep(retry.delay).await;
                }
                reply => break reply?,
            }
        };
        if deleted == 1 {
            for (state, incarnation) in before {
                state.lose_incarnation(incarnation);
            }
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

    /// The lock's STATUS, retrying transient failures: it changes nothing.
    async fn status(&self) -> Result<Status> {
        let retry = &self.shared.options.retry;
        let status = protocol::status(&self.state.id);
        let mut failures = 0;
        loop {
            match status.query_async(&mut self.shared.connection.clone()).await.map_err(Error::from) {
                Err(err) if err.is_transient() && failures < retry.attempts => {
                    failures += 1;
                    tokio::time::sleep(retry.delay).await;
                }
                reply => return Status::parse(self.state.id.kind, reply?),
            }
        }
    }

    /// Redisson's acquire loop: try; when refused, subscribe to the release
    /// channel (before the next try, so no release is missed), then wait for
    /// a release message or the holder's PTTL, whichever is first, and try
    /// again. `None` once `deadline` passes; [`Error::ClientClosed`] as soon
    /// as the client is closed.
    async fn acquire(
        &self,
        renewal: Renewal,
        lease: Option<Duration>,
        deadline: Option<Instant>,
    ) -> Result<Option<Guard>> {
        let lease = lease.unwrap_or(self.shared.options.watchdog_timeout);
        protocol::lease_ms(lease)?;
        // However this call ends but with the lock, a fair waiter leaves
        // the queue, or the waiters behind it would wait for its deadline.
        let mut queued = QueueExit::new(self);
        let retry = &self.shared.options.retry;
        let mut closed = self.shared.closed();
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
            // Past the first (always made, as Redisson's), the wait limit
            // holds: a grant that comes too late is dropped, which gives
            // it back.
            let attempted = match deadline.filter(|_| attempts > 0) {
                None => attempt(self, renewal, lease).await,
                Some(deadline) => match tokio::time::timeout_at(deadline, attempt(self, renewal, lease)).await {
                    Ok(attempted) => attempted,
                    Err(_) => return Ok(None),
                },
            };
            attempts += 1;
            let pause = match attempted {
                Ok(Attempt::Granted(guard)) => {
                    queued.granted();
                    return Ok(Some(guard));
                }
                Ok(Attempt::Refused { pttl_ms }) => {
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
                    Ok(subscriptions) => subscriptions.subscribe(self.name(), &self.channel).await.ok(),
                    Err(_) => None,
                };
                if subscription.is_some() {
                    continue;
                }
            }
            let released = async {
                match subscription.as_mut() {
                    Some(subscription) => subscription.released().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = released => {}
                _ = tokio::time::sleep(pause) => {}
                _ = closed.changed() => {}
            }
        }
    }
}

/// A fair lock's waiter in the queue: leaves it when dropped, unless the
/// lock was granted. The give-up runs in a task (no blocking in drop), after
/// this lock's pending calls.
struct QueueExit<'a> {
    lock: Option<&'a Lock>,
}

impl<'a> QueueExit<'a> {
    fn new(lock: &'a Lock) -> Self {
        Self { lock: matches!(lock.state.id.kind, Kind::Fair { .. }).then_some(lock) }
    }

    fn granted(&mut self) {
        self.lock = None;
    }
}

impl Drop for QueueExit<'_> {
    fn drop(&mut self) {
        let Some(lock) = self.lock else { return };
        let Some(cancel) = protocol::cancel(&lock.state.id) else { return };
        let (state, mut connection) = (lock.state.clone(), lock.shared.connection.clone());
        lock.shared.runtime.spawn(async move {
            let _gate = state.gate.lock().await;
            let _ = cancel.query_async::<()>(&mut connection).await;
        });
    }
}
