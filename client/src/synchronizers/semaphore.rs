//! Redisson's `RSemaphore` over the module's `RSEM.*` commands: the count
//! of available permits in a string key, shared with Java clients.

use crate::engine::channel_wait::{wait_for, Channel, Tried, FALLBACK_PERIOD};
use crate::engine::requests::{command, query, read};
use crate::engine::run_to_end::run_to_end;
use crate::error::{Error, Result};
use crate::shared::Shared;
use crate::transport::wakeups::WakeRule;
use std::sync::Arc;
use std::time::Duration;

/// A counting semaphore. Get it from
/// [`Client::semaphore`](crate::Client::semaphore); cloning is cheap.
///
/// Permits are not owned: anyone may release them (as in Redisson), and a
/// holder that dies keeps its permits for ever. Where that matters, use
/// [`PermitExpirableSemaphore`](crate::PermitExpirableSemaphore)'s leased
/// permits.
///
/// Waiting follows Redisson (a try, then a try at each message on
/// `redisson_sc:{name}`), with a timer fallback: a missed message delays a
/// waiter by at most a second instead of leaving it hanging.
///
/// ```no_run
/// use std::time::Duration;
///
/// # async fn example(client: rlock_client::Client) -> rlock_client::Result<()> {
/// let connections = client.semaphore("db:connections");
/// connections.try_set_permits(3).await?; // only if it does not exist yet
/// if connections.try_acquire(1, Duration::from_secs(1)).await? {
///     // One of three.
///     connections.release(1).await?;
/// }
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Semaphore {
    shared: Arc<Shared>,
    name: Arc<[u8]>,
}

impl std::fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Semaphore").field("name", &String::from_utf8_lossy(&self.name)).finish()
    }
}

impl Semaphore {
    pub(crate) fn new(shared: Arc<Shared>, name: &[u8]) -> Self {
        Self { shared, name: name.into() }
    }

    /// The semaphore's name: its Redis key.
    pub fn name(&self) -> &[u8] {
        &self.name
    }

    /// Takes `permits`, waiting as long as it takes.
    pub async fn acquire(&self, permits: u32) -> Result<()> {
        self.wait(permits, None).await.map(drop)
    }

    /// Takes `permits` if they become available within `wait` (zero: only
    /// if they are now); false when the wait ran out.
    pub async fn try_acquire(&self, permits: u32, wait: Duration) -> Result<bool> {
        Ok(self.wait(permits, Some(wait)).await?.is_some())
    }

    async fn wait(&self, permits: u32, limit: Option<Duration>) -> Result<Option<()>> {
        let channel = rlock_protocol::semaphore_channel(&self.name);
        let channel = Channel { key: &self.name, name: &channel, rule: WakeRule::EveryMessage };
        wait_for(&self.shared, channel, limit, || async {
            Ok(if self.take(permits).await? { Tried::Done(()) } else { Tried::Again(FALLBACK_PERIOD) })
        })
        .await
    }

    /// One `RSEM.TRYACQUIRE`, run to its end: a caller cancelled while
    /// it runs leaves no permit taken (a grant nobody receives is released).
    /// Its error is never transient, so the wait loop does not send it
    /// again: a take whose reply was lost may have taken the permits, and
    /// a plain semaphore has no owner to ask.
    async fn take(&self, permits: u32) -> Result<bool> {
        let (shared, name) = (self.shared.clone(), self.name.clone());
        run_to_end(&self.shared, move |reply_tx| async move {
            let reply = query::<i64>(&shared, &name, command("RSEM.TRYACQUIRE", &name).arg(permits)).await;
            let taken = match reply {
                Ok(taken) => Ok(taken == 1),
                // Refused before it ran: safe to send again.
                Err(err) if err.surely_not_run() => Err(err),
                Err(err) => Err(Error::OutcomeUnknown(Box::new(err))),
            };
            if let Err(Ok(true)) = reply_tx.send(taken) {
                let _ = query::<()>(&shared, &name, command("RSEM.RELEASE", &name).arg(permits)).await;
            }
        })
        .await
        .unwrap_or(Err(Error::ClientClosed))
    }

    /// Gives `permits` back (to anyone waiting), as Redisson's `release`.
    /// Sent once: a lost reply is returned as an error, since sending it
    /// again could add the permits twice.
    pub async fn release(&self, permits: u32) -> Result<()> {
        query(&self.shared, &self.name, command("RSEM.RELEASE", &self.name).arg(permits)).await
    }

    /// The permits available now (0 when the semaphore does not exist).
    pub async fn available(&self) -> Result<i64> {
        read(&self.shared, &self.name, &command("RSEM.AVAILABLE", &self.name)).await
    }

    /// Takes every available permit; how many it took.
    pub async fn drain(&self) -> Result<i64> {
        let drained: redis::Value = query(&self.shared, &self.name, &command("RSEM.DRAIN", &self.name)).await?;
        // The old value as Redis stored it: a bulk string, or 0.
        redis::from_redis_value::<i64>(drained.clone())
            .map_err(|_| Error::UnexpectedReply(format!("RSEM.DRAIN replied {drained:?}")))
    }

    /// Sets the permits of a semaphore that does not exist yet; false (and
    /// nothing changes) when it exists.
    pub async fn try_set_permits(&self, permits: u32) -> Result<bool> {
        let set: i64 = query(&self.shared, &self.name, command("RSEM.TRYSETPERMITS", &self.name).arg(permits)).await?;
        Ok(set == 1)
    }

    /// Adds `delta` permits (negative: removes them; the count may go
    /// below zero), keeping the key's expiry.
    pub async fn add_permits(&self, delta: i64) -> Result<()> {
        query(&self.shared, &self.name, command("RSEM.ADDPERMITS", &self.name).arg(delta)).await
    }
}
