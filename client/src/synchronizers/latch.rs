//! Redisson's `RCountDownLatch` over the module's `RLATCH.*` commands.

use crate::engine::channel_wait::{wait_for, Channel, Tried, FALLBACK_PERIOD};
use crate::engine::requests::{command, query, read, send};
use crate::error::Result;
use crate::shared::Shared;
use crate::transport::wakeups::WakeRule;
use std::sync::Arc;
use std::time::Duration;

/// A count-down latch. Get it from
/// [`Client::count_down_latch`](crate::Client::count_down_latch); cloning
/// is cheap.
///
/// Set once with [`CountDownLatch::try_set_count`]; it opens when counted
/// down to zero (the key is then deleted). A latch that does not exist
/// counts as open, as in Redisson: [`CountDownLatch::wait`] returns at once.
/// Waiters listen on `redisson_countdownlatch__channel__{name}` and check
/// the count again at least every second, so a missed message never
/// leaves them hanging; [`CountDownLatch::delete`] opens the latch for them
/// (Redisson's delete publishes a message its waiters ignore).
///
/// ```no_run
/// use std::time::Duration;
///
/// # async fn example(client: rlock_client::Client) -> rlock_client::Result<()> {
/// let ready = client.count_down_latch("shards:ready");
/// ready.try_set_count(2).await?;
/// // Each of two shards, when it is ready:
/// ready.count_down().await?;
/// ready.count_down().await?;
/// // Anyone waiting for both:
/// assert!(ready.wait_timeout(Duration::from_secs(5)).await?);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct CountDownLatch {
    shared: Arc<Shared>,
    name: Arc<[u8]>,
}

impl std::fmt::Debug for CountDownLatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CountDownLatch").field("name", &String::from_utf8_lossy(&self.name)).finish()
    }
}

impl CountDownLatch {
    pub(crate) fn new(shared: Arc<Shared>, name: &[u8]) -> Self {
        Self { shared, name: name.into() }
    }

    /// The latch's name: its Redis key.
    pub fn name(&self) -> &[u8] {
        &self.name
    }

    /// Sets the count of a latch that does not exist yet; false (and
    /// nothing changes) when it exists.
    pub async fn try_set_count(&self, count: u64) -> Result<bool> {
        let set: i64 = query(&self.shared, &self.name, command("RLATCH.TRYSETCOUNT", &self.name).arg(count)).await?;
        Ok(set == 1)
    }

    /// Counts down by one; at zero the latch opens. Counting down a latch
    /// that does not exist does nothing. Sent once: a lost reply is an error.
    pub async fn count_down(&self) -> Result<()> {
        query(&self.shared, &self.name, &command("RLATCH.COUNTDOWN", &self.name)).await
    }

    /// The count left (0: open, or never set).
    pub async fn count(&self) -> Result<i64> {
        read(&self.shared, &self.name, &command("RLATCH.COUNT", &self.name)).await
    }

    /// Deletes the latch, which opens it for every waiter; false when there
    /// was none.
    pub async fn delete(&self) -> Result<bool> {
        let deleted: i64 = query(&self.shared, &self.name, &command("RLATCH.DELETE", &self.name)).await?;
        Ok(deleted == 1)
    }

    /// Waits until the latch is open.
    pub async fn wait(&self) -> Result<()> {
        self.wait_until(None).await.map(drop)
    }

    /// Waits up to `timeout` for the latch to open; true when it did.
    pub async fn wait_timeout(&self, timeout: Duration) -> Result<bool> {
        Ok(self.wait_until(Some(timeout)).await?.is_some())
    }

    async fn wait_until(&self, limit: Option<Duration>) -> Result<Option<()>> {
        let channel = rlock_protocol::count_down_latch_channel(&self.name);
        let channel = Channel { key: &self.name, name: &channel, rule: WakeRule::EveryMessage };
        let count = command("RLATCH.COUNT", &self.name);
        wait_for(&self.shared, channel, limit, || async {
            let count: i64 = send(&self.shared, &self.name, &count).await?;
            Ok(if count <= 0 { Tried::Done(()) } else { Tried::Again(FALLBACK_PERIOD) })
        })
        .await
    }
}
