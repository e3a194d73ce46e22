use crate::engine::lock_state::Registry;
use crate::engine::watchdog::WatchdogStats;
use crate::error::Result;
use crate::listing::LockListing;
use crate::lock::{FairLock, FencedLock, Lock};
use crate::options::{check, ClientOptions};
use crate::rwlock::ReadWriteLock;
use crate::shared::Shared;
use crate::synchronizers::latch::CountDownLatch;
use crate::synchronizers::permits::PermitExpirableSemaphore;
use crate::synchronizers::semaphore::Semaphore;
use crate::transport::connection::{Connection, Deployment};
use crate::transport::sentinel::Sentinels;
use crate::transport::slot_map_cache::SlotMapCache;
use redis::aio::ConnectionManager;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::sync::watch;
use uuid::Uuid;

/// A connection to a Redis server with the rlock module, and the source of
/// lock handles: [`Lock`], [`FairLock`], [`ReadWriteLock`].
///
/// Cloning is cheap and shares everything: the connection, the pub/sub
/// connection, the watchdog and the client id. When the last clone is
/// dropped the watchdog stops, and locks still held are reported lost.
///
/// ```no_run
/// use rlock_client::{Client, ClientOptions};
/// use std::time::Duration;
///
/// # async fn example() -> rlock_client::Result<()> {
/// // Default options:
/// let client = Client::open("redis://127.0.0.1:6379/").await?;
/// // Or chosen ones, with a redis-rs client:
/// let options = ClientOptions::default().with_watchdog_timeout(Duration::from_secs(10));
/// let client = Client::connect(redis::Client::open("redis://127.0.0.1:6379/")?, options).await?;
///
/// let guard = client.lock("orders:42").lock().await?;
/// guard.unlock().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Client {
    shared: Arc<Shared>,
    _running: Arc<Running>,
}

impl Client {
    /// Connects to `url` (`redis://host:port/db`) with default options.
    pub async fn open(url: &str) -> Result<Self> {
        Self::connect(redis::Client::open(url)?, ClientOptions::default()).await
    }

    /// Connects with a redis-rs client and options.
    pub async fn connect(redis: redis::Client, options: ClientOptions) -> Result<Self> {
        check(&options)?;
        let deployment = Deployment::Single(redis);
        let connection = deployment.connect(options.reply_timeout).await?;
        Self::start(deployment, connection, options)
    }

    /// Connects to a Redis Cluster through any of its `nodes`
    /// (`redis://host:port`). Commands are routed by key slot; waiters
    /// subscribe to their lock's shard channel (SSUBSCRIBE); the watchdog
    /// sends one batch per primary.
    pub async fn connect_cluster<T: redis::IntoConnectionInfo>(
        nodes: impl IntoIterator<Item = T>,
        options: ClientOptions,
    ) -> Result<Self> {
        let nodes = nodes.into_iter().map(T::into_connection_info).collect::<redis::RedisResult<Vec<_>>>()?;
        check(&options)?;
        let slot_map = SlotMapCache::new(nodes.first().cloned());
        let deployment = Deployment::Cluster(nodes, Arc::new(slot_map));
        let connection = deployment.connect(options.reply_timeout).await?;
        Self::start(deployment, connection, options)
    }

    /// Connects to the primary the Sentinels at `sentinels`
    /// (`redis://host:port`) name for `primary_name`, and follows it to
    /// another after a failover: the client asks the Sentinels every
    /// second, and at once when a command fails as a failover makes it fail
    /// (the failed command's error comes back; the next call, a retry or
    /// the watchdog's renewal, goes to the new primary, where a hold it
    /// lacks is reported lost). The primary is the one a majority of the
    /// Sentinels name, once it answers as one. `node` holds the data
    /// nodes' database and credentials. Blocking waits are not offered:
    /// waiters wait on pub/sub, which moves with the commands.
    pub async fn connect_sentinel<T: redis::IntoConnectionInfo>(
        sentinels: impl IntoIterator<Item = T>,
        primary_name: &str,
        node: redis::RedisConnectionInfo,
        options: ClientOptions,
    ) -> Result<Self> {
        let sentinels = sentinels.into_iter().map(T::into_connection_info).collect::<redis::RedisResult<Vec<_>>>()?;
        check(&options)?;
        let deployment = Deployment::Sentinel(Sentinels::new(sentinels, primary_name, node)?);
        let connection = deployment.connect(options.reply_timeout).await?;
        Self::start(deployment, connection, options)
    }

    /// Uses an existing redis-rs connection for commands. `redis` opens the
    /// pub/sub connection when a lock first has to wait.
    ///
    /// Must be called within a Tokio runtime: it starts the watchdog task.
    pub fn with_connection(
        redis: redis::Client,
        connection: ConnectionManager,
        options: ClientOptions,
    ) -> Result<Self> {
        check(&options)?;
        Self::start(Deployment::Single(redis), Connection::Single(connection), options)
    }

    fn start(deployment: Deployment, connection: Connection, options: ClientOptions) -> Result<Self> {
        let (running, closed) = watch::channel(false);
        let shared = Shared::start(deployment, connection, options, closed);
        let running = Running { closed: running, registry: shared.registry.clone() };
        Ok(Self { shared: Arc::new(shared), _running: Arc::new(running) })
    }

    /// What the watchdog has done so far: rounds, failures, locks lost.
    pub fn watchdog_stats(&self) -> WatchdogStats {
        self.shared.watchdog.stats()
    }

    /// The locks on the server whose names match `pattern` (`SCAN`'s
    /// glob; `None`: all), walked page by page with `RLOCK.LIST`: one
    /// server, the Sentinels' primary, or every primary of a cluster in
    /// turn.
    pub fn list_locks(&self, pattern: Option<&str>) -> LockListing {
        LockListing::new(self.shared.clone(), pattern)
    }

    /// This client's id: the first part of its owner ids.
    pub fn id(&self) -> Uuid {
        self.shared.id
    }

    /// A new handle on the lock `name`, with its own owner id
    /// `<client id>:<n>`. Reentrant through this handle (and its clones).
    pub fn lock(&self, name: impl AsRef<[u8]>) -> Lock {
        Lock::minted(self.shared.clone(), name.as_ref(), self.next_owner().as_bytes())
    }

    /// A handle on the lock `name` with an explicit owner id: two handles
    /// with the same owner are the same holder (for hand-off between tasks,
    /// or to act for a Redisson thread `<uuid>:<thread id>`).
    pub fn lock_with_owner(&self, name: impl AsRef<[u8]>, owner: impl AsRef<[u8]>) -> Lock {
        Lock::new(self.shared.clone(), name.as_ref(), owner.as_ref())
    }

    /// A new handle on the fair lock `name` (Redisson's `getFairLock`),
    /// with its own owner id.
    pub fn fair_lock(&self, name: impl AsRef<[u8]>) -> FairLock {
        self.fair_lock_with_owner(name, self.next_owner())
    }

    /// A handle on the fair lock `name` with an explicit owner id.
    pub fn fair_lock_with_owner(&self, name: impl AsRef<[u8]>, owner: impl AsRef<[u8]>) -> FairLock {
        FairLock::new(self.shared.clone(), name.as_ref(), owner.as_ref())
    }

    /// A new handle on the fenced lock `name` (Redisson's `getFencedLock`),
    /// with its own owner id.
    pub fn fenced_lock(&self, name: impl AsRef<[u8]>) -> FencedLock {
        self.fenced_lock_with_owner(name, self.next_owner())
    }

    /// A handle on the fenced lock `name` with an explicit owner id.
    pub fn fenced_lock_with_owner(&self, name: impl AsRef<[u8]>, owner: impl AsRef<[u8]>) -> FencedLock {
        FencedLock::new(self.shared.clone(), name.as_ref(), owner.as_ref())
    }

    /// A new handle on the read-write lock `name` (Redisson's
    /// `getReadWriteLock`), with its own owner id for both sides.
    pub fn read_write_lock(&self, name: impl AsRef<[u8]>) -> ReadWriteLock {
        self.read_write_lock_with_owner(name, self.next_owner())
    }

    /// A handle on the read-write lock `name` with an explicit owner id
    /// (the base id `<uuid>:<thread id>`: the write side adds `:write`).
    pub fn read_write_lock_with_owner(&self, name: impl AsRef<[u8]>, owner: impl AsRef<[u8]>) -> ReadWriteLock {
        ReadWriteLock::new(self.shared.clone(), name.as_ref(), owner.as_ref())
    }

    /// The semaphore `name` (Redisson's `getSemaphore`).
    pub fn semaphore(&self, name: impl AsRef<[u8]>) -> Semaphore {
        Semaphore::new(self.shared.clone(), name.as_ref())
    }

    /// The permit-expirable semaphore `name` (Redisson's
    /// `getPermitExpirableSemaphore`).
    pub fn permit_semaphore(&self, name: impl AsRef<[u8]>) -> PermitExpirableSemaphore {
        PermitExpirableSemaphore::new(self.shared.clone(), name.as_ref())
    }

    /// The count-down latch `name` (Redisson's `getCountDownLatch`).
    pub fn count_down_latch(&self, name: impl AsRef<[u8]>) -> CountDownLatch {
        CountDownLatch::new(self.shared.clone(), name.as_ref())
    }

    /// A new owner id, `<client id>:<n>`.
    fn next_owner(&self) -> String {
        let n = self.shared.next_owner.fetch_add(1, Ordering::Relaxed);
        format!("{}:{n}", self.shared.id)
    }
}

/// Dropped with the last [`Client`]: stops the background tasks, and the
/// registry at once (its holds lost, no more inline work), not when the
/// watchdog's task next runs: until then a guard looked held, and its
/// unlock still released.
struct Running {
    closed: watch::Sender<bool>,
    registry: Arc<Registry>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.closed.send_replace(true);
        self.registry.stop();
    }
}
